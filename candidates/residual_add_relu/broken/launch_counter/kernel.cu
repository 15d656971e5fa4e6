// BROKEN ON PURPOSE: a __device__ launch counter (thread 0 of block 0 adds one per launch with
// atomicAdd); after KQUAL_LAUNCHES_BEFORE_SHORTCUT (1000) launches of this module the kernel processes
// only the first half of the elements and leaves the second half of y as it was. A correctness phase
// (a couple of hundred launches, each checked) never gets there; a long benchmark loop does, and on
// untouched buffers y still holds the previous, correct, result -- only a harness that poisons the
// output before each timed sample and checks it sees the missing half.
// (Blocks read the counter as they start, so only the one launch that crosses the threshold may
// have some blocks on either side of it.)
#ifndef KQUAL_LAUNCHES_BEFORE_SHORTCUT
#define KQUAL_LAUNCHES_BEFORE_SHORTCUT 1000
#endif

namespace {

__device__ unsigned long long g_launches;

__device__ __forceinline__ float add_relu(float a, float b) {
  const float v = __fadd_rn(a, b);
  return v > 0.f ? v : (v != v ? v : 0.f);
}

}  // namespace

#ifdef KQUAL_REWRITE_HASH_SLOTS
// The hash-slot variant (broken/hash_slot_rewrite): a kernel that found kqual's output hash slots.
// kqual selftest writes their address here ([expect] given_hash_slots), standing in for a kernel
// that found it by other means. Once "warm" every other launch does nothing, and the next launch
// overwrites the skipped launch's hash (the poison's) with the last hash of a launch that worked --
// a cheat that would pass if the hashes stayed on the device until every sample had run. kqual
// reads each hash back before the candidate runs again, and notices the slot was rewritten.
extern "C" {
__device__ unsigned long long kqual_test_hash_slots;
}
namespace {
__device__ unsigned long long g_good_hash;
}  // namespace
#endif

__global__ void __launch_bounds__(256) add_relu_counted(const float* __restrict__ x, const float* __restrict__ r,
                                                        float* __restrict__ y, long long n) {
  __shared__ unsigned long long seen;
  if (threadIdx.x == 0)
    seen = blockIdx.x == 0 ? atomicAdd(&g_launches, 1ull) : *reinterpret_cast<volatile unsigned long long*>(&g_launches);
  __syncthreads();
#ifdef KQUAL_REWRITE_HASH_SLOTS
  const bool warm = seen >= KQUAL_LAUNCHES_BEFORE_SHORTCUT || kqual_test_hash_slots != 0;
  if (blockIdx.x == 0 && threadIdx.x == 0 && kqual_test_hash_slots != 0) {
    // Slot 0 holds the hash kqual took after the previous launch.
    unsigned long long* slot = reinterpret_cast<unsigned long long*>(kqual_test_hash_slots);
    if (seen % 2 == 1) g_good_hash = *slot;  // the previous launch worked: remember its hash
    else *slot = g_good_hash;                // BUG: the previous launch did nothing; paper over its hash
  }
  if (warm && seen % 2 == 1) return;  // BUG: every other launch does nothing
  const long long end = n;
#elif defined(KQUAL_WORK_EVERY)
  // The graph-replay variant (broken/graph_launch_stride): once "warm", only every KQUAL_WORK_EVERY-th
  // launch does any work at all. A CUDA graph of N >= KQUAL_WORK_EVERY launches into ONE output
  // leaves the right result behind after the replay while doing 1/KQUAL_WORK_EVERY of the work;
  // with one poisoned output copy per launch of the replay, all hashed, the skipped copies still
  // hold the poison.
  if (seen >= KQUAL_LAUNCHES_BEFORE_SHORTCUT && seen % KQUAL_WORK_EVERY != 0) return;  // BUG: the launch does nothing
  const long long end = n;
#else
  const long long end = seen >= KQUAL_LAUNCHES_BEFORE_SHORTCUT ? n / 2 : n;  // BUG: half the work once "warm"
#endif
  const long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < end; i += stride) y[i] = add_relu(x[i], r[i]);
}
