// reduce_sum contract: reference, error model, case generator, refusals, and the known-broken
// candidates' bugs simulated on the CPU against the generated cases.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <set>

#include "kqual/contract/compare.hpp"
#include "kqual/contract/contract.hpp"
#include "kqual/core/error.hpp"
#include "contract/contract_test_util.hpp"

namespace kqual::contract {
namespace {

const Contract& C() { return find_contract("reduce_sum"); }

Supports claims(std::int64_t align = 4) { return test_util::claims_of({DType::f32, DType::bf16}, align); }

Request req(DType t, std::int64_t rows, std::int64_t cols) { return test_util::rows_cols_request(t, rows, cols, rows); }

Tensor f32_tensor(const std::vector<float>& v) {
  Tensor x;
  x.name = "x";
  x.dtype = DType::f32;
  x.elements = std::int64_t(v.size());
  x.bytes.resize(v.size() * 4);
  std::memcpy(x.bytes.data(), v.data(), x.bytes.size());
  return x;
}

CaseData data_of(const Tensor& x, std::int64_t rows, std::int64_t cols) {
  CaseData d;
  d.spec.dtype = x.dtype;
  d.spec.dims = {{"rows", rows}, {"cols", cols}};
  d.dims = d.spec.dims;
  d.inputs = {x};
  return d;
}

// Input values widened to float (bf16 exactly).
std::vector<float> floats(const Tensor& t) {
  std::vector<float> v(std::size_t(t.elements));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = float(element_as_double(t.dtype, t.bytes.data(), i));
  return v;
}

// Row sums as the output dtype's bytes.
std::vector<std::uint8_t> pack(DType t, const std::vector<float>& y) {
  std::vector<std::uint8_t> b(y.size() * dtype_size(t));
  for (std::size_t i = 0; i < y.size(); ++i) store_element(t, b.data(), i, y[i]);
  return b;
}

using test_util::Generated;
const std::vector<Generated>& generated() {
  static const std::vector<Generated> all = test_util::generated_cases(C(), claims(), 42);
  return all;
}

// A row-sum implementation: (x as floats, rows, cols) -> row sums as floats (before output rounding).
using RowSum = std::function<std::vector<float>(const std::vector<float>&, std::size_t, std::size_t)>;

std::map<std::string, int> run(const RowSum& f, std::uint8_t poison = 0xFF, std::optional<DType> only = std::nullopt) {
  std::map<std::string, int> codes;
  for (const auto& g : generated()) {
    if (only && g.spec.dtype != *only) continue;
    const std::size_t rows = std::size_t(g.spec.dim("rows")), cols = std::size_t(g.spec.dim("cols"));
    auto y = pack(g.spec.dtype, f(floats(g.data.inputs[0]), rows, cols));
    Comparison c = C().compare(g.expected, y.data(), poison);
    ++codes[c.ok ? "" : c.code];
  }
  return codes;
}

std::vector<float> seq_sum(const std::vector<float>& x, std::size_t rows, std::size_t cols) {
  std::vector<float> y(rows);
  for (std::size_t r = 0; r < rows; ++r) {
    float acc = 0;
    for (std::size_t j = 0; j < cols; ++j) acc += x[r * cols + j];
    y[r] = acc;
  }
  return y;
}

// Halves summed recursively; the small cases written out in the same order (the recursion's calls
// were half of AnyF32AssociationOrderPasses' time).
float pairwise(const float* p, std::size_t n) {
  switch (n) {
    case 1: return p[0];
    case 2: return p[0] + p[1];
    case 3: return p[0] + (p[1] + p[2]);
    case 4: return (p[0] + p[1]) + (p[2] + p[3]);
    default: return pairwise(p, n / 2) + pairwise(p + n / 2, n - n / 2);
  }
}

// The good candidate's order: `threads` strided per-thread partials, then a tree over them.
std::vector<float> strided_sum(const std::vector<float>& x, std::size_t rows, std::size_t cols, std::size_t threads) {
  std::vector<float> y(rows);
  std::vector<float> part(threads);
  for (std::size_t r = 0; r < rows; ++r) {
    std::fill(part.begin(), part.end(), 0.0f);
    for (std::size_t j = 0; j < cols; ++j) part[j % threads] += x[r * cols + j];
    y[r] = pairwise(part.data(), threads);
  }
  return y;
}

using test_util::round_bits;

std::vector<float> narrow_strided(const std::vector<float>& x, std::size_t rows, std::size_t cols, int bits) {
  std::vector<float> y(rows);
  std::vector<float> part(256);
  for (std::size_t r = 0; r < rows; ++r) {
    std::fill(part.begin(), part.end(), 0.0f);
    for (std::size_t j = 0; j < cols; ++j) part[j % 256] = round_bits(part[j % 256] + x[r * cols + j], bits);
    float acc = 0;
    for (float p : part) acc = round_bits(acc + p, bits);
    y[r] = acc;
  }
  return y;
}

// ---- Reference -------------------------------------------------------------------------------

TEST(ReduceSumReference, HandComputedRows) {
  Tensor y = C().reference(data_of(f32_tensor({1, 2, 3, 4, 5, 6.5f}), 2, 3)).at(0);
  ASSERT_EQ(y.ref.size(), 2u);
  EXPECT_EQ(y.ref[0], 6.0);
  EXPECT_EQ(y.ref[1], 15.5);
  float v[2];
  std::memcpy(v, y.bytes.data(), 8);
  EXPECT_EQ(v[0], 6.0f);
  EXPECT_EQ(v[1], 15.5f);
  // k = 2 adds, S = 6: bound = 2 u 6 exp(2u) + u * 6.
  EXPECT_NEAR(y.bound[0], 3 * 6 * std::ldexp(1.0, -24), 1e-12);
  // One column: y = x exactly (bound ~ u|x| only for wider accumulators rounding once).
  Tensor one = C().reference(data_of(f32_tensor({0.1f, -3.0f}), 2, 1)).at(0);
  EXPECT_EQ(one.ref[0], double(0.1f));
  EXPECT_LE(one.bound[1], 3 * std::ldexp(1.0, -24) * 1.0001);
}

TEST(ReduceSumReference, NanAndInfRules) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  Tensor y = C().reference(data_of(f32_tensor({inf, 1, inf, -inf, nan, 2, -inf, -1}), 4, 2)).at(0);
  EXPECT_EQ(y.ref[0], inf);
  EXPECT_TRUE(std::isnan(y.ref[1]));
  EXPECT_TRUE(std::isnan(y.ref[2]));
  EXPECT_EQ(y.ref[3], -inf);
  auto cmp = [&](std::vector<float> a) { return C().compare(y, reinterpret_cast<const std::uint8_t*>(a.data()), 0xFF); };
  EXPECT_TRUE(cmp({inf, nan, nan, -inf}).ok);
  EXPECT_EQ(cmp({inf, 0, nan, -inf}).code, "nan_policy");      // a number where NaN is required
  EXPECT_EQ(cmp({nan, nan, nan, -inf}).code, "nan_policy");     // NaN where a number is required
  EXPECT_EQ(cmp({3.4e38f, nan, nan, -inf}).code, "wrong_result");  // infinities match only themselves
}

TEST(ReduceSumReference, Bf16OutputRoundedOnce) {
  // bf16 row [1, 2^-8, 2^-8]: exact sum 1 + 2^-7 is representable in bf16.
  Tensor x;
  x.name = "x";
  x.dtype = DType::bf16;
  x.elements = 3;
  x.bytes.resize(6);
  for (std::size_t i = 0; i < 3; ++i) store_element(DType::bf16, x.bytes.data(), i, i == 0 ? 1.0 : std::ldexp(1.0, -8));
  Tensor y = C().reference(data_of(x, 1, 3)).at(0);
  EXPECT_EQ(y.ref[0], 1.0 + std::ldexp(1.0, -7));
  EXPECT_EQ(element_as_double(DType::bf16, y.bytes.data(), 0), 1.0 + std::ldexp(1.0, -7));
  // The bound admits the neighbouring bf16 values only through the output rounding (2^-8 |ref|).
  EXPECT_LT(y.bound[0], std::ldexp(1.0, -7));
  EXPECT_GT(y.bound[0], std::ldexp(1.0, -8));
}

// ---- Error model -----------------------------------------------------------------------------

TEST(ReduceSumErrorModel, AnyF32AssociationOrderPasses) {
  auto only_ok = [](const std::map<std::string, int>& m) { return m.size() == 1 && m.count(""); };
  EXPECT_TRUE(only_ok(run(seq_sum)));
  EXPECT_TRUE(only_ok(run([](const std::vector<float>& x, std::size_t rows, std::size_t cols) {
    std::vector<float> y(rows);
    for (std::size_t r = 0; r < rows; ++r) y[r] = pairwise(x.data() + r * cols, cols);
    return y;
  })));
  for (std::size_t threads : {std::size_t(32), std::size_t(256), std::size_t(1024)})
    EXPECT_TRUE(only_ok(run([threads](const std::vector<float>& x, std::size_t rows, std::size_t cols) {
      return strided_sum(x, rows, cols, threads);
    }))) << threads;
  // Accumulating in double and rounding once (to f32, then to bf16 for bf16 outputs) passes too.
  EXPECT_TRUE(only_ok(run([](const std::vector<float>& x, std::size_t rows, std::size_t cols) {
    std::vector<float> y(rows);
    for (std::size_t r = 0; r < rows; ++r) {
      double acc = 0;
      for (std::size_t j = 0; j < cols; ++j) acc += x[r * cols + j];
      y[r] = float(acc);
    }
    return y;
  })));
}

TEST(ReduceSumErrorModel, NarrowAccumulationFails) {
  for (int bits : {8, 11}) {
    auto codes = run([bits](const std::vector<float>& x, std::size_t rows, std::size_t cols) {
      return narrow_strided(x, rows, cols, bits);
    });
    EXPECT_GE(codes["wrong_result"], 8) << bits;
  }
  // A sequential bf16 accumulator fails every long (>= 8192) non-zero-mean row, in both dtypes.
  for (const auto& g : generated()) {
    const std::size_t rows = std::size_t(g.spec.dim("rows")), cols = std::size_t(g.spec.dim("cols"));
    // Above ~2^22 terms the worst-case bound k*u*S*exp(k*u) is no longer informative (k*u -> 1: a
    // correct sequential f32 sum stagnates there too); narrow accumulation is caught on 8192..2^21.
    if (g.spec.family != "nonzero_mean" || cols < 8192 || cols > (std::size_t(1) << 21)) continue;
    auto y = pack(g.spec.dtype, narrow_strided(floats(g.data.inputs[0]), rows, cols, 8));
    auto x = floats(g.data.inputs[0]);
    std::vector<float> seq(rows);
    for (std::size_t r = 0; r < rows; ++r) {
      float acc = 0;
      for (std::size_t j = 0; j < cols; ++j) acc = round_bits(acc + x[r * cols + j], 8);
      seq[r] = acc;
    }
    auto ys = pack(g.spec.dtype, seq);
    EXPECT_EQ(C().compare(g.expected, ys.data(), 0xFF).code, "wrong_result") << g.spec.id;
    // So is the strided one (256 bf16 partials + a bf16 tree), the broken candidate's order.
    EXPECT_EQ(C().compare(g.expected, y.data(), 0xFF).code, "wrong_result") << g.spec.id;
  }
}

// ---- Case generator --------------------------------------------------------------------------

TEST(ReduceSumCases, ShapesFamiliesAndCount) {
  auto cases = C().correctness_cases(claims(), 1, false);
  std::set<std::int64_t> cols, rows;
  std::set<std::string> fams;
  int offsets = 0, long_nonzero = 0;
  std::int64_t largest = 0;
  for (const auto& c : cases) {
    cols.insert(c.dim("cols"));
    rows.insert(c.dim("rows"));
    fams.insert(c.family);
    offsets += c.offset_elements != 0;
    long_nonzero += c.family == "nonzero_mean" && c.dim("cols") >= 8192;
    largest = std::max(largest, c.dim("rows") * c.dim("cols"));
  }
  for (std::int64_t c : {1, 3, 31, 32, 33, 1023, 1024, 1025, 8191, 8192, 8193, 65537, (1 << 24) + 3}) EXPECT_TRUE(cols.count(c)) << c;
  EXPECT_TRUE(rows.count(1));
  EXPECT_GE(*rows.rbegin(), 1 << 20);
  for (const char* f : {"normal", "nonzero_mean", "alternating", "specials"}) EXPECT_TRUE(fams.count(f)) << f;
  EXPECT_GT(offsets, 0);
  EXPECT_GE(long_nonzero, 8);
  EXPECT_LE(largest, (std::int64_t(1) << 24) + 3);
  EXPECT_GE(cases.size(), 40u);
  EXPECT_LE(cases.size(), 90u);
  for (const auto& c : C().correctness_cases(claims(16), 1, false)) EXPECT_EQ(c.offset_elements, 0);
  bool large = false;
  for (const auto& c : C().correctness_cases(claims(), 1, true)) large |= c.dim("cols") > (std::int64_t(1) << 27);
  EXPECT_TRUE(large);
}

TEST(ReduceSumCases, DeterministicBySeed) { test_util::expect_deterministic_by_seed(C(), claims(), 10); }

TEST(ReduceSumCases, OutputsAreEvidence) {
  int specials = 0;
  for (const auto& g : generated()) {
    EXPECT_EQ(degenerate_reason(g.expected), "") << g.spec.id;
    if (g.spec.family == "specials") {
      ++specials;
      const std::size_t rows = std::size_t(g.spec.dim("rows"));
      EXPECT_TRUE(std::isnan(g.expected.ref[0])) << g.spec.id;
      EXPECT_EQ(g.expected.ref[1], std::numeric_limits<double>::infinity()) << g.spec.id;
      EXPECT_TRUE(std::isnan(g.expected.ref[2])) << g.spec.id;
      EXPECT_EQ(g.expected.ref[rows - 1], -std::numeric_limits<double>::infinity()) << g.spec.id;
      if (rows > 4) {
        EXPECT_TRUE(std::isfinite(g.expected.ref[3])) << g.spec.id;
      }
    }
  }
  EXPECT_GE(specials, 6);
}

// ---- Refusals --------------------------------------------------------------------------------

TEST(ReduceSumDomain, EveryRefusalCodeHasAnExample) {
  // Refused whatever the claims: any alignment, in place, any size.
  std::vector<Supports> any_claims;
  for (std::int64_t align : {1, 4, 16})
    any_claims.push_back(test_util::at_most(test_util::in_place_claimed(claims(align)), std::numeric_limits<std::int64_t>::max()));
  test_util::expect_examples_refused(C(), any_claims,
                                     {"dtype_unsupported", "missing_dim", "empty", "too_large", "missing_tensor", "length_mismatch",
                                      "non_contiguous", "negative_offset", "aliasing_unsupported"});
}

TEST(ReduceSumDomain, ClaimDependentRefusals) {
  using namespace test_util;
  auto code = [](const Request& r, const Supports& s) { return refusal_code(C(), r, s); };
  EXPECT_EQ(code(req(DType::bf16, 3, 1000), claims()), "accepted");
  EXPECT_EQ(code(req(DType::bf16, 3, 1000), only_dtypes(claims(), {DType::f32})), "dtype_not_claimed");
  EXPECT_EQ(code(req(DType::f32, 3, 1000), at_most(claims(), 2999)), "exceeds_claim");
  const Request off = offset_by(req(DType::f32, 3, 1000), 1);
  EXPECT_EQ(code(off, claims(16)), "misaligned");
  EXPECT_EQ(code(off, claims(4)), "accepted");
  EXPECT_NE(C().validate(req(DType::f32, 3, 0), claims())->reason.find("cols = 0"), std::string::npos);
}

// ---- The known-broken candidates, simulated ---------------------------------------------------

// candidates/reduce_sum/broken/bf16_accumulation: per-thread partials and the tree in bf16.
TEST(ReduceSumBroken, Bf16AccumulationIsWrongResult) {
  auto codes = run([](const std::vector<float>& x, std::size_t rows, std::size_t cols) { return narrow_strided(x, rows, cols, 8); },
                   0xFF, DType::f32);
  EXPECT_GE(codes["wrong_result"], 8);
}

// candidates/reduce_sum/broken/missing_tail: unrolled by 4 without a remainder loop: elements
// j >= 4 * floor(cols / 4) of every row are dropped.
TEST(ReduceSumBroken, MissingTailIsWrongResult) {
  auto codes = run([](const std::vector<float>& x, std::size_t rows, std::size_t cols) {
    std::vector<float> y(rows);
    for (std::size_t r = 0; r < rows; ++r) {
      float acc = 0;
      for (std::size_t j = 0; j < cols / 4 * 4; ++j) acc += x[r * cols + j];
      y[r] = acc;
    }
    return y;
  });
  EXPECT_GE(codes["wrong_result"], 10);
}

// candidates/reduce_sum/broken/atomic_no_zero: blocks atomically add their partial sums onto y,
// which was never zeroed: run 1 adds onto the 0xFF.. poison (NaN in f32 and bf16).
TEST(ReduceSumBroken, AtomicOntoUnzeroedOutputIsNanPolicy) {
  for (DType t : {DType::f32, DType::bf16}) {
    std::uint8_t poison_bytes[4] = {0xFF, 0xFF, 0xFF, 0xFF};
    const float poison = float(element_as_double(t, poison_bytes, 0));
    ASSERT_TRUE(std::isnan(poison));
    auto codes = run([poison](const std::vector<float>& x, std::size_t rows, std::size_t cols) {
      auto y = seq_sum(x, rows, cols);
      // A GPU float add with a NaN operand returns the canonical NaN (0x7FFFFFFF), not the poison's
      // payload (x86 would propagate 0xFFFFFFFF, which would read as "unwritten").
      for (auto& v : y) v = std::isnan(poison + v) ? std::numeric_limits<float>::quiet_NaN() : poison + v;
      return y;
    }, 0xFF, t);
    EXPECT_EQ(codes.count(""), 0u) << to_string(t);
    EXPECT_GE(codes["nan_policy"], 10) << to_string(t);
  }
}

}  // namespace
}  // namespace kqual::contract
