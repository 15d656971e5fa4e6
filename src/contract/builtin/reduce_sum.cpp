// Contract: row-wise sum. x is rows x cols (row-major, contiguous), y[r] = sum_j x[r*cols + j].
// f32: f32 in, f32 out. bf16: bf16 in, bf16 out; accumulation in f32 or wider, output rounded once.
// Error model: any association order of f32 (or wider) adds is admissible. With k = cols - 1 adds,
// S = sum_j |x_rj| and u = 2^-24, every partial sum is at most S (1+u)^k in magnitude, so the
// accumulated sum s satisfies |s - sum| <= A = k u S exp(k u). f32 output: bound A (plus u|ref|
// for kernels that accumulate wider and round once). bf16 output: s is rounded once to bf16 (unit
// roundoff 2^-8), bound A (1 + 2^-8) + 2^-8 |ref| + half the smallest bf16 subnormal. f16 output:
// likewise with 2^-11 and half the smallest f16 subnormal (2^-25); a sum past 65504 rounds to Inf.
// The reference is accumulated in long double on the CPU; its own error is added.
#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "builtin_cases.hpp"
#include "kqual/contract/compare.hpp"
#include "kqual/contract/contract.hpp"
#include "kqual/contract/random.hpp"
#include "kqual/core/error.hpp"

namespace kqual::contract {
namespace {

constexpr std::int64_t kMaxElements = std::int64_t(1) << 40;  // contract domain limit [elements of x]

struct ReduceShape {
  std::int64_t rows, cols;
};

class ReduceSum final : public builtin::FixedRuleContract {
 public:
  ReduceSum()
      : FixedRuleContract(
            "reduce_sum",
            "y[r] = sum of row r of x (rows x cols, row-major, contiguous); y has rows elements",
            Domain{
                .dims = {{.name = "rows"}, {.name = "cols"}},
                .tensors = {{.name = "x", .role = Role::input, .shape = {"rows", "cols"},
                             .description = "rows x cols, row-major"},
                            {.name = "y", .role = Role::output, .shape = {"rows"}, .description = "row sums, rows elements"}},
                .dtypes = {DType::f32, DType::bf16, DType::f16},
                .limits = {{.dims = {"rows", "cols"}, .max = kMaxElements}},
                .claim = {.dims = {"rows", "cols"}},
                .no_in_place_reason = "y has rows elements, x rows x cols",
                .alignment_note = "rows start at r*cols and are aligned only when cols is a multiple of the vector width",
            },
            // Not required: splitting a long row over several blocks that atomicAdd their partial sums onto a
            // zeroed output is the standard way to fill the GPU when rows are few, and the error bound is
            // written for any association order; each run is held to it, and so is the difference between
            // two runs.
            builtin::any_order_admitted("splitting rows over blocks that atomicAdd onto a zeroed output is a standard "
                                        "technique, and the reduction-aware error bound already covers any summation order")) {}

  std::string numerical_policy() const override {
    return "Error model. Any association order of f32 (or wider) adds is admissible. For row r with k = cols-1 "
           "adds, S = sum_j |x[r,j]| and u = 2^-24 (f32 accumulation), A = k*u*S*exp(k*u) bounds the accumulated "
           "sum's error for every order (each partial sum is at most S*(1+u)^k). f32 output: |y - ref| <= A + "
           "u*|ref|. bf16 (bf16 in and out, f32 or wider accumulation, output rounded once to nearest): "
           "|y - ref| <= A*(1+2^-8) + 2^-8*|ref| + 2^-134. f16 (f16 in and out, f32 or wider accumulation, "
           "rounded once): |y - ref| <= A*(1+2^-11) + 2^-11*|ref| + 2^-25 (half an f16 subnormal step); a row "
           "sum past 65504 is Inf. For short rows this is the correctly rounded f16 sum within a few f32 "
           "roundings, so an f16 accumulator fails there already; an f16 accumulator also overflows to Inf on rows "
           "whose sum is finite (family overflow: elements of +-2^14 .. 65504, every f32 partial sum exact). The reference is accumulated in long double on the CPU "
           "(its own error is added). Accumulating in bf16/f16 exceeds the bound on rows >= 8192 long. NaN never "
           "matches a number: a row with a NaN, or with both +Inf and -Inf, sums to NaN; a row with +Inf (and no "
           "-Inf, no NaN) sums to +Inf exactly. Run to run: bitwise reproducibility is not required (blocks "
           "that atomicAdd partial sums are admitted); two runs must each be within the bound of the "
           "reference; their difference is reported, never failed (two runs within the bound may differ by up to twice "
           "it). " +
           std::string(builtin::kNoGeneratedF16) + "; nor is the 2^28-element row of the large cases (its sum "
           "passes 65504).";
  }

  // rows x 1031 just past 2^31 elements of x, in each claimed dtype; the sums of the rows around
  // x's elements 2^31 and 2^32 are compared.
  std::vector<CaseSpec> index_cases(const Supports& cand, std::uint64_t seed) const override {
    return builtin::without_f16(matrix_index_cases(*this, cand, seed, 1031));
  }
  std::vector<OutputWindow> index_case_windows(const CaseSpec& spec) const override {
    return row_block_windows(spec, 64, 1);
  }

  std::vector<CaseSpec> correctness_cases(const Supports& cand, std::uint64_t seed, bool include_large) const override {
    // One long row (a full reduction), rows around warp/block/vector boundaries (1, 3, 31, 32, 33,
    // 255, 1023, 1024, 1025, 2049, 4097), rows longer than one block pass, long rows (>= 8192) for
    // precision, many short rows, primes.
    const std::vector<ReduceShape> shapes = {
        {1, 1},       {1, 3},        {1, 31},     {1, 1025},   {1, 8191},         {1, 8193},        {1, 65537},
        {1, (1 << 24) + 3},           {7, 1},      {1000, 3},   {513, 31},         {257, 32},        {129, 33},
        {64, 255},    {33, 1023},    {31, 1024},  {17, 1025},  {9, 2049},         {5, 8192},        {3, 16411},
        {1031, 4097}, {2, (1 << 20) + 1},         {100003, 7}, {(1 << 20) + 7, 3}, {4096, 4096},    {61, 131071}};
    const std::vector<std::string> fams = {"normal", "nonzero_mean", "alternating", "specials"};
    std::vector<CaseSpec> cases;
    auto add = [&](DType t, ReduceShape s, const std::string& fam, std::int64_t off) {
      if (s.rows * s.cols <= cand.max_n) cases.push_back(builtin::matrix_family_case(t, s.rows, s.cols, fam, off, seed, 131));
    };
    for (DType t : dtypes()) {
      if (!cand.supports(t)) continue;
      const bool unaligned = builtin::admits_element_offset(cand, t);
      for (std::size_t k = 0; k < shapes.size(); ++k) {
        const ReduceShape s = shapes[k];
        std::string fam = fams[(k + (t == DType::bf16 ? 1 : t == DType::f16 ? 2 : 0)) % fams.size()];
        if (fam == "specials" && s.rows < 4) fam = "normal";  // specials need rows to spread NaN/Inf over
        add(t, s, fam, 0);
        // Long rows of non-zero-mean data expose narrow accumulation.
        if (s.cols >= 8192 && fam != "nonzero_mean") add(t, s, "nonzero_mean", 0);
        if (unaligned && (k == 13 || k == 17)) add(t, s, "normal", 1);
      }
      if (t == DType::f16)
        // f16's edges: sums past 65504 (and f16 partial sums past it on rows whose sum is finite), and
        // subnormal elements. cols <= 8192 keeps every f32 partial sum of the overflow family exact.
        for (ReduceShape s : {ReduceShape{1, 3}, ReduceShape{513, 31}, ReduceShape{33, 1023}, ReduceShape{17, 1025},
                              ReduceShape{9, 2049}, ReduceShape{5, 8192}})
          for (const char* fam : {"overflow", "subnormals"}) add(t, s, fam, 0);
      if (include_large && t != DType::f16) add(t, {1, (std::int64_t(1) << 28) + 5}, "nonzero_mean", 0);
    }
    return cases;
  }

  std::vector<Dims> benchmark_shapes() const override {
    return {{{"rows", 1024}, {"cols", 1024}},
            {{"rows", 1}, {"cols", std::int64_t(1) << 24}},
            {{"rows", 16384}, {"cols", 16384}}};
  }

  CaseData make_case(const CaseSpec& spec) const override {
    const std::int64_t rows64 = spec.dim("rows"), cols64 = spec.dim("cols");
    if (rows64 < 1 || cols64 < 1) throw_error(ErrorKind::unsupported, "case with rows < 1 or cols < 1");
    builtin::require_known_family(spec, {"normal", "nonzero_mean", "alternating", "specials", "overflow", "subnormals"});
    if (spec.dtype != DType::f32 && spec.dtype != DType::bf16 && spec.dtype != DType::f16)
      throw_error(ErrorKind::unsupported, fmt::format("reduce_sum has no dtype {}", to_string(spec.dtype)));
    const std::size_t rows = std::size_t(rows64), cols = std::size_t(cols64), n = rows * cols;
    CaseData d;
    d.spec = spec;
    d.dims["rows"] = rows64;
    d.dims["cols"] = cols64;
    Tensor x = builtin::zeroed_tensor("x", spec.dtype, std::int64_t(n));
    auto put = [&](std::size_t i, float v) {
      if (spec.dtype == DType::f32) std::memcpy(x.bytes.data() + 4 * i, &v, 4);
      else {
        std::uint16_t b = spec.dtype == DType::bf16 ? f32_to_bf16_rne(v) : f32_to_f16_rn(v);
        std::memcpy(x.bytes.data() + 2 * i, &b, 2);
      }
    };
    builtin::for_each_in_seeded_chunks(n, spec.seed, [&](std::size_t i, Rng& rng) {
      float v;
      if (spec.family == "normal" || spec.family == "specials") v = float(rng.normal());
      // mean >> std (0.7, not a power of two: a narrow accumulator then rounds every add the same way, so
      // its error grows linearly with the row instead of as a random walk); f16 scaled by 2^-8, so that a
      // row of 2^24 of them still sums below 65504
      else if (spec.family == "nonzero_mean") v = float((0.7 + 0.03 * rng.normal()) * (spec.dtype == DType::f16 ? 0x1p-8 : 1.0));
      else if (spec.family == "alternating") v = float(((i % cols) % 2 ? -1.0 : 1.0) * (1.0 + rng.uniform()));  // alternating sign per row
      else if (spec.family == "overflow") v = overflow_value(i / cols, i % cols, rng);
      else v = subnormal_value(rng);
      put(i, v);
    });
    if (spec.family == "specials" && rows >= 4) {
      const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
      // Row 0: NaN at its last element (a missing tail hides it); row 1: +Inf; row 2: +Inf and -Inf
      // (NaN); the last row: -Inf. Every other row stays finite, so the output is not degenerate.
      put(cols - 1, nan);
      put(cols + cols / 2, inf);
      put(2 * cols, inf);
      if (cols >= 2) put(2 * cols + cols - 1, -inf);
      else put(2 * cols, nan);
      put((rows - 1) * cols + cols / 3, -inf);
    }
    if (spec.family == "overflow") cancel_overflow_pairs(x, rows, cols);
    d.inputs.push_back(std::move(x));
    return d;
  }

  // Family overflow: multiples of 32 from 2^14 to 65504 (exact in f16 and f32, so every f32 partial sum
  // of a row of up to 2^13 of them is exact). Rows r % 3 == 0 all positive (the sum passes 65504: Inf);
  // r % 3 == 1 two positive, then two negative that cancel them to within 32 (cancel_overflow_pairs):
  // a finite sum, where the sum of two neighbours passes 65504; r % 3 == 2 random signs.
  static float overflow_value(std::size_t row, std::size_t, Rng& rng) {
    const float v = 32.0f * float(512 + rng.below(1535));  // 16384 .. 65472 (65504 once 32 is added)
    return row % 3 == 2 && rng.below(2) ? -v : v;
  }
  static void cancel_overflow_pairs(Tensor& x, std::size_t rows, std::size_t cols) {
    for (std::size_t r = 1; r < rows; r += 3)
      for (std::size_t j = 2; j < cols; ++j)
        if (j % 4 >= 2) {
          const double partner = element_as_double(x.dtype, x.bytes.data(), r * cols + j - 2);
          const double residue = 32.0 * (double((j / 4 + r) % 3) - 1.0);  // -32, 0, 32: the row sums to little
          store_element(x.dtype, x.bytes.data(), r * cols + j, -(partner + residue));
        }
  }
  // Family subnormals: f16 subnormals (2^-24 .. 2^-14 - 2^-24), one in eight a normal value up to 2^-12,
  // either sign; multiples of 2^-24, so their sums are exact in f32.
  static float subnormal_value(Rng& rng) {
    const float v = rng.below(8) == 0 ? std::ldexp(float(1024 + rng.below(3 * 1024)), -24) : std::ldexp(float(1 + rng.below(1023)), -24);
    return rng.below(2) ? v : -v;
  }

  std::vector<Tensor> reference(const CaseData& data, ReferenceHost& /*host*/) const override {
    const Tensor& x = data.inputs.at(0);
    const std::size_t rows = std::size_t(data.dims.at("rows")), cols = std::size_t(data.dims.at("cols"));
    const DType t = x.dtype;
    Tensor y = builtin::zeroed_tensor("y", t, std::int64_t(rows), true);
    const double u = unit_roundoff(DType::f32);
    const double uo = unit_roundoff(t);
    const double k = double(cols - 1);
    parallel_for(rows >= 64 ? std::size_t(64) : rows, [&](std::size_t part) {
      const std::size_t parts = rows >= 64 ? 64 : rows;
      for (std::size_t r = part; r < rows; r += parts) {
        long double sum = 0, abs_sum = 0;
        const std::uint8_t* row = x.bytes.data() + r * cols * dtype_size(t);
        for (std::size_t j = 0; j < cols; ++j) {
          const double v = element_as_double(t, row, j);
          sum += v;
          abs_sum += std::fabs(v);
        }
        const double ref = double(sum), s = double(abs_sum);
        const double acc = k * u * s * std::exp(k * u) + double(cols) * std::ldexp(s, -62) + std::ldexp(std::fabs(ref), -52);
        double bound;
        if (t == DType::f32) bound = acc + u * std::fabs(ref);
        else bound = acc * (1 + uo) + uo * std::fabs(ref) + std::ldexp(1.0, t == DType::f16 ? -25 : -134);  // half a subnormal step
        y.ref[r] = ref;
        y.bound[r] = bound;
        store_element(t, y.bytes.data(), r, ref);
      }
    });
    return {y};
  }

  double flops(const std::map<std::string, std::int64_t>& dims, DType) const override {
    return double(dims.at("rows")) * double(dims.at("cols"));
  }
};

}  // namespace

const Contract& reduce_sum_contract() {
  static const ReduceSum c;
  return c;
}

}  // namespace kqual::contract
