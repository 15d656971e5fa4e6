// Dynamic per-row int8 quantization, one block of 256 threads per row (grid-stride over rows, 64-bit
// indices), two passes over the row: the row's max |x| (a per-thread max, a warp-shuffle max, then
// the warps' maxima through shared memory; a maximum is exact in any order), then
// q = round_half_even(x * (127 / max)) clamped to [-127, 127] (rintf; fminf / fmaxf clamp first).
// scale = max / 127 is written by thread 0. An all-zero row gets 127 / max replaced by 0: q = 0,
// scale = 0. Rows are read as float4 and written as char4 where cols is a multiple of 4 and x and q
// start aligned (every row then is); else element by element. The second pass re-reads the row
// (L1/L2), so any cols works with no shared-memory or register limit.
// Known-broken variants are this file plus one define (candidates/int8_row_quantize/broken/*/kqual.toml):
//   KQUAL_BUG_ROUND_AWAY     roundf: ties away from zero (2.5 -> 3) instead of to even (2)
//   KQUAL_BUG_TRUNCATE       the code by truncation toward zero (a plain int conversion)
//   KQUAL_BUG_SCALE_128      scale = max / 128 (and codes x * 128 / max): the int8 range's -128 taken as its width
//   KQUAL_BUG_WARP_MAX       no block-wide step: each warp quantizes with the max of its own columns,
//                            and the scale written is warp 0's: the row max over a partial row
//   KQUAL_BUG_NO_ZERO_GUARD  127 / max without the max > 0 guard: an all-zero row gives 0 * Inf = NaN,
//                            which the fmaxf / fminf clamp turns into -127
__device__ __forceinline__ float kq_warp_max(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// The max over the block, returned to every thread; part holds one float per warp.
__device__ __forceinline__ float kq_block_max(float v, float* part) {
  v = kq_warp_max(v);
#if defined(KQUAL_BUG_WARP_MAX)
  return v;
#else
  if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = v;
  __syncthreads();
  float m = 0.0f;
  for (int k = 0; k < int(blockDim.x >> 5); ++k) m = fmaxf(m, part[k]);
  __syncthreads();  // part is reused by the next row
  return m;
#endif
}

__device__ __forceinline__ signed char kq_code(float x, float inv) {
  const float v = fminf(fmaxf(x * inv, -127.0f), 127.0f);  // NaN (0 * Inf) becomes -127 here
#if defined(KQUAL_BUG_ROUND_AWAY)
  return (signed char)(int)roundf(v);
#elif defined(KQUAL_BUG_TRUNCATE)
  return (signed char)(int)v;
#else
  return (signed char)(int)rintf(v);
#endif
}

#if defined(KQUAL_BUG_SCALE_128)
#define KQ_LEVELS 128.0f
#else
#define KQ_LEVELS 127.0f
#endif

__global__ void __launch_bounds__(256) int8_row_quantize(const float* __restrict__ x, signed char* __restrict__ q,
                                                         float* __restrict__ scale, long long rows, long long cols) {
  __shared__ float part[8];
  const bool vec = cols % 4 == 0 && (reinterpret_cast<unsigned long long>(x) & 15u) == 0 &&
                   (reinterpret_cast<unsigned long long>(q) & 3u) == 0;
  for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
    const float* xr = x + r * cols;
    signed char* qr = q + r * cols;
    float m = 0.0f;
    if (vec) {
      const float4* x4 = reinterpret_cast<const float4*>(xr);
      for (long long j = threadIdx.x; j < cols / 4; j += blockDim.x) {
        const float4 a = x4[j];
        m = fmaxf(m, fmaxf(fmaxf(fabsf(a.x), fabsf(a.y)), fmaxf(fabsf(a.z), fabsf(a.w))));
      }
    } else {
      for (long long j = threadIdx.x; j < cols; j += blockDim.x) m = fmaxf(m, fabsf(xr[j]));
    }
    m = kq_block_max(m, part);
#if defined(KQUAL_BUG_NO_ZERO_GUARD)
    const float inv = KQ_LEVELS / m;
#else
    const float inv = m > 0.0f ? KQ_LEVELS / m : 0.0f;
#endif
    if (threadIdx.x == 0) scale[r] = m / KQ_LEVELS;
    if (vec) {
      const float4* x4 = reinterpret_cast<const float4*>(xr);
      char4* q4 = reinterpret_cast<char4*>(qr);
      for (long long j = threadIdx.x; j < cols / 4; j += blockDim.x) {
        const float4 a = x4[j];
        q4[j] = make_char4(kq_code(a.x, inv), kq_code(a.y, inv), kq_code(a.z, inv), kq_code(a.w, inv));
      }
    } else {
      for (long long j = threadIdx.x; j < cols; j += blockDim.x) qr[j] = kq_code(xr[j], inv);
    }
  }
}
