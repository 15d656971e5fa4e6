// BROKEN ON PURPOSE: moves each element through float arithmetic (x + 0.0f, as a fused
// "transpose + scale/cast" might). The values look the same, but -0 + 0 is +0 and a NaN operand
// yields the GPU's canonical NaN (0x7fffffff), so NaN payloads and the sign of zero are lost. The
// transpose contract is bit-exact: wrong_result on the specials family.
__global__ void transpose_via_add(const float* __restrict__ x, float* __restrict__ y, long long rows, long long cols) {
  const long long n = rows * cols;
  for (long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x; t < n; t += (long long)gridDim.x * blockDim.x) {
    const long long i = t / cols, j = t % cols;
    y[j * rows + i] = x[t] + 0.0f;  // should be a plain copy: y[j * rows + i] = x[t]
  }
}
