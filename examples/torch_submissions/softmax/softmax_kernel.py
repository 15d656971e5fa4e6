"""The CUDA kernel of the bundled softmax submissions: y = softmax(x) along each row of a rows x cols
row-major matrix, for float32, bfloat16 and float16, built with torch.utils.cpp_extension.load_inline
on PyTorch's current stream. PyTorch caches each build by name, so the submissions that share one build
compile it once per machine.

The contract (kqual's built-in softmax, docs/contracts.md): math in float32 and the output rounded once
to the dtype; max subtracted before exp; two runs bitwise equal (the block reductions below have a fixed
order). Special values are what a plain max-subtracting kernel gives: a NaN or a +Inf in a row makes
the whole row NaN, a row of only -Inf is NaN (-Inf - (-Inf)), a -Inf entry in a row with a finite max
gives exactly 0.

The known-broken examples are this source with one KQUAL_DEFECT_* macro defined (model(defect)), each
built under its own name.
"""
import functools

import torch
from torch.utils.cpp_extension import load_inline

KERNELS = r"""
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <math.h>

namespace kqual_softmax {

// Storage types float, __nv_bfloat16, __half; every computation in float.
__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ float to_float(__half v) { return __half2float(v); }
template <typename T> __device__ __forceinline__ T from_float(float v);
template <> __device__ __forceinline__ float from_float<float>(float v) { return v; }
template <> __device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }
template <> __device__ __forceinline__ __half from_float<__half>(float v) { return __float2half_rn(v); }

// The row sum as the kernel keeps it after each addition: float, or (the defect) rounded to the storage type.
template <typename T> __device__ __forceinline__ float sum_kept(float s) {
#ifdef KQUAL_DEFECT_SUM_IN_STORAGE_TYPE
  return to_float(from_float<T>(s));
#else
  return s;
#endif
}

constexpr int kMaxWarps = 32;

// Max (fmaxf: a NaN operand is dropped; the NaN then reaches the sum through exp) or sum over the
// block, in a fixed order (butterfly within each warp, then warp 0 over the warps' results), so two
// runs agree bitwise. blockDim.x is a multiple of 32. Every thread gets the result.
template <typename T, bool kMax>
__device__ float block_reduce(float v, float* smem) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  for (int o = 16; o > 0; o >>= 1) {
    const float w = __shfl_xor_sync(0xffffffffu, v, o);
    v = kMax ? fmaxf(v, w) : sum_kept<T>(v + w);
  }
  if (lane == 0) smem[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < warps ? smem[lane] : (kMax ? -INFINITY : 0.0f);
    for (int o = 16; o > 0; o >>= 1) {
      const float w = __shfl_xor_sync(0xffffffffu, v, o);
      v = kMax ? fmaxf(v, w) : sum_kept<T>(v + w);
    }
    if (lane == 0) smem[kMaxWarps] = v;
  }
  __syncthreads();
  const float r = smem[kMaxWarps];
  __syncthreads();  // smem is reused by the next reduction
  return r;
}

// One block per row (grid-stride over rows): the row's max, the sum of exp(x - max), then the outputs.
template <typename T>
__global__ void softmax_rows(const T* __restrict__ x, T* __restrict__ y, long long rows, long long cols) {
  __shared__ float smem[kMaxWarps + 1];
  for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* xr = x + r * cols;
    T* yr = y + r * cols;
#ifdef KQUAL_DEFECT_NO_MAX_SUBTRACTION
    const float m = 0.0f;  // exp(x) / sum exp(x): Inf past x = 88.7; 0 / 0 where a whole row is below -103.9
#else
    float m = -INFINITY;
    for (long long j = threadIdx.x; j < cols; j += blockDim.x) m = fmaxf(m, to_float(xr[j]));
    m = block_reduce<T, true>(m, smem);
#endif
#ifdef KQUAL_DEFECT_MASKED_ROW_ZERO
    if (m == -INFINITY) {  // a row of only -Inf ("fully masked") written as zeros, as attention kernels do
      for (long long j = threadIdx.x; j < cols; j += blockDim.x) yr[j] = from_float<T>(0.0f);
      continue;
    }
#endif
    float s = 0.0f;
    for (long long j = threadIdx.x; j < cols; j += blockDim.x) s = sum_kept<T>(s + expf(to_float(xr[j]) - m));
#ifdef KQUAL_DEFECT_ATOMIC_ROW_SUM
    // Each warp's partial sum added to one shared float with atomicAdd: the order the warps arrive in
    // changes from run to run, and with it the sum's last bits.
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    if (threadIdx.x == 0) smem[kMaxWarps] = 0.0f;
    __syncthreads();
    if ((threadIdx.x & 31) == 0) atomicAdd(&smem[kMaxWarps], s);
    __syncthreads();
    s = smem[kMaxWarps];
    __syncthreads();
#else
    s = block_reduce<T, false>(s, smem);
#endif
    for (long long j = threadIdx.x; j < cols; j += blockDim.x) yr[j] = from_float<T>(expf(to_float(xr[j]) - m) / s);
  }
}

}  // namespace kqual_softmax
"""

HOST = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>

template <typename T>
void launch_rows(const torch::Tensor& x, torch::Tensor& y) {
  const long long rows = x.size(0), cols = x.size(1);
  // A multiple of 32 threads per row, more for long rows.
  const int threads = cols >= 4096 ? 512 : cols >= 512 ? 256 : cols >= 128 ? 128 : 32;
  const int grid = (int)std::min<long long>(rows, 1 << 20);
  kqual_softmax::softmax_rows<T><<<grid, threads, 0, at::cuda::getCurrentCUDAStream()>>>((const T*)x.data_ptr(), (T*)y.data_ptr(),
                                                                                        rows, cols);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

void softmax_into(torch::Tensor x, torch::Tensor y) {
  TORCH_CHECK(x.is_cuda() && x.dim() == 2 && x.is_contiguous() && y.is_contiguous() && y.sizes() == x.sizes() &&
              y.scalar_type() == x.scalar_type(), "contiguous CUDA rows x cols tensors of one dtype");
  if (x.numel() == 0) return;
  switch (x.scalar_type()) {
    case at::kFloat: launch_rows<float>(x, y); break;
    case at::kBFloat16: launch_rows<__nv_bfloat16>(x, y); break;
    case at::kHalf: launch_rows<__half>(x, y); break;
    default: TORCH_CHECK(false, "float32, bfloat16 or float16");
  }
}
"""
CPP_SRC = "void softmax_into(torch::Tensor x, torch::Tensor y);"

# The one-defect variants of the known-broken examples (broken_*.py), each a macro of KERNELS.
DEFECTS = ("KQUAL_DEFECT_NO_MAX_SUBTRACTION", "KQUAL_DEFECT_MASKED_ROW_ZERO", "KQUAL_DEFECT_SUM_IN_STORAGE_TYPE",
           "KQUAL_DEFECT_ATOMIC_ROW_SUM")


@functools.lru_cache(maxsize=None)
def build(defect=None):
    """The extension, built (or taken from PyTorch's cache) once per process: the correct kernel, or
    with `defect` (one of DEFECTS) defined, under a name of its own."""
    if defect is not None and defect not in DEFECTS:
        raise ValueError("unknown defect %r (one of %s)" % (defect, ", ".join(DEFECTS)))
    name = "kqual_example_softmax" + ("_" + defect[len("KQUAL_DEFECT_"):].lower() if defect else "")
    return load_inline(name=name, cpp_sources=CPP_SRC, cuda_sources=KERNELS + HOST, functions=["softmax_into"],
                       extra_cuda_cflags=["-O3"] + (["-D" + defect] if defect else []), verbose=False)


def softmax(x, defect=None):
    x = x.contiguous()
    y = torch.empty_like(x)
    build(defect).softmax_into(x, y)
    return y


def model(defect=None):
    """A ModelNew class over this kernel; the extension is built here, when the submission is imported."""
    build(defect)

    class ModelNew(torch.nn.Module):
        def forward(self, x):
            return softmax(x, defect)

    return ModelNew
