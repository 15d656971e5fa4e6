// Known-broken gemm: a bf16 accumulator.
#include <cuda_bf16.h>

__device__ __forceinline__ float to_f(float v) { return v; }
__device__ __forceinline__ float to_f(__nv_bfloat16 v) { return __bfloat162float(v); }
template <typename T> __device__ __forceinline__ T from_f(float v);
template <> __device__ __forceinline__ float from_f<float>(float v) { return v; }
template <> __device__ __forceinline__ __nv_bfloat16 from_f<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }

// BROKEN ON PURPOSE: the running sum is kept in bf16 (8 significant bits, u = 2^-8) instead of
// f32: every FMA result is rounded to bf16. The error grows like sqrt(k) 2^-8 sum|a b|, far over
// the contract's (1.5 sqrt(k) + 4) 2^-24 sum|a b| bound: wrong_result on every k >= 64 random case.
template <typename T>
__global__ void gemm_bf16_acc(const T* a, const T* b, T* c, int m, int n, int k) {
  const int j = blockIdx.x * blockDim.x + threadIdx.x;
  const int i = blockIdx.y * blockDim.y + threadIdx.y;
  if (i >= m || j >= n) return;
  __nv_bfloat16 acc = __float2bfloat16_rn(0.0f);
  for (int p = 0; p < k; ++p)
    acc = __float2bfloat16_rn(fmaf(to_f(a[(size_t)i * k + p]), to_f(b[(size_t)p * n + j]), __bfloat162float(acc)));
  c[(size_t)i * n + j] = from_f<T>(__bfloat162float(acc));
}
