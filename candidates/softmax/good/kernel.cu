// Row softmax in two passes over x with an online (max, sum) state:
//   pass 1: each thread folds its slice of the row into (m, s) = (running max, sum of exp(x - m)),
//           rescaling s by exp(m_old - m_new) when the max grows; the states are merged across
//           the warp with shuffles (and across warps through shared memory for long rows);
//   pass 2: y = exp(x - m) * (1 / s).
// Rows of up to 1024 elements: one warp per row, 8 rows per 256-thread block (many short rows
// keep every SM busy). Longer rows: one 256-thread block per row. 16-byte vector loads and stores
// when the row starts on a 16-byte boundary (4 f32 or 8 bf16 / f16 per access), scalar otherwise.
// bf16 and f16: widened to f32, the same f32 math, each output rounded once.
// exp is the fast __expf; the contract's error model admits it (2 + 1.173|d| ulp).
// Special values, as the contract states: NaN in a row -> NaN row (NaN propagates through s);
// +Inf in a row or a row of only -Inf -> NaN row (forced at the end); -Inf entries -> 0.
// Deterministic: a fixed slice per thread and a fixed merge order.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr long long kWarpRowMax = 1024;  // longest row handled by one warp

__device__ __forceinline__ float neg_inf() { return __int_as_float(0xff800000); }
__device__ __forceinline__ float pos_inf() { return __int_as_float(0x7f800000); }
__device__ __forceinline__ float qnan() { return __int_as_float(0x7fffffff); }

__device__ __forceinline__ float to_f(float v) { return v; }
__device__ __forceinline__ float to_f(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ float to_f(__half v) { return __half2float(v); }
template <typename T> __device__ __forceinline__ T from_f(float v);
template <> __device__ __forceinline__ float from_f<float>(float v) { return v; }
template <> __device__ __forceinline__ __nv_bfloat16 from_f<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }
template <> __device__ __forceinline__ __half from_f<__half>(float v) { return __float2half_rn(v); }

#ifdef KQUAL_BUG_F16_EXP_NO_MAX
// KNOWN-BROKEN (broken/f16_exp_no_max): e = exp(x) of the logit itself, in f16 (hexp), with no row max
// subtracted; the max is still tracked, only for the +Inf and all -Inf rows. f16's exp overflows past
// x = 11.09 (65504) and gives 0 below x = -17.3, so rows holding either come out NaN (Inf * (1 / Inf),
// 0 * (1 / 0)): nan_policy; rows inside carry f16's 11-bit exp (wrong_result).
__device__ __forceinline__ float shifted_exp(float x, float) { return __half2float(hexp(__float2half_rn(x))); }
__device__ __forceinline__ void fold(float& m, float& s, float v) {
  if (v > m) m = v;
  if (v != neg_inf()) s += shifted_exp(v, m);
}
__device__ __forceinline__ void merge(float& m, float& s, float m2, float s2) {
  m = fmaxf(m, m2);
  s = s + s2;
}
#else
// exp(x - m): the error of the argument is proportional to |x - m| (the contract's model).
__device__ __forceinline__ float shifted_exp(float x, float m) { return __expf(x - m); }

// Fold one value into (m, s). -Inf contributes 0 (and must not form -Inf - -Inf); NaN poisons s.
__device__ __forceinline__ void fold(float& m, float& s, float v) {
  if (v > m) {
    s = s * __expf(m - v) + 1.0f;  // m = -Inf at the start: exp(-Inf) = 0
    m = v;
  } else if (v != neg_inf()) {
    s += __expf(v - m);
  }
}

// Merge state (m2, s2) into (m, s). Commutative bit for bit, so every lane of a butterfly agrees.
__device__ __forceinline__ void merge(float& m, float& s, float m2, float s2) {
  const float mn = fmaxf(m, m2);
  if (mn == neg_inf()) {
    s = s + s2;  // both empty (0), or NaN from a NaN-only slice
  } else {
    s = s * __expf(m - mn) + s2 * __expf(m2 - mn);
  }
  m = mn;
}
#endif

__device__ __forceinline__ void warp_merge(float& m, float& s) {
#pragma unroll
  for (int off = 16; off >= 1; off /= 2) {
    const float m2 = __shfl_xor_sync(0xffffffffu, m, off);
    const float s2 = __shfl_xor_sync(0xffffffffu, s, off);
    merge(m, s, m2, s2);
  }
}

template <typename T>
__device__ __forceinline__ void row_state(const T* __restrict__ xr, long long cols, int idx, int nthreads, float& m, float& s) {
  constexpr int W = 16 / sizeof(T);
  long long done = 0;
  if ((reinterpret_cast<unsigned long long>(xr) & 15) == 0) {
    const long long nv = cols / W;
    const uint4* xv = reinterpret_cast<const uint4*>(xr);
#pragma unroll 2
    for (long long v = idx; v < nv; v += nthreads) {
      const uint4 p = __ldg(xv + v);
      const T* e = reinterpret_cast<const T*>(&p);
#pragma unroll
      for (int k = 0; k < W; ++k) fold(m, s, to_f(e[k]));
    }
    done = nv * W;
  }
  for (long long j = done + idx; j < cols; j += nthreads) fold(m, s, to_f(xr[j]));
}

template <typename T>
__device__ __forceinline__ void row_write(const T* __restrict__ xr, T* __restrict__ yr, long long cols, int idx, int nthreads,
                                          float m, float inv) {
  constexpr int W = 16 / sizeof(T);
  long long done = 0;
  if (((reinterpret_cast<unsigned long long>(xr) | reinterpret_cast<unsigned long long>(yr)) & 15) == 0) {
    const long long nv = cols / W;
    const uint4* xv = reinterpret_cast<const uint4*>(xr);
    uint4* yv = reinterpret_cast<uint4*>(yr);
#pragma unroll 2
    for (long long v = idx; v < nv; v += nthreads) {
      const uint4 p = __ldg(xv + v);
      const T* e = reinterpret_cast<const T*>(&p);
      uint4 q;
      T* o = reinterpret_cast<T*>(&q);
#pragma unroll
      for (int k = 0; k < W; ++k) o[k] = from_f<T>(shifted_exp(to_f(e[k]), m) * inv);
      __stcs(yv + v, q);  // written once, not read again: streaming store
    }
    done = nv * W;
  }
  for (long long j = done + idx; j < cols; j += nthreads) yr[j] = from_f<T>(shifted_exp(to_f(xr[j]), m) * inv);
}

__device__ __forceinline__ float reciprocal_or_nan(float m, float s) {
  // +Inf in the row (Inf - Inf) or no finite entry (-Inf - -Inf): the row is NaN by contract.
  return (m == pos_inf() || m == neg_inf()) ? qnan() : 1.0f / s;
}

}  // namespace

#ifdef KQUAL_SKIP_EVERY_THIRD_LAUNCH
// Known-broken (candidates/softmax/broken/skip_every_third): at 4096 x 1024, a benchmark shape no
// correctness case has, every third launch returns at once. Blocks counted across launches: a
// launch's blocks all see the same launch number (launches on one stream do not overlap).
__device__ unsigned long long kqual_blocks_seen;
#endif

template <typename T>
__global__ void __launch_bounds__(kThreads) softmax_rows(const T* __restrict__ x, T* __restrict__ y, long long rows,
                                                         long long cols) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#ifdef KQUAL_SKIP_EVERY_THIRD_LAUNCH
  if (rows == 4096 && cols == 1024) {
    __shared__ unsigned long long launch;
    if (threadIdx.x == 0) launch = atomicAdd(&kqual_blocks_seen, 1ull) / gridDim.x;
    __syncthreads();
    if (launch % 3 == 2) return;
  }
#endif
  if (cols <= kWarpRowMax) {
    const long long row = (long long)blockIdx.x * kWarps + warp;
    if (row >= rows) return;  // whole warp: no block-level barrier in this mode
    const T* xr = x + row * cols;
    float m = neg_inf(), s = 0.0f;
    row_state(xr, cols, lane, 32, m, s);
    warp_merge(m, s);
    row_write(xr, y + row * cols, cols, lane, 32, m, reciprocal_or_nan(m, s));
    return;
  }
  __shared__ float sm[kWarps], ss[kWarps];
  const long long row = blockIdx.x;
  const T* xr = x + row * cols;
  float m = neg_inf(), s = 0.0f;
  row_state(xr, cols, threadIdx.x, kThreads, m, s);
  warp_merge(m, s);
  if (lane == 0) {
    sm[warp] = m;
    ss[warp] = s;
  }
  __syncthreads();
  m = sm[0];
  s = ss[0];
#pragma unroll
  for (int w = 1; w < kWarps; ++w) merge(m, s, sm[w], ss[w]);  // same order in every thread
  row_write(xr, y + row * cols, cols, threadIdx.x, kThreads, m, reciprocal_or_nan(m, s));
}
