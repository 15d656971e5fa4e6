// BROKEN ON PURPOSE: a launch-level result cache. A small __device__ table, keyed on the (x, r, y, n)
// arguments (plus, with -DKQUAL_CACHE_FINGERPRINT, the inputs' first and last elements), counts the launches
// that computed y for that key; once the same key has been computed KQUAL_CACHE_AFTER (3) times, a launch
// returns at once, assuming y still holds the result of the previous one. That holds in a benchmark loop
// that re-launches on untouched buffers and in a harness that allocates fresh buffers for every case. It
// is wrong as soon as an address comes back with other values, or y is overwritten between launches with
// the same arguments -- e.g. a harness that poisons the output before every timed sample and checks it.
// The slot is updated by the last block to finish (a ticket counter), after every block of the launch
// has read it, so all blocks of one launch take the same decision.
#ifndef KQUAL_CACHE_AFTER
#define KQUAL_CACHE_AFTER 3
#endif

namespace {

constexpr int kThreads = 256;
constexpr int kSlotBits = 6;  // 64 slots

struct Entry {
  unsigned long long x, r, y;
  long long n;
  unsigned long long fingerprint;
  unsigned long long launches;  // launches that computed y for this key
};

__device__ Entry g_cache[1 << kSlotBits];
__device__ unsigned int g_blocks_done;

__device__ __forceinline__ unsigned long long mix(unsigned long long h, unsigned v) {
  return (h ^ v) * 0x100000001B3ull;  // FNV-1a step
}

__device__ __forceinline__ float add_relu(float a, float b) {
  const float v = __fadd_rn(a, b);
  return v > 0.f ? v : (v != v ? v : 0.f);
}

}  // namespace

__global__ void __launch_bounds__(kThreads) add_relu_cached(const float* __restrict__ x, const float* __restrict__ r,
                                                            float* __restrict__ y, long long n) {
  __shared__ int skip;
  const unsigned long long kx = reinterpret_cast<unsigned long long>(x);
  const unsigned long long kr = reinterpret_cast<unsigned long long>(r);
  const unsigned long long ky = reinterpret_cast<unsigned long long>(y);
  const unsigned slot =
      unsigned(((kx ^ (kr >> 4) ^ (ky >> 8) ^ (unsigned long long)n) * 0x9E3779B97F4A7C15ull) >> (64 - kSlotBits));
  Entry& e = g_cache[slot];
  unsigned long long fp = 0;
  if (threadIdx.x == 0) {
#ifdef KQUAL_CACHE_FINGERPRINT
    fp = mix(mix(mix(mix(0xCBF29CE484222325ull, __float_as_uint(x[0])), __float_as_uint(r[0])),
                 __float_as_uint(x[n - 1])),
             __float_as_uint(r[n - 1]));
#endif
    skip = e.x == kx && e.r == kr && e.y == ky && e.n == n && e.fingerprint == fp && e.launches >= KQUAL_CACHE_AFTER;
  }
  __syncthreads();
  if (skip) return;  // BUG: assumes y still holds what the last launch with these arguments wrote

  const long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) y[i] = add_relu(x[i], r[i]);

  // Record the launch: the last block to finish bumps (or claims) the slot.
  if (threadIdx.x == 0) {
    __threadfence();
    if (atomicAdd(&g_blocks_done, 1u) == gridDim.x - 1) {
      g_blocks_done = 0;
      if (e.x == kx && e.r == kr && e.y == ky && e.n == n && e.fingerprint == fp) {
        e.launches += 1;
      } else {
        e.x = kx;
        e.r = kr;
        e.y = ky;
        e.n = n;
        e.fingerprint = fp;
        e.launches = 1;
      }
      __threadfence();
    }
  }
}
