#pragma once
// Plain C++ entry points into CUB (src/cuda/cub_ops.cu, compiled by nvcc). No CUDA runtime types
// cross this boundary: streams are the driver's CUstream (the same object as a cudaStream_t) and
// results are cudaError_t values as int (0 = success). Each call follows CUB's two-phase
// convention: temp == nullptr only sets temp_bytes; otherwise the work is enqueued on the stream.
#include <cstddef>
#include <cstdint>

struct CUstream_st;

namespace kqual::cuda::cub_ops {

// y[0] = 0, y[i] = x[0] + ... + x[i-1] (cub::DeviceScan::ExclusiveSum).
int exclusive_sum_i32(void* temp, std::size_t& temp_bytes, const std::int32_t* x, std::int32_t* y, std::int64_t n,
                      CUstream_st* stream);
int exclusive_sum_f32(void* temp, std::size_t& temp_bytes, const float* x, float* y, std::int64_t n, CUstream_st* stream);

// y[r] = sum of row r of a row-major rows x cols matrix (cub::DeviceSegmentedReduce, f32 accumulation;
// bf16 values are widened on load and the f32 sum is rounded once to bf16 on store).
int row_sum_f32(void* temp, std::size_t& temp_bytes, const float* x, float* y, std::int64_t rows, std::int64_t cols,
                CUstream_st* stream);
int row_sum_bf16(void* temp, std::size_t& temp_bytes, const std::uint16_t* x, std::uint16_t* y, std::int64_t rows,
                 std::int64_t cols, CUstream_st* stream);

// y[0] = sum of x[0..n) (cub::DeviceReduce::Sum).
int sum_f32(void* temp, std::size_t& temp_bytes, const float* x, float* y, std::int64_t n, CUstream_st* stream);

const char* error_string(int code);  // cudaGetErrorString
int version();                       // CUB_VERSION, e.g. 300001
int nvcc_version();                  // __CUDACC_VER_MAJOR__ * 1000 + __CUDACC_VER_MINOR__ * 10

}  // namespace kqual::cuda::cub_ops
