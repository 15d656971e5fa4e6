// SwiGLU gating y = silu(a) * b, elementwise, grid-stride with 64-bit indices: each thread takes four
// independent elements per iteration (i, i + stride, ...: coalesced, no alignment needed), then a
// remainder loop. f32 arithmetic: silu(a) = a / (1 + expf(-a)) with an IEEE divide, as PyTorch's silu:
// -0 once expf(-a) overflows (a < ~ -88.7), and -Inf / Inf = NaN at a = -Inf (the contract's value).
// Known-broken variants are this file plus one define (candidates/swiglu/broken/*/kqual.toml):
//   KQUAL_BUG_SWAPPED_GATE    the activation on the wrong half: silu(b) * a (gate and up confused)
//   KQUAL_BUG_CLAMP_NAN       clamps the gate with fmaxf(a, -80) "to keep expf finite": fmaxf(NaN, -80)
//                             is -80, so a NaN (or -Inf) gate gives a finite result
//   KQUAL_BUG_TAIL_OFF_BY_ONE the remainder loop stops at n - 1: the last element is never written
#include <cuda_bf16.h>

__device__ __forceinline__ float kq_load(const float* p, long long i) { return p[i]; }
__device__ __forceinline__ float kq_load(const __nv_bfloat16* p, long long i) { return __bfloat162float(p[i]); }
__device__ __forceinline__ void kq_store(float* p, long long i, float v) { p[i] = v; }
__device__ __forceinline__ void kq_store(__nv_bfloat16* p, long long i, float v) { p[i] = __float2bfloat16_rn(v); }

__device__ __forceinline__ float silu_mul(float gate, float up) {
#ifdef KQUAL_BUG_CLAMP_NAN
  gate = fmaxf(gate, -80.0f);
#endif
  return gate / (1.0f + expf(-gate)) * up;  // silu(gate) * up; NaN stays NaN
}

__device__ __forceinline__ float swiglu_f(float a, float b) {
#ifdef KQUAL_BUG_SWAPPED_GATE
  return silu_mul(b, a);
#else
  return silu_mul(a, b);
#endif
}

template <typename T>
__global__ void __launch_bounds__(256) swiglu(const T* a, const T* b, T* y, long long n) {
  const long long stride = (long long)gridDim.x * blockDim.x;
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  for (; i + 3 * stride < n; i += 4 * stride) {
    float va[4], vb[4];
#pragma unroll
    for (int k = 0; k < 4; ++k) {  // all loads first: y may alias a
      va[k] = kq_load(a, i + k * stride);
      vb[k] = kq_load(b, i + k * stride);
    }
#pragma unroll
    for (int k = 0; k < 4; ++k) kq_store(y, i + k * stride, swiglu_f(va[k], vb[k]));
  }
#ifdef KQUAL_BUG_TAIL_OFF_BY_ONE
  const long long end = n - 1;
#else
  const long long end = n;
#endif
  for (; i < end; i += stride) kq_store(y, i, swiglu_f(kq_load(a, i), kq_load(b, i)));
}
