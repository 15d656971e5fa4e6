// The one nvcc-compiled translation unit: CUB device-wide routines behind plain C++ functions
// (cub_ops.hpp). Kept to a handful of instantiations so it compiles quickly. Runs on whatever
// context is current on the calling thread: the worker's primary context (cudart uses the
// device's primary context, the same one the driver-API worker retained).
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cub/device/device_reduce.cuh>
#include <cub/device/device_scan.cuh>
#include <cub/device/device_segmented_reduce.cuh>
#include <cub/version.cuh>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>
#include <thrust/iterator/transform_output_iterator.h>

#include "cub_ops.hpp"

namespace kqual::cuda::cub_ops {
namespace {

cudaStream_t as_stream(CUstream_st* s) { return reinterpret_cast<cudaStream_t>(s); }

// Row r starts at r * cols (offsets never materialised).
struct RowStart {
  std::int64_t cols;
  __host__ __device__ std::int64_t operator()(std::int64_t r) const { return r * cols; }
};

// bf16 bits → f32 on load, f32 → bf16 (round to nearest even) once on store.
struct Bf16ToF32 {
  __host__ __device__ float operator()(__nv_bfloat16 v) const { return __bfloat162float(v); }
};
struct F32ToBf16 {
  __host__ __device__ __nv_bfloat16 operator()(float v) const { return __float2bfloat16_rn(v); }
};
// The reduction operator fixes the accumulator type: CUB accumulates in the type that
// op(init, input) returns, so float + float keeps the sum in f32 (plain cuda::std::plus<> on bf16
// input would accumulate in bf16, outside the reduce_sum contract).
struct AddF32 {
  __host__ __device__ float operator()(float a, float b) const { return a + b; }
};

template <class In, class Out>
int row_sum(void* temp, std::size_t& temp_bytes, In in, Out out, std::int64_t rows, std::int64_t cols, CUstream_st* s) {
  auto begin = thrust::make_transform_iterator(thrust::counting_iterator<std::int64_t>(0), RowStart{cols});
  return int(cub::DeviceSegmentedReduce::Reduce(temp, temp_bytes, in, out, rows, begin, begin + 1, AddF32{}, 0.0f,
                                                as_stream(s)));
}

}  // namespace

int exclusive_sum_i32(void* temp, std::size_t& temp_bytes, const std::int32_t* x, std::int32_t* y, std::int64_t n,
                      CUstream_st* s) {
  return int(cub::DeviceScan::ExclusiveSum(temp, temp_bytes, x, y, n, as_stream(s)));
}

int exclusive_sum_f32(void* temp, std::size_t& temp_bytes, const float* x, float* y, std::int64_t n, CUstream_st* s) {
  return int(cub::DeviceScan::ExclusiveSum(temp, temp_bytes, x, y, n, as_stream(s)));
}

int row_sum_f32(void* temp, std::size_t& temp_bytes, const float* x, float* y, std::int64_t rows, std::int64_t cols,
                CUstream_st* s) {
  return row_sum(temp, temp_bytes, x, y, rows, cols, s);
}

int row_sum_bf16(void* temp, std::size_t& temp_bytes, const std::uint16_t* x, std::uint16_t* y, std::int64_t rows,
                 std::int64_t cols, CUstream_st* s) {
  auto in = thrust::make_transform_iterator(reinterpret_cast<const __nv_bfloat16*>(x), Bf16ToF32{});
  auto out = thrust::make_transform_output_iterator(reinterpret_cast<__nv_bfloat16*>(y), F32ToBf16{});
  return row_sum(temp, temp_bytes, in, out, rows, cols, s);
}

int sum_f32(void* temp, std::size_t& temp_bytes, const float* x, float* y, std::int64_t n, CUstream_st* s) {
  return int(cub::DeviceReduce::Sum(temp, temp_bytes, x, y, n, as_stream(s)));
}

const char* error_string(int code) { return cudaGetErrorString(cudaError_t(code)); }
int version() { return CUB_VERSION; }
int nvcc_version() { return __CUDACC_VER_MAJOR__ * 1000 + __CUDACC_VER_MINOR__ * 10; }

}  // namespace kqual::cuda::cub_ops
