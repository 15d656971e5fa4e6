// SOL-ExecBench gemm_n4096_k4096: C[M, N] = A[M, K] @ B[K, N], f32 row-major, 16 x 16 output tiles
// through shared memory, one 256-thread block per tile (grid-stride over tiles), f32 fma
// accumulation; M, N and K need not be multiples of 16 (edges guarded) (docs/definitions.md).
// Known-broken variants are this file plus one define:
//   KQUAL_BUG_M_TAIL      rows past the last whole tile of 16 are never written (M mod 16 rows)
//   KQUAL_BUG_B_TRANSPOSED B read as [N, K] (C = A @ B.T, flashinfer-bench's gemm layout) instead of [K, N]

#define TILE 16

extern "C" __global__ void __launch_bounds__(256) def_gemm(const float* A, const float* B, float* C, long long M, long long N, long long K) {
  __shared__ float a_s[TILE][TILE + 1];
  __shared__ float b_s[TILE][TILE + 1];
  const int tx = threadIdx.x % TILE, ty = threadIdx.x / TILE;
  const long long tiles_n = (N + TILE - 1) / TILE;
#ifdef KQUAL_BUG_M_TAIL
  const long long tiles_m = M / TILE;
#else
  const long long tiles_m = (M + TILE - 1) / TILE;
#endif
  for (long long t = blockIdx.x; t < tiles_m * tiles_n; t += gridDim.x) {
    const long long row = (t / tiles_n) * TILE + ty, col = (t % tiles_n) * TILE + tx;
    float acc = 0.0f;
    for (long long k0 = 0; k0 < K; k0 += TILE) {
      const long long ka = k0 + tx, kb = k0 + ty;
      a_s[ty][tx] = row < M && ka < K ? A[row * K + ka] : 0.0f;
#ifdef KQUAL_BUG_B_TRANSPOSED
      b_s[ty][tx] = kb < K && col < N ? B[col * K + kb] : 0.0f;
#else
      b_s[ty][tx] = kb < K && col < N ? B[kb * N + col] : 0.0f;
#endif
      __syncthreads();
#pragma unroll
      for (int k = 0; k < TILE; ++k) acc = fmaf(a_s[ty][k], b_s[k][tx], acc);
      __syncthreads();
    }
    if (row < M && col < N) C[row * N + col] = acc;
  }
}
