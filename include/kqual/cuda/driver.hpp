#pragma once
// The CUDA driver API, loaded at run time (dlopen libcuda.so.1 + cuGetProcAddress) so that every
// CPU-side command runs on machines without a driver. Only worker processes and GPU tests call
// into it; the coordinating process never does (README, "Workers").
#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "kqual/core/error.hpp"

namespace kqual::cuda {

// One member per entry point; the type comes from cuda.h (the macro there picks the versioned
// symbol), the lookup uses the base name with this header's CUDA_VERSION.
#define KQUAL_CUDA_DRIVER_FUNCTIONS(X)                                                              \
  X(cuInit) X(cuDriverGetVersion) X(cuGetErrorName) X(cuGetErrorString) X(cuDeviceGetCount)         \
  X(cuDeviceGet) X(cuDeviceGetName) X(cuDeviceGetAttribute) X(cuDeviceTotalMem)                     \
  X(cuDevicePrimaryCtxRetain) X(cuDevicePrimaryCtxRelease) X(cuCtxSetCurrent) X(cuCtxSynchronize)   \
  X(cuCtxGetLimit) X(cuModuleLoadDataEx) X(cuModuleUnload) X(cuModuleGetFunction) X(cuModuleGetGlobal) \
  X(cuFuncGetAttribute) X(cuFuncSetAttribute) X(cuFuncGetParamInfo) X(cuLaunchKernel)               \
  X(cuMemAlloc) X(cuMemFree) X(cuMemcpyHtoD) X(cuMemcpyDtoH) X(cuMemcpyDtoDAsync)                   \
  X(cuMemsetD8) X(cuMemsetD32Async) X(cuMemsetD8Async) X(cuMemAllocHost) X(cuMemFreeHost)           \
  X(cuMemGetInfo) X(cuStreamCreate) X(cuStreamDestroy) X(cuStreamSynchronize) X(cuEventCreate)      \
  X(cuEventDestroy) X(cuEventRecord) X(cuEventSynchronize) X(cuEventElapsedTime)                    \
  X(cuCtxResetPersistingL2Cache) X(cuModuleGetLoadingMode) X(cuMemAddressReserve) X(cuMemAddressFree)     \
  X(cuMemCreate) X(cuMemRelease) X(cuMemMap) X(cuMemUnmap) X(cuMemSetAccess)                        \
  X(cuMemGetAllocationGranularity) X(cuDeviceGetPCIBusId) X(cuStreamBeginCapture) X(cuStreamEndCapture)   \
  X(cuGraphInstantiateWithFlags) X(cuGraphLaunch) X(cuGraphExecDestroy) X(cuGraphDestroy)

struct DriverApi {
#define KQUAL_CUDA_MEMBER(name) decltype(&::name) name = nullptr;
  KQUAL_CUDA_DRIVER_FUNCTIONS(KQUAL_CUDA_MEMBER)
#undef KQUAL_CUDA_MEMBER
};

// Why the driver cannot be used ("libcuda.so.1 not found", "cuInit: CUDA_ERROR_NO_DEVICE", ...),
// or empty when it can. Never throws; caches the answer.
std::string driver_unavailable_reason();
inline bool driver_available() { return driver_unavailable_reason().empty(); }

// The loaded API, cuInit(0) done. Throws Error(cuda) with driver_unavailable_reason() otherwise.
const DriverApi& driver();

// A failed driver call; code() tells sticky errors (the context is unusable) from the rest.
class CudaError : public Error {
 public:
  CudaError(CUresult code, std::string message) : Error(ErrorKind::cuda, std::move(message)), code_(code) {}
  CUresult code() const noexcept { return code_; }
  // Errors after which the context cannot be used again (the worker must be replaced).
  bool sticky() const noexcept;

 private:
  CUresult code_;
};

// Throws CudaError "file:line: call failed: CUDA_ERROR_X (string)" unless r == CUDA_SUCCESS.
void check(CUresult r, const char* call, const char* file, int line);
std::string error_name(CUresult r);

}  // namespace kqual::cuda

// KQUAL_CU(cuMemAlloc, &ptr, bytes): call through the loaded table and check the result.
#define KQUAL_CU(fn, ...) \
  ::kqual::cuda::check(::kqual::cuda::driver().fn(__VA_ARGS__), #fn "(" #__VA_ARGS__ ")", __FILE__, __LINE__)
