// LayerNorm, one block of 256 threads per row (grid-stride over rows, 64-bit indices), statistics in
// f32 in two passes over the row: the mean, then the mean of squared deviations from it (never
// E[x^2] - mean^2, which cancels when |mean| >> std), each a per-thread sum, a warp-shuffle and a
// shared-memory reduction; then y = (x - mean) * rsqrt(var + eps) * w + b. The row is re-read from
// global memory (L1/L2) by each pass: any cols works, with no shared-memory or register limit.
// Known-broken variants are this file plus one define (candidates/layernorm/broken/*/kqual.toml):
//   KQUAL_BUG_ONE_PASS   var = E[x^2] - mean^2 from one pass: rows with |mean| >> std lose the variance
//   KQUAL_BUG_NO_EPS     rsqrt(var) without eps: a constant row gives 0 * rsqrt(0) = 0 * Inf = NaN
//   KQUAL_BUG_COLS_1024  handles at most 4 x 256 = 1024 columns, as a register-cached kernel written for
//                        hidden sizes <= 1024 does: the columns past 1024 are never written
#include <cuda_bf16.h>

__device__ __forceinline__ float kq_load(const float* p, long long i) { return p[i]; }
__device__ __forceinline__ float kq_load(const __nv_bfloat16* p, long long i) { return __bfloat162float(p[i]); }
__device__ __forceinline__ void kq_store(float* p, long long i, float v) { p[i] = v; }
__device__ __forceinline__ void kq_store(__nv_bfloat16* p, long long i, float v) { p[i] = __float2bfloat16_rn(v); }

// The sum of v over the block, returned to every thread; part holds one float per warp.
__device__ __forceinline__ float block_sum(float v, float* part) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = v;
  __syncthreads();
  float t = 0.0f;
  for (int k = 0; k < int(blockDim.x >> 5); ++k) t += part[k];
  __syncthreads();  // part is reused by the next call
  return t;
}

template <typename T>
__global__ void __launch_bounds__(256) layernorm(const T* x, const float* w, const float* b, T* y, long long rows,
                                                 long long cols, float eps) {
  __shared__ float part[8];
#ifdef KQUAL_BUG_COLS_1024
  const long long span = cols < 1024 ? cols : 1024;
#else
  const long long span = cols;
#endif
  for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* xr = x + r * cols;
    T* yr = y + r * cols;
    float s = 0.0f;
#ifdef KQUAL_BUG_ONE_PASS
    float q = 0.0f;
    for (long long j = threadIdx.x; j < span; j += blockDim.x) {
      const float v = kq_load(xr, j);
      s += v;
      q = fmaf(v, v, q);
    }
    const float mean = block_sum(s, part) / float(span);
    const float var = block_sum(q, part) / float(span) - mean * mean;
#else
    for (long long j = threadIdx.x; j < span; j += blockDim.x) s += kq_load(xr, j);
    const float mean = block_sum(s, part) / float(span);
    float q = 0.0f;
    for (long long j = threadIdx.x; j < span; j += blockDim.x) {
      const float d = kq_load(xr, j) - mean;
      q = fmaf(d, d, q);
    }
    const float var = block_sum(q, part) / float(span);
#endif
#ifdef KQUAL_BUG_NO_EPS
    const float rstd = rsqrtf(var);
#else
    const float rstd = rsqrtf(var + eps);
#endif
    // Each element is read, then written, by the same thread, after the whole row's statistics:
    // y may alias x.
    for (long long j = threadIdx.x; j < span; j += blockDim.x)
      kq_store(yr, j, fmaf((kq_load(xr, j) - mean) * rstd, w[j], b[j]));
  }
}
