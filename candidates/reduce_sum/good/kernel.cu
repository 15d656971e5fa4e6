// Row sums, f32 accumulation, two modes chosen from cols (the manifest's grid makes the same choice):
//   cols <= 1024: one warp per row (8 rows per block): short rows and many of them.
//   cols >  1024: the row is split into `splits` segments (gridDim.x = rows * splits), one block of
//                 256 threads per segment; splits > 1 only when there are too few rows to fill the
//                 GPU (rows = 1 up to ~sms * 8 rows), so a single long row still uses every SM.
// Loads are 16-byte vectors (4 f32 / 8 bf16) between a scalar head and tail, since a row starts at
// r * cols, which is 16-byte aligned only when cols is a multiple of the vector width.
// Warp sums by butterfly shuffles, block sums through shared memory. With splits > 1 the segment
// sums go to scratch and reduce_finish adds them per row in a fixed order. Deterministic: every
// sum is formed in the same order on every run (no atomics). bf16 and f16 outputs are rounded once
// (f16: Inf past 65504).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr long long kWarpRowMax = 1024;  // rows up to this long: one warp per row
constexpr unsigned kFull = 0xffffffffu;

__device__ __forceinline__ float to_f(float v) { return v; }
__device__ __forceinline__ float to_f(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ float to_f(__half v) { return __half2float(v); }
template <typename T> __device__ __forceinline__ T from_f(float v);
template <> __device__ __forceinline__ float from_f<float>(float v) { return v; }
template <> __device__ __forceinline__ __nv_bfloat16 from_f<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }
template <> __device__ __forceinline__ __half from_f<__half>(float v) { return __float2half_rn(v); }

#ifdef KQUAL_BUG_F16_ACCUMULATION
// KNOWN-BROKEN (broken/f16_accumulation): every add rounded to f16, the partials and the trees kept
// in f16 (11 significant bits, Inf past 65504). A short row's sum comes out an ulp or more off the
// correctly rounded one (the bound is half an ulp plus f32 roundings), and rows whose partial sums
// pass 65504 come out Inf (or NaN where +Inf meets -Inf) though their sum is finite.
__device__ __forceinline__ float acc_add(float a, float b) { return __half2float(__float2half_rn(a + b)); }
#else
__device__ __forceinline__ float acc_add(float a, float b) { return a + b; }
#endif

__device__ __forceinline__ float vec_sum(uint4 q, float) {
  return acc_add(acc_add(__uint_as_float(q.x), __uint_as_float(q.y)), acc_add(__uint_as_float(q.z), __uint_as_float(q.w)));
}
__device__ __forceinline__ float pair_sum(unsigned w) {
  __nv_bfloat162 p = *reinterpret_cast<__nv_bfloat162*>(&w);
  return acc_add(__low2float(p), __high2float(p));
}
__device__ __forceinline__ float vec_sum(uint4 q, __nv_bfloat16) {
  return acc_add(acc_add(pair_sum(q.x), pair_sum(q.y)), acc_add(pair_sum(q.z), pair_sum(q.w)));
}
__device__ __forceinline__ float half_pair_sum(unsigned w) {
  __half2 p = *reinterpret_cast<__half2*>(&w);
  return acc_add(__low2float(p), __high2float(p));
}
__device__ __forceinline__ float vec_sum(uint4 q, __half) {
  return acc_add(acc_add(half_pair_sum(q.x), half_pair_sum(q.y)), acc_add(half_pair_sum(q.z), half_pair_sum(q.w)));
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = acc_add(v, __shfl_xor_sync(kFull, v, o));
  return v;
}

// This thread's share of x[beg, end) (thread t of nt): scalar head up to 16-byte alignment,
// vectors, scalar tail. x itself is 16-byte aligned (the manifest claims it).
template <typename T>
__device__ __forceinline__ float segment_sum(const T* __restrict__ x, long long beg, long long end, int t, int nt) {
  constexpr int W = 16 / sizeof(T);
  float acc = 0.0f;
  long long a = (beg + W - 1) / W * W;
  if (a > end) a = end;
  for (long long i = beg + t; i < a; i += nt) acc = acc_add(acc, to_f(x[i]));
  const long long nv = (end - a) / W;
  const uint4* xv = reinterpret_cast<const uint4*>(x + a);
#pragma unroll 4
  for (long long v = t; v < nv; v += nt) acc = acc_add(acc, vec_sum(__ldg(xv + v), T()));
  for (long long i = a + nv * W + t; i < end; i += nt) acc = acc_add(acc, to_f(x[i]));
  return acc;
}

}  // namespace

// meta[0] <- splits (read by reduce_finish). partial: rows * splits floats when splits > 1.
template <typename T>
__global__ void __launch_bounds__(kThreads) reduce_rows(const T* __restrict__ x, T* __restrict__ y,
                                                        float* __restrict__ partial, long long* __restrict__ meta,
                                                        long long rows, long long cols) {
  const int t = threadIdx.x, lane = t & 31, warp = t >> 5;
  if (cols <= kWarpRowMax) {
    if (blockIdx.x == 0 && t == 0) meta[0] = 1;
    const long long row = (long long)blockIdx.x * kWarps + warp;
    if (row >= rows) return;
    float s = warp_sum(segment_sum(x, row * cols, row * cols + cols, lane, 32));
    if (lane == 0) y[row] = from_f<T>(s);
    return;
  }
  const long long splits = (long long)gridDim.x / rows;
  if (blockIdx.x == 0 && t == 0) meta[0] = splits;
  const long long row = (long long)blockIdx.x / splits, part = (long long)blockIdx.x % splits;
  // Segment length: a multiple of 8 elements, so segments after the first keep the row's alignment.
  const long long chunk = ((cols + splits - 1) / splits + 7) / 8 * 8;
  const long long b = min(cols, part * chunk), e = min(cols, b + chunk);
  float s = warp_sum(segment_sum(x, row * cols + b, row * cols + e, t, kThreads));
  __shared__ float wsum[kWarps];
  if (lane == 0) wsum[warp] = s;
  __syncthreads();
  if (t == 0) {
    float total = wsum[0];
#pragma unroll
    for (int w = 1; w < kWarps; ++w) total = acc_add(total, wsum[w]);
    if (splits == 1) y[row] = from_f<T>(total);
    else partial[row * splits + part] = total;
  }
}

// splits > 1: one warp per row adds its segment sums (fixed order) and rounds once.
template <typename T>
__global__ void __launch_bounds__(kThreads) reduce_finish(const float* __restrict__ partial, const long long* __restrict__ meta,
                                                          T* __restrict__ y, long long rows) {
  const long long splits = meta[0];
  if (splits <= 1) return;
  const int lane = threadIdx.x & 31;
  const long long row = (long long)blockIdx.x * kWarps + (threadIdx.x >> 5);
  if (row >= rows) return;
  float s = 0.0f;
  for (long long i = lane; i < splits; i += 32) s = acc_add(s, partial[row * splits + i]);
  s = warp_sum(s);
  if (lane == 0) y[row] = from_f<T>(s);
}
