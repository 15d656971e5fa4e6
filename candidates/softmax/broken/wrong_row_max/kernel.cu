// BROKEN ON PURPOSE: 8 rows per block, one warp each; every warp publishes its row max in shared
// memory, and the output pass reads the slot of the wrong warp (warp ^ 1: the neighbouring row)
// while the row sum was formed with the right max. The outputs are scaled by
// exp(m_row - m_neighbour), wrong whenever two neighbouring rows have different maxima (and Inf
// when the neighbour slot belongs to an idle warp, which publishes -Inf): wrong_result.
__device__ __forceinline__ float neg_inf() { return __int_as_float(0xff800000); }

__global__ void softmax_wrongmax(const float* __restrict__ x, float* __restrict__ y, long long rows, long long cols) {
  __shared__ float smax[8];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const long long row = (long long)blockIdx.x * 8 + warp;
  const bool active = row < rows;
  const float* xr = x + row * cols;
  float m = neg_inf();
  if (active)
    for (long long j = lane; j < cols; j += 32) m = fmaxf(m, xr[j]);
  for (int off = 16; off >= 1; off /= 2) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, off));
  if (lane == 0) smax[warp] = m;
  float s = 0.0f;
  if (active)
    for (long long j = lane; j < cols; j += 32) s += expf(xr[j] - m);
  for (int off = 16; off >= 1; off /= 2) s += __shfl_xor_sync(0xffffffffu, s, off);
  __syncthreads();
  const float mo = smax[warp ^ 1];  // should be m (or smax[warp])
  if (active)
    for (long long j = lane; j < cols; j += 32) y[row * cols + j] = expf(xr[j] - mo) / s;
}
