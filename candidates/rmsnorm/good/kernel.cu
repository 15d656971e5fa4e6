// RMSNorm, one block of 256 threads per row (grid-stride over rows): the sum of squares in f32 per
// thread, a warp-shuffle then shared-memory block reduction, then y = x * rsqrt(ms + eps) * w (NaN
// across a row whose sum of squares is Inf).
// Known-broken variants are this file plus one define (candidates/rmsnorm/broken/*/kqual.toml):
//   KQUAL_BUG_NO_EPS      drops eps (rows whose mean square is comparable to eps come out wrong)
//   KQUAL_BUG_MISSING_TAIL writes only whole groups of 4 columns (the last cols % 4 are never written)
//   KQUAL_BUG_BF16_SUM    accumulates the sum of squares in bf16 (long rows lose the statistic)
#include <cuda_bf16.h>

__device__ __forceinline__ float kq_load(const float* p, long long i) { return p[i]; }
__device__ __forceinline__ float kq_load(const __nv_bfloat16* p, long long i) { return __bfloat162float(p[i]); }
__device__ __forceinline__ void kq_store(float* p, long long i, float v) { p[i] = v; }
__device__ __forceinline__ void kq_store(__nv_bfloat16* p, long long i, float v) { p[i] = __float2bfloat16_rn(v); }

template <typename T>
__global__ void __launch_bounds__(256) rmsnorm(const T* x, const float* w, T* y, long long rows, long long cols, float eps) {
  __shared__ float partial[8];
  __shared__ float scale;
  for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* xr = x + r * cols;
    T* yr = y + r * cols;
#ifdef KQUAL_BUG_BF16_SUM
    __nv_bfloat16 acc = __float2bfloat16_rn(0.0f);
    for (long long j = threadIdx.x; j < cols; j += blockDim.x) {
      const float v = kq_load(xr, j);
      acc = __float2bfloat16_rn(__bfloat162float(acc) + v * v);
    }
    float s = __bfloat162float(acc);
#else
    float s = 0.0f;
    for (long long j = threadIdx.x; j < cols; j += blockDim.x) {
      const float v = kq_load(xr, j);
      s = fmaf(v, v, s);
    }
#endif
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    if ((threadIdx.x & 31) == 0) partial[threadIdx.x >> 5] = s;
    __syncthreads();
    if (threadIdx.x == 0) {
      float t = 0.0f;
      for (int k = 0; k < int(blockDim.x >> 5); ++k) t += partial[k];
#ifdef KQUAL_BUG_NO_EPS
      const float ms = t / float(cols);
#else
      const float ms = t / float(cols) + eps;
#endif
      // A +-Inf in the row makes the whole row NaN (the contract, as PyTorch's F.rms_norm on CUDA),
      // where rsqrt(Inf) = 0 would give its finite elements +-0. A NaN propagates by itself.
      scale = isinf(t) ? __int_as_float(0x7fc00000) : rsqrtf(ms);
    }
    __syncthreads();
    const float k = scale;
#ifdef KQUAL_BUG_MISSING_TAIL
    const long long end = cols - cols % 4;
#else
    const long long end = cols;
#endif
    for (long long j = threadIdx.x; j < end; j += blockDim.x) kq_store(yr, j, kq_load(xr, j) * k * w[j]);
    __syncthreads();  // partial and scale are reused by the next row
  }
}

