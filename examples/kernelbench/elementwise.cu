// Elementwise activations of KernelBench level-1 problems (docs/kernelbench.md), one kernel per
// problem chosen by a define (KB_OP_RELU, ...): x and out are batch_size x dim f32, row-major,
// grid-stride with 64-bit indices. The known-broken variant is this file plus one define:
//   KQUAL_BUG_MISSING_TAIL  the last (n mod 4) elements are never written (caught as unwritten output
//                           at the odd boundary sizes kqual generates along each axis)
__device__ __forceinline__ float kb_op(float x) {
#if defined(KB_OP_RELU)
  return x < 0.0f ? 0.0f : x;
#elif defined(KB_OP_LEAKY_RELU)
  return x < 0.0f ? 0.01f * x : x;
#elif defined(KB_OP_SIGMOID)
  return 1.0f / (1.0f + expf(-x));
#elif defined(KB_OP_TANH)
  return tanhf(x);
#elif defined(KB_OP_SWISH)
  return x / (1.0f + expf(-x));
#elif defined(KB_OP_GELU)
  return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
#elif defined(KB_OP_SOFTPLUS)
  return x > 20.0f ? x : log1pf(expf(x));  // torch's threshold 20
#elif defined(KB_OP_SOFTSIGN)
  return x / (1.0f + fabsf(x));
#elif defined(KB_OP_HARDTANH)
  return fminf(fmaxf(x, -1.0f), 1.0f);
#else
#error "define one KB_OP_*"
#endif
}

extern "C" __global__ void __launch_bounds__(256) kb_elementwise(const float* x, float* out, long long rows, long long cols) {
  const long long n = rows * cols;
#ifdef KQUAL_BUG_MISSING_TAIL
  const long long end = n & ~3LL;
#else
  const long long end = n;
#endif
  const long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < end; i += stride) out[i] = kb_op(x[i]);
}
