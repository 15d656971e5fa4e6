// BROKEN ON PURPOSE: a persistent tiled transpose with no __syncthreads() at all. The tile is
// written row-wise (warp w writes rows w, w+8, w+16, w+24) and read column-wise (every warp reads
// entries written by all 8 warps), so a warp whose loads return early reads rows other warps have
// not written yet: the previous tile's values (or, in the first tile, whatever shared memory
// held). Without the second barrier, a fast warp also overwrites rows a slow warp is still
// reading. Each block loops over many tiles, so the race has many chances per case: wrong_result.
constexpr int kTile = 32;
constexpr int kRows = 8;

__global__ void transpose_nosync(const float* __restrict__ x, float* __restrict__ y, long long rows, long long cols) {
  __shared__ float tile[kTile][kTile + 1];
  const long long tiles_c = (cols + kTile - 1) / kTile;
  const long long tiles = ((rows + kTile - 1) / kTile) * tiles_c;
  const int tx = threadIdx.x, ty = threadIdx.y;
  for (long long t = blockIdx.x; t < tiles; t += gridDim.x) {
    const long long r0 = (t / tiles_c) * kTile, c0 = (t % tiles_c) * kTile;
    for (int k = 0; k < kTile; k += kRows) {
      const long long i = r0 + ty + k, j = c0 + tx;
      if (i < rows && j < cols) tile[ty + k][tx] = x[i * cols + j];
    }
    // missing: __syncthreads();
    for (int k = 0; k < kTile; k += kRows) {
      const long long oj = c0 + ty + k, oi = r0 + tx;
      if (oj < cols && oi < rows) y[oj * rows + oi] = tile[tx][ty + k];
    }
    // missing: __syncthreads(); before the next tile overwrites the buffer
  }
}
