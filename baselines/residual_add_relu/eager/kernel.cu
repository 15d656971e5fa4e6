// Eager baseline: one primitive kernel per step with the intermediate in memory, as a framework
// running op by op does: t = x + r (stored in the output dtype), then y = relu(t).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

__device__ __forceinline__ float to_f(float v) { return v; }
__device__ __forceinline__ float to_f(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ float to_f(__half v) { return __half2float(v); }
template <typename T> __device__ __forceinline__ T from_f(float v);
template <> __device__ __forceinline__ float from_f<float>(float v) { return v; }
template <> __device__ __forceinline__ __nv_bfloat16 from_f<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }
template <> __device__ __forceinline__ __half from_f<__half>(float v) { return __float2half_rn(v); }

template <typename T>
__global__ void add_kernel(const T* x, const T* r, T* t, long long n) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) t[i] = from_f<T>(__fadd_rn(to_f(x[i]), to_f(r[i])));
}

template <typename T>
__global__ void relu_kernel(const T* t, T* y, long long n) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float v = to_f(t[i]);
    y[i] = from_f<T>(v > 0.0f ? v : (v != v ? v : 0.0f));
  }
}
