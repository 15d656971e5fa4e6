// Tiled GEMM on the f32 FMA pipes (no tensor cores: TF32 would break the contract's error model).
// Block tile 128 x 128, k-tile 16, 256 threads, each thread an 8 x 8 register tile (two 4 x 4
// quadrants 64 apart, so the shared-memory reads of a warp are broadcasts or conflict-free float4s).
// Two shared-memory stages: the next k-tile is fetched into registers while the current one is
// multiplied, so one barrier per k-tile suffices. Every global load and store is guarded, so any
// m, n, k >= 1 works; out-of-range elements are loaded as 0 (0 * 0 adds nothing).
// Each output is one f32 FMA chain in k order: deterministic, and the error is that of sequential
// summation. bf16 and f16: loads widened to f32 (their products are exact in f32), one rounding at
// the store (f16: Inf past 65504).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace {

constexpr int kBM = 128, kBN = 128, kBK = 16, kThreads = 256;
constexpr int kPadA = 4;  // As rows stay 16-byte aligned for float4 reads

__device__ __forceinline__ float to_f(float v) { return v; }
__device__ __forceinline__ float to_f(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ float to_f(__half v) { return __half2float(v); }
template <typename T> __device__ __forceinline__ T from_f(float v);
template <> __device__ __forceinline__ float from_f<float>(float v) { return v; }
template <> __device__ __forceinline__ __nv_bfloat16 from_f<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }
template <> __device__ __forceinline__ __half from_f<__half>(float v) { return __float2half_rn(v); }

#ifdef KQUAL_BUG_F16_ACCUMULATOR
// KNOWN-BROKEN (broken/f16_accumulator): every FMA result rounded to f16, the running sum kept in f16
// (11 significant bits, and Inf past 65504): outputs off the correctly rounded f16 by an ulp and more
// (the bound is half an ulp plus f32 roundings), and rows whose products pass 65504 but cancel in pairs
// (family overflow) come out Inf where c is finite: wrong_result.
__device__ __forceinline__ float acc_round(float v) { return __half2float(__float2half_rn(v)); }
#else
__device__ __forceinline__ float acc_round(float v) { return v; }
#endif

}  // namespace

template <typename T>
__global__ void __launch_bounds__(kThreads, 2)
    gemm_128x128(const T* __restrict__ A, const T* __restrict__ B, T* __restrict__ C, int M, int N, int K) {
  __shared__ __align__(16) float As[2][kBK][kBM + kPadA];  // A tile, transposed: As[k][row]
  __shared__ __align__(16) float Bs[2][kBK][kBN];          // B tile: Bs[k][col]
  const int tid = threadIdx.x;
  const int row0 = blockIdx.y * kBM, col0 = blockIdx.x * kBN;
  // Loader mapping: A is read along its rows (16 consecutive k per row, 2 rows per warp), B along
  // its rows (128 consecutive columns per warp-quartet): both coalesced.
  const int a_r = tid / kBK, a_k = tid % kBK;  // rows a_r + 16 i, i < 8
  const int b_k = tid / kBN, b_c = tid % kBN;  // k-rows b_k + 2 i, i < 8
  float ra[8], rb[8];

  auto load = [&](int k0) {
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      const int r = row0 + i * 16 + a_r, kk = k0 + a_k;
      ra[i] = (r < M && kk < K) ? to_f(A[(size_t)r * K + kk]) : 0.0f;
    }
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      const int kk = k0 + i * 2 + b_k, c = col0 + b_c;
      rb[i] = (kk < K && c < N) ? to_f(B[(size_t)kk * N + c]) : 0.0f;
    }
  };
  auto store = [&](int s) {
#pragma unroll
    for (int i = 0; i < 8; ++i) As[s][a_k][i * 16 + a_r] = ra[i];
#pragma unroll
    for (int i = 0; i < 8; ++i) Bs[s][i * 2 + b_k][b_c] = rb[i];
  };

  const int ty = tid / 16, tx = tid % 16;
  float acc[8][8];
#pragma unroll
  for (int i = 0; i < 8; ++i)
#pragma unroll
    for (int j = 0; j < 8; ++j) acc[i][j] = 0.0f;

#ifdef KQUAL_BUG_MISSING_K_TAIL
  // KNOWN-BROKEN (broken/missing_k_tail): the k-tile count is rounded down, so the last K % 16 terms
  // of every dot product are never added (and k < 16 gives c = 0).
  const int tiles = K / kBK;
#else
  const int tiles = (K + kBK - 1) / kBK;
#endif
  load(0);
  store(0);
  __syncthreads();
  for (int t = 0; t < tiles; ++t) {
    const int cur = t & 1;
    if (t + 1 < tiles) load((t + 1) * kBK);  // in flight while this tile is multiplied
#pragma unroll
    for (int kk = 0; kk < kBK; ++kk) {
      const float4 a0 = *reinterpret_cast<const float4*>(&As[cur][kk][ty * 4]);
      const float4 a1 = *reinterpret_cast<const float4*>(&As[cur][kk][64 + ty * 4]);
      const float4 b0 = *reinterpret_cast<const float4*>(&Bs[cur][kk][tx * 4]);
      const float4 b1 = *reinterpret_cast<const float4*>(&Bs[cur][kk][64 + tx * 4]);
      const float av[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
      const float bv[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
#pragma unroll
      for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j) acc[i][j] = acc_round(fmaf(av[i], bv[j], acc[i][j]));
    }
    // The other stage was last read before the previous barrier: safe to overwrite now.
    if (t + 1 < tiles) store(cur ^ 1);
    __syncthreads();
  }

#ifdef KQUAL_BUG_MISSING_EDGE_GUARD
  // KNOWN-BROKEN (broken/missing_edge_guard): scalar stores with no row/column guard. Rows >= m and
  // columns >= n of the last block tiles are written anyway: past the end of c and, for columns >= n,
  // over the start of the next row (racing with the block that owns it). Loads stay guarded.
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const int r = row0 + (i < 4 ? ty * 4 + i : 64 + ty * 4 + (i - 4));
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const int c = col0 + (j < 4 ? tx * 4 + j : 64 + tx * 4 + (j - 4));
      C[(size_t)r * N + c] = from_f<T>(acc[i][j]);
    }
  }
#else
  const bool vec = sizeof(T) == 4 && (N % 4) == 0 && (reinterpret_cast<size_t>(C) % 16) == 0;
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const int r = row0 + (i < 4 ? ty * 4 + i : 64 + ty * 4 + (i - 4));
    if (r >= M) continue;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int c = col0 + h * 64 + tx * 4;
      T* out = C + (size_t)r * N + c;
      if (vec && c + 3 < N) {
        *reinterpret_cast<float4*>(out) = make_float4(acc[i][h * 4], acc[i][h * 4 + 1], acc[i][h * 4 + 2], acc[i][h * 4 + 3]);
      } else {
#pragma unroll
        for (int j = 0; j < 4; ++j)
          if (c + j < N) out[j] = from_f<T>(acc[i][h * 4 + j]);
      }
    }
  }
#endif
}

