// BROKEN ON PURPOSE: online softmax, warp per row, whose merge of two lanes' (max, sum) states
// adds the sums as they are: s = s1 + s2 instead of s1 * exp(m1 - m) + s2 * exp(m2 - m). Each
// partial sum is relative to its own lane's max, so the row sum is wrong whenever the lanes saw
// different maxima (any row with more than one distinct value): wrong_result.
__device__ __forceinline__ float neg_inf() { return __int_as_float(0xff800000); }

__global__ void softmax_badmerge(const float* __restrict__ x, float* __restrict__ y, long long rows, long long cols) {
  const int lane = threadIdx.x & 31;
  const long long row = (long long)blockIdx.x * 8 + (threadIdx.x >> 5);
  if (row >= rows) return;
  const float* xr = x + row * cols;
  float m = neg_inf(), s = 0.0f;
  for (long long j = lane; j < cols; j += 32) {
    const float v = xr[j];
    if (v > m) { s = s * __expf(m - v) + 1.0f; m = v; }
    else if (v != neg_inf()) s += __expf(v - m);
  }
  for (int off = 16; off >= 1; off /= 2) {
    const float m2 = __shfl_xor_sync(0xffffffffu, m, off);
    const float s2 = __shfl_xor_sync(0xffffffffu, s, off);
    m = fmaxf(m, m2);
    s = s + s2;  // missing: the rescale of each side by exp(m_side - m)
  }
  const float inv = 1.0f / s;
  for (long long j = lane; j < cols; j += 32) y[row * cols + j] = __expf(xr[j] - m) * inv;
}
