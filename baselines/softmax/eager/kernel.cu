// Eager baseline: softmax as an op-by-op framework runs it, four kernels with the intermediates in
// memory: m = rowmax(x); e = exp(x - m) (f32); s = rowsum(e); y = e / s. Accurate expf and IEEE
// division. The contract's special-value rules fall out of it: fmaxf skips NaN but exp(NaN - m)
// is NaN, so s and the whole row are NaN; +Inf gives Inf - Inf = NaN; a row of only -Inf gives
// -Inf - -Inf = NaN; a -Inf entry in a finite row gives exp(-Inf) = 0.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

__device__ __forceinline__ float to_f(float v) { return v; }
__device__ __forceinline__ float to_f(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ float to_f(__half v) { return __half2float(v); }
template <typename T> __device__ __forceinline__ T from_f(float v);
template <> __device__ __forceinline__ float from_f<float>(float v) { return v; }
template <> __device__ __forceinline__ __nv_bfloat16 from_f<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }
template <> __device__ __forceinline__ __half from_f<__half>(float v) { return __float2half_rn(v); }

constexpr int kThreads = 256;

// One block per row; a shared-memory tree reduction (max or sum).
template <typename T, bool kMax>
__device__ void row_reduce(const T* __restrict__ in, float* __restrict__ out, long long cols) {
  __shared__ float part[kThreads];
  const long long row = blockIdx.x;
  float acc = kMax ? __int_as_float(0xff800000) : 0.0f;
  for (long long j = threadIdx.x; j < cols; j += kThreads) {
    const float v = to_f(in[row * cols + j]);
    acc = kMax ? fmaxf(acc, v) : acc + v;
  }
  part[threadIdx.x] = acc;
  __syncthreads();
  for (int w = kThreads / 2; w >= 1; w /= 2) {
    if (threadIdx.x < w) part[threadIdx.x] = kMax ? fmaxf(part[threadIdx.x], part[threadIdx.x + w]) : part[threadIdx.x] + part[threadIdx.x + w];
    __syncthreads();
  }
  if (threadIdx.x == 0) out[row] = part[0];
}

template <typename T>
__global__ void row_max(const T* __restrict__ x, float* __restrict__ m, long long cols) {
  row_reduce<T, true>(x, m, cols);
}

template <typename T>
__global__ void exp_sub(const T* __restrict__ x, const float* __restrict__ m, float* __restrict__ e, long long rows,
                        long long cols) {
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < rows * cols) e[i] = expf(to_f(x[i]) - m[i / cols]);
}

__global__ void row_sum(const float* __restrict__ e, float* __restrict__ s, long long cols) {
  row_reduce<float, false>(e, s, cols);
}

template <typename T>
__global__ void divide(const float* __restrict__ e, const float* __restrict__ s, T* __restrict__ y, long long rows,
                       long long cols) {
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < rows * cols) y[i] = from_f<T>(e[i] / s[i / cols]);
}
