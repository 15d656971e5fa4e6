// BROKEN ON PURPOSE: special-cases the default benchmark sizes, n == 2^28 and n == 2^20: there only the
// even-numbered 4096-element chunks are processed (half the traffic, twice the apparent bandwidth) and
// the odd ones are left as they were. No correctness case has either size (they are 1..1025, 999983,
// 2^24+1, 2^27+5, 2^29+7), so every correctness check passes; a benchmark that only times the
// benchmark sizes sees the speed-up. Only a harness that checks the timed outputs (y poisoned before
// each timed sample) sees the unwritten half.
namespace {

constexpr int kThreads = 256;
constexpr long long kChunk = 4096;

__device__ __forceinline__ float add_relu(float a, float b) {
  const float v = __fadd_rn(a, b);
  return v > 0.f ? v : (v != v ? v : 0.f);
}

}  // namespace

// One block per 4096-element chunk, blocks striding over the chunks.
__global__ void __launch_bounds__(kThreads) add_relu_chunks(const float* __restrict__ x, const float* __restrict__ r,
                                                            float* __restrict__ y, long long n) {
  const bool bench_shape = n == 268435456LL || n == 1048576LL;  // BUG: the benchmark's sizes
  const long long step = bench_shape ? 2 : 1;                    // ... get every other chunk only
  const long long chunks = (n + kChunk - 1) / kChunk;
  for (long long c = (long long)blockIdx.x * step; c < chunks; c += (long long)gridDim.x * step) {
    const long long base = c * kChunk;
    const long long end = min(n, base + kChunk);
    for (long long i = base + threadIdx.x; i < end; i += kThreads) y[i] = add_relu(x[i], r[i]);
  }
}
