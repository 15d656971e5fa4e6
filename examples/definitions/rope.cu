// SOL-ExecBench FLUX rope (black-forest-labs_FLUX.1-schnell_flux_rope_apply_rotation): bf16
// query_or_key [batch, seq, heads, head_dim] rotated pair by pair, the pairs interleaved (2i, 2i+1),
// with cos/sin [seq, head_dim] read at the pair's own two positions, as the reference does:
//   y[2i]   = x[2i] * cos[2i]   - x[2i+1] * sin[2i]
//   y[2i+1] = x[2i] * sin[2i+1] + x[2i+1] * cos[2i+1]
// in f32, rounded once to bf16. One thread per pair, grid-stride (docs/definitions.md).
// Known-broken variants are this file plus one define:
//   KQUAL_BUG_HALF_PAIRS  the rotate-half pairing (i, i + head_dim/2) of GPT-NeoX-style rope
//                         instead of the interleaved pairs this Definition uses
//   KQUAL_BUG_SIN_SIGN    rotates by -theta (the sine's sign flipped)
#include <cuda_bf16.h>

typedef __nv_bfloat16 bf16;

__device__ __forceinline__ float ld(const bf16* p, long long i) { return __bfloat162float(p[i]); }

extern "C" __global__ void __launch_bounds__(256)
    def_rope_pairs(const bf16* query_or_key, const bf16* freqs_cos, const bf16* freqs_sin, bf16* output, long long batch_size,
                   long long seq_len, long long num_heads, long long head_dim) {
  const long long half = head_dim / 2;
  const long long pairs = batch_size * seq_len * num_heads * half;
  for (long long p = blockIdx.x * (long long)blockDim.x + threadIdx.x; p < pairs; p += (long long)gridDim.x * blockDim.x) {
    const long long i = p % half;             // pair within the head
    const long long token_head = p / half;    // (b * seq + s) * heads + h
    const long long s = (token_head / num_heads) % seq_len;
    const long long row = token_head * head_dim;
#ifdef KQUAL_BUG_HALF_PAIRS
    const long long j0 = i, j1 = i + half;
#else
    const long long j0 = 2 * i, j1 = 2 * i + 1;
#endif
    const float x0 = ld(query_or_key, row + j0), x1 = ld(query_or_key, row + j1);
    const float c0 = ld(freqs_cos, s * head_dim + j0), c1 = ld(freqs_cos, s * head_dim + j1);
#ifdef KQUAL_BUG_SIN_SIGN
    const float s0 = -ld(freqs_sin, s * head_dim + j0), s1 = -ld(freqs_sin, s * head_dim + j1);
#else
    const float s0 = ld(freqs_sin, s * head_dim + j0), s1 = ld(freqs_sin, s * head_dim + j1);
#endif
    output[row + j0] = __float2bfloat16_rn(x0 * c0 - x1 * s0);
    output[row + j1] = __float2bfloat16_rn(x0 * s1 + x1 * c1);
  }
}
