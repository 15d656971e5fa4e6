// BROKEN ON PURPOSE (through its build flags): compiled with -ftz=true, so denormal inputs and
// results are flushed to zero, which the contract's IEEE policy does not allow.
__global__ void add_relu_ftz(const float* x, const float* r, float* y, long long n) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float v = x[i] + r[i];
    y[i] = v > 0.f ? v : (v != v ? v : 0.f);
  }
}
