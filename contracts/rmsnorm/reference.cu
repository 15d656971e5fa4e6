// fp64 CUDA reference of contracts/rmsnorm, for the cases too large for the CPU reference (above
// contract.max_case_elements). Deliberately plain: one block per row (grid-striding over rows), the
// sum of squares in double with a fixed tree order, then y = x / sqrt(ms + eps) * w in double (a row
// holding a +-Inf all NaN, as the policy says), written as float64 (kqual rounds it to the output
// dtype and forms the bound, as for reference.py).
#include <cuda_bf16.h>

__device__ double kq_ref_load(const float* p, long long i) { return (double)p[i]; }
__device__ double kq_ref_load(const __nv_bfloat16* p, long long i) { return (double)__bfloat162float(p[i]); }

template <typename T>
__device__ void rmsnorm_ref(const T* x, const float* w, double* y, long long rows, long long cols, float eps) {
  __shared__ double part[256];
  for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
    double s = 0.0;
    for (long long j = threadIdx.x; j < cols; j += blockDim.x) {
      const double v = kq_ref_load(x, r * cols + j);
      s += v * v;
    }
    part[threadIdx.x] = s;
    __syncthreads();
    for (int k = blockDim.x / 2; k > 0; k >>= 1) {
      if ((int)threadIdx.x < k) part[threadIdx.x] += part[threadIdx.x + k];
      __syncthreads();
    }
    // A +-Inf anywhere in the row makes the whole row NaN (the policy, PyTorch's F.rms_norm on CUDA).
    // The sum is Inf exactly then: squares of finite f32 or bf16 values cannot overflow a double.
    const double scale = isinf(part[0]) ? __longlong_as_double(0x7ff8000000000000LL) : 1.0 / sqrt(part[0] / (double)cols + (double)eps);
    __syncthreads();
    for (long long j = threadIdx.x; j < cols; j += blockDim.x)
      y[r * cols + j] = kq_ref_load(x, r * cols + j) * scale * (double)w[j];
  }
}

extern "C" __global__ void rmsnorm_ref_f32(const float* x, const float* w, double* y, long long rows, long long cols, float eps) {
  rmsnorm_ref(x, w, y, rows, cols, eps);
}
extern "C" __global__ void rmsnorm_ref_bf16(const __nv_bfloat16* x, const float* w, double* y, long long rows, long long cols,
                                            float eps) {
  rmsnorm_ref(x, w, y, rows, cols, eps);
}
