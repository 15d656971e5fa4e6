#pragma once
// Library routines a manifest may call instead of a kernel ([[launch]] library = "..."):
// cuBLAS and cuBLASLt (dlopen'ed at run time, never linked) and CUB (one nvcc-compiled translation unit,
// src/cuda/cub_ops.cu). Used for the "library" baselines (one per contract where a library has the operation).
// Temporary storage (CUB temp bytes, the cuBLAS workspace) is sized and allocated when a call is
// prepared, so that enqueue() — the timed region — is exactly the library call.
#include <cuda.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kqual/core/dtype.hpp"
#include "kqual/cuda/objects.hpp"

namespace kqual::cuda {
namespace detail {
struct LtPlan;
}

// One known routine: its arguments in order (pointers first, then integer scalars).
struct LibraryRoutine {
  std::string_view name;       // "cub.exclusive_sum"
  std::string_view library;    // "CUB" or "cuBLAS"
  std::string_view call;       // the library entry point, for reports
  std::vector<std::string_view> pointers;  // meaning of each pointer argument, e.g. {"in", "out"}
  std::vector<std::string_view> scalars;   // meaning of each scalar argument, e.g. {"n"}
  std::string_view scalar_type;            // the C type every scalar must be declared with ("i32", "i64")
  std::vector<DType> dtypes;               // what {T} may be
  std::string signature() const;           // "cub.exclusive_sum<T>(in, out, n:i64)"
};

const std::vector<LibraryRoutine>& library_routines();
const LibraryRoutine* find_library_routine(std::string_view name);

// "cub.exclusive_sum<float>" → {"cub.exclusive_sum", "float"}; the type part may be "{T}" or empty.
struct LibraryName {
  std::string routine;
  std::string type;
};
LibraryName split_library_name(const std::string& full);

// Versions, for the artifact identity. CUB's is fixed at build time; cuBLAS's is read from the
// library that dlopen finds (needs a device: cublasGetVersion takes a handle).
std::string cub_version();          // "CUB 3.0.1 (CCCL, nvcc 13.0, sm_90)"
std::string cublas_library_path();  // the file that was (or would be) loaded; "" before a load
// The libcublasLt.so loaded from the same directory first, when a path was named ("" otherwise).
std::string cublas_lt_library_path();
// Files mapped into this process whose file name contains `needle` ("cublas"): what actually runs.
std::vector<std::string> loaded_library_files(std::string_view needle);
// Loads libcublas; throws Error(cuda) naming every path tried when it cannot. KQUAL_CUBLAS_LIBRARY
// overrides the search (one path): kqual compare's library sides, tests, unusual layouts. A named
// file's libcublasLt.so.<major> in the same directory is loaded first, so each build runs its own.
void load_cublas();
std::string cublas_version();       // "cuBLAS 13.0.2 (/usr/local/cuda/lib64/libcublas.so.13)"; needs a context
// cuBLASLt's, for the "cublaslt.gemm" routine: the libcublasLt beside KQUAL_CUBLAS_LIBRARY, else the default search.
std::string cublaslt_version();       // "cuBLASLt 13.1.0 (<path>)"; loads it
std::string cublaslt_library_path();  // "" before a load

// A prepared call: arguments bound, temporary storage allocated.
class LibraryCall {
 public:
  // name: "cub.exclusive_sum<float>" ({T} already resolved). The context must be current.
  LibraryCall(const std::string& name, std::vector<CUdeviceptr> pointers, std::vector<std::int64_t> scalars,
              CUstream stream);
  ~LibraryCall();
  LibraryCall(LibraryCall&&) noexcept;
  LibraryCall& operator=(LibraryCall&&) noexcept;
  void enqueue(CUstream stream);   // the library call(s) only; asynchronous
  const std::string& name() const { return name_; }
  std::size_t temp_bytes() const { return temp_bytes_; }

 private:
  std::string name_;
  const LibraryRoutine* routine_ = nullptr;
  DType dtype_ = DType::f32;
  std::vector<CUdeviceptr> ptrs_;
  std::vector<std::int64_t> scalars_;
  std::size_t temp_bytes_ = 0;
  DeviceBuffer temp_;
  std::shared_ptr<detail::LtPlan> lt_;  // cublaslt.gemm's prepared matmul (src/cuda/library_lt.cpp)
};

}  // namespace kqual::cuda
