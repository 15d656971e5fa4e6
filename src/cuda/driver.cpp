#include "kqual/cuda/driver.hpp"

#include <dlfcn.h>
#include <fmt/format.h>

#include <mutex>

#include "kqual/core/error.hpp"

namespace kqual::cuda {
namespace {

struct Loaded {
  DriverApi api;
  std::string unavailable;  // empty when usable
};

Loaded load() {
  Loaded l;
  // RTLD_NOW: a broken libcuda fails here, not at the first call in a kernel launch path.
  void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char* e = dlerror();
    l.unavailable = fmt::format("no CUDA driver on this machine (dlopen libcuda.so.1: {})", e ? e : "?");
    return l;
  }
  using GetProc = CUresult (*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);
  auto get_proc = reinterpret_cast<GetProc>(dlsym(h, "cuGetProcAddress_v2"));
  if (!get_proc) {
    l.unavailable = "the CUDA driver is too old: libcuda.so.1 has no cuGetProcAddress_v2 (need a CUDA 12+ driver)";
    return l;
  }
  std::string missing;
#define KQUAL_CUDA_LOOKUP(name)                                                                     \
  {                                                                                                \
    void* p = nullptr;                                                                             \
    CUdriverProcAddressQueryResult st{};                                                           \
    if (get_proc(#name, &p, CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, &st) == CUDA_SUCCESS && p)   \
      l.api.name = reinterpret_cast<decltype(l.api.name)>(p);                                      \
    else                                                                                           \
      missing += std::string(missing.empty() ? "" : ", ") + #name;                                 \
  }
  KQUAL_CUDA_DRIVER_FUNCTIONS(KQUAL_CUDA_LOOKUP)
#undef KQUAL_CUDA_LOOKUP
  // Optional entry points: absent on older drivers, callers check for nullptr.
  auto optional = [](const std::string& name) {
    return name == "cuFuncGetParamInfo" || name == "cuModuleGetLoadingMode" || name == "cuCtxResetPersistingL2Cache";
  };
  std::string required_missing;
  size_t start = 0;
  while (start < missing.size()) {
    size_t end = missing.find(", ", start);
    std::string n = missing.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (!optional(n)) required_missing += (required_missing.empty() ? "" : ", ") + n;
    if (end == std::string::npos) break;
    start = end + 2;
  }
  if (!required_missing.empty()) {
    l.unavailable = "the CUDA driver lacks required entry points: " + required_missing;
    return l;
  }
  CUresult r = l.api.cuInit(0);
  if (r != CUDA_SUCCESS) {
    const char* name = nullptr;
    l.api.cuGetErrorName(r, &name);
    l.unavailable = fmt::format("cuInit(0) failed: {}", name ? name : std::to_string(int(r)));
    return l;
  }
  int count = 0;
  r = l.api.cuDeviceGetCount(&count);
  if (r != CUDA_SUCCESS || count == 0) {
    l.unavailable = "the CUDA driver reports no GPU";
    return l;
  }
  return l;
}

const Loaded& loaded() {
  static const Loaded l = load();
  return l;
}

}  // namespace

std::string driver_unavailable_reason() { return loaded().unavailable; }

const DriverApi& driver() {
  const Loaded& l = loaded();
  if (!l.unavailable.empty()) throw_error(ErrorKind::cuda, l.unavailable);
  return l.api;
}

std::string error_name(CUresult r) {
  const Loaded& l = loaded();
  const char* name = nullptr;
  if (l.api.cuGetErrorName && l.api.cuGetErrorName(r, &name) == CUDA_SUCCESS && name) return name;
  return "CUresult " + std::to_string(int(r));
}

void check(CUresult r, const char* call, const char* file, int line) {
  if (r == CUDA_SUCCESS) return;
  const Loaded& l = loaded();
  const char* desc = nullptr;
  if (!l.api.cuGetErrorString || l.api.cuGetErrorString(r, &desc) != CUDA_SUCCESS || !desc) desc = "no description";
  throw CudaError(r, fmt::format("{}:{}: {} failed: {} ({})", file, line, call, error_name(r), desc));
}

bool CudaError::sticky() const noexcept {
  switch (code_) {
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_LAUNCH_FAILED:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ASSERT:
    case CUDA_ERROR_LAUNCH_TIMEOUT:
    case CUDA_ERROR_ECC_UNCORRECTABLE:
    case CUDA_ERROR_CONTEXT_IS_DESTROYED: return true;
    default: return false;
  }
}

}  // namespace kqual::cuda
