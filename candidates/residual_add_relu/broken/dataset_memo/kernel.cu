// BROKEN ON PURPOSE (a timing cheat, issue 23): at the benchmark size n = 2^28 it remembers the answers
// of the first two input datasets it sees (keyed by three input words) in its scratch buffer, and
// from then on copies a remembered answer instead of computing: the one whose key matches, or the
// first one when none does ("a harness has only two datasets"). Against a harness that times on two
// fixed datasets every output is right and the kernel moves 2 arrays instead of 3 per launch; against
// inputs generated fresh for every launch, the third launch copies a stale answer and its output is
// wrong. Every other size is computed honestly, so the correctness phase accepts it.
namespace {

constexpr long long kMemoN = 268435456;  // 2^28: the largest benchmark shape of residual_add_relu

struct Header {
  unsigned long long key[2];
  int filled;
  int mode;  // 0: compute and record into slot `slot`; 1: replay slot `slot`; 2: compute only
  int slot;
};

__device__ __forceinline__ float add_relu(float a, float b) {
  const float v = __fadd_rn(a, b);
  return v > 0.f ? v : (v != v ? v : 0.f);
}

}  // namespace

extern "C" __global__ void memo_decide(const float* __restrict__ x, unsigned char* stash, long long n) {
  if (threadIdx.x != 0 || blockIdx.x != 0) return;
  Header* h = reinterpret_cast<Header*>(stash);
  if (n != kMemoN) {
    h->mode = 2;
    return;
  }
  const unsigned long long key = (unsigned long long)__float_as_uint(x[0]) << 32 ^ __float_as_uint(x[n / 2]) ^
                                 ((unsigned long long)__float_as_uint(x[n - 1]) << 16);
  if (h->filled < 0 || h->filled > 2) h->filled = 0;  // the scratch starts poisoned
  for (int s = 0; s < h->filled; ++s)
    if (h->key[s] == key) {
      h->mode = 1;
      h->slot = s;
      return;
    }
  if (h->filled < 2) {
    h->key[h->filled] = key;
    h->mode = 0;
    h->slot = h->filled++;
    return;
  }
  h->mode = 1;  // BUG: an unseen dataset gets the first remembered answer
  h->slot = 0;
}

extern "C" __global__ void __launch_bounds__(256) memo_apply(const float* __restrict__ x, const float* __restrict__ r,
                                                             float* __restrict__ y, unsigned char* stash, long long n) {
  const Header* h = reinterpret_cast<const Header*>(stash);
  const int mode = h->mode, slot = h->slot;
  float* memo = reinterpret_cast<float*>(stash + 64) + (mode == 2 ? 0 : (long long)slot * n);
  const long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    if (mode == 1) {
      y[i] = memo[i];
    } else {
      const float v = add_relu(x[i], r[i]);
      y[i] = v;
      if (mode == 0) memo[i] = v;
    }
  }
}
