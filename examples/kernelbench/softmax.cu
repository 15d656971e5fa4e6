// Softmax over dim 1 of a batch_size x dim f32 matrix (KernelBench level 1, 23_Softmax): one block of
// 256 threads per row; the row max, then the sum of exp(x - max) in f32, then the quotient. The
// known-broken variant is this file plus one define:
//   KQUAL_BUG_MISSING_TAIL  the last (dim mod 4) columns of every row are never written
extern "C" __global__ void __launch_bounds__(256) kb_softmax(const float* x, float* out, long long rows, long long cols) {
  __shared__ float red[256];
  const long long r = blockIdx.x;
  if (r >= rows) return;
  const float* xr = x + r * cols;
  float* yr = out + r * cols;
  float m = -__int_as_float(0x7f800000);  // -Inf (NVRTC has no INFINITY without headers)
  for (long long c = threadIdx.x; c < cols; c += blockDim.x) m = fmaxf(m, xr[c]);
  red[threadIdx.x] = m;
  __syncthreads();
  for (int s = 128; s > 0; s >>= 1) {
    if (threadIdx.x < s) red[threadIdx.x] = fmaxf(red[threadIdx.x], red[threadIdx.x + s]);
    __syncthreads();
  }
  m = red[0];
  __syncthreads();
  float sum = 0.0f;
  for (long long c = threadIdx.x; c < cols; c += blockDim.x) sum += expf(xr[c] - m);
  red[threadIdx.x] = sum;
  __syncthreads();
  for (int s = 128; s > 0; s >>= 1) {
    if (threadIdx.x < s) red[threadIdx.x] += red[threadIdx.x + s];
    __syncthreads();
  }
  const float inv = 1.0f / red[0];
#ifdef KQUAL_BUG_MISSING_TAIL
  const long long end = cols & ~3LL;
#else
  const long long end = cols;
#endif
  for (long long c = threadIdx.x; c < end; c += blockDim.x) yr[c] = expf(xr[c] - m) * inv;
}
