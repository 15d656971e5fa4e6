"""The CUDA kernel every bundled residual_add_relu submission uses: relu(x + r) for float32, bfloat16
and float16 (each dtype the contract claims), built once with torch.utils.cpp_extension.load_inline (PyTorch caches the build by name, so
the submissions that import this module compile it once per machine).

The contract (kqual's built-in residual_add_relu): the sum rounded once to the dtype, NaN stays NaN,
every value that is not > 0 (-0 and -Inf included) gives +0.
"""
import torch
from torch.utils.cpp_extension import load_inline

CUDA_SRC = r"""
#include <torch/extension.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <c10/cuda/CUDAStream.h>

// Each thread's next element: grid-stride, or (KQUAL_DEFECT_GRID_2_24) one element per thread, so the
// capped grid below covers only the first 2^24 elements.
#ifdef KQUAL_DEFECT_GRID_2_24
#define KQ_NEXT(i) (i = n)
#else
#define KQ_NEXT(i) (i += (long long)gridDim.x * blockDim.x)
#endif

__device__ __forceinline__ float relu_policy(float s) { return s != s ? s : (s > 0.0f ? s : 0.0f); }

__global__ void add_relu_f32(const float* x, const float* r, float* y, long long n) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; KQ_NEXT(i))
    y[i] = relu_policy(x[i] + r[i]);
}

__global__ void add_relu_bf16(const __nv_bfloat16* x, const __nv_bfloat16* r, __nv_bfloat16* y, long long n) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; KQ_NEXT(i))
    y[i] = __float2bfloat16_rn(relu_policy(__bfloat162float(x[i]) + __bfloat162float(r[i])));
}

// f16: x + r in f32, relu, rounded to f16: the exact sum rounded once (f32 has 2 * 11 + 2 significand bits).
__global__ void add_relu_f16(const __half* x, const __half* r, __half* y, long long n) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; KQ_NEXT(i))
    y[i] = __float2half_rn(relu_policy(__half2float(x[i]) + __half2float(r[i])));
}

void add_relu_into(torch::Tensor x, torch::Tensor r, torch::Tensor y) {
  TORCH_CHECK(x.is_cuda() && x.is_contiguous() && r.is_contiguous() && y.is_contiguous(), "contiguous CUDA tensors");
#ifdef KQUAL_DEFECT_HALF_WRITTEN
  const long long n = x.numel() / 2;  // the second half of the output never written
#else
  const long long n = x.numel();
#endif
  if (n == 0) return;
  const int block = 256;
#ifdef KQUAL_DEFECT_GRID_2_24
  const int grid = (int)std::min<long long>((n + block - 1) / block, 65536);  // 65536 x 256 = 2^24 threads
#else
  const int grid = (int)std::min<long long>((n + block - 1) / block, 132 * 32);
#endif
#ifdef KQUAL_DEFECT_LEGACY_STREAM
  cudaStream_t stream = 0;  // the legacy default stream: not ordered with the caller's stream
#else
  cudaStream_t stream = at::cuda::getCurrentCUDAStream();
#endif
  if (x.scalar_type() == at::kFloat)
    add_relu_f32<<<grid, block, 0, stream>>>(x.data_ptr<float>(), r.data_ptr<float>(), y.data_ptr<float>(), n);
  else if (x.scalar_type() == at::kBFloat16)
    add_relu_bf16<<<grid, block, 0, stream>>>((const __nv_bfloat16*)x.data_ptr(), (const __nv_bfloat16*)r.data_ptr(),
                                              (__nv_bfloat16*)y.data_ptr(), n);
  else if (x.scalar_type() == at::kHalf)
    add_relu_f16<<<grid, block, 0, stream>>>((const __half*)x.data_ptr(), (const __half*)r.data_ptr(), (__half*)y.data_ptr(), n);
  else
    TORCH_CHECK(false, "float32, bfloat16 or float16");
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}
"""
CPP_SRC = "void add_relu_into(torch::Tensor x, torch::Tensor r, torch::Tensor y);"



def build(defect=None):
    """The kernel as built for the good submissions, or with one KQUAL_DEFECT_* macro defined (each its
    own build, under its own name)."""
    name = "kqual_example_add_relu_v2" + ("_" + defect[len("KQUAL_DEFECT_"):].lower() if defect else "")
    src = ("#define %s 1\n" % defect if defect else "") + CUDA_SRC
    return load_inline(name=name, cpp_sources=CPP_SRC, cuda_sources=src, functions=["add_relu_into"], extra_cuda_cflags=["-O3"],
                       verbose=False)


ext = build()


def add_relu(x, r):
    y = torch.empty_like(x)
    ext.add_relu_into(x.contiguous(), r.contiguous(), y)
    return y


class ModelNew(torch.nn.Module):
    def forward(self, x, r):
        return add_relu(x, r)
