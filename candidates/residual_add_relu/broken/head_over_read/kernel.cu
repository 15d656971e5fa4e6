// BROKEN ON PURPOSE: every thread also loads x[i - 256], the same lane of the previous 256-element tile
// (a look-back kept from a "difference with the previous tile" variant of this kernel), with no guard
// for i < 256, so the first 256 threads read up to 1 KiB *before* x. The value never reaches y (it only
// feeds a store that could run only if the result's bits were all ones, and it stores exactly those
// bits), so every output is exact; in a guarded placement the under-read lands in the guard bytes
// before x (or allocation slack) and neither faults nor writes anything. Only an input whose first
// byte starts a mapped range (previous page unmapped) turns the read into a fault.
constexpr long long kBack = 256;  // elements: one tile of 256 threads back

__global__ void __launch_bounds__(256) add_relu_lookback(const float* __restrict__ x, const float* __restrict__ r,
                                                         float* __restrict__ y, long long n) {
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float prev = x[i - kBack];  // BUG: no i >= kBack guard
  const float v = __fadd_rn(x[i], r[i]);
  float out = v > 0.f ? v : (v != v ? v : 0.f);
  // The look-back only feeds a branch that cannot change y: it needs out's bits to be all ones (a
  // negative NaN, which relu of a GPU add never yields) and then stores those very bits.
  const unsigned probe = __float_as_uint(out) & __float_as_uint(prev);
  if (probe == 0xFFFFFFFFu) out = __uint_as_float(probe);
  y[i] = out;
}
