// BROKEN ON PURPOSE: the 32 x 32 tiled transpose with its loads guarded but its stores not. On a
// shape that is not a multiple of 32 the edge tiles store the whole 32 x 32 tile: elements past
// the last output row land after the end of y (the harness's guard region: out_of_bounds_write),
// and columns past rows wrap into the next output row. Right when rows and cols are multiples of 32.
constexpr int kTile = 32;
constexpr int kRows = 8;

__global__ void transpose_no_edge(const float* __restrict__ x, float* __restrict__ y, long long rows, long long cols) {
  __shared__ float tile[kTile][kTile + 1];
  const long long tiles_c = (cols + kTile - 1) / kTile;
  const long long r0 = (blockIdx.x / tiles_c) * kTile, c0 = (blockIdx.x % tiles_c) * kTile;
  const int tx = threadIdx.x, ty = threadIdx.y;
  for (int k = 0; k < kTile; k += kRows) {
    const long long i = r0 + ty + k, j = c0 + tx;
    tile[ty + k][tx] = (i < rows && j < cols) ? x[i * cols + j] : 0.0f;
  }
  __syncthreads();
  for (int k = 0; k < kTile; k += kRows) {
    const long long oj = c0 + ty + k, oi = r0 + tx;
    y[oj * rows + oi] = tile[tx][ty + k];  // missing: if (oj < cols && oi < rows)
  }
}
