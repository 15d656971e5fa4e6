// BROKEN ON PURPOSE: off-by-one bound (i <= n) writes one element past the end of y.
__global__ void add_relu_oob(const float* x, const float* r, float* y, long long n) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i <= n) {
    float v = x[i] + r[i];
    y[i] = v > 0.f ? v : (v != v ? v : 0.f);
  }
}
