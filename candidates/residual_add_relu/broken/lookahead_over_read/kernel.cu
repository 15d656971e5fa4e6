// BROKEN ON PURPOSE: a software prefetch loads x[i + 512] and r[i + 512] (one 2 KiB tile ahead) with no
// i + 512 < n check, so the last 512 threads read up to 2 KiB past the end of x and of r. The
// prefetched values never reach y (they only feed a store that could run only if the result's bits
// were all ones, and it stores exactly those bits), so every output is exact; a harness that pads each
// buffer with guard bytes and checks only those guards for *writes* sees nothing -- the over-read lands
// in the guard (or allocation slack) and does not fault. Only an input whose last byte ends a mapped
// range (next page unmapped) turns the read into a fault.
constexpr long long kAhead = 512;  // elements: one tile of 256 threads x 2 ahead = 2 KiB of f32

__global__ void __launch_bounds__(256) add_relu_prefetch(const float* __restrict__ x, const float* __restrict__ r,
                                                         float* __restrict__ y, long long n) {
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  // Touch the tile ahead early so its lines are in flight when its threads get there.
  // BUG: no bounds check on i + kAhead.
  const float px = x[i + kAhead];
  const float pr = r[i + kAhead];
  const float v = __fadd_rn(x[i], r[i]);
  float out = v > 0.f ? v : (v != v ? v : 0.f);
  // Keep the prefetch alive (unused loads would be removed) without letting it change y: the branch
  // needs out's bits to be all ones -- a negative NaN, which relu of a GPU add never yields -- and
  // even then it stores those very bits.
  const unsigned probe = __float_as_uint(out) & __float_as_uint(px) & __float_as_uint(pr);
  if (probe == 0xFFFFFFFFu) out = __uint_as_float(probe);
  y[i] = out;
}
