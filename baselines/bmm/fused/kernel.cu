// Fused bmm baseline: the plain one-kernel form, one thread per output c[b, i, j] walking row i of
// a[b] and column j of b[b] straight from global memory, f32 fma accumulation, no tiling.
#include <cuda_bf16.h>

__device__ __forceinline__ float to_f(float v) { return v; }
__device__ __forceinline__ float to_f(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ void put(float* p, long long i, float v) { p[i] = v; }
__device__ __forceinline__ void put(__nv_bfloat16* p, long long i, float v) { p[i] = __float2bfloat16_rn(v); }

template <typename T>
__global__ void bmm_naive(const T* a, const T* b, T* c, long long batch, long long m, long long n, long long k) {
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;  // index into c
  if (i >= batch * m * n) return;
  const long long bi = i / (m * n), r = i / n % m, j = i % n;
  const T* ar = a + (bi * m + r) * k;
  const T* bc = b + bi * k * n + j;
  float s = 0.0f;
  for (long long p = 0; p < k; ++p) s = fmaf(to_f(ar[p]), to_f(bc[p * n]), s);
  put(c, i, s);
}
