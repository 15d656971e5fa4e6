#pragma once
// Internal to src/cuda/: the cuBLASLt matmul behind the "cublaslt.gemm" routine (library_lt.cpp), and
// what library.cpp and library_lt.cpp share. Not a public header.
#include <cuda.h>

#include <cstdint>
#include <memory>
#include <string>

#include "kqual/core/dtype.hpp"
#include "kqual/cuda/objects.hpp"

namespace kqual::cuda::detail {

// libcublasLt.so.<major> in the folder of a named libcublas.so.<major>[...], or "" (library.cpp).
std::string sibling_cublaslt_of(const std::string& cublas_path);

struct LtPlan;  // descriptors, layouts and the heuristic's algorithm for one call
// Loads cuBLASLt, creates the process's handle and workspace, and asks the heuristic for one algorithm:
// all at plan time, so that lt_enqueue is the matmul only.
std::shared_ptr<LtPlan> lt_prepare(DType t, std::int64_t m, std::int64_t n, std::int64_t k, CUdeviceptr a, CUdeviceptr b,
                                   CUdeviceptr c);
void lt_enqueue(const LtPlan& p, CUstream stream);
std::string lt_version();       // "cuBLASLt 13.1.0 (<path>)"
std::string lt_library_path();  // "" before a load

}  // namespace kqual::cuda::detail
