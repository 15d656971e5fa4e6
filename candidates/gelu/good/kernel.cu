// GELU (tanh form), elementwise, grid-stride with 64-bit indices: each thread takes four independent
// elements per iteration (i, i + stride, i + 2 stride, i + 3 stride: every access coalesced, no
// alignment needed), then a remainder loop for the last < 4 stride elements. f32 arithmetic with
// tanhf (2 ulp); 0.5 x (1 + tanh(u)) literally, as PyTorch: gelu(-Inf) = -Inf * 0 = NaN (see gelu_f).
// Known-broken variants are this file plus one define (candidates/gelu/broken/*/kqual.toml):
//   KQUAL_BUG_FAST_TANH     tanh.approx.f32 (relative error 2^-11): f32 results off by ~4e-6 at |x| ~ 1
//   KQUAL_BUG_EXP_TANH      tanh(u) = (e^2u - 1) / (e^2u + 1): e^2u overflows above x ~ 10.8, Inf / Inf = NaN
//   KQUAL_BUG_MISSING_TAIL  no remainder loop: the last elements (unless n is a multiple of 4 x the
//                           grid's threads) are never written
#include <cuda_bf16.h>

__device__ __forceinline__ float kq_load(const float* p, long long i) { return p[i]; }
__device__ __forceinline__ float kq_load(const __nv_bfloat16* p, long long i) { return __bfloat162float(p[i]); }
__device__ __forceinline__ void kq_store(float* p, long long i, float v) { p[i] = v; }
__device__ __forceinline__ void kq_store(__nv_bfloat16* p, long long i, float v) { p[i] = __float2bfloat16_rn(v); }

__device__ __forceinline__ float kq_tanh(float u) {
#if defined(KQUAL_BUG_FAST_TANH)
  float t;
  asm("tanh.approx.f32 %0, %1;" : "=f"(t) : "f"(u));
  return t;
#elif defined(KQUAL_BUG_EXP_TANH)
  const float e = expf(2.0f * u);
  return (e - 1.0f) / (e + 1.0f);
#else
  return tanhf(u);
#endif
}

__device__ __forceinline__ float gelu_f(float x) {
  const float u = 0.7978845608028654f * fmaf(0.044715f * x, x * x, x);  // sqrt(2/pi) (x + 0.044715 x^3)
  const float h = 1.0f + kq_tanh(u);
  // h is exactly 0 once tanhf saturates at -1 (x below ~ -9, where |gelu(x)| < 1e-30): -0 then; at
  // x = -Inf, -Inf * 0 = NaN, the contract's (and PyTorch's) value. A NaN keeps h NaN.
  return 0.5f * x * h;
}

template <typename T>
__global__ void __launch_bounds__(256) gelu(const T* x, T* y, long long n) {
  const long long stride = (long long)gridDim.x * blockDim.x;
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  for (; i + 3 * stride < n; i += 4 * stride) {
    float v[4];
#pragma unroll
    for (int k = 0; k < 4; ++k) v[k] = kq_load(x, i + k * stride);  // all loads first: in place is safe
#pragma unroll
    for (int k = 0; k < 4; ++k) kq_store(y, i + k * stride, gelu_f(v[k]));
  }
#ifndef KQUAL_BUG_MISSING_TAIL
  for (; i < n; i += stride) kq_store(y, i, gelu_f(kq_load(x, i)));
#endif
}
