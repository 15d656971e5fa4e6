// SOL-ExecBench softmax_h4096: softmax over the last axis of a batch_size x hidden_size f32 matrix,
// one 256-thread block per row (grid-stride over rows): the row max, the sum of exp(x - max) in f32
// (warp shuffles, then one partial per warp in shared memory), then the quotient (docs/definitions.md).
// Known-broken variants are this file plus one define:
//   KQUAL_BUG_LOCAL_SUM  the block's row sum is never broadcast: each thread divides by its own
//                        partial sum (hidden_size / 256 terms), outputs ~256x too large
//   KQUAL_BUG_ODD_ROW    rows handled in pairs: the last row of an odd row count is never written
// With SOL's default tolerance (atol 1e-2 + rtol 1e-2 |ref|) and 4096 columns of N(0, 1) logits
// (outputs below ~0.01), a softmax off by a factor of 2 would still pass: the mutants are ones
// that tolerance can see.

__device__ __forceinline__ float warp_max(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
__device__ __forceinline__ float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

extern "C" __global__ void __launch_bounds__(256)
    def_softmax(const float* input, float* output, long long batch_size, long long hidden_size) {
  __shared__ float part[8];
#ifdef KQUAL_BUG_ODD_ROW
  const long long row_end = batch_size & ~1LL;
#else
  const long long row_end = batch_size;
#endif
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = int(blockDim.x >> 5);
  for (long long r = blockIdx.x; r < row_end; r += gridDim.x) {
    const float* x = input + r * hidden_size;
    float* y = output + r * hidden_size;
    float m = -__int_as_float(0x7f800000);  // -Inf (NVRTC has no INFINITY without headers)
    for (long long c = threadIdx.x; c < hidden_size; c += blockDim.x) m = fmaxf(m, x[c]);
    m = warp_max(m);
    if (lane == 0) part[warp] = m;
    __syncthreads();
    m = part[0];
    for (int k = 1; k < warps; ++k) m = fmaxf(m, part[k]);
    __syncthreads();
    float s = 0.0f;
    for (long long c = threadIdx.x; c < hidden_size; c += blockDim.x) s += expf(x[c] - m);
#ifdef KQUAL_BUG_LOCAL_SUM
    const float local = s;
#endif
    s = warp_sum(s);
    if (lane == 0) part[warp] = s;
    __syncthreads();
    float total = 0.0f;
    for (int k = 0; k < warps; ++k) total += part[k];
#ifdef KQUAL_BUG_LOCAL_SUM
    total = local;
#endif
    const float inv = 1.0f / total;
    for (long long c = threadIdx.x; c < hidden_size; c += blockDim.x) y[c] = expf(x[c] - m) * inv;
    __syncthreads();  // part is reused by the next row
  }
}
