// Eager row sums, the textbook way: one block of 256 threads per row, strided scalar loads into a
// per-thread f32 partial, then a shared-memory tree (halving, a barrier per level). A single long
// row runs on one SM. bf16 and f16 outputs are rounded once.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

__device__ __forceinline__ float eager_f(float v) { return v; }
__device__ __forceinline__ float eager_f(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ float eager_f(__half v) { return __half2float(v); }
__device__ __forceinline__ void eager_store(float* p, float v) { *p = v; }
__device__ __forceinline__ void eager_store(__nv_bfloat16* p, float v) { *p = __float2bfloat16_rn(v); }
__device__ __forceinline__ void eager_store(__half* p, float v) { *p = __float2half_rn(v); }

template <typename T>
__global__ void reduce_rows_eager(const T* x, T* y, long long rows, long long cols) {
  __shared__ float s[256];
  const int t = threadIdx.x;
  const long long row = blockIdx.x;
  float acc = 0.0f;
  for (long long j = t; j < cols; j += 256) acc += eager_f(x[row * cols + j]);
  s[t] = acc;
  __syncthreads();
  for (int o = 128; o > 0; o >>= 1) {
    if (t < o) s[t] += s[t + o];
    __syncthreads();
  }
  if (t == 0 && row < rows) eager_store(y + row, s[0]);
}
