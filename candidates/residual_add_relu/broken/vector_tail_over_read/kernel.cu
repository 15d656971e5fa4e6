// BROKEN ON PURPOSE: float4 loads for all cdiv(n, 4) vectors, the last, partial one included: when
// n % 4 != 0 it reads 4 to 12 bytes past the end of x and of r. Only the valid lanes of that vector are
// stored, so y is exact, and with the 16-byte alignment the manifest claims the over-read never leaves
// the 16-byte granule holding the last element: it can never reach an unmapped page (even an input
// placed to end a mapped range ends on a 16-byte boundary only when n % 4 == 0, where nothing is
// over-read), and no guard byte is written. Only a memory checker (compute-sanitizer memcheck) sees it.
namespace {
__device__ __forceinline__ float add_relu(float a, float b) {
  const float v = __fadd_rn(a, b);
  return v > 0.f ? v : (v != v ? v : 0.f);
}
}  // namespace

__global__ void __launch_bounds__(256) add_relu_vec4_tail(const float* __restrict__ x, const float* __restrict__ r,
                                                          float* __restrict__ y, long long n) {
  const long long nv = (n + 3) / 4;  // BUG: counts the partial last vector as a whole one for the loads
  const long long stride = (long long)gridDim.x * blockDim.x;
  const float4* xv = reinterpret_cast<const float4*>(x);
  const float4* rv = reinterpret_cast<const float4*>(r);
  for (long long v = (long long)blockIdx.x * blockDim.x + threadIdx.x; v < nv; v += stride) {
    const float4 a = xv[v];
    const float4 b = rv[v];
    float4 o;
    o.x = add_relu(a.x, b.x);
    o.y = add_relu(a.y, b.y);
    o.z = add_relu(a.z, b.z);
    o.w = add_relu(a.w, b.w);
    const long long e = 4 * v;
    if (e + 4 <= n) {
      reinterpret_cast<float4*>(y)[v] = o;
    } else {  // the stores, unlike the loads, are guarded
      y[e] = o.x;
      if (e + 1 < n) y[e + 1] = o.y;
      if (e + 2 < n) y[e + 2] = o.z;
    }
  }
}
