// Eager bmm baseline, one primitive kernel per step as a framework without a batched-gemm kernel
// would run it (a copy to make b's columns contiguous, then a plain dot-product kernel):
//   transpose_b: bt[b, j, p] = b[b, p, j]   (bt: a [[scratch]] buffer in T, batch x n x k)
//   dot_rows:    c[b, i, j] = sum_p a[b, i, p] * bt[b, j, p], one thread per output, f32 accumulation
#include <cuda_bf16.h>

__device__ __forceinline__ float to_f(float v) { return v; }
__device__ __forceinline__ float to_f(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ void put(float* p, long long i, float v) { p[i] = v; }
__device__ __forceinline__ void put(__nv_bfloat16* p, long long i, float v) { p[i] = __float2bfloat16_rn(v); }

template <typename T>
__global__ void transpose_b(const T* b, T* bt, long long batch, long long n, long long k) {
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;  // index into b
  if (i >= batch * k * n) return;
  const long long bi = i / (k * n), p = i / n % k, j = i % n;
  bt[(bi * n + j) * k + p] = b[i];
}

template <typename T>
__global__ void dot_rows(const T* a, const T* bt, T* c, long long batch, long long m, long long n, long long k) {
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;  // index into c
  if (i >= batch * m * n) return;
  const long long bi = i / (m * n), r = i / n % m, j = i % n;
  const T* ar = a + (bi * m + r) * k;
  const T* br = bt + (bi * n + j) * k;
  float s = 0.0f;
  for (long long p = 0; p < k; ++p) s = fmaf(to_f(ar[p]), to_f(br[p]), s);
  put(c, i, s);
}
