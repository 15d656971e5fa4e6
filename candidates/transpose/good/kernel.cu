// Tiled transpose: a 32 x 32 tile goes through shared memory so that both the loads (along x's
// rows) and the stores (along y's rows) are coalesced. The tile has one column of padding
// (32 x 33) so that reading a column hits 32 different banks instead of one. 32 x 8 threads per
// block, 4 elements per thread. A 1-D grid over tiles (no 65535 limit on grid.y), 64-bit indices.
// Elements are moved as values of T, never through arithmetic: NaN payloads and -0 survive.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

constexpr int kTile = 32;
constexpr int kRows = 8;  // threadIdx.y extent: each thread moves kTile / kRows elements

#ifdef KQUAL_BUG_F16_PAIRED_COLUMNS
// KNOWN-BROKEN (broken/f16_odd_column): the columns a kernel moving __half2 pairs along x's rows
// covers, cols / 2 pairs: an odd-width x's last column is never loaded nor stored (y's last row).
__device__ __forceinline__ long long columns_moved(long long cols) { return cols / 2 * 2; }
#else
__device__ __forceinline__ long long columns_moved(long long cols) { return cols; }
#endif

template <typename T>
__global__ void __launch_bounds__(kTile * kRows) transpose_tiled(const T* __restrict__ x, T* __restrict__ y,
                                                                 long long rows, long long cols) {
  __shared__ T tile[kTile][kTile + 1];
  const long long tiles_c = (cols + kTile - 1) / kTile;
  const long long t = blockIdx.x;
  const long long r0 = (t / tiles_c) * kTile;  // first row of x in this tile
  const long long c0 = (t % tiles_c) * kTile;  // first column of x in this tile
  const int tx = threadIdx.x, ty = threadIdx.y;
  const long long moved = columns_moved(cols);

  const long long j = c0 + tx;
#pragma unroll
  for (int k = 0; k < kTile; k += kRows) {
    const long long i = r0 + ty + k;
    if (i < rows && j < moved) tile[ty + k][tx] = x[i * cols + j];
  }
  __syncthreads();
  // y is cols x rows: its row c0 + ty + k, column r0 + tx holds x[r0 + tx][c0 + ty + k].
  const long long oi = r0 + tx;
#pragma unroll
  for (int k = 0; k < kTile; k += kRows) {
    const long long oj = c0 + ty + k;
    if (oj < moved && oi < rows) y[oj * rows + oi] = tile[tx][ty + k];
  }
}
