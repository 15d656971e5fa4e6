// LayerNorm on f16 tensors (x, w, b, y in __half), statistics in f32: one block of 256 threads per row
// (grid-stride over rows, 64-bit indices), two passes over the row for the mean and then the mean of
// squared deviations from it (never E[x^2] - mean^2), each a per-thread sum, a warp-shuffle and a
// shared-memory reduction; then y = (x - mean) * rsqrt(var + eps) * w + b, rounded once to f16. The
// row is re-read from global memory (L1/L2) by each pass: any cols works, with no register limit.
//
// Columns go in pairs: thread t owns pairs t, t + 256, ... and adds a pair's two values in column
// order. Where the row of x and y and the vectors w and b start on 4-byte boundaries a pair is one
// __half2 access, else two scalar ones; the last, unpaired column of an odd row is always scalar. The
// order of every addition is the same on both paths, so two runs that place the row at different
// alignments give the same bytes (the contract requires it).
//
// Known-broken variants are this file plus one define (candidates/layernorm_f16/broken/*/kqual.toml):
//   KQUAL_BUG_HALF_STATS  the row sum and the sum of squared deviations accumulated in __half (__hadd,
//                         __hfma), as a kernel keeping its statistics in the input type does: 11 bits,
//                         and Inf past 65504
//   KQUAL_BUG_NO_EPS      rsqrt(var) without eps: a constant row gives 0 * rsqrt(0) = 0 * Inf = NaN
//   KQUAL_BUG_ODD_TAIL    the __half2 path writes cols / 2 pairs and forgets the unpaired last column
//   KQUAL_BUG_ONE_PASS    var = E[x^2] - mean^2 from one f32 pass: rows with |mean| >> std lose the variance
#include <cuda_fp16.h>

namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;

// The accumulator of the row statistics: f32, or __half in the known-broken variant.
#ifdef KQUAL_BUG_HALF_STATS
typedef __half acc_t;
__device__ __forceinline__ acc_t acc_of(float v) { return __float2half_rn(v); }
__device__ __forceinline__ float acc_value(acc_t a) { return __half2float(a); }
__device__ __forceinline__ acc_t acc_add(acc_t a, acc_t b) { return __hadd(a, b); }
__device__ __forceinline__ acc_t acc_square_add(acc_t d, acc_t q) { return __hfma(d, d, q); }
#else
typedef float acc_t;
__device__ __forceinline__ acc_t acc_of(float v) { return v; }
__device__ __forceinline__ float acc_value(acc_t a) { return a; }
__device__ __forceinline__ acc_t acc_add(acc_t a, acc_t b) { return a + b; }
__device__ __forceinline__ acc_t acc_square_add(acc_t d, acc_t q) { return fmaf(d, d, q); }
#endif

// The sum of v over the block, returned to every thread; part holds one value per warp. The xor
// butterfly gives every lane the same sum (a + b == b + a bit for bit), the warps' sums are added in
// warp order.
__device__ __forceinline__ acc_t block_sum(acc_t v, acc_t* part) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = acc_add(v, __shfl_xor_sync(0xffffffffu, v, o));
  if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = v;
  __syncthreads();
  acc_t t = acc_of(0.0f);
#pragma unroll
  for (int k = 0; k < kWarps; ++k) t = acc_add(t, part[k]);
  __syncthreads();  // part is reused by the next call
  return t;
}

__device__ __forceinline__ bool aligned4(const void* p) { return (reinterpret_cast<unsigned long long>(p) & 3) == 0; }

// Column pair v of a row: both values, or the unpaired last column (hi unused) of an odd row.
__device__ __forceinline__ float2 load_pair(const __half* r, long long v, bool vec, bool whole) {
  if (vec && whole) return __half22float2(reinterpret_cast<const __half2*>(r)[v]);
  return make_float2(__half2float(r[2 * v]), whole ? __half2float(r[2 * v + 1]) : 0.0f);
}

}  // namespace

__global__ void __launch_bounds__(kThreads) layernorm_f16(const __half* x, const __half* __restrict__ w,
                                                          const __half* __restrict__ b, __half* y, long long rows,
                                                          long long cols, float eps) {
  __shared__ acc_t part[kWarps];
  const long long pairs = (cols + 1) / 2, full = cols / 2;  // pairs, of which `full` hold two columns
  const bool wb_vec = aligned4(w) && aligned4(b);
  for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
    const __half* xr = x + r * cols;
    __half* yr = y + r * cols;
    const bool vec = wb_vec && aligned4(xr) && aligned4(yr);
    acc_t s = acc_of(0.0f);
#ifdef KQUAL_BUG_ONE_PASS
    float q = 0.0f;
    for (long long v = threadIdx.x; v < pairs; v += kThreads) {
      const float2 p = load_pair(xr, v, vec, v < full);
      s = acc_add(s, p.x);
      q = fmaf(p.x, p.x, q);
      if (v < full) {
        s = acc_add(s, p.y);
        q = fmaf(p.y, p.y, q);
      }
    }
    const float mean = acc_value(block_sum(s, part)) / float(cols);
    const float var = block_sum(q, part) / float(cols) - mean * mean;
#else
    for (long long v = threadIdx.x; v < pairs; v += kThreads) {
      const float2 p = load_pair(xr, v, vec, v < full);
      s = acc_add(s, acc_of(p.x));
      if (v < full) s = acc_add(s, acc_of(p.y));
    }
    const float mean = acc_value(block_sum(s, part)) / float(cols);
    acc_t q = acc_of(0.0f);
    for (long long v = threadIdx.x; v < pairs; v += kThreads) {
      const float2 p = load_pair(xr, v, vec, v < full);
      q = acc_square_add(acc_of(p.x - mean), q);
      if (v < full) q = acc_square_add(acc_of(p.y - mean), q);
    }
    const float var = acc_value(block_sum(q, part)) / float(cols);
#endif
#ifdef KQUAL_BUG_NO_EPS
    const float rstd = rsqrtf(var);
#else
    const float rstd = rsqrtf(var + eps);
#endif
    // Each pair is read, then written, by the same thread, after the whole row's statistics: y may
    // alias x.
#ifdef KQUAL_BUG_ODD_TAIL
    const long long written = vec ? full : pairs;
#else
    const long long written = pairs;
#endif
    for (long long v = threadIdx.x; v < written; v += kThreads) {
      const bool whole = v < full;
      const float2 p = load_pair(xr, v, vec, whole);
      const float2 wv = load_pair(w, v, vec, whole), bv = load_pair(b, v, vec, whole);
      const float lo = fmaf((p.x - mean) * rstd, wv.x, bv.x), hi = fmaf((p.y - mean) * rstd, wv.y, bv.y);
      if (vec && whole) {
        reinterpret_cast<__half2*>(yr)[v] = __floats2half2_rn(lo, hi);
      } else {
        yr[2 * v] = __float2half_rn(lo);
        if (whole) yr[2 * v + 1] = __float2half_rn(hi);
      }
    }
  }
}
