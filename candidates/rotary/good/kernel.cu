// Rotary embedding (GPT-NeoX rotate-half), one warp per (token, head) row, grid-stride over rows:
// lane i handles the pair (i, i + half), reading both x values before writing either y value, so
// y may alias x (in place). f32 arithmetic, one rounding to T on the store; 64-bit indices.
// Known-broken variants are this file plus one define (candidates/rotary/broken/*/kqual.toml):
//   KQUAL_BUG_SIN_SIGN     rotates by -angle: y1 = x1 c + x2 s, y2 = x2 c - x1 s (sin's sign swapped)
//   KQUAL_BUG_INTERLEAVED  GPT-J form: rotates adjacent pairs (2i, 2i + 1) instead of (i, i + half)
//   KQUAL_BUG_MISSING_TAIL rows walked in whole groups of 4 pairs only (a vectorised loop whose
//                          scalar tail was forgotten): the last half % 4 pairs stay unwritten
#include <cuda_bf16.h>

__device__ __forceinline__ float kq_load(const float* p, long long i) { return p[i]; }
__device__ __forceinline__ float kq_load(const __nv_bfloat16* p, long long i) { return __bfloat162float(p[i]); }
__device__ __forceinline__ void kq_store(float* p, long long i, float v) { p[i] = v; }
__device__ __forceinline__ void kq_store(__nv_bfloat16* p, long long i, float v) { p[i] = __float2bfloat16_rn(v); }

template <typename T>
__global__ void __launch_bounds__(128) rotary(const T* x, const float* cos, const float* sin, T* y, long long tokens,
                                              long long heads, long long half) {
  const long long rows = tokens * heads;
  const long long d = 2 * half;
  const int lane = threadIdx.x & 31;
  const long long warps = (long long)gridDim.x * (blockDim.x >> 5);
#ifdef KQUAL_BUG_MISSING_TAIL
  const long long end = half - half % 4;
#else
  const long long end = half;
#endif
  for (long long r = (long long)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5); r < rows; r += warps) {
    const long long t = r / heads;
    const long long row = r * d;
    for (long long i = lane; i < end; i += 32) {
#ifdef KQUAL_BUG_INTERLEAVED
      const long long lo = row + 2 * i, hi = lo + 1;
#else
      const long long lo = row + i, hi = lo + half;
#endif
      const float c = cos[t * half + i], s = sin[t * half + i];
      const float x1 = kq_load(x, lo), x2 = kq_load(x, hi);
#ifdef KQUAL_BUG_SIN_SIGN
      kq_store(y, lo, x1 * c + x2 * s);
      kq_store(y, hi, x2 * c - x1 * s);
#else
      kq_store(y, lo, x1 * c - x2 * s);
      kq_store(y, hi, x2 * c + x1 * s);
#endif
    }
  }
}
