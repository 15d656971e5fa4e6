// BROKEN ON PURPOSE: row sums in 2048-element row segments (one 256-thread block each, 8 strided
// elements per thread, shared-memory tree), then a fixed-order pass over the segment sums. A thread
// whose first element is past the end of its segment has nothing to add and returns before storing
// its partial sum to shared memory, but the tree still adds all 256 slots. In a row's last, partial
// segment with fewer than 256 elements (every row shorter than 256; cols % 2048 in 1..255) the sum
// picks up whatever those unwritten slots held. Shared memory is often all zeros (a fresh context, or
// earlier blocks that left zeros), and then every result is right; any other leftover content
// (another kernel's data, a fill pattern) gives wrong sums.
// (Threads that exit before the __syncthreads() calls no longer take part in them, so the barriers
// themselves are fine.) f32 accumulation, deterministic order, 64-bit indices.
namespace {

constexpr int kThreads = 256;
constexpr int kPerThread = 8;
constexpr long long kSeg = (long long)kThreads * kPerThread;  // 2048 elements
constexpr unsigned kFull = 0xffffffffu;

}  // namespace

// Block b: row b / segs, segment b % segs -> partial[b].
__global__ void __launch_bounds__(kThreads) reduce_segments(const float* __restrict__ x, float* __restrict__ partial,
                                                            long long cols) {
  __shared__ float s[kThreads];
  const long long segs = (cols + kSeg - 1) / kSeg;
  const long long row = (long long)blockIdx.x / segs, seg = (long long)blockIdx.x % segs;
  const long long beg = seg * kSeg, end = min(cols, beg + kSeg);
  const int t = threadIdx.x;
  if (beg + t >= end) return;  // BUG: nothing to add -- but s[t] is left unwritten for the tree below
  const float* xr = x + row * cols;
  float acc = 0.0f;
  for (long long j = beg + t; j < end; j += kThreads) acc += xr[j];
  s[t] = acc;
  __syncthreads();
  for (int o = kThreads / 2; o > 0; o >>= 1) {
    if (t < o) s[t] += s[t + o];
    __syncthreads();
  }
  if (t == 0) partial[blockIdx.x] = s[0];
}

// One warp per row: the row's segment sums in a fixed order (lane-strided, then a butterfly).
__global__ void __launch_bounds__(kThreads) reduce_finish(const float* __restrict__ partial, float* __restrict__ y,
                                                          long long rows, long long cols) {
  const long long segs = (cols + kSeg - 1) / kSeg;
  const int lane = threadIdx.x & 31;
  const long long row = (long long)blockIdx.x * (kThreads / 32) + (threadIdx.x >> 5);
  if (row >= rows) return;
  float s = 0.0f;
  for (long long k = lane; k < segs; k += 32) s += partial[row * segs + k];
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(kFull, s, o);
  if (lane == 0) y[row] = s;
}
