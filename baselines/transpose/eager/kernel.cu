// Eager baseline: the obvious transpose, one thread per element of x. Reads are coalesced (along
// x's rows); writes are strided by rows (one 32-byte sector per element), as a framework's generic
// permute kernel without tiling does it.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

template <typename T>
__global__ void transpose_naive(const T* __restrict__ x, T* __restrict__ y, long long rows, long long cols) {
  const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (t < rows * cols) {
    const long long i = t / cols, j = t % cols;
    y[j * rows + i] = x[t];
  }
}
