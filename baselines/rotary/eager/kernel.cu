// Eager rotary baseline, one primitive kernel per step as a framework running
// `x * cos + rotate_half(x) * sin` op by op does (HF/NeoX apply_rotary_pos_emb), each a flat
// one-thread-per-element kernel over [tokens, heads, d] with cos/sin broadcast over heads and over
// the two halves (index j % half). Intermediates are f32 scratch buffers (not T: a bf16 framework
// rounding each step would not meet the contract's absolute bound under cancellation):
//   rotate_half: r = cat(-x[..., half:], x[..., :half])
//   mul_cos:     p = x * cos
//   fma_sin:     y = p + r * sin
#include <cuda_bf16.h>

__device__ __forceinline__ float to_f(float v) { return v; }
__device__ __forceinline__ float to_f(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ void put(float* p, long long i, float v) { p[i] = v; }
__device__ __forceinline__ void put(__nv_bfloat16* p, long long i, float v) { p[i] = __float2bfloat16_rn(v); }

template <typename T>
__global__ void rotate_half(const T* x, float* r, long long tokens, long long heads, long long half) {
  const long long total = tokens * heads * 2 * half;
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= total) return;
  const long long j = i % (2 * half);
  r[i] = j < half ? -to_f(x[i + half]) : to_f(x[i - half]);
}

template <typename T>
__global__ void mul_cos(const T* x, const float* cos, float* p, long long tokens, long long heads, long long half) {
  const long long total = tokens * heads * 2 * half;
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= total) return;
  const long long d = 2 * half, t = i / (heads * d), j = i % d;
  p[i] = to_f(x[i]) * cos[t * half + j % half];
}

template <typename T>
__global__ void fma_sin(const float* p, const float* r, const float* sin, T* y, long long tokens, long long heads, long long half) {
  const long long total = tokens * heads * 2 * half;
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= total) return;
  const long long d = 2 * half, t = i / (heads * d), j = i % d;
  put(y, i, p[i] + r[i] * sin[t * half + j % half]);
}
