// cuBLASLt's matmul as a library routine ("cublaslt.gemm"): the same row-major C = A·B as cublas.gemm
// through the lightweight API, so that one build of cuBLAS can be judged cuBLAS against cuBLASLt
// (kqual compare LIB LIB --new-api cublaslt; docs/upgrade.md). dlopen'ed at run time, never linked:
// the libcublasLt beside KQUAL_CUBLAS_LIBRARY when that names a file, else the default search.
#include <cublasLt.h>  // types and enum values only
#include <dlfcn.h>
#include <fmt/format.h>

#include <cstdlib>
#include <mutex>

#include "library_lt.hpp"
#include "kqual/core/error.hpp"

namespace kqual::cuda::detail {
namespace {

struct LtApi {
  void* lib = nullptr;
  std::string path;
  decltype(&::cublasLtCreate) create = nullptr;
  decltype(&::cublasLtGetVersion) get_version = nullptr;
  decltype(&::cublasLtMatmulDescCreate) desc_create = nullptr;
  decltype(&::cublasLtMatmulDescDestroy) desc_destroy = nullptr;
  decltype(&::cublasLtMatrixLayoutCreate) layout_create = nullptr;
  decltype(&::cublasLtMatrixLayoutDestroy) layout_destroy = nullptr;
  decltype(&::cublasLtMatmulPreferenceCreate) pref_create = nullptr;
  decltype(&::cublasLtMatmulPreferenceDestroy) pref_destroy = nullptr;
  decltype(&::cublasLtMatmulPreferenceSetAttribute) pref_set = nullptr;
  decltype(&::cublasLtMatmulAlgoGetHeuristic) heuristic = nullptr;
  decltype(&::cublasLtMatmul) matmul = nullptr;
  cublasLtHandle_t h = nullptr;  // one per process
  DeviceBuffer* workspace = nullptr;  // never freed: lives as long as the handle
};

LtApi& lt() {
  static LtApi a;
  return a;
}

void check(cublasStatus_t s, const char* call) {
  if (s != CUBLAS_STATUS_SUCCESS) throw_error(ErrorKind::cuda, fmt::format("{} failed: cublasStatus {}", call, int(s)));
}

constexpr std::size_t kWorkspaceBytes = std::size_t(32) << 20;  // as cublas.gemm's

void load() {
  static std::mutex m;
  std::lock_guard<std::mutex> lock(m);
  LtApi& a = lt();
  if (a.lib) return;
  std::vector<std::string> tries;
  if (const char* e = std::getenv("KQUAL_CUBLAS_LIBRARY"); e && *e) {
    const std::string beside = sibling_cublaslt_of(e);
    if (beside.empty())
      throw_error(ErrorKind::cuda, fmt::format("no libcublasLt.so beside {} (KQUAL_CUBLAS_LIBRARY): cuBLASLt comes from the "
                                               "same build",
                                               e));
    tries = {beside};
  } else {
    tries = {"libcublasLt.so.13", "/usr/local/cuda/lib64/libcublasLt.so.13"};
  }
  std::string errors;
  for (const auto& p : tries) {
    void* h = ::dlopen(p.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      const char* err = ::dlerror();
      errors += (errors.empty() ? "" : "; ") + std::string(err ? err : p + ": not found");
      continue;
    }
    auto sym = [&](const char* name) {
      void* s = ::dlsym(h, name);
      if (!s) throw_error(ErrorKind::cuda, fmt::format("{} has no symbol {}", p, name));
      return s;
    };
    LtApi n;
    n.path = p;
    n.create = reinterpret_cast<decltype(n.create)>(sym("cublasLtCreate"));
    n.get_version = reinterpret_cast<decltype(n.get_version)>(sym("cublasLtGetVersion"));
    n.desc_create = reinterpret_cast<decltype(n.desc_create)>(sym("cublasLtMatmulDescCreate"));
    n.desc_destroy = reinterpret_cast<decltype(n.desc_destroy)>(sym("cublasLtMatmulDescDestroy"));
    n.layout_create = reinterpret_cast<decltype(n.layout_create)>(sym("cublasLtMatrixLayoutCreate"));
    n.layout_destroy = reinterpret_cast<decltype(n.layout_destroy)>(sym("cublasLtMatrixLayoutDestroy"));
    n.pref_create = reinterpret_cast<decltype(n.pref_create)>(sym("cublasLtMatmulPreferenceCreate"));
    n.pref_destroy = reinterpret_cast<decltype(n.pref_destroy)>(sym("cublasLtMatmulPreferenceDestroy"));
    n.pref_set = reinterpret_cast<decltype(n.pref_set)>(sym("cublasLtMatmulPreferenceSetAttribute"));
    n.heuristic = reinterpret_cast<decltype(n.heuristic)>(sym("cublasLtMatmulAlgoGetHeuristic"));
    n.matmul = reinterpret_cast<decltype(n.matmul)>(sym("cublasLtMatmul"));
    n.lib = h;
    a = std::move(n);
    return;
  }
  throw_error(ErrorKind::cuda, fmt::format("cuBLASLt could not be loaded (tried {}): {}", fmt::join(tries, ", "), errors));
}

cublasLtHandle_t handle() {
  load();
  LtApi& a = lt();
  if (!a.h) {
    check(a.create(&a.h), "cublasLtCreate");
    a.workspace = new DeviceBuffer(kWorkspaceBytes);
  }
  return a.h;
}

}  // namespace

struct LtPlan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algo{};
  CUdeviceptr pa = 0, pb = 0, pc = 0;
  ~LtPlan() {
    LtApi& api = lt();
    if (c) api.layout_destroy(c);
    if (b) api.layout_destroy(b);
    if (a) api.layout_destroy(a);
    if (desc) api.desc_destroy(desc);
  }
};

std::shared_ptr<LtPlan> lt_prepare(DType t, std::int64_t m, std::int64_t n, std::int64_t k, CUdeviceptr A, CUdeviceptr B,
                                   CUdeviceptr C) {
  cublasLtHandle_t h = handle();
  LtApi& api = lt();
  auto p = std::make_shared<LtPlan>();
  p->pa = A, p->pb = B, p->pc = C;
  // f32: pedantic (no TF32), as cublas.gemm. bf16/f16: f32 accumulation and scale.
  const cublasComputeType_t compute = t == DType::f32 ? CUBLAS_COMPUTE_32F_PEDANTIC : CUBLAS_COMPUTE_32F;
  const cudaDataType dt = t == DType::f32 ? CUDA_R_32F : t == DType::f16 ? CUDA_R_16F : CUDA_R_16BF;
  check(api.desc_create(&p->desc, compute, CUDA_R_32F), "cublasLtMatmulDescCreate");
  // Row-major C = A·B is column-major C^T = B^T·A^T: the first operand is B (n x k, ld n), the second
  // A (k x m, ld k), C n x m (ld n), all column-major and not transposed.
  check(api.layout_create(&p->a, dt, std::uint64_t(n), std::uint64_t(k), std::int64_t(n)), "cublasLtMatrixLayoutCreate");
  check(api.layout_create(&p->b, dt, std::uint64_t(k), std::uint64_t(m), std::int64_t(k)), "cublasLtMatrixLayoutCreate");
  check(api.layout_create(&p->c, dt, std::uint64_t(n), std::uint64_t(m), std::int64_t(n)), "cublasLtMatrixLayoutCreate");
  cublasLtMatmulPreference_t pref = nullptr;
  check(api.pref_create(&pref), "cublasLtMatmulPreferenceCreate");
  const std::size_t ws = api.workspace->bytes();
  cublasStatus_t s = api.pref_set(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws);
  // As cublas.gemm's CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION: a split-K reduction only in the
  // compute type (f32), never in place in the output type, so C is rounded once.
  const std::uint32_t schemes = CUBLASLT_REDUCTION_SCHEME_NONE | CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;
  if (s == CUBLAS_STATUS_SUCCESS) s = api.pref_set(pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &schemes, sizeof schemes);
  // The pointers' own alignment (the heuristic assumes 256 bytes otherwise): views offset by an element
  // get an algorithm that can read them.
  const cublasLtMatmulPreferenceAttributes_t align_attr[4] = {
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
  const CUdeviceptr operand[4] = {B, A, C, C};  // the first operand is B (row-major → column-major swap)
  for (int i = 0; i < 4 && s == CUBLAS_STATUS_SUCCESS; ++i) {
    std::uint32_t align = 256;
    while (align > 1 && operand[i] % align != 0) align /= 2;
    s = api.pref_set(pref, align_attr[i], &align, sizeof align);
  }
  cublasLtMatmulHeuristicResult_t result{};
  int returned = 0;
  if (s == CUBLAS_STATUS_SUCCESS) s = api.heuristic(h, p->desc, p->a, p->b, p->c, p->c, pref, 1, &result, &returned);
  api.pref_destroy(pref);
  check(s, "cublasLtMatmulAlgoGetHeuristic");
  if (returned < 1)
    throw_error(ErrorKind::cuda, fmt::format("cuBLASLt has no algorithm for a {} gemm m={} n={} k={}", to_string(t), m, n, k));
  p->algo = result.algo;
  return p;
}

void lt_enqueue(const LtPlan& p, CUstream stream) {
  LtApi& api = lt();
  const float alpha = 1.0f, beta = 0.0f;
  check(api.matmul(api.h, p.desc, &alpha, reinterpret_cast<const void*>(p.pb), p.a, reinterpret_cast<const void*>(p.pa), p.b,
                   &beta, reinterpret_cast<const void*>(p.pc), p.c, reinterpret_cast<void*>(p.pc), p.c, &p.algo,
                   reinterpret_cast<void*>(api.workspace->get()), api.workspace->bytes(),
                   reinterpret_cast<cudaStream_t>(stream)),
        "cublasLtMatmul");
}

std::string lt_version() {
  load();
  const std::size_t v = lt().get_version();
  return fmt::format("cuBLASLt {}.{}.{} ({})", v / 10000, v / 100 % 100, v % 100, lt().path);
}

std::string lt_library_path() { return lt().path; }

}  // namespace kqual::cuda::detail
