// BROKEN ON PURPOSE: the grid-stride index is a 32-bit int (i = blockIdx.x * blockDim.x + threadIdx.x,
// i += blockDim.x * gridDim.x) while n and the manifest's max_n claim are 64-bit. Every size a harness
// usually runs passes -- the 2^29+7 f32 case (over 2^31 bytes per tensor) included, since the address
// is formed from the sign-extended index -- so nothing contradicts the max_n = 2^63-1 claim unless a
// case reaches 2^31 elements. Once i + stride passes INT_MAX (n within one grid stride, ~1M elements,
// of 2^31, or beyond) the index wraps negative: x and r are read and y written up to 8 GiB *before*
// the buffers (a fault, or silent corruption of whatever is mapped there), and because an int is
// always < n > INT_MAX the loop never terminates unless it faults first.
// (The increment is done in unsigned arithmetic and converted back, so the wrap is well defined and
// the compiler cannot widen i to 64 bits on the assumption that signed overflow never happens.)
__global__ void __launch_bounds__(256) add_relu_gs_i32(const float* __restrict__ x, const float* __restrict__ r,
                                                       float* __restrict__ y, long long n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {  // BUG: int index
    const float v = __fadd_rn(x[i], r[i]);
    y[i] = v > 0.f ? v : (v != v ? v : 0.f);
  }
}
