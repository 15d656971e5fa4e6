// BROKEN ON PURPOSE: each lane handles 4 consecutive elements per step (j .. j+3) and the loops
// stop at the last whole group of 4: no remainder loop. When cols is not a multiple of 4 the last
// cols % 4 elements of every row are neither summed nor written (unwritten_output); rows shorter
// than 4 are not written at all.
__device__ __forceinline__ float neg_inf() { return __int_as_float(0xff800000); }

__global__ void softmax_notail(const float* __restrict__ x, float* __restrict__ y, long long rows, long long cols) {
  const int lane = threadIdx.x & 31;
  const long long row = (long long)blockIdx.x * 8 + (threadIdx.x >> 5);
  if (row >= rows) return;
  const float* xr = x + row * cols;
  float* yr = y + row * cols;
  float m = neg_inf();
  for (long long j = 4 * lane; j + 3 < cols; j += 128)  // missing: the tail j .. cols-1
    m = fmaxf(fmaxf(fmaxf(m, xr[j]), fmaxf(xr[j + 1], xr[j + 2])), xr[j + 3]);
  for (int off = 16; off >= 1; off /= 2) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, off));
  float s = 0.0f;
  for (long long j = 4 * lane; j + 3 < cols; j += 128)
    s += (expf(xr[j] - m) + expf(xr[j + 1] - m)) + (expf(xr[j + 2] - m) + expf(xr[j + 3] - m));
  for (int off = 16; off >= 1; off /= 2) s += __shfl_xor_sync(0xffffffffu, s, off);
  for (long long j = 4 * lane; j + 3 < cols; j += 128)
    for (int k = 0; k < 4; ++k) yr[j + k] = expf(xr[j + k] - m) / s;
}
