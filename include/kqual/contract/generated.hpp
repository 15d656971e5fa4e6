#pragma once
// Cases generated on the device: for sizes past 2^31 elements (tens of GiB, where 32-bit index
// arithmetic breaks), inputs are not made on the CPU and moved through files. Every element is a
// pure function of (seed, tensor stream, index) — counter-based, so the worker fills a tensor with a
// kernel and the coordinator recomputes any element it needs, bit for bit. The candidate's output is
// checked in windows (head, tail, both sides of 2^31 and 2^32, a few seeded places) against the
// contract's own reference on a sub-case made of exactly the inputs those windows depend on; the
// whole output is scanned on the device for poison (unwritten elements); inputs are hashed on the
// device before and after the launch.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kqual/contract/domain.hpp"
#include "kqual/core/dtype.hpp"

namespace kqual::contract {

struct CaseSpec;
struct CaseData;
class Contract;

// The family name of generated cases (CaseSpec::family).
inline constexpr const char* kGeneratedFamily = "counter";

// The bits of element i of input stream `stream` (the tensor's position among the contract's
// inputs) for dtype t: f32 a multiple of 2^-23 in [-1, 1); bf16 and f16 a value of magnitude in
// [2^-7, 1) with either sign (every mantissa); i32 any value. The CUDA source below computes exactly the same.
std::uint32_t generated_bits(std::uint64_t seed, int stream, std::uint64_t i, DType t);
// extern "C" __global__ void kqual_generate(void* p, unsigned long long n, unsigned long long seed, int stream, int dtype)
// with dtype 0 = f32, 1 = bf16, 2 = i32, 3 = f16.
const char* generated_kernel_source();
int generated_dtype_code(DType t);

// A stretch of an output the check compares, and the inputs its expected values depend on.
struct OutputWindow {
  std::string tensor;                 // output tensor
  std::int64_t begin = 0, count = 0;  // elements of that tensor
  Dims sub_dims;                      // the sub-case whose reference gives exactly these elements
  // Per input tensor: the element ranges (begin, count) of the big tensor that, concatenated, are
  // the sub-case's input.
  std::map<std::string, std::vector<std::pair<std::int64_t, std::int64_t>>> gather;
  std::string why;                    // "head", "across 2^31", ...
};

// The sub-case of a window: inputs generated on the CPU from the ranges.
CaseData generated_subcase(const Contract& c, const CaseSpec& big, const OutputWindow& w);
// The whole case of a generated spec on the CPU: every input as the device generator makes it.
CaseData generated_case(const Contract& c, const CaseSpec& spec);

// Element positions worth checking in a tensor of n elements past 2^31: the head, the tail, both
// sides of 2^31 and 2^32 (when inside), and `extra` seeded places; merged and clipped, each `len` long.
std::vector<std::pair<std::int64_t, std::int64_t>> index_windows(std::int64_t n, std::int64_t len, std::uint64_t seed, int extra);

// Windows of an elementwise 1-D contract (dim "n"): `output` at index_windows(n, 4096, seed, 4),
// each from the same stretch of every input.
std::vector<OutputWindow> contiguous_windows(const CaseSpec& spec, std::int64_t n, const std::string& output,
                                             const std::vector<std::string>& inputs);
// Windows of whole rows of a rows x cols input "x" whose output "y" has output_per_row elements per
// row (cols for a row-wise map, 1 for a row reduction): row_windows(rows, cols, len, seed, 3).
std::vector<OutputWindow> row_block_windows(const CaseSpec& spec, std::int64_t len, std::int64_t output_per_row);

// Row ranges [first, first + count) of a matrix with `rows` rows of `cols` elements worth checking:
// the first and last rows, the rows holding element 2^31 and 2^32 (when inside), and `extra` seeded
// rows; each range `len` rows long, merged and clipped.
std::vector<std::pair<std::int64_t, std::int64_t>> row_windows(std::int64_t rows, std::int64_t cols, std::int64_t len,
                                                               std::uint64_t seed, int extra);

// A 2-D generated case past 2^31 elements for a candidate claiming max_n: `cols` as given (or
// fewer when the claim is tight), rows so that rows * cols is just past 2^31; nullopt when the claim
// does not reach past 2^31 with at least one whole row.
std::optional<Dims> past_int32_matrix(std::int64_t max_n, std::int64_t cols);

// The generated cases a contract with dims {rows, cols} asks for: one per claimed dtype, past 2^31
// elements, `cols` wide.
std::vector<CaseSpec> matrix_index_cases(const Contract& c, const Supports& cand, std::uint64_t seed, std::int64_t cols);

}  // namespace kqual::contract
