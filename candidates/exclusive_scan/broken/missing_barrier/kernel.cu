// BROKEN ON PURPOSE: the block scan is a shared-memory Hillis-Steele scan whose step reads s[t - d] and
// then writes s[t] with no __syncthreads() in between (the barrier after the write is there). A warp
// that runs ahead overwrites s[t - d] with its new partial sum before a slower warp has read the old
// one, so that warp adds some terms twice. Within a warp the read comes before the write, so the
// first steps (d < 32, mostly intra-warp) are usually right and many schedules give the right answer:
// results depend on warp timing, and plain reruns may well agree. A race detector
// (compute-sanitizer racecheck) reports the shared-memory hazard on every launch.
// Layout: reduce-then-scan over 1024-element tiles (256 threads x 4 consecutive items), 3 launches:
//   1. scan_tile_sums:    each block sums its tile -> sums[tile]
//   2. scan_tile_carries: one 1024-thread block scans the tile sums in place (exclusive) -> carries
//   3. scan_tile_apply:   each thread sums its 4 items, the block scans the thread sums, and each
//                         thread writes its exclusive prefixes offset by the tile's carry.
// i32 adds are done on unsigned values (wrap-around modulo 2^32, the contract's definition); 64-bit
// element indices throughout.
namespace {

constexpr int kThreads = 256;
constexpr int kItems = 4;
constexpr int kTile = kThreads * kItems;  // 1024 elements
constexpr int kCarryThreads = 1024;
constexpr unsigned kFull = 0xffffffffu;

// Inclusive scan of one value per thread across the block; s holds blockDim.x entries. Returns this
// thread's inclusive prefix; s[blockDim.x - 1] is the block's total (valid until the caller's next
// barrier-free write to s).
__device__ __forceinline__ unsigned block_inclusive(unsigned v, unsigned* s) {
  const int t = threadIdx.x;
  s[t] = v;
  __syncthreads();
  for (int d = 1; d < (int)blockDim.x; d <<= 1) {
    const unsigned a = t >= d ? s[t - d] : 0u;
    // BUG: a __syncthreads() belongs here: every thread must have read s[t - d] before any writes s[t].
    s[t] += a;
    __syncthreads();
  }
  return s[t];
}

}  // namespace

__global__ void __launch_bounds__(kThreads) scan_tile_sums(const int* __restrict__ x, int* __restrict__ sums, long long n) {
  __shared__ unsigned wsum[kThreads / 32];
  const long long base = (long long)blockIdx.x * kTile;
  const int t = threadIdx.x;
  unsigned acc = 0;
#pragma unroll
  for (int k = 0; k < kItems; ++k) {
    const long long i = base + (long long)k * kThreads + t;  // coalesced
    if (i < n) acc += unsigned(x[i]);
  }
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) acc += __shfl_down_sync(kFull, acc, o);
  if ((t & 31) == 0) wsum[t >> 5] = acc;
  __syncthreads();
  if (t == 0) {
    unsigned s = 0;
#pragma unroll
    for (int w = 0; w < kThreads / 32; ++w) s += wsum[w];
    sums[blockIdx.x] = int(s);
  }
}

// One block: sums[0..tiles) becomes its exclusive scan, 1024 tiles per step with a running carry.
__global__ void __launch_bounds__(kCarryThreads) scan_tile_carries(int* __restrict__ sums, long long n) {
  __shared__ unsigned s[kCarryThreads];
  const long long tiles = (n + kTile - 1) / kTile;
  unsigned carry = 0;
  for (long long c = 0; c < tiles; c += kCarryThreads) {
    const long long i = c + threadIdx.x;
    const unsigned v = i < tiles ? unsigned(sums[i]) : 0u;
    const unsigned inc = block_inclusive(v, s);
    if (i < tiles) sums[i] = int(carry + (inc - v));
    carry += s[kCarryThreads - 1];
    __syncthreads();  // s is rewritten by the next step
  }
}

__global__ void __launch_bounds__(kThreads) scan_tile_apply(const int* __restrict__ x, int* __restrict__ y,
                                                            const int* __restrict__ carries, long long n) {
  __shared__ unsigned s[kThreads];
  const long long base = (long long)blockIdx.x * kTile + (long long)threadIdx.x * kItems;
  unsigned items[kItems];
  unsigned sum = 0;
#pragma unroll
  for (int k = 0; k < kItems; ++k) {
    const long long i = base + k;
    items[k] = i < n ? unsigned(x[i]) : 0u;
    sum += items[k];
  }
  const unsigned inc = block_inclusive(sum, s);
  unsigned run = unsigned(carries[blockIdx.x]) + (inc - sum);  // exclusive prefix of this thread's items
#pragma unroll
  for (int k = 0; k < kItems; ++k) {
    const long long i = base + k;
    if (i < n) y[i] = int(run);
    run += items[k];
  }
}
