// Three RMSNorm-shaped SOL-ExecBench Definitions, bf16 rows of `cols` elements, one 256-thread block
// per row (grid-stride over rows), row statistics in f32 (docs/definitions.md):
//   def_rmsnorm            rmsnorm_h4096: y = x * rsqrt(mean(x^2) + 1e-5) * w (eps fixed by the Definition)
//   def_fused_add_rmsnorm  Nemotron: x = hidden + residual; y = w * bf16(x * rsqrt(mean(x^2) + eps))
//   def_post_norm_residual Olmo 3: y = residual + bf16(w * s * rsqrt(mean(s^2) + eps))
// Nemotron's middle rounding follows its reference's explicit .to(torch.bfloat16); Olmo 3's
// .to(input_dtype) is float64 in kqual's reference process, so it is not rounded here. Known-broken
// variants are this file plus one define (examples/definitions/*/broken/*/kqual.toml):
//   KQUAL_BUG_ONE_PASS   the sum of squares reads only the first blockDim columns (the stride loop
//                        dropped): the row statistic is ~16x too small, outputs ~4x too large
//   KQUAL_BUG_ODD_ROW    rows handled in pairs: the last row of an odd row count is never written
//   KQUAL_BUG_PRE_NORM   post-norm done as pre-norm: normalizes (sublayer + residual), no residual after
#include <cuda_bf16.h>

typedef __nv_bfloat16 bf16;

__device__ __forceinline__ float ld(const bf16* p, long long i) { return __bfloat162float(p[i]); }
__device__ __forceinline__ float round_bf16(float v) { return __bfloat162float(__float2bfloat16_rn(v)); }

enum { kPlain = 0, kAddThenNorm = 1, kNormThenAdd = 2 };

template <int kMode>
__device__ __forceinline__ float row_input(const bf16* a, const bf16* res, long long j) {
#ifdef KQUAL_BUG_PRE_NORM
  if (kMode == kNormThenAdd) return ld(a, j) + ld(res, j);
#endif
  return kMode == kAddThenNorm ? ld(a, j) + ld(res, j) : ld(a, j);
}

template <int kMode>
__device__ void norm_rows(const bf16* a, const bf16* res, const bf16* w, bf16* y, long long rows, long long cols, float eps) {
  __shared__ float partial[8];  // one per warp of the 256-thread block
  __shared__ float scale;
#ifdef KQUAL_BUG_ODD_ROW
  const long long row_end = rows & ~1LL;
#else
  const long long row_end = rows;
#endif
#ifdef KQUAL_BUG_ONE_PASS
  const long long sum_end = cols < (long long)blockDim.x ? cols : (long long)blockDim.x;
#else
  const long long sum_end = cols;
#endif
  for (long long r = blockIdx.x; r < row_end; r += gridDim.x) {
    const bf16* ar = a + r * cols;
    const bf16* rr = res ? res + r * cols : nullptr;
    bf16* yr = y + r * cols;
    float s = 0.0f;
    for (long long j = threadIdx.x; j < sum_end; j += blockDim.x) {
      const float v = row_input<kMode>(ar, rr, j);
      s = fmaf(v, v, s);
    }
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    if ((threadIdx.x & 31) == 0) partial[threadIdx.x >> 5] = s;
    __syncthreads();
    if (threadIdx.x == 0) {
      float t = 0.0f;
      for (int k = 0; k < int(blockDim.x >> 5); ++k) t += partial[k];
      scale = rsqrtf(t / float(cols) + eps);
    }
    __syncthreads();
    const float k = scale;
    for (long long j = threadIdx.x; j < cols; j += blockDim.x) {
      const float v = row_input<kMode>(ar, rr, j);
      float out;
      if (kMode == kPlain) {
        out = v * k * ld(w, j);
      } else if (kMode == kAddThenNorm) {
        out = ld(w, j) * round_bf16(v * k);  // weight * x_normalized.to(bfloat16)
      } else {
#ifdef KQUAL_BUG_PRE_NORM
        out = ld(w, j) * (v * k);
#else
        // residual + weight * normalized. The reference's .to(input_dtype) before the add is a no-op
        // where kqual evaluates it (float64 inputs), and rounding there can exceed the bound where
        // the residual cancels the normalized value: one rounding, at the end.
        out = ld(rr, j) + ld(w, j) * (v * k);
#endif
      }
      yr[j] = __float2bfloat16_rn(out);
    }
    __syncthreads();  // partial and scale are reused by the next row
  }
}

extern "C" __global__ void __launch_bounds__(256)
    def_rmsnorm(const bf16* hidden_states, const bf16* weight, bf16* output, long long batch_size, long long hidden_size) {
  norm_rows<kPlain>(hidden_states, nullptr, weight, output, batch_size, hidden_size, 1e-5f);
}

extern "C" __global__ void __launch_bounds__(256)
    def_fused_add_rmsnorm(const bf16* hidden_states, const bf16* residual, const bf16* weight, bf16* output, long long batch_size,
                          long long seq_len, long long hidden_size, float eps) {
  norm_rows<kAddThenNorm>(hidden_states, residual, weight, output, batch_size * seq_len, hidden_size, eps);
}

extern "C" __global__ void __launch_bounds__(256)
    def_post_norm_residual(const bf16* sublayer_output, const bf16* residual, const bf16* weight, bf16* output, long long batch_size,
                           long long seq_len, long long hidden_size, float eps) {
  norm_rows<kNormThenAdd>(sublayer_output, residual, weight, output, batch_size * seq_len, hidden_size, eps);
}
