// RMSNorm over strided rows: row r of x at x + r * stride_x, of y at y + r * stride_y (views into
// larger buffers; any stride >= cols). One block of 256 threads per row (grid-stride over rows), the
// sum of squares in f32, a warp-shuffle then shared-memory reduction, y = x * rsqrt(ms + eps) * w
// (NaN across a row whose sum of squares is Inf).
// An f32 row whose x and y starts are both 16-byte aligned is read and written as float4 (a scalar
// tail for cols % 4); any other row element by element. Nothing between rows is touched.
// Known-broken variants are this file plus one define (candidates/rmsnorm_strided/broken/*/kqual.toml):
//   KQUAL_BUG_IGNORE_STRIDE   reads x rows cols apart (the dense kernel's indexing): rows past the
//                             first meet the poisoned padding and other rows' values
//   KQUAL_BUG_WRITE_PADDING   clears y's padding after each row (writes zeros between the rows)
//   KQUAL_BUG_ASSUME_ALIGNED  takes the float4 path for every f32 row, as if the strides were
//                             multiples of 4: a stride of cols + 1 starts row 1 off 16 bytes
//   KQUAL_BUG_Y_WITH_X_STRIDE places y's rows with x's stride (right only when the two are equal)
#include <cuda_bf16.h>

__device__ __forceinline__ float kq_load(const float* p, long long i) { return p[i]; }
__device__ __forceinline__ float kq_load(const __nv_bfloat16* p, long long i) { return __bfloat162float(p[i]); }
__device__ __forceinline__ void kq_store(float* p, long long i, float v) { p[i] = v; }
__device__ __forceinline__ void kq_store(__nv_bfloat16* p, long long i, float v) { p[i] = __float2bfloat16_rn(v); }

template <typename T>
__device__ __forceinline__ bool kq_vector_row(const T*, const T*) { return false; }
template <>
__device__ __forceinline__ bool kq_vector_row<float>(const float* xr, const float* yr) {
#ifdef KQUAL_BUG_ASSUME_ALIGNED
  return true;
#else
  return ((reinterpret_cast<unsigned long long>(xr) | reinterpret_cast<unsigned long long>(yr)) & 15) == 0;
#endif
}

template <typename T>
__global__ void __launch_bounds__(256) rmsnorm_strided(const T* x, const float* w, T* y, long long rows, long long cols,
                                                       long long stride_x, long long stride_y, float eps) {
  __shared__ float partial[8];
  __shared__ float scale;
#ifdef KQUAL_BUG_IGNORE_STRIDE
  stride_x = cols;
#endif
#ifdef KQUAL_BUG_Y_WITH_X_STRIDE
  stride_y = stride_x;
#endif
  for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* xr = x + r * stride_x;
    T* yr = y + r * stride_y;
    const bool vec = kq_vector_row<T>(xr, yr);
    const long long groups = vec ? cols / 4 : 0;  // float4 groups; the rest element by element
    float s = 0.0f;
    for (long long g = threadIdx.x; g < groups; g += blockDim.x) {
      const float4 v = reinterpret_cast<const float4*>(xr)[g];
      s = fmaf(v.x, v.x, fmaf(v.y, v.y, fmaf(v.z, v.z, fmaf(v.w, v.w, s))));
    }
    for (long long j = 4 * groups + threadIdx.x; j < cols; j += blockDim.x) {
      const float v = kq_load(xr, j);
      s = fmaf(v, v, s);
    }
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    if ((threadIdx.x & 31) == 0) partial[threadIdx.x >> 5] = s;
    __syncthreads();
    if (threadIdx.x == 0) {
      float t = 0.0f;
      for (int k = 0; k < int(blockDim.x >> 5); ++k) t += partial[k];
      // A +-Inf in the row makes the whole row NaN (the contract, as PyTorch's F.rms_norm on CUDA),
      // where rsqrt(Inf) = 0 would give its finite elements +-0. A NaN propagates by itself.
      scale = isinf(t) ? __int_as_float(0x7fc00000) : rsqrtf(t / float(cols) + eps);
    }
    __syncthreads();
    const float k = scale;
    for (long long g = threadIdx.x; g < groups; g += blockDim.x) {
      const float4 v = reinterpret_cast<const float4*>(xr)[g];
      const float4 wv = make_float4(w[4 * g], w[4 * g + 1], w[4 * g + 2], w[4 * g + 3]);
      reinterpret_cast<float4*>(yr)[g] = make_float4(v.x * k * wv.x, v.y * k * wv.y, v.z * k * wv.z, v.w * k * wv.w);
    }
    for (long long j = 4 * groups + threadIdx.x; j < cols; j += blockDim.x) kq_store(yr, j, kq_load(xr, j) * k * w[j]);
#ifdef KQUAL_BUG_WRITE_PADDING
    for (long long j = cols + threadIdx.x; j < stride_y; j += blockDim.x) kq_store(yr, j, 0.0f);  // "clears" the padding
#endif
    __syncthreads();  // partial and scale are reused by the next row
  }
}
