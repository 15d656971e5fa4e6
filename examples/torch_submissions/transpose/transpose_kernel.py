"""The CUDA kernel of the bundled transpose submissions: y = x^T, x rows x cols and y cols x rows, both
row-major, for float32, bfloat16, float16 and int32, built with torch.utils.cpp_extension.load_inline on
PyTorch's current stream. PyTorch caches each build by name, so the submissions that share one build
compile it once per machine.

The contract (kqual's built-in transpose, docs/contracts.md): bit-exact for every dtype, so NaN payloads
(quiet and signalling) and -0 must survive. The kernel therefore moves each element as unsigned bits of
its width (a 32 x 32 tile through shared memory) and never as a floating-point value.

The known-broken examples are this source with one KQUAL_DEFECT_* macro defined (model(defect)), each
built under its own name.
"""
import functools

import torch
from torch.utils.cpp_extension import load_inline

KERNELS = r"""
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

namespace kqual_transpose {

constexpr int kTile = 32, kRowsPerPass = 8;  // a 32 x 32 tile, 32 x 8 threads
enum Kind { kBits = 0, kF32 = 1, kBF16 = 2, kF16 = 3 };

// What the kernel stores for an element it read: its bits, or (the defect) the value after a float
// addition of +0 for the floating dtypes: -0 becomes +0, and a NaN's payload need not survive.
template <int K, typename Bits> __device__ __forceinline__ Bits stored(Bits v) {
#ifdef KQUAL_DEFECT_THROUGH_FLOAT
  if constexpr (K == kF32) return (Bits)__float_as_uint(__fadd_rn(__uint_as_float(v), 0.0f));
  if constexpr (K == kBF16) {
    const float f = __fadd_rn(__bfloat162float(__ushort_as_bfloat16(v)), 0.0f);
    return (Bits)__bfloat16_as_ushort(__float2bfloat16_rn(f));
  }
  if constexpr (K == kF16) {
    const float f = __fadd_rn(__half2float(__ushort_as_half(v)), 0.0f);
    return (Bits)__half_as_ushort(__float2half_rn(f));
  }
#endif
  return v;
}

// Block (bx, by) reads x's tile at rows by*32.., columns bx*32.. (coalesced along x's rows) and writes
// it to y's tile at rows bx*32.., columns by*32.. (coalesced along y's rows); the tile is padded by one
// column so that the column reads from shared memory do not conflict. Edge tiles are guarded.
template <typename Bits, int K>
__global__ void transpose_tiles(const Bits* __restrict__ x, Bits* __restrict__ y, long long rows, long long cols,
                                long long tiles_y) {
  __shared__ Bits tile[kTile][kTile + 1];
  const long long n = rows * cols;
#ifdef KQUAL_DEFECT_PADDED_STRIDE
  // x's row stride taken as the grid's width in tiles times 32, as code written for sizes that are
  // multiples of 32 has it: right only where cols is one.
  const long long stride = (long long)gridDim.x * kTile;
#else
  const long long stride = cols;
#endif
  const long long c = (long long)blockIdx.x * kTile + threadIdx.x;  // a column of x
  for (long long by = blockIdx.y; by < tiles_y; by += gridDim.y) {
    for (int k = threadIdx.y; k < kTile; k += kRowsPerPass) {
      const long long r = by * kTile + k;  // a row of x
      const long long src = r * stride + c;
      tile[k][threadIdx.x] = (r < rows && c < cols && src < n) ? x[src] : Bits(0);
    }
    __syncthreads();
    const long long yc = by * kTile + threadIdx.x;  // a column of y (a row of x)
    for (int k = threadIdx.y; k < kTile; k += kRowsPerPass) {
      const long long yr = (long long)blockIdx.x * kTile + k;  // a row of y (a column of x)
      if (yr < cols && yc < rows) y[yr * rows + yc] = stored<K>(tile[threadIdx.x][k]);
    }
    __syncthreads();
  }
}

}  // namespace kqual_transpose
"""

HOST = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>

template <typename Bits, int K>
void launch_tiles(const torch::Tensor& x, torch::Tensor& y) {
  using kqual_transpose::kTile;
  const long long rows = x.size(0), cols = x.size(1);
  const long long tiles_x = (cols + kTile - 1) / kTile, tiles_y = (rows + kTile - 1) / kTile;
  TORCH_CHECK(tiles_x < (1LL << 31), "cols past the grid's x limit");
  const dim3 grid((unsigned)tiles_x, (unsigned)std::min<long long>(tiles_y, 65535)), block(kTile, kqual_transpose::kRowsPerPass);
  kqual_transpose::transpose_tiles<Bits, K><<<grid, block, 0, at::cuda::getCurrentCUDAStream()>>>(
      (const Bits*)x.data_ptr(), (Bits*)y.data_ptr(), rows, cols, tiles_y);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

void transpose_into(torch::Tensor x, torch::Tensor y) {
  TORCH_CHECK(x.is_cuda() && x.dim() == 2 && x.is_contiguous() && y.is_contiguous() && y.dim() == 2 &&
              y.size(0) == x.size(1) && y.size(1) == x.size(0) && y.scalar_type() == x.scalar_type(),
              "contiguous CUDA tensors x (rows x cols) and y (cols x rows) of one dtype");
  if (x.numel() == 0) return;
  namespace k = kqual_transpose;
  switch (x.scalar_type()) {
    case at::kFloat: launch_tiles<uint32_t, k::kF32>(x, y); break;
    case at::kInt: launch_tiles<uint32_t, k::kBits>(x, y); break;
    case at::kBFloat16: launch_tiles<uint16_t, k::kBF16>(x, y); break;
    case at::kHalf: launch_tiles<uint16_t, k::kF16>(x, y); break;
    default: TORCH_CHECK(false, "float32, bfloat16, float16 or int32");
  }
}
"""
CPP_SRC = "void transpose_into(torch::Tensor x, torch::Tensor y);"

# The one-defect variants of the known-broken examples (broken_*.py), each a macro of KERNELS.
DEFECTS = ("KQUAL_DEFECT_PADDED_STRIDE", "KQUAL_DEFECT_THROUGH_FLOAT")


@functools.lru_cache(maxsize=None)
def build(defect=None):
    """The extension, built (or taken from PyTorch's cache) once per process: the correct kernel, or
    with `defect` (one of DEFECTS) defined, under a name of its own."""
    if defect is not None and defect not in DEFECTS:
        raise ValueError("unknown defect %r (one of %s)" % (defect, ", ".join(DEFECTS)))
    name = "kqual_example_transpose" + ("_" + defect[len("KQUAL_DEFECT_"):].lower() if defect else "")
    return load_inline(name=name, cpp_sources=CPP_SRC, cuda_sources=KERNELS + HOST, functions=["transpose_into"],
                       extra_cuda_cflags=["-O3"] + (["-D" + defect] if defect else []), verbose=False)


def transpose(x, defect=None):
    x = x.contiguous()
    y = torch.empty((x.size(1), x.size(0)), dtype=x.dtype, device=x.device)
    build(defect).transpose_into(x, y)
    return y


def model(defect=None):
    """A ModelNew class over this kernel; the extension is built here, when the submission is imported."""
    build(defect)

    class ModelNew(torch.nn.Module):
        def forward(self, x):
            return transpose(x, defect)

    return ModelNew
