// Eager GELU baseline, one primitive kernel per step as a framework running op by op does:
// u = sqrt(2/pi) (x + 0.044715 x^3), t = tanh(u), y = 0.5 x (1 + t), the intermediates in f32
// buffers (as autocast keeps GELU in f32: bf16 intermediates would lose the 1e-5 accuracy).
#include <cuda_bf16.h>

__device__ __forceinline__ float to_f(float v) { return v; }
__device__ __forceinline__ float to_f(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ void put(float* p, long long i, float v) { p[i] = v; }
__device__ __forceinline__ void put(__nv_bfloat16* p, long long i, float v) { p[i] = __float2bfloat16_rn(v); }

template <typename T>
__global__ void gelu_inner(const T* x, float* u, long long n) {
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float v = to_f(x[i]);
  u[i] = 0.7978845608028654f * (v + 0.044715f * v * v * v);
}

__global__ void tanh_kernel(const float* u, float* t, long long n) {
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) t[i] = tanhf(u[i]);
}

template <typename T>
__global__ void gelu_combine(const T* x, const float* t, T* y, long long n) {
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float h = 1.0f + t[i];
  put(y, i, 0.5f * to_f(x[i]) * h);  // as PyTorch's: -0 once tanhf saturates, -Inf * 0 = NaN at x = -Inf
}
