// Known-broken gemm: tensor-core (TF32) numerics on f32 data.
//
// BROKEN ON PURPOSE: a and b are rounded to TF32 (10 stored mantissa bits, cvt.rna.tf32.f32, what
// TF32 tensor cores do to their inputs) before f32 FMAs. Each product then carries a relative error
// up to ~2^-10; on k >= 8192 the sum's error (~2^-11 sqrt(k) rms|ab|, about 100 u sum|ab|) exceeds
// the contract's (1.5 sqrt(k) + 4) u sum|ab| bound on some outputs: wrong_result. (Short reductions
// may pass: the bound is tight only where TF32 is really distinguishable from f32.)
__device__ __forceinline__ float to_tf32(float x) {
  unsigned r;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
  return __uint_as_float(r);
}

extern "C" __global__ void gemm_tf32_inputs(const float* a, const float* b, float* c, int m, int n, int k) {
  const int j = blockIdx.x * blockDim.x + threadIdx.x;
  const int i = blockIdx.y * blockDim.y + threadIdx.y;
  if (i >= m || j >= n) return;
  float acc = 0.0f;
  for (int p = 0; p < k; ++p) acc = fmaf(to_tf32(a[(size_t)i * k + p]), to_tf32(b[(size_t)p * n + j]), acc);
  c[(size_t)i * n + j] = acc;
}
