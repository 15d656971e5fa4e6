// KNOWN-BROKEN (narrow accumulation): block-per-row sums of f32 data, but the per-thread partials
// and the shared-memory tree are bf16 (8 significant bits). Long rows of non-zero-mean data stagnate
// (a bf16 partial stops growing at 256x the element size), far outside the f32 error bound.
// Expected rejection: wrong_result.
#include <cuda_bf16.h>

__global__ void reduce_rows_bf16acc(const float* x, float* y, long long rows, long long cols) {
  __shared__ __nv_bfloat16 s[256];
  const int t = threadIdx.x;
  const long long row = blockIdx.x;
  __nv_bfloat16 acc = __float2bfloat16_rn(0.0f);
  for (long long j = t; j < cols; j += 256)
    acc = __float2bfloat16_rn(__bfloat162float(acc) + x[row * cols + j]);  // BUG: bf16 accumulator
  s[t] = acc;
  __syncthreads();
  for (int o = 128; o > 0; o >>= 1) {
    if (t < o) s[t] = __float2bfloat16_rn(__bfloat162float(s[t]) + __bfloat162float(s[t + o]));
    __syncthreads();
  }
  if (t == 0 && row < rows) y[row] = __bfloat162float(s[0]);
}
