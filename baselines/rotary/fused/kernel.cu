// Fused rotary baseline: the plain one-kernel form, one thread per output element over
// [tokens, heads, d]; element j reads its partner j +- half and cos/sin[t, j % half]. Two threads
// read each x element, so it is not in-place safe (the manifest does not claim in_place).
#include <cuda_bf16.h>

__device__ __forceinline__ float to_f(float v) { return v; }
__device__ __forceinline__ float to_f(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ void put(float* p, long long i, float v) { p[i] = v; }
__device__ __forceinline__ void put(__nv_bfloat16* p, long long i, float v) { p[i] = __float2bfloat16_rn(v); }

template <typename T>
__global__ void rotary_fused(const T* x, const float* cos, const float* sin, T* y, long long tokens, long long heads,
                             long long half) {
  const long long d = 2 * half, total = tokens * heads * d;
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= total) return;
  const long long t = i / (heads * d), j = i % d, jj = j % half;
  const float c = cos[t * half + jj], s = sin[t * half + jj];
  const float v = to_f(x[i]);
  put(y, i, j < half ? v * c - to_f(x[i + half]) * s : v * c + to_f(x[i - half]) * s);
}
