// Fused GELU baseline: the plain one-kernel form, one element per thread, f32 arithmetic with tanhf.
#include <cuda_bf16.h>

__device__ __forceinline__ float to_f(float v) { return v; }
__device__ __forceinline__ float to_f(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ void put(float* p, long long i, float v) { p[i] = v; }
__device__ __forceinline__ void put(__nv_bfloat16* p, long long i, float v) { p[i] = __float2bfloat16_rn(v); }

template <typename T>
__global__ void gelu_fused(const T* x, T* y, long long n) {
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float v = to_f(x[i]);
  const float h = 1.0f + tanhf(0.7978845608028654f * (v + 0.044715f * v * v * v));
  put(y, i, 0.5f * v * h);  // as PyTorch's: -0 once tanhf saturates, -Inf * 0 = NaN at x = -Inf
}
