// Per-tensor FP8 dequantization, y = float(q) * scale: grid-stride with 64-bit indices, eight codes
// per thread per step (one 8-byte load, four paired cvt.rn.f16x2.e4m3x2 conversions, exact since every
// e4m3 value is an f16, one f32 multiplication each, two float4 stores), then the last n % 8 codes one
// by one. q or y off their vector alignment (a start offset) take the element-by-element loop.
// Known-broken variants are this file plus one define (candidates/fp8_e4m3_dequantize/broken/*/kqual.toml):
//   KQUAL_BUG_E5M2           decodes the codes as e5m2 (__NV_E5M2)
//   KQUAL_BUG_NO_SCALE       y = float(q): the scale is never applied
//   KQUAL_BUG_NAN_AS_FINITE  a shift-and-rescale decoder (the code's bits placed in an f32, times 2^120)
//                            without E4M3FN's NaN rule: S.1111.111 reads +-480 instead of NaN
//   KQUAL_BUG_NO_TAIL        no element-by-element loop after the vectors: the last n % 8 never written
#include <cuda_fp16.h>
#include <cuda_fp8.h>

// Two codes (the first in the low byte) to their values.
__device__ __forceinline__ float2 kq_decode2(unsigned short codes) {
#if defined(KQUAL_BUG_NAN_AS_FINITE)
  // Exponent and mantissa moved to an f32's top (bias 127 instead of 7: a factor 2^120 off, subnormals
  // landing on f32 subnormals), then rescaled; the sign copied. Exact for every finite code.
  float2 v;
  const unsigned lo = codes & 0xFFu, hi = codes >> 8;
  v.x = __uint_as_float((lo & 0x80u) << 24 | (lo & 0x7Fu) << 20) * 0x1p120f;
  v.y = __uint_as_float((hi & 0x80u) << 24 | (hi & 0x7Fu) << 20) * 0x1p120f;
  return v;
#else
#if defined(KQUAL_BUG_E5M2)
  const __half2_raw h = __nv_cvt_fp8x2_to_halfraw2(codes, __NV_E5M2);
#else
  const __half2_raw h = __nv_cvt_fp8x2_to_halfraw2(codes, __NV_E4M3);
#endif
  return __half22float2(__half2(h));
#endif
}

__device__ __forceinline__ float2 kq_scaled2(unsigned short codes, float s) {
  float2 v = kq_decode2(codes);
#if !defined(KQUAL_BUG_NO_SCALE)
  v.x *= s;
  v.y *= s;
#endif
  return v;
}

__global__ void __launch_bounds__(256) fp8_e4m3_dequantize(const __nv_fp8_storage_t* __restrict__ q, const float* __restrict__ scale,
                                                           float* __restrict__ y, long long n) {
  const float s = scale[0];
  const long long stride = (long long)gridDim.x * blockDim.x;
  const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  long long tail = 0;  // where the element-by-element loop starts
  if ((reinterpret_cast<unsigned long long>(q) & 7u) == 0 && (reinterpret_cast<unsigned long long>(y) & 15u) == 0) {
    const long long vectors = n / 8;
    const uint2* q8 = reinterpret_cast<const uint2*>(q);
    float4* y4 = reinterpret_cast<float4*>(y);
    for (long long v = t; v < vectors; v += stride) {
      const uint2 c = q8[v];
      const float2 a = kq_scaled2((unsigned short)(c.x & 0xFFFFu), s), b = kq_scaled2((unsigned short)(c.x >> 16), s);
      const float2 d = kq_scaled2((unsigned short)(c.y & 0xFFFFu), s), e = kq_scaled2((unsigned short)(c.y >> 16), s);
      y4[2 * v] = make_float4(a.x, a.y, b.x, b.y);
      y4[2 * v + 1] = make_float4(d.x, d.y, e.x, e.y);
    }
#if defined(KQUAL_BUG_NO_TAIL)
    return;
#endif
    tail = vectors * 8;
  }
  for (long long i = tail + t; i < n; i += stride) y[i] = kq_scaled2((unsigned short)q[i], s).x;
}
