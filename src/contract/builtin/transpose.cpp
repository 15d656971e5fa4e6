// Contract: y = transpose(x). x is rows x cols, row-major; y is cols x rows, row-major:
// y[j * rows + i] = x[i * cols + j]. A transpose moves bits and computes nothing, so it is bit-exact
// for every dtype — including NaN payloads and the sign of zero: an implementation that routes
// elements through float arithmetic (x + 0.0f, x * 1.0f) canonicalises NaNs and turns -0 into +0,
// and is rejected. Hence compare() here is stricter than compare_exact (which lets any NaN match
// any NaN): every element's storage bits must match.
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

constexpr std::int64_t kMaxTransposeDim = (std::int64_t(1) << 31) - 1;  // each of rows, cols fits an i32

bool is_float_type(DType t) { return t == DType::f32 || t == DType::bf16 || t == DType::f16; }

std::uint64_t raw_bits(DType t, const std::uint8_t* p, std::size_t i) {
  std::uint64_t v = 0;
  std::memcpy(&v, p + i * dtype_size(t), dtype_size(t));
  return v;
}

// Family index in f16: element i holds the (i mod 63488)-th finite f16 bit pattern (0x0000 .. 0x7BFF,
// then 0x8000 .. 0xFBFF): every finite value, subnormals and -0 included, before any repeats.
std::uint32_t f16_index_bits(std::size_t i) {
  const std::uint32_t k = std::uint32_t(i % 63488);
  return k < 31744 ? k : 0x8000u | (k - 31744);
}

class Transpose final : public builtin::DescribedContract {
 public:
  Transpose()
      : DescribedContract(
            "transpose",
            "y = x^T: x is rows x cols, y is cols x rows, both row-major and contiguous; y[j*rows + i] = x[i*cols + j]",
            Domain{
                .dims = {{.name = "rows", .max = kMaxTransposeDim}, {.name = "cols", .max = kMaxTransposeDim}},
                .tensors = {{.name = "x", .role = Role::input, .shape = {"rows", "cols"}, .description = "rows x cols, row-major"},
                            {.name = "y", .role = Role::output, .shape = {"cols", "rows"}, .description = "cols x rows, row-major"}},
                .dtypes = {DType::f32, DType::bf16, DType::f16, DType::i32},
                .claim = {.dims = {"rows", "cols"}},
                .no_in_place_reason = "an in-place transpose of a non-square matrix is another operation",
            }) {}
  std::string numerical_policy() const override {
    return "Bit-exact for every dtype: each output element carries the storage bits of its input element, "
           "y[j*rows + i] = x[i*cols + j]. This is stricter than value equality: NaN payloads (quiet and signalling) "
           "and -0 must survive unchanged, so an implementation that passes elements through float arithmetic "
           "(x + 0.0f canonicalises NaN to 0x7fffffff and turns -0 into +0) is wrong_result. Failure codes: the "
           "poison pattern surviving is unwritten_output; NaN where a number belongs (or the reverse) is nan_policy; "
           "any other bit difference, NaN payloads included, is wrong_result. Reference: a bit copy on the CPU."
           " f16 (2-byte elements, like bf16) is tested with every finite f16 bit pattern as a value (index), "
           "random bits, and NaN payloads, infinities, -0 and subnormals. Run to run: two runs must agree bitwise "
           "(an exact result has one right answer). " + std::string(builtin::kNoGeneratedF16) + ".";
  }

  // Required: every element is a bit copy of one input element, so any difference between two runs
  // is a wrong (or torn) element; no reduction exists whose order could vary.
  Reproducibility reproducibility(DType) const override {
    return {.required = true,
            .reason = "the output is a bit copy of the input: any run-to-run difference is already a wrong element",
            .opt_out = "none: a permutation of bits has one right answer"};
  }

  // rows x cols just past 2^31 elements (about 46349 x 46355), in each claimed float dtype; the
  // output's rows (x's columns) around elements 2^31 and 2^32 of y are compared.
  std::vector<CaseSpec> index_cases(const Supports& cand, std::uint64_t seed) const override {
    return builtin::without_f16(matrix_index_cases(*this, cand, seed, 46349));
  }
  std::vector<OutputWindow> index_case_windows(const CaseSpec& spec) const override {
    const std::int64_t rows = spec.dim("rows"), cols = spec.dim("cols");
    std::vector<OutputWindow> out;
    // y is cols x rows: its row j is x's column j.
    for (const auto& [j0, n] : row_windows(cols, rows, 2, spec.seed, 3)) {
      OutputWindow w;
      w.tensor = "y";
      w.begin = j0 * rows;
      w.count = n * rows;
      w.sub_dims = {{"rows", rows}, {"cols", n}};
      auto& g = w.gather["x"];
      g.reserve(std::size_t(rows));
      for (std::int64_t i = 0; i < rows; ++i) g.push_back({i * cols + j0, n});
      w.why = fmt::format("y rows {}..{} (x columns)", j0, j0 + n);
      out.push_back(std::move(w));
    }
    return out;
  }

  std::vector<CaseSpec> correctness_cases(const Supports& cand, std::uint64_t seed, bool include_large) const override {
    // Tile edges of 32 and 64 (the common tile sizes), thin shapes, primes, many tiles, and one
    // ~2^24-element case. Small to large, so a candidate that faults does so after the small
    // cases have already told what is wrong.
    struct Shape { std::int64_t rows, cols; };
    const std::vector<Shape> shapes = {{1, 1},     {1, 1000},   {1000, 1},  {2, 3},     {31, 31},   {32, 32},
                                       {33, 33},   {31, 33},    {33, 31},   {32, 64},   {64, 32},   {63, 65},
                                       {64, 64},   {65, 63},    {7, 1031},  {1031, 7},  {1009, 1013}, {4099, 1031},
                                       {4096, 4096}};
    std::vector<CaseSpec> cases;
    auto add = [&](DType t, Shape s, const std::string& fam, std::int64_t off) {
      if (!cand.supports(t) || s.rows * s.cols > cand.max_n) return;
      cases.push_back(builtin::matrix_family_case(t, s.rows, s.cols, fam, off, seed, 31));
    };
    for (const Shape& s : shapes) {
      const bool big = s.rows * s.cols > 2'000'000;
      add(DType::f32, s, "index", 0);
      if (!big) add(DType::f32, s, "specials", 0);
      add(DType::bf16, s, "random_bits", 0);
      if (s.rows == s.cols + 2 || s.rows == 1009 || s.rows == 1) add(DType::bf16, s, "specials", 0);
      if (s.rows != s.cols || s.rows == 33) add(DType::i32, s, "index", 0);
      // f16: every finite bit pattern in turn (index), NaN payloads, infinities, -0 and subnormals (specials).
      if (s.rows != s.cols || s.rows == 33) add(DType::f16, s, "index", 0);
      if (s.rows == s.cols + 2 || s.rows == 1009 || s.rows == 1 || s.rows == 33) add(DType::f16, s, "specials", 0);
    }
    // One-element start offsets (misaligned vector access) where the candidate claims element alignment.
    for (DType t : {DType::f32, DType::bf16, DType::f16}) {
      if (!builtin::admits_element_offset(cand, t)) continue;
      for (Shape s : {Shape{33, 31}, Shape{64, 64}, Shape{1031, 7}}) add(t, s, t == DType::bf16 ? "random_bits" : "specials", 1);
    }
    if (include_large) {
      add(DType::f32, {8193, 8191}, "random_bits", 0);  // 2^26 elements, many waves of tiles
      add(DType::bf16, {3, 11184811}, "random_bits", 0);  // very wide and thin: 2^25 elements
    }
    return cases;
  }

  std::vector<Dims> benchmark_shapes() const override {
    return {{{"rows", 1024}, {"cols", 1024}}, {{"rows", 4099}, {"cols", 1031}}, {{"rows", 8192}, {"cols", 8192}}};
  }

  std::string benchmark_family() const override { return "index"; }
  CaseData make_case(const CaseSpec& spec) const override {
    const std::int64_t rows = spec.dim("rows"), cols = spec.dim("cols");
    if (rows < 1 || cols < 1) throw_error(ErrorKind::unsupported, fmt::format("case {}: empty shape", spec.id));
    builtin::require_known_family(spec, {"index", "random_bits", "specials"});
    CaseData d;
    d.spec = spec;
    d.dims = {{"rows", rows}, {"cols", cols}};
    const std::size_t n = std::size_t(rows * cols);
    const DType t = spec.dtype;
    const std::size_t es = dtype_size(t);
    Tensor x = builtin::zeroed_tensor("x", t, std::int64_t(n));
    std::uint8_t* p = x.bytes.data();
    auto put = [&](std::size_t i, std::uint32_t bits) { std::memcpy(p + i * es, &bits, es); };
    // Patterns are bit patterns, never produced by float arithmetic, so NaN payloads are exact.
    auto random_finite = [&](Rng& rng) -> std::uint32_t {
      for (;;) {
        std::uint32_t b = std::uint32_t(rng.next());
        if (dtype_size(t) == 2) b &= 0xFFFF;
        if (t == DType::i32) return b;
        const std::uint32_t exp_mask = t == DType::f32 ? 0x7F800000u : t == DType::bf16 ? 0x7F80u : 0x7C00u;
        if ((b & exp_mask) != exp_mask) return b;  // not Inf/NaN
      }
    };
    auto special = [&](Rng& rng) -> std::uint32_t {
      // NaNs with varied payloads (quiet and signalling, either sign), ±Inf, -0, subnormals. None
      // equals a poison pattern (0xff.. or 0x7f..), so an unwritten element is never mistaken.
      if (t == DType::f32) {
        const std::uint32_t v[] = {0x7FC00001u, 0xFFC12345u, 0x7F800001u, 0xFFA5A5A5u, 0x7FC00000u,
                                   0x7F800000u, 0xFF800000u, 0x80000000u, 0x00000001u, 0x807FFFFFu};
        return v[rng.below(10)];
      }
      if (t == DType::f16) {
        const std::uint32_t v[] = {0x7E01u, 0xFE13u, 0x7C01u, 0xFD5Au, 0x7E00u, 0x7C00u, 0xFC00u, 0x8000u, 0x0001u, 0x83FFu};
        return v[rng.below(10)];
      }
      const std::uint32_t v[] = {0x7FC1u, 0xFFC3u, 0x7F81u, 0xFFA5u, 0x7FC0u, 0x7F80u, 0xFF80u, 0x8000u, 0x0001u, 0x807Fu};
      return v[rng.below(10)];
    };
    builtin::for_each_in_seeded_chunks(n, spec.seed, [&](std::size_t i, Rng& rng) {
      if (spec.family == "index") {
        // Every element distinct (up to 2^24 for f32), so any permutation error shows.
        if (t == DType::f32) put(i, f32_bits(float(i % (std::size_t(1) << 24)) + 0.5f * float(i >> 24)));
        else if (t == DType::i32) put(i, std::uint32_t(i) ^ 0x5A000000u);
        else if (t == DType::bf16) put(i, std::uint32_t(f32_to_bf16_rne(float(i % 65521) - 32000.0f)));
        else put(i, f16_index_bits(i));
      } else if (spec.family == "random_bits") {
        put(i, random_finite(rng));
      } else {  // specials: random finite values with one in eight special
        put(i, rng.below(8) == 0 && t != DType::i32 ? special(rng) : random_finite(rng));
      }
    });
    if (spec.family == "specials" && is_float_type(t)) {
      // The corners of the matrix carry a non-canonical NaN, -0 and a signalling NaN whatever the draw did.
      const int k = t == DType::f32 ? 0 : t == DType::bf16 ? 1 : 2;
      const std::uint32_t nan[] = {0x7FC00001u, 0x7FC1u, 0x7E01u}, negzero[] = {0x80000000u, 0x8000u, 0x8000u},
                          snan[] = {0x7F800001u, 0x7F81u, 0x7C01u}, negnan[] = {0xFFC12345u, 0xFFC3u, 0xFE13u};
      put(0, nan[k]);
      if (n > 1) put(n - 1, negzero[k]);
      if (cols > 1) put(std::size_t(cols - 1), snan[k]);
      if (rows > 1) put(std::size_t((rows - 1) * cols), negnan[k]);
    }
    d.inputs.push_back(std::move(x));
    return d;
  }

  std::vector<Tensor> reference(const CaseData& data, ReferenceHost& /*host*/) const override {
    const Tensor& x = data.inputs.at(0);
    const std::size_t rows = std::size_t(data.dims.at("rows")), cols = std::size_t(data.dims.at("cols"));
    const std::size_t es = dtype_size(x.dtype);
    Tensor y = builtin::zeroed_tensor("y", x.dtype, x.elements);
    // Blocked by 64 rows so that both sides stay cache friendly; blocks in parallel.
    constexpr std::size_t kB = 64;
    parallel_for((rows + kB - 1) / kB, [&](std::size_t b) {
      for (std::size_t i = b * kB; i < std::min(rows, (b + 1) * kB); ++i)
        for (std::size_t j = 0; j < cols; ++j)
          std::memcpy(y.bytes.data() + (j * rows + i) * es, x.bytes.data() + (i * cols + j) * es, es);
    });
    return {y};
  }

  Comparison compare(const Tensor& expected, const std::uint8_t* actual, std::uint8_t poison_byte) const override {
    Comparison c = compare_exact(expected, actual, poison_byte);
    if (!c.ok || !is_float_type(expected.dtype)) return c;
    // compare_exact lets any NaN match any NaN, and cannot tell a poison pattern that is itself a NaN
    // (0xff..) from a NaN result. Here bits must match exactly.
    const DType t = expected.dtype;
    std::uint64_t poison = 0;
    for (std::size_t b = 0; b < dtype_size(t); ++b) poison |= std::uint64_t(poison_byte) << (8 * b);
    const std::uint8_t* want = expected.bytes.data();
    ElementScan scan = scan_elements(std::size_t(expected.elements), [&](std::size_t lo, std::size_t hi, ElementScan& y) {
      for (std::size_t i = lo; i < hi; ++i) {
        const std::uint64_t e = raw_bits(t, want, i), a = raw_bits(t, actual, i);
        if (e != a) y.note(a == poison ? Mismatch::unwritten : Mismatch::payload, i);
      }
    });
    if (scan.mismatches())
      return scan.verdict(expected.name, std::size_t(expected.elements), [&](std::size_t i) {
        return fmt::format("{}[{}]: expected {}, got {}", expected.name, i, format_element(t, want, i), format_element(t, actual, i));
      }, poison_byte, "lost their payload bits (a transpose must copy bits)");
    return c;
  }

  double flops(const std::map<std::string, std::int64_t>&, DType) const override { return 0.0; }
};

}  // namespace

const Contract& transpose_contract() {
  static const Transpose c;
  return c;
}

}  // namespace kqual::contract
