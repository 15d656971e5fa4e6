// BROKEN ON PURPOSE: correct output, but x is zeroed afterwards (a harness that runs its reference
// on the same buffers after the candidate would then agree with anything).
__global__ void add_relu_clobber(float* x, const float* r, float* y, long long n) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float v = x[i] + r[i];
    y[i] = v > 0.f ? v : (v != v ? v : 0.f);
    x[i] = 0.0f;
  }
}
