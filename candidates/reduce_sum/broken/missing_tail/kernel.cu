// KNOWN-BROKEN (missing tail): block-per-row sums unrolled by 4 — each thread adds groups of four
// consecutive elements — with no remainder loop, so the last cols % 4 elements of every row are
// dropped (and rows shorter than 4 sum to 0). Correct only when cols is a multiple of 4.
// Expected rejection: wrong_result (nan_policy too, where the dropped tail holds the row's NaN).
template <typename T>
__global__ void reduce_rows_unroll4(const T* x, T* y, long long rows, long long cols) {
  __shared__ float s[256];
  const int t = threadIdx.x;
  const long long row = blockIdx.x;
  const T* r = x + row * cols;
  float acc = 0.0f;
  for (long long j = 4 * (long long)t; j + 3 < cols; j += 4 * 256)  // BUG: no loop for the last cols % 4
    acc += (float(r[j]) + float(r[j + 1])) + (float(r[j + 2]) + float(r[j + 3]));
  s[t] = acc;
  __syncthreads();
  for (int o = 128; o > 0; o >>= 1) {
    if (t < o) s[t] += s[t + o];
    __syncthreads();
  }
  if (t == 0 && row < rows) y[row] = T(s[0]);
}
