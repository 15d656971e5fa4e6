// BROKEN ON PURPOSE: one thread per output element o; o is decomposed with cols where rows belongs
// (j = o / cols, i = o % cols instead of o / rows, o % rows), and the read index uses rows where
// cols belongs. It transposes as if x were cols x rows: right on square shapes (and on 1 x N,
// N x 1, where a transpose is a copy), a wrong permutation on every other shape. Every output is
// written exactly once and every access is in bounds, so the failure is wrong_result.
__global__ void transpose_wrong_stride(const float* x, float* y, long long rows, long long cols) {
  const long long n = rows * cols;
  for (long long o = (long long)blockIdx.x * blockDim.x + threadIdx.x; o < n; o += (long long)gridDim.x * blockDim.x) {
    const long long j = o / cols, i = o % cols;  // should be o / rows, o % rows
    y[o] = x[i * rows + j];                      // should be x[i * cols + j]
  }
}
