// BROKEN ON PURPOSE: float4 path only; the last n % 4 elements are never written.
__global__ void add_relu_vec4_notail(const float4* x, const float4* r, float4* y, long long n) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n / 4) {
    float4 a = x[i], b = r[i], o;
    o.x = a.x + b.x; o.y = a.y + b.y; o.z = a.z + b.z; o.w = a.w + b.w;
    o.x = o.x > 0.f ? o.x : (o.x != o.x ? o.x : 0.f);
    o.y = o.y > 0.f ? o.y : (o.y != o.y ? o.y : 0.f);
    o.z = o.z > 0.f ? o.z : (o.z != o.z ? o.z : 0.f);
    o.w = o.w > 0.f ? o.w : (o.w != o.w ? o.w : 0.f);
    y[i] = o;
  }
}
