// Batched matmul, 16 x 16 output tiles, one 256-thread block per tile (grid-stride over the
// batch * tiles_m * tiles_n tiles): a and b staged through shared memory 16 deep along k, zero-padded
// at the m, n and k edges, one f32 fma accumulator per output, rounded once to T on the store.
// 64-bit indices throughout.
// Known-broken variants are this file plus one define (candidates/bmm/broken/*/kqual.toml):
//   KQUAL_BUG_BF16_ACC   keeps the accumulator in bf16 (every partial sum rounded to 8 bits)
//   KQUAL_BUG_K_TAIL     loops over whole k tiles only (k / 16): the last k % 16 terms are dropped
//   KQUAL_BUG_EDGE_TILES counts output tiles as m / 16 and n / 16: partial edge tiles are never
//                        computed, their outputs stay unwritten
#include <cuda_bf16.h>

#define TILE 16

__device__ __forceinline__ float kq_load(const float* p, long long i) { return p[i]; }
__device__ __forceinline__ float kq_load(const __nv_bfloat16* p, long long i) { return __bfloat162float(p[i]); }
__device__ __forceinline__ void kq_store(float* p, long long i, float v) { p[i] = v; }
__device__ __forceinline__ void kq_store(__nv_bfloat16* p, long long i, float v) { p[i] = __float2bfloat16_rn(v); }

template <typename T>
__global__ void __launch_bounds__(TILE * TILE) bmm_tiled(const T* a, const T* b, T* c, long long batch, long long m,
                                                         long long n, long long k) {
  __shared__ float as[TILE][TILE + 1];
  __shared__ float bs[TILE][TILE + 1];
  const int tx = threadIdx.x % TILE, ty = threadIdx.x / TILE;
#ifdef KQUAL_BUG_EDGE_TILES
  const long long tiles_m = m / TILE, tiles_n = n / TILE;
#else
  const long long tiles_m = (m + TILE - 1) / TILE, tiles_n = (n + TILE - 1) / TILE;
#endif
#ifdef KQUAL_BUG_K_TAIL
  const long long k_end = k / TILE * TILE;
#else
  const long long k_end = k;
#endif
  const long long tiles = batch * tiles_m * tiles_n;
  for (long long tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    const long long bi = tile / (tiles_m * tiles_n), rest = tile % (tiles_m * tiles_n);
    const long long row = rest / tiles_n * TILE + ty, col = rest % tiles_n * TILE + tx;
    const T* ab = a + bi * m * k;
    const T* bb = b + bi * k * n;
#ifdef KQUAL_BUG_BF16_ACC
    __nv_bfloat16 acc = __float2bfloat16_rn(0.0f);
#else
    float acc = 0.0f;
#endif
    for (long long k0 = 0; k0 < k_end; k0 += TILE) {
      as[ty][tx] = row < m && k0 + tx < k ? kq_load(ab, row * k + k0 + tx) : 0.0f;
      bs[ty][tx] = k0 + ty < k && col < n ? kq_load(bb, (k0 + ty) * n + col) : 0.0f;
      __syncthreads();
#pragma unroll
      for (int p = 0; p < TILE; ++p) {
#ifdef KQUAL_BUG_BF16_ACC
        acc = __float2bfloat16_rn(fmaf(as[ty][p], bs[p][tx], __bfloat162float(acc)));
#else
        acc = fmaf(as[ty][p], bs[p][tx], acc);
#endif
      }
      __syncthreads();  // the tiles are overwritten by the next k step
    }
#ifdef KQUAL_BUG_BF16_ACC
    if (row < m && col < n) kq_store(c, bi * m * n + row * n + col, __bfloat162float(acc));
#else
    if (row < m && col < n) kq_store(c, bi * m * n + row * n + col, acc);
#endif
  }
}
