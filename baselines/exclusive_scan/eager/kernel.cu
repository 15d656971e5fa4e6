// Eager exclusive scan, as an unoptimised framework composes it: one element per thread.
//   1. block_scan:   each block of 256 scans its elements in shared memory (Hillis-Steele,
//                    double-buffered), writes the local exclusive scan to y and its total to sums
//   2. sums_scan:    one block scans the block totals in place (exclusive), 1024 per step
//   3. add_carry:    y[i] += sums[block]   (y is read and written a second time)
// Scalar loads and stores, 64-bit indices. i32 adds wrap modulo 2^32 (done on unsigned values).

__device__ __forceinline__ int eadd(int a, int b) { return int(unsigned(a) + unsigned(b)); }
__device__ __forceinline__ float eadd(float a, float b) { return a + b; }

template <typename T, int N>
__device__ T hillis_steele_inclusive(T v, T (*buf)[N]) {
  const int t = threadIdx.x;
  int cur = 0;
  buf[cur][t] = v;
  __syncthreads();
  for (int d = 1; d < N; d <<= 1) {
    T r = buf[cur][t];
    if (t >= d) r = eadd(buf[cur][t - d], r);
    buf[1 - cur][t] = r;
    cur = 1 - cur;
    __syncthreads();
  }
  return buf[cur][t];
}

template <typename T>
__global__ void block_scan(const T* x, T* y, T* sums, long long n) {
  __shared__ T buf[2][256];
  const long long i = (long long)blockIdx.x * 256 + threadIdx.x;
  const T v = i < n ? x[i] : T(0);
  const T inc = hillis_steele_inclusive<T, 256>(v, buf);
  // Exclusive = the inclusive value of the previous thread.
  __shared__ T inc_all[256];
  inc_all[threadIdx.x] = inc;
  __syncthreads();
  if (i < n) y[i] = threadIdx.x ? inc_all[threadIdx.x - 1] : T(0);
  if (threadIdx.x == 255) sums[blockIdx.x] = inc;
}

template <typename T>
__global__ void sums_scan(T* sums, long long n) {
  __shared__ T buf[2][1024];
  __shared__ T inc_all[1024];
  const long long blocks = (n + 255) / 256;
  T carry = T(0);
  for (long long c = 0; c < blocks; c += 1024) {
    const long long i = c + threadIdx.x;
    const T v = i < blocks ? sums[i] : T(0);
    __syncthreads();
    const T inc = hillis_steele_inclusive<T, 1024>(v, buf);
    inc_all[threadIdx.x] = inc;
    __syncthreads();
    if (i < blocks) sums[i] = eadd(carry, threadIdx.x ? inc_all[threadIdx.x - 1] : T(0));
    carry = eadd(carry, inc_all[1023]);
    __syncthreads();
  }
}

template <typename T>
__global__ void add_carry(T* y, const T* sums, long long n) {
  const long long i = (long long)blockIdx.x * 256 + threadIdx.x;
  if (i < n) y[i] = eadd(sums[blockIdx.x], y[i]);
}
