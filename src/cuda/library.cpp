#include "kqual/cuda/library.hpp"

#include <cublas_api.h>  // types and enum values only: cuBLAS is dlopen'ed, never linked
#include <dlfcn.h>
#include <fmt/format.h>
#include <link.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <mutex>

#include "cub_ops.hpp"
#include "library_lt.hpp"
#include "kqual/core/error.hpp"

namespace kqual::cuda {

std::string LibraryRoutine::signature() const {
  std::vector<std::string> a(pointers.begin(), pointers.end());
  for (auto s : scalars) a.push_back(fmt::format("{}:{}", s, scalar_type));
  return fmt::format("{}<T>({})", name, fmt::join(a, ", "));
}

const std::vector<LibraryRoutine>& library_routines() {
  static const std::vector<LibraryRoutine> v = {
      {"cub.exclusive_sum", "CUB", "cub::DeviceScan::ExclusiveSum", {"in", "out"}, {"n"}, "i64", {DType::i32, DType::f32}},
      {"cub.segmented_sum", "CUB", "cub::DeviceSegmentedReduce::Reduce (row sums, f32 accumulation)", {"in", "out"},
       {"rows", "cols"}, "i64", {DType::f32, DType::bf16}},
      {"cub.sum", "CUB", "cub::DeviceReduce::Sum", {"in", "out"}, {"n"}, "i64", {DType::f32}},
      // cuBLAS takes int sizes: larger problems are refused by the plan, not truncated.
      {"cublas.gemm", "cuBLAS", "cublasSgemm_v2 (f32) / cublasGemmEx (bf16, f16; CUBLAS_COMPUTE_32F)", {"a", "b", "c"},
       {"m", "n", "k"}, "i32", {DType::f32, DType::bf16, DType::f16}},
      {"cublaslt.gemm", "cuBLASLt",
       "cublasLtMatmul, the heuristic's first algorithm (f32: CUBLAS_COMPUTE_32F_PEDANTIC; bf16, f16: CUBLAS_COMPUTE_32F)",
       {"a", "b", "c"}, {"m", "n", "k"}, "i32", {DType::f32, DType::bf16, DType::f16}},
  };
  return v;
}

const LibraryRoutine* find_library_routine(std::string_view name) {
  for (const auto& r : library_routines())
    if (r.name == name) return &r;
  return nullptr;
}

LibraryName split_library_name(const std::string& full) {
  LibraryName n;
  auto lt = full.find('<');
  n.routine = full.substr(0, lt);
  if (lt != std::string::npos) {
    auto gt = full.rfind('>');
    n.type = gt == std::string::npos || gt < lt ? full.substr(lt + 1) : full.substr(lt + 1, gt - lt - 1);
  }
  return n;
}

std::string cub_version() {
  int v = cub_ops::version(), nv = cub_ops::nvcc_version();
  return fmt::format("CUB {}.{}.{} (CCCL, nvcc {}.{}, sm_90 SASS + compute_90 PTX)", v / 100000, v / 100 % 1000, v % 100,
                     nv / 1000, nv % 1000 / 10);
}

// ---- cuBLAS, loaded at run time ------------------------------------------------------------------
namespace {

using GemmExFn = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void*,
                                    const void*, cudaDataType, int, const void*, cudaDataType, int, const void*, void*,
                                    cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t);

struct CublasApi {
  void* handle_lib = nullptr;
  std::string path;
  std::string lt_path;  // the libcublasLt loaded beside it, before it ("" when none was found there)
  decltype(&::cublasCreate_v2) create = nullptr;
  decltype(&::cublasSetStream_v2) set_stream = nullptr;
  decltype(&::cublasSetMathMode) set_math_mode = nullptr;
  decltype(&::cublasSetWorkspace_v2) set_workspace = nullptr;
  decltype(&::cublasSgemm_v2) sgemm = nullptr;
  GemmExFn gemm_ex = nullptr;
  decltype(&::cublasGetVersion_v2) get_version = nullptr;
  decltype(&::cublasGetStatusString) status_string = nullptr;
  // One handle per process (the worker), created on the current (primary) context.
  cublasHandle_t h = nullptr;
  DeviceBuffer* workspace = nullptr;  // deliberately never freed: it lives as long as the handle, and the
                                      // context may be gone when static destructors run
  int math_mode = -1;
  CUstream stream = nullptr;
  bool stream_bound = false;
};

CublasApi& api() {
  static CublasApi a;
  return a;
}
std::mutex& api_mutex() {
  static std::mutex m;
  return m;
}

std::string status_text(cublasStatus_t s) {
  const char* t = api().status_string ? api().status_string(s) : nullptr;
  return fmt::format("cublasStatus {} ({})", int(s), t ? t : "?");
}

void check_cublas(cublasStatus_t s, const char* call) {
  if (s != CUBLAS_STATUS_SUCCESS) throw_error(ErrorKind::cuda, fmt::format("{} failed: {}", call, status_text(s)));
}

// cuBLAS's own workspace pool would be allocated lazily inside the first (timed) call; a fixed
// user workspace keeps every allocation at plan time. [bytes] NVIDIA recommends 32 MiB on Hopper.
constexpr std::size_t kCublasWorkspaceBytes = std::size_t(32) << 20;

cublasHandle_t cublas_handle() {
  load_cublas();
  CublasApi& a = api();
  if (!a.h) {
    // Belt and braces: the math mode already excludes TF32 for f32; the override makes sure no
    // environment default can enable it either.
    ::setenv("NVIDIA_TF32_OVERRIDE", "0", 1);
    check_cublas(a.create(&a.h), "cublasCreate_v2");
    a.workspace = new DeviceBuffer(kCublasWorkspaceBytes);
  }
  return a.h;
}

// Stream, workspace and math mode are host-side handle state: set when a call is prepared and
// again only when they change, so the timed region holds nothing but the gemm.
void bind_cublas(CUstream stream, DType t) {
  CublasApi& a = api();
  cublasHandle_t h = cublas_handle();
  if (!a.stream_bound || a.stream != stream) {
    // cublasSetStream resets the workspace to cuBLAS's pool: set the stream, then our workspace.
    check_cublas(a.set_stream(h, reinterpret_cast<cudaStream_t>(stream)), "cublasSetStream_v2");
    check_cublas(a.set_workspace(h, reinterpret_cast<void*>(a.workspace->get()), a.workspace->bytes()), "cublasSetWorkspace_v2");
    a.stream = stream;
    a.stream_bound = true;
  }
  // f32: pedantic (no TF32, no reduced precision anywhere). bf16: tensor cores with f32
  // accumulation (CUBLAS_COMPUTE_32F); no split-K reduction in bf16, so C is rounded once.
  int mode = t == DType::f32 ? int(CUBLAS_PEDANTIC_MATH)
                             : int(CUBLAS_DEFAULT_MATH) | int(CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION);
  if (mode != a.math_mode) {
    check_cublas(a.set_math_mode(h, cublasMath_t(mode)), "cublasSetMathMode");
    a.math_mode = mode;
  }
}

// libcublasLt.so.<major> in the directory of a named libcublas.so.<major>[.<minor>...], or "".
std::string sibling_cublaslt(const std::string& cublas_path) {
  namespace fs = std::filesystem;
  const fs::path p(cublas_path);
  const std::string name = p.filename().string();
  const std::string stem = "libcublas.so";
  if (name.rfind(stem, 0) != 0) return "";
  const std::string suffix = name.substr(stem.size());       // ".13.1.0.3", ".13" or ""
  const std::string major = suffix.substr(0, suffix.find('.', 1));  // ".13" or ""
  std::error_code ec;
  for (const std::string& cand : {"libcublasLt.so" + major, std::string("libcublasLt.so")}) {
    const fs::path lt = p.parent_path() / cand;
    if (fs::exists(lt, ec)) return lt.string();
  }
  return "";
}

}  // namespace

namespace detail {
std::string sibling_cublaslt_of(const std::string& cublas_path) { return sibling_cublaslt(cublas_path); }
}  // namespace detail

void load_cublas() {
  std::lock_guard<std::mutex> lock(api_mutex());
  CublasApi& a = api();
  if (a.handle_lib) return;
  std::vector<std::string> tries;
  if (const char* e = std::getenv("KQUAL_CUBLAS_LIBRARY"); e && *e) {
    tries = {e};
  } else {
    tries = {"libcublas.so.13", "libcublas.so", "/usr/local/cuda/lib64/libcublas.so.13", "/usr/local/cuda/lib64/libcublas.so"};
  }
  std::vector<std::string> errors;
  for (const auto& p : tries) {
    // A named file brings its own cuBLASLt: libcublas finds libcublasLt by soname, and without this the
    // dynamic linker could take another build's from the system's search path.
    const std::string lt = p.find('/') == std::string::npos ? std::string() : sibling_cublaslt(p);
    if (!lt.empty() && !::dlopen(lt.c_str(), RTLD_NOW | RTLD_LOCAL)) {
      const char* err = ::dlerror();
      errors.push_back(fmt::format("{} (the cuBLASLt beside {}): {}", lt, p, err ? err : "dlopen failed"));
      continue;
    }
    void* h = ::dlopen(p.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      const char* err = ::dlerror();
      errors.push_back(err ? err : p + ": not found");
      continue;
    }
    auto sym = [&](const char* name) {
      void* s = ::dlsym(h, name);
      if (!s) throw_error(ErrorKind::cuda, fmt::format("{} has no symbol {} (cuBLAS too old?)", p, name));
      return s;
    };
    try {
      CublasApi n;
      n.path = p;
      n.lt_path = lt;
      n.create = reinterpret_cast<decltype(n.create)>(sym("cublasCreate_v2"));
      n.set_stream = reinterpret_cast<decltype(n.set_stream)>(sym("cublasSetStream_v2"));
      n.set_math_mode = reinterpret_cast<decltype(n.set_math_mode)>(sym("cublasSetMathMode"));
      n.set_workspace = reinterpret_cast<decltype(n.set_workspace)>(sym("cublasSetWorkspace_v2"));
      n.sgemm = reinterpret_cast<decltype(n.sgemm)>(sym("cublasSgemm_v2"));
      n.gemm_ex = reinterpret_cast<GemmExFn>(sym("cublasGemmEx"));
      n.get_version = reinterpret_cast<decltype(n.get_version)>(sym("cublasGetVersion_v2"));
      n.status_string = reinterpret_cast<decltype(n.status_string)>(sym("cublasGetStatusString"));
      n.handle_lib = h;
      a = std::move(n);
      return;
    } catch (...) {
      ::dlclose(h);
      throw;
    }
  }
  throw_error(ErrorKind::cuda, fmt::format("cuBLAS could not be loaded (tried {}): {}", fmt::join(tries, ", "),
                                           fmt::join(errors, "; ")));
}

std::string cublas_library_path() { return api().path; }
std::string cublas_lt_library_path() { return api().lt_path; }
std::string cublaslt_version() { return detail::lt_version(); }
std::string cublaslt_library_path() { return detail::lt_library_path(); }

std::vector<std::string> loaded_library_files(std::string_view needle) {
  std::vector<std::string> out;
  auto visit = [](dl_phdr_info* info, size_t, void* data) -> int {
    auto* st = static_cast<std::pair<std::string_view, std::vector<std::string>*>*>(data);
    const std::string name = info->dlpi_name ? info->dlpi_name : "";
    if (!name.empty() && std::filesystem::path(name).filename().string().find(st->first) != std::string::npos)
      st->second->push_back(name);
    return 0;
  };
  std::pair<std::string_view, std::vector<std::string>*> st{needle, &out};
  dl_iterate_phdr(visit, &st);
  return out;
}

std::string cublas_version() {
  cublasHandle_t h = cublas_handle();
  int v = 0;
  check_cublas(api().get_version(h, &v), "cublasGetVersion_v2");
  return fmt::format("cuBLAS {}.{}.{} ({})", v / 10000, v / 100 % 100, v % 100, api().path);
}

// ---- prepared calls -------------------------------------------------------------------------------

namespace {

void check_cub(int r, const std::string& what) {
  if (r != 0) throw_error(ErrorKind::cuda, fmt::format("{} failed: cudaError {} ({})", what, r, cub_ops::error_string(r)));
}

// One CUB routine over a call's input (ptrs[0]) and output (ptrs[1]). CUB's two-phase convention:
// with temp == nullptr it only writes the temporary storage it needs into `bytes` and does no work;
// with the storage, it enqueues the work on `stream`. Returns CUB's cudaError.
int call_cub_routine(const std::string& routine, DType dtype, void* temp, std::size_t& bytes,
                     const std::vector<CUdeviceptr>& ptrs, const std::vector<std::int64_t>& scalars, CUstream stream) {
  auto* s = reinterpret_cast<CUstream_st*>(stream);
  const void* in = reinterpret_cast<const void*>(ptrs[0]);
  void* out = reinterpret_cast<void*>(ptrs[1]);
  if (routine == "cub.exclusive_sum")
    return dtype == DType::i32 ? cub_ops::exclusive_sum_i32(temp, bytes, static_cast<const std::int32_t*>(in),
                                                            static_cast<std::int32_t*>(out), scalars[0], s)
                               : cub_ops::exclusive_sum_f32(temp, bytes, static_cast<const float*>(in),
                                                            static_cast<float*>(out), scalars[0], s);
  if (routine == "cub.segmented_sum")
    return dtype == DType::bf16 ? cub_ops::row_sum_bf16(temp, bytes, static_cast<const std::uint16_t*>(in),
                                                        static_cast<std::uint16_t*>(out), scalars[0], scalars[1], s)
                                : cub_ops::row_sum_f32(temp, bytes, static_cast<const float*>(in), static_cast<float*>(out),
                                                       scalars[0], scalars[1], s);
  if (routine == "cub.sum")
    return cub_ops::sum_f32(temp, bytes, static_cast<const float*>(in), static_cast<float*>(out), scalars[0], s);
  return 0;
}

}  // namespace

LibraryCall::LibraryCall(const std::string& name, std::vector<CUdeviceptr> pointers, std::vector<std::int64_t> scalars,
                         CUstream stream)
    : name_(name), ptrs_(std::move(pointers)), scalars_(std::move(scalars)) {
  LibraryName n = split_library_name(name);
  routine_ = find_library_routine(n.routine);
  if (!routine_) throw_error(ErrorKind::internal, fmt::format("unknown library routine '{}'", name));
  bool found = false;
  for (DType t : routine_->dtypes)
    if (cxx_type(t) == n.type) {
      dtype_ = t;
      found = true;
    }
  if (!found) throw_error(ErrorKind::internal, fmt::format("library routine '{}': unsupported type '{}'", name, n.type));
  if (ptrs_.size() != routine_->pointers.size() || scalars_.size() != routine_->scalars.size())
    throw_error(ErrorKind::internal, fmt::format("library routine '{}' takes {} pointers and {} scalars, got {} and {}", name,
                                                 routine_->pointers.size(), routine_->scalars.size(), ptrs_.size(),
                                                 scalars_.size()));
  if (n.routine == "cublas.gemm") {
    bind_cublas(stream, dtype_);  // load, create the handle and its workspace now, outside the timed region
    return;
  }
  if (n.routine == "cublaslt.gemm") {  // handle, descriptors and the heuristic's algorithm now
    lt_ = detail::lt_prepare(dtype_, scalars_[0], scalars_[1], scalars_[2], ptrs_[0], ptrs_[1], ptrs_[2]);
    return;
  }
  // CUB: size query (no work), then the allocation — both at plan time.
  std::size_t bytes = 0;
  check_cub(call_cub_routine(n.routine, dtype_, nullptr, bytes, ptrs_, scalars_, stream),
            fmt::format("{} (temporary storage query)", name_));
  temp_bytes_ = std::max<std::size_t>(bytes, 1);
  temp_ = DeviceBuffer(temp_bytes_);
}

LibraryCall::~LibraryCall() = default;
LibraryCall::LibraryCall(LibraryCall&&) noexcept = default;
LibraryCall& LibraryCall::operator=(LibraryCall&&) noexcept = default;

void LibraryCall::enqueue(CUstream stream) {
  if (lt_) return detail::lt_enqueue(*lt_, stream);
  LibraryName n = split_library_name(name_);
  if (n.routine == "cublas.gemm") {
    bind_cublas(stream, dtype_);  // no-op unless the stream or the math mode changed
    CublasApi& a = api();
    cublasHandle_t h = a.h;
    const int m = int(scalars_[0]), nn = int(scalars_[1]), k = int(scalars_[2]);
    const float alpha = 1.0f, beta = 0.0f;
    const void* A = reinterpret_cast<const void*>(ptrs_[0]);
    const void* B = reinterpret_cast<const void*>(ptrs_[1]);
    void* C = reinterpret_cast<void*>(ptrs_[2]);
    // Row-major C = A·B is column-major C^T = B^T·A^T: swap the operands, leading dims n, k, n.
    if (dtype_ == DType::f32) {
      check_cublas(a.sgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, nn, m, k, &alpha, static_cast<const float*>(B), nn,
                           static_cast<const float*>(A), k, &beta, static_cast<float*>(C), nn),
                   "cublasSgemm_v2");
    } else {
      const cudaDataType t = dtype_ == DType::f16 ? CUDA_R_16F : CUDA_R_16BF;
      check_cublas(a.gemm_ex(h, CUBLAS_OP_N, CUBLAS_OP_N, nn, m, k, &alpha, B, t, nn, A, t, k, &beta, C, t, nn,
                             CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                   "cublasGemmEx");
    }
    return;
  }
  std::size_t bytes = temp_bytes_;
  check_cub(call_cub_routine(n.routine, dtype_, reinterpret_cast<void*>(temp_.get()), bytes, ptrs_, scalars_, stream), name_);
}

}  // namespace kqual::cuda
