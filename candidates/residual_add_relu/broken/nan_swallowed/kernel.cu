// BROKEN ON PURPOSE: fmaxf(v, 0) returns 0 for v = NaN, so NaN does not propagate.
__global__ void add_relu_fmaxf(const float* x, const float* r, float* y, long long n) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = fmaxf(x[i] + r[i], 0.0f);
}
