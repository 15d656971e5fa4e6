// Row sums with the row split over several blocks that atomicAdd their partial sums onto y, which an
// earlier launch of the plan zeroes (zero_rows; launches run in order on one stream). Correct, and
// not bitwise reproducible: the order in which a row's blocks arrive at y[row] depends on timing,
// so the last bits of y can change from run to run. reduce_sum does not require reproducibility
// (the error bound covers any order); kqual measures the difference between two runs against it.
//
// splits = gridDim.x / rows blocks per row (the manifest's grid: 4 for rows longer than 2048
// elements, 1 otherwise, so short rows, where the worst-case bound is a few ulps, are summed by one
// block and added once onto 0, exactly). Each block: 256 threads strided over its segment, warp
// sums by butterfly shuffles, one partial per warp in shared memory, thread 0 adds them and
// atomicAdds the block's partial. f32 only: float atomics (a bf16 atomicAdd would accumulate in bf16).

namespace {
constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr unsigned kFull = 0xffffffffu;

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(kFull, v, o);
  return v;
}
}  // namespace

// y[r] = 0 for every row: the atomics below add onto it. (-DKQUAL_BUG_NO_ZERO: broken/atomic_no_zero
// leaves y as the harness poisoned it, so the sums land on NaN or 3.4e38.)
extern "C" __global__ void zero_rows(float* y, long long rows) {
#ifdef KQUAL_BUG_NO_ZERO
  return;
#endif
  for (long long r = blockIdx.x * (long long)blockDim.x + threadIdx.x; r < rows; r += (long long)gridDim.x * blockDim.x) y[r] = 0.0f;
}

extern "C" __global__ void __launch_bounds__(kThreads) reduce_rows_atomic(const float* __restrict__ x, float* y, long long rows,
                                                                         long long cols) {
  __shared__ float warp_part[kWarps];
  const long long splits = gridDim.x / rows;
  const long long row = blockIdx.x / splits, part = blockIdx.x % splits;
  if (row >= rows) return;  // whole block: the barrier below is reached by all of its threads or none
  const long long chunk = (cols + splits - 1) / splits;
  const long long beg = part * chunk, end = min(cols, beg + chunk);
  const float* xr = x + row * cols;
  float acc = 0.0f;
  for (long long j = beg + threadIdx.x; j < end; j += kThreads) acc += xr[j];
  acc = warp_sum(acc);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) warp_part[warp] = acc;
  __syncthreads();
  if (threadIdx.x == 0) {
    float s = 0.0f;
    for (int w = 0; w < kWarps; ++w) s += warp_part[w];
    atomicAdd(y + row, s);
  }
}
