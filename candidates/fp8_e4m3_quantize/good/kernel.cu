// Per-tensor FP8 quantization, q = e4m3(x / scale) saturated: grid-stride with 64-bit indices, eight
// elements per thread per step (two float4 loads, four paired cvt.rn.satfinite.e4m3x2.f32 conversions,
// one 8-byte store), then the last n % 8 elements one by one. The quotient is x * (1 / scale), the
// reciprocal taken once per thread (two f32 roundings; the contract admits either neighbour near a
// rounding boundary, and a power-of-two scale keeps it exact). Rows of x or q off their vector
// alignment (a start offset) take the element-by-element loop throughout.
// Known-broken variants are this file plus one define (candidates/fp8_e4m3_quantize/broken/*/kqual.toml):
//   KQUAL_BUG_NO_SATURATION  __NV_NOSAT: quotients past 464 and +-Inf become NaN (e4m3 has no Inf)
//   KQUAL_BUG_MUL_SCALE      x * scale: the scale applied the dequantization way round
//   KQUAL_BUG_E5M2           encodes e5m2 (__NV_E5M2) into the e4m3 output
//   KQUAL_BUG_TRUNCATE       clears the 20 f32 mantissa bits e4m3 has no room for: round toward zero
//   KQUAL_BUG_NO_TAIL        no element-by-element loop after the vectors: the last n % 8 never written
#include <cuda_fp8.h>

// Two quotients to two e4m3 codes, the first in the low byte.
__device__ __forceinline__ unsigned short kq_fp8x2(float a, float b) {
#if defined(KQUAL_BUG_TRUNCATE)
  // Exact in the normal e4m3 range after the mask, so the conversion rounds nothing there.
  a = __uint_as_float(__float_as_uint(a) & 0xFFF00000u);
  b = __uint_as_float(__float_as_uint(b) & 0xFFF00000u);
#endif
#if defined(KQUAL_BUG_NO_SATURATION)
  return __nv_cvt_float2_to_fp8x2(make_float2(a, b), __NV_NOSAT, __NV_E4M3);
#elif defined(KQUAL_BUG_E5M2)
  return __nv_cvt_float2_to_fp8x2(make_float2(a, b), __NV_SATFINITE, __NV_E5M2);
#else
  return __nv_cvt_float2_to_fp8x2(make_float2(a, b), __NV_SATFINITE, __NV_E4M3);
#endif
}

__device__ __forceinline__ unsigned char kq_fp8(float a) { return (unsigned char)(kq_fp8x2(a, 0.0f) & 0xFFu); }

__global__ void __launch_bounds__(256) fp8_e4m3_quantize(const float* __restrict__ x, const float* __restrict__ scale,
                                                         __nv_fp8_storage_t* __restrict__ q, long long n) {
#if defined(KQUAL_BUG_MUL_SCALE)
  const float k = scale[0];
#else
  const float k = 1.0f / scale[0];
#endif
  const long long stride = (long long)gridDim.x * blockDim.x;
  const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  long long tail = 0;  // where the element-by-element loop starts
  if ((reinterpret_cast<unsigned long long>(x) & 15u) == 0 && (reinterpret_cast<unsigned long long>(q) & 7u) == 0) {
    const long long vectors = n / 8;
    const float4* x4 = reinterpret_cast<const float4*>(x);
    uint2* q8 = reinterpret_cast<uint2*>(q);
    for (long long v = t; v < vectors; v += stride) {
      const float4 a = x4[2 * v], b = x4[2 * v + 1];
      uint2 out;
      out.x = (unsigned)kq_fp8x2(a.x * k, a.y * k) | ((unsigned)kq_fp8x2(a.z * k, a.w * k) << 16);
      out.y = (unsigned)kq_fp8x2(b.x * k, b.y * k) | ((unsigned)kq_fp8x2(b.z * k, b.w * k) << 16);
      q8[v] = out;
    }
#if defined(KQUAL_BUG_NO_TAIL)
    return;
#endif
    tail = vectors * 8;
  }
  for (long long i = tail + t; i < n; i += stride) q[i] = kq_fp8(x[i] * k);
}
