// Exclusive scan, reduce-then-scan in three launches over tiles of 4096 elements
// (256 threads x 16 items):
//   1. scan_tile_sums:    each block sums its tile (16-byte loads) -> sums[tile]
//   2. scan_tile_carries: one block scans the tile sums in place (exclusive) -> the carries
//   3. scan_tile_apply:   each block stages its tile in shared memory (coalesced, 16-byte loads),
//      every thread scans its 16 consecutive items in registers, the thread totals are scanned
//      with warp shuffles, and the tile is written back coalesced, offset by its carry.
// Traffic: x read twice, y written once (3n elements); 64-bit indices throughout (n up to 2^34).
// i32 adds are done on unsigned values: wrap-around modulo 2^32 is the contract's definition.
// Deterministic: every sum is formed in a fixed order (no atomics).

#if defined(KQUAL_BUG_BF16_ACCUMULATION)
#include <cuda_bf16.h>
#endif

namespace {

constexpr int kThreads = 256;
constexpr int kItems = 16;
constexpr int kTile = kThreads * kItems;  // 4096 elements
constexpr int kWarps = kThreads / 32;
constexpr int kCarryThreads = 1024;
constexpr unsigned kFull = 0xffffffffu;

__device__ __forceinline__ int sadd(int a, int b) { return int(unsigned(a) + unsigned(b)); }
#if defined(KQUAL_BUG_BF16_ACCUMULATION)
// KNOWN-BROKEN (broken/bf16_accumulation): every f32 partial sum is rounded to bf16 (8 significant bits).
__device__ __forceinline__ float sadd(float a, float b) { return __bfloat162float(__float2bfloat16_rn(__fadd_rn(a, b))); }
#else
__device__ __forceinline__ float sadd(float a, float b) { return __fadd_rn(a, b); }
#endif

// Shared-memory index with one pad word per 32: thread t reading items 16t..16t+15 is conflict-free.
constexpr int kTilePadded = kTile + kTile / 32;
__device__ __forceinline__ int pad(int i) { return i + (i >> 5); }

template <typename T>
__device__ __forceinline__ T warp_inclusive(T v, int lane) {
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    T u = __shfl_up_sync(kFull, v, o);
    if (lane >= o) v = sadd(u, v);
  }
  return v;
}

// Exclusive scan of one value per thread across the block; *total gets the block's sum.
// wsum holds 32 entries; callers __syncthreads() before reusing it.
template <typename T, int Warps>
__device__ __forceinline__ T block_exclusive(T v, T* wsum, T* total) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  T inc = warp_inclusive(v, lane);
  T exc = __shfl_up_sync(kFull, inc, 1);
  if (lane == 0) exc = T(0);
  if (lane == 31) wsum[warp] = inc;
  __syncthreads();
  if (warp == 0) {
    T w = lane < Warps ? wsum[lane] : T(0);
    w = warp_inclusive(w, lane);
    if (lane < Warps) wsum[lane] = w;
  }
  __syncthreads();
  *total = wsum[Warps - 1];
  return warp == 0 ? exc : sadd(wsum[warp - 1], exc);
}

}  // namespace

template <typename T>
__global__ void __launch_bounds__(kThreads) scan_tile_sums(const T* __restrict__ x, T* __restrict__ sums, long long n) {
  static_assert(sizeof(T) == 4, "4-byte element types only");
  __shared__ T wsum[kWarps];
  const long long base = (long long)blockIdx.x * kTile;
  const int t = threadIdx.x;
  T acc = T(0);
  if (base + kTile <= n) {
    const int4* xv = reinterpret_cast<const int4*>(x + base);
#pragma unroll
    for (int k = 0; k < kItems / 4; ++k) {
      int4 q = __ldg(xv + k * kThreads + t);
      T a = sadd(reinterpret_cast<const T&>(q.x), reinterpret_cast<const T&>(q.y));
      T b = sadd(reinterpret_cast<const T&>(q.z), reinterpret_cast<const T&>(q.w));
      acc = sadd(acc, sadd(a, b));
    }
  } else {
    for (long long i = base + t; i < n; i += kThreads) acc = sadd(acc, x[i]);
  }
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) acc = sadd(acc, __shfl_down_sync(kFull, acc, o));
  if ((t & 31) == 0) wsum[t >> 5] = acc;
  __syncthreads();
  if (t == 0) {
    T s = wsum[0];
#pragma unroll
    for (int w = 1; w < kWarps; ++w) s = sadd(s, wsum[w]);
    sums[blockIdx.x] = s;
  }
}

// One block: sums[0..tiles) becomes its exclusive scan, 1024 tiles per step with a running carry.
template <typename T>
__global__ void __launch_bounds__(kCarryThreads) scan_tile_carries(T* __restrict__ sums, long long n) {
  __shared__ T wsum[32];
  const long long tiles = (n + kTile - 1) / kTile;
  T carry = T(0);
  for (long long c = 0; c < tiles; c += kCarryThreads) {
    const long long i = c + threadIdx.x;
    T v = i < tiles ? sums[i] : T(0);
    T total;
    T e = block_exclusive<T, kCarryThreads / 32>(v, wsum, &total);
    if (i < tiles) sums[i] = sadd(carry, e);
    carry = sadd(carry, total);
    __syncthreads();  // wsum is reused by the next step
  }
}

template <typename T>
__global__ void __launch_bounds__(kThreads) scan_tile_apply(const T* __restrict__ x, T* __restrict__ y,
                                                            const T* __restrict__ carries, long long n) {
  __shared__ T tile[kTilePadded];
  __shared__ T wsum[32];
  const long long base = (long long)blockIdx.x * kTile;
  const int t = threadIdx.x;
  const bool full = base + kTile <= n;
  // Stage the tile (coalesced); elements past n read as 0.
  if (full) {
    const int4* xv = reinterpret_cast<const int4*>(x + base);
#pragma unroll
    for (int k = 0; k < kItems / 4; ++k) {
      const int v = k * kThreads + t;
      int4 q = __ldg(xv + v);
      const int e = 4 * v;  // 4 consecutive items share one pad offset
      tile[pad(e) + 0] = reinterpret_cast<const T&>(q.x);
      tile[pad(e) + 1] = reinterpret_cast<const T&>(q.y);
      tile[pad(e) + 2] = reinterpret_cast<const T&>(q.z);
      tile[pad(e) + 3] = reinterpret_cast<const T&>(q.w);
    }
  } else {
#pragma unroll
    for (int k = 0; k < kItems; ++k) {
      const int e = k * kThreads + t;
      tile[pad(e)] = base + e < n ? x[base + e] : T(0);
    }
  }
  __syncthreads();
  // Each thread: its 16 consecutive items.
  T items[kItems];
  T sum = T(0);
#pragma unroll
  for (int k = 0; k < kItems; ++k) {
    items[k] = tile[pad(t * kItems + k)];
    sum = sadd(sum, items[k]);
  }
  T total;
  T prefix = block_exclusive<T, kWarps>(sum, wsum, &total);
#if defined(KQUAL_BUG_MISSING_CARRY)
  // KNOWN-BROKEN (broken/missing_carry): the tile's carry (sum of all earlier tiles) is never added.
  (void)carries;
  T run = prefix;
#else
  T run = sadd(carries[blockIdx.x], prefix);
#endif
#pragma unroll
  for (int k = 0; k < kItems; ++k) {
#if defined(KQUAL_BUG_INCLUSIVE)
    // KNOWN-BROKEN (broken/inclusive): the running sum is stored after adding the item: y[i] = x[0] + ... + x[i].
    run = sadd(run, items[k]);
    tile[pad(t * kItems + k)] = run;
#else
    tile[pad(t * kItems + k)] = run;
    run = sadd(run, items[k]);
#endif
  }
  __syncthreads();
  if (full) {
    int4* yv = reinterpret_cast<int4*>(y + base);
#pragma unroll
    for (int k = 0; k < kItems / 4; ++k) {
      const int v = k * kThreads + t;
      const int e = 4 * v;
      int4 q;
      reinterpret_cast<T&>(q.x) = tile[pad(e) + 0];
      reinterpret_cast<T&>(q.y) = tile[pad(e) + 1];
      reinterpret_cast<T&>(q.z) = tile[pad(e) + 2];
      reinterpret_cast<T&>(q.w) = tile[pad(e) + 3];
      yv[v] = q;
    }
  } else {
#pragma unroll
    for (int k = 0; k < kItems; ++k) {
      const int e = k * kThreads + t;
      if (base + e < n) y[base + e] = tile[pad(e)];
    }
  }
}
