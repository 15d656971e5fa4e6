// exclusive_scan contract: reference, error model, case generator, refusals, and the known-broken
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

const Contract& C() { return find_contract("exclusive_scan"); }

constexpr std::int64_t kTile = 4096;  // the good candidate's tile (256 threads x 16 items)

Supports claims(std::int64_t align = 4) { return test_util::claims_of({DType::i32, DType::f32}, align); }

Request req(DType t, std::int64_t n) {
  Request r;
  r.dtype = t;
  r.dims = {{"n", n}};
  r.lengths = {{"x", n}, {"y", n}};
  return r;
}

template <typename T>
Tensor tensor_of(const std::string& name, DType t, const std::vector<T>& v) {
  Tensor x;
  x.name = name;
  x.dtype = t;
  x.elements = std::int64_t(v.size());
  x.bytes.resize(v.size() * sizeof(T));
  std::memcpy(x.bytes.data(), v.data(), x.bytes.size());
  return x;
}

template <typename T>
std::vector<T> values(const Tensor& t) {
  std::vector<T> v(std::size_t(t.elements));
  std::memcpy(v.data(), t.bytes.data(), v.size() * sizeof(T));
  return v;
}

CaseData data_of(const Tensor& x) {
  CaseData d;
  d.spec.dtype = x.dtype;
  d.spec.dims = {{"n", x.elements}};
  d.dims = {{"n", x.elements}};
  d.inputs = {x};
  return d;
}

template <typename T>
Comparison check(const Tensor& expected, const std::vector<T>& actual, std::uint8_t poison = 0xFF) {
  return C().compare(expected, reinterpret_cast<const std::uint8_t*>(actual.data()), poison);
}

// Every generated case with its reference, computed once for the whole suite.
using test_util::Generated;
const std::vector<Generated>& generated() {
  static const std::vector<Generated> all = test_util::generated_cases(C(), claims(), 42);
  return all;
}

// ---- Simulated implementations (float) -------------------------------------------------------
using ScanF = std::function<std::vector<float>(const std::vector<float>&)>;

std::vector<float> seq_scan(const std::vector<float>& x) {
  std::vector<float> y(x.size());
  float acc = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    y[i] = acc;
    acc += x[i];
  }
  return y;
}

// Reduce-then-scan with tiles of `tile`: tile totals, carries = exclusive scan of the totals,
// y = carry + local exclusive scan (another association than the sequential one).
std::vector<float> blocked_scan(const std::vector<float>& x, std::size_t tile, bool with_carry = true) {
  const std::size_t n = x.size(), tiles = (n + tile - 1) / tile;
  std::vector<float> totals(tiles, 0.0f), carry(tiles, 0.0f), y(n);
  for (std::size_t b = 0; b < tiles; ++b)
    for (std::size_t i = b * tile; i < std::min(n, (b + 1) * tile); ++i) totals[b] += x[i];
  float acc = 0;
  for (std::size_t b = 0; b < tiles; ++b) {
    carry[b] = acc;
    acc += totals[b];
  }
  for (std::size_t b = 0; b < tiles; ++b) {
    float local = 0;
    for (std::size_t i = b * tile; i < std::min(n, (b + 1) * tile); ++i) {
      y[i] = with_carry ? carry[b] + local : local;
      local += x[i];
    }
  }
  return y;
}

// Hillis-Steele (Kogge-Stone) inclusive scan, shifted: a tree association order.
std::vector<float> tree_scan(const std::vector<float>& x) {
  std::vector<float> a = x, b(x.size());
  for (std::size_t d = 1; d < x.size(); d *= 2) {
    for (std::size_t i = 0; i < x.size(); ++i) b[i] = i >= d ? a[i - d] + a[i] : a[i];
    std::swap(a, b);
  }
  std::vector<float> y(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) y[i] = i ? a[i - 1] : 0.0f;
  return y;
}

using test_util::round_bits;

std::vector<float> narrow_scan(const std::vector<float>& x, int bits) {
  std::vector<float> y(x.size());
  float acc = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    y[i] = acc;
    acc = round_bits(acc + x[i], bits);
  }
  return y;
}

std::vector<float> inclusive_f(const std::vector<float>& x) {
  std::vector<float> y(x.size());
  float acc = 0;
  for (std::size_t i = 0; i < x.size(); ++i) y[i] = acc += x[i];
  return y;
}

// Codes of a simulated implementation over every generated f32 case ("" = accepted).
std::map<std::string, int> run_f32(const ScanF& f, std::size_t max_n = SIZE_MAX) {
  std::map<std::string, int> codes;
  for (const auto& g : generated()) {
    if (g.spec.dtype != DType::f32 || std::size_t(g.spec.dim("n")) > max_n) continue;
    Comparison c = check(g.expected, f(values<float>(g.data.inputs[0])));
    ++codes[c.ok ? "" : c.code];
  }
  return codes;
}

// ---- Reference -------------------------------------------------------------------------------

TEST(ExclusiveScanReference, IssueExampleCounts) {
  Tensor y = C().reference(data_of(tensor_of<std::int32_t>("x", DType::i32, {3, 0, 2, 1, 0, 4}))).at(0);
  EXPECT_EQ(values<std::int32_t>(y), (std::vector<std::int32_t>{0, 3, 3, 5, 6, 6}));
  EXPECT_TRUE(y.bound.empty());  // i32 is bit-exact
}

// The issue's example with every intermediate array of a two-level (reduce-then-scan) algorithm,
// blocks of 3: the scan without the inter-block carry gives [0,3,3,0,1,1], which the contract rejects.
TEST(ExclusiveScanReference, TwoLevelAlgorithmIntermediatesAndMissingCarry) {
  const std::vector<std::int32_t> x = {3, 0, 2, 1, 0, 4};
  const std::size_t block = 3, blocks = 2;
  std::vector<std::int32_t> local(x.size()), totals(blocks, 0), carries(blocks), final_y(x.size()), no_carry(x.size());
  for (std::size_t b = 0; b < blocks; ++b) {
    std::int32_t acc = 0;
    for (std::size_t i = b * block; i < (b + 1) * block; ++i) {
      local[i] = acc;
      acc += x[i];
    }
    totals[b] = acc;
  }
  std::int32_t acc = 0;
  for (std::size_t b = 0; b < blocks; ++b) {
    carries[b] = acc;
    acc += totals[b];
  }
  for (std::size_t i = 0; i < x.size(); ++i) {
    final_y[i] = carries[i / block] + local[i];
    no_carry[i] = local[i];
  }
  EXPECT_EQ(local, (std::vector<std::int32_t>{0, 3, 3, 0, 1, 1}));
  EXPECT_EQ(totals, (std::vector<std::int32_t>{5, 5}));
  EXPECT_EQ(carries, (std::vector<std::int32_t>{0, 5}));
  EXPECT_EQ(final_y, (std::vector<std::int32_t>{0, 3, 3, 5, 6, 6}));
  EXPECT_EQ(no_carry, (std::vector<std::int32_t>{0, 3, 3, 0, 1, 1}));

  Tensor expected = C().reference(data_of(tensor_of<std::int32_t>("x", DType::i32, x))).at(0);
  EXPECT_TRUE(check(expected, final_y).ok);
  Comparison c = check(expected, no_carry);
  EXPECT_FALSE(c.ok);
  EXPECT_EQ(c.code, "wrong_result");
  EXPECT_EQ(c.mismatches, 3);  // y[3..5]
}

TEST(ExclusiveScanReference, I32WrapsModulo2To32) {
  const std::int32_t mx = std::numeric_limits<std::int32_t>::max(), mn = std::numeric_limits<std::int32_t>::min();
  Tensor y = C().reference(data_of(tensor_of<std::int32_t>("x", DType::i32, {mx, 1, 5, -7}))).at(0);
  EXPECT_EQ(values<std::int32_t>(y), (std::vector<std::int32_t>{0, mx, mn, mn + 5}));
}

TEST(ExclusiveScanReference, F32ValuesBoundsAndSpecials) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  Tensor y = C().reference(data_of(tensor_of<float>("x", DType::f32, {1.5f, 2.25f, -0.75f, inf, 1.0f, -inf, 2.0f}))).at(0);
  ASSERT_EQ(y.ref.size(), 7u);
  EXPECT_EQ(y.ref[0], 0.0);
  EXPECT_EQ(y.ref[1], 1.5);
  EXPECT_EQ(y.ref[2], 3.75);
  EXPECT_EQ(y.ref[3], 3.0);
  EXPECT_EQ(y.ref[4], inf);
  EXPECT_EQ(y.ref[5], inf);
  EXPECT_TRUE(std::isnan(y.ref[6]));  // Inf + -Inf
  EXPECT_EQ(y.bound[0], 0.0);          // nothing added
  EXPECT_LT(y.bound[1], 1e-15);        // one term: exact (up to the reference's own error)
  // k = 2 adds, S = 4.5: k u S exp(k u) ~ 5.4e-7.
  EXPECT_NEAR(y.bound[3], 2 * std::ldexp(1.0, -24) * 4.5, 1e-12);
  // NaN never matches a number, a number never matches NaN, infinities only themselves.
  std::vector<float> ok = {0, 1.5f, 3.75f, 3.0f, inf, inf, nan};
  EXPECT_TRUE(check(y, ok).ok);
  auto bad = ok;
  bad[6] = 0;
  EXPECT_EQ(check(y, bad).code, "nan_policy");
  bad = ok;
  bad[2] = nan;
  EXPECT_EQ(check(y, bad).code, "nan_policy");
  bad = ok;
  bad[4] = 3.4e38f;
  EXPECT_EQ(check(y, bad).code, "wrong_result");
  bad = ok;
  bad[1] = 0;  // a denormal-flushing or lost first term is caught: y[1] has a zero bound
  EXPECT_EQ(check(y, bad).code, "wrong_result");
  // Poison left in place is reported as unwritten, not as a wrong value.
  auto poisoned = ok;
  std::memset(&poisoned[3], 0xFF, 4);
  EXPECT_EQ(check(y, poisoned, 0xFF).code, "unwritten_output");
}

// ---- Error model -----------------------------------------------------------------------------

TEST(ExclusiveScanErrorModel, AnyF32AssociationOrderPasses) {
  auto seq = run_f32(seq_scan);
  EXPECT_EQ(seq.size(), 1u);
  EXPECT_TRUE(seq.count(""));
  for (std::size_t tile : {std::size_t(7), std::size_t(256), std::size_t(kTile)}) {
    auto codes = run_f32([tile](const std::vector<float>& x) { return blocked_scan(x, tile); });
    EXPECT_EQ(codes.size(), 1u) << "tile " << tile;
    EXPECT_TRUE(codes.count("")) << "tile " << tile;
  }
  auto codes = run_f32(tree_scan, 1 << 20);
  EXPECT_EQ(codes.size(), 1u);
  EXPECT_TRUE(codes.count(""));
}

TEST(ExclusiveScanErrorModel, NarrowAccumulationFails) {
  for (int bits : {8, 11}) {  // bf16, f16
    auto codes = run_f32([bits](const std::vector<float>& x) { return narrow_scan(x, bits); });
    EXPECT_GE(codes["wrong_result"], 8) << "bits " << bits;
  }
  // Specifically, every long non-zero-mean case is caught.
  for (const auto& g : generated()) {
    if (g.spec.dtype != DType::f32 || g.spec.family != "nonzero_mean" || g.spec.dim("n") < 8192) continue;
    EXPECT_EQ(check(g.expected, narrow_scan(values<float>(g.data.inputs[0]), 8)).code, "wrong_result") << g.spec.id;
  }
}

// ---- Case generator --------------------------------------------------------------------------

TEST(ExclusiveScanCases, SizesFamiliesOffsetsAndCount) {
  auto cases = C().correctness_cases(claims(), 1, false);
  std::set<std::int64_t> sizes;
  std::set<std::string> fams;
  int offsets = 0;
  for (const auto& c : cases) {
    sizes.insert(c.dim("n"));
    fams.insert(c.family);
    offsets += c.offset_elements != 0;
  }
  for (std::int64_t n : {1, 31, 32, 33, 255, 256, 257, 1023, 1024, 1025, 4095, 4096, 4097, 8191, 8192, 8193, 65537, 999983})
    EXPECT_TRUE(sizes.count(n)) << n;
  EXPECT_GE(*sizes.rbegin(), std::int64_t(1) << 24);
  for (const char* f : {"counts", "signed", "wrap", "normal", "nonzero_mean", "alternating", "log_uniform", "specials"})
    EXPECT_TRUE(fams.count(f)) << f;
  EXPECT_GT(offsets, 0);
  EXPECT_GE(cases.size(), 40u);
  EXPECT_LE(cases.size(), 90u);
  for (const auto& c : C().correctness_cases(claims(16), 1, false)) EXPECT_EQ(c.offset_elements, 0);
  // Only the claimed dtypes.
  Supports only_i32 = claims();
  only_i32.dtypes = {DType::i32};
  for (const auto& c : C().correctness_cases(only_i32, 1, false)) EXPECT_EQ(c.dtype, DType::i32);
  bool large = false;
  for (const auto& c : C().correctness_cases(claims(), 1, true)) large |= c.dim("n") > (std::int64_t(1) << 26);
  EXPECT_TRUE(large);
}

TEST(ExclusiveScanCases, DeterministicBySeed) { test_util::expect_deterministic_by_seed(C(), claims(), 20); }

TEST(ExclusiveScanCases, OutputsAreEvidence) {
  int specials = 0;
  for (const auto& g : generated()) {
    EXPECT_EQ(degenerate_reason(g.expected), "") << g.spec.id;
    if (g.spec.family == "specials") {
      ++specials;
      const std::size_t n = std::size_t(g.spec.dim("n"));
      EXPECT_TRUE(std::isinf(g.expected.ref[n / 2 + 1])) << g.spec.id;
      EXPECT_TRUE(std::isnan(g.expected.ref[n - 1])) << g.spec.id;
      EXPECT_TRUE(std::isfinite(g.expected.ref[n / 2])) << g.spec.id;
    }
    if (g.spec.family == "wrap") {  // the i32 sum really wraps
      auto x = values<std::int32_t>(g.data.inputs[0]);
      long long s = 0;
      bool wrapped = false;
      for (auto v : x) wrapped |= std::llabs(s += v) > std::numeric_limits<std::int32_t>::max();
      EXPECT_TRUE(wrapped || x.size() < 8) << g.spec.id;
    }
  }
  EXPECT_EQ(specials, 3);
}

// ---- Refusals --------------------------------------------------------------------------------

TEST(ExclusiveScanDomain, EveryRefusalCodeHasAnExample) {
  // Refused whatever the claims: any alignment, in place, any size.
  std::vector<Supports> any_claims;
  for (std::int64_t align : {1, 4, 16})
    any_claims.push_back(test_util::at_most(test_util::in_place_claimed(claims(align)), std::numeric_limits<std::int64_t>::max()));
  test_util::expect_examples_refused(C(), any_claims,
                                     {"dtype_unsupported", "missing_tensor", "length_mismatch", "empty", "too_large", "non_contiguous",
                                      "negative_offset"});
}

TEST(ExclusiveScanDomain, ClaimDependentRefusals) {
  using namespace test_util;
  auto code = [](const Request& r, const Supports& s) { return refusal_code(C(), r, s); };
  EXPECT_EQ(code(req(DType::f32, 1000), claims()), "accepted");
  EXPECT_EQ(code(req(DType::f32, 1000), only_dtypes(claims(), {DType::i32})), "dtype_not_claimed");
  EXPECT_EQ(code(req(DType::i32, 1000), at_most(claims(), 999)), "exceeds_claim");
  const Request off = offset_by(req(DType::f32, 1000), 1);
  EXPECT_EQ(code(off, claims(16)), "misaligned");
  EXPECT_EQ(code(off, claims(4)), "accepted");
  EXPECT_EQ(code(in_place(req(DType::f32, 1000)), claims()), "aliasing_not_claimed");
  EXPECT_NE(C().validate(req(DType::f32, 0), claims())->reason.find("n = 0"), std::string::npos);
}

// ---- The known-broken candidates, simulated ---------------------------------------------------

// candidates/exclusive_scan/broken/missing_carry: per-tile scans, no inter-tile carry.
TEST(ExclusiveScanBroken, MissingCarryIsWrongResult) {
  std::map<std::string, int> codes;
  for (const auto& g : generated()) {
    const std::int64_t n = g.spec.dim("n");
    std::vector<std::uint8_t> out;
    if (g.spec.dtype == DType::f32) {
      auto y = blocked_scan(values<float>(g.data.inputs[0]), kTile, false);
      Comparison c = check(g.expected, y);
      ++codes[c.ok ? "" : c.code];
      if (n <= kTile) {
        EXPECT_TRUE(c.ok) << g.spec.id;
      }
    } else {
      auto x = values<std::int32_t>(g.data.inputs[0]);
      std::vector<std::int32_t> y(x.size());
      std::uint32_t acc = 0;
      for (std::size_t i = 0; i < x.size(); ++i) {
        if (i % kTile == 0) acc = 0;
        y[i] = std::int32_t(acc);
        acc += std::uint32_t(x[i]);
      }
      Comparison c = check(g.expected, y);
      ++codes[c.ok ? "" : c.code];
      if (n > kTile) {
        EXPECT_EQ(c.code, "wrong_result") << g.spec.id;
      }
    }
  }
  EXPECT_GE(codes["wrong_result"], 10);
}

// candidates/exclusive_scan/broken/tail_unwritten: grid = max(1, n / 4096) (floor): the last
// partial tile is never written when n > 4096.
TEST(ExclusiveScanBroken, TailUnwrittenIsUnwrittenOutput) {
  int caught = 0;
  for (const auto& g : generated()) {
    const std::int64_t n = g.spec.dim("n");
    const std::int64_t covered = std::max<std::int64_t>(1, n / kTile) * kTile;
    // Run 1 (poison 0xFF) then run 2 (0x7F), as the harness does: the first failure counts. A
    // 0xFF.. poison is a NaN, which an expected NaN (the specials' tail) accepts; 0x7F.. is not.
    Comparison c;
    for (std::uint8_t poison : {std::uint8_t(0xFF), std::uint8_t(0x7F)}) {
      std::vector<std::uint8_t> y = g.expected.bytes;  // otherwise correct
      for (std::int64_t i = covered; i < n; ++i) std::memset(y.data() + 4 * i, poison, 4);
      c = C().compare(g.expected, y.data(), poison);
      if (!c.ok) break;
    }
    if (covered < n) {
      EXPECT_EQ(c.code, "unwritten_output") << g.spec.id;
      ++caught;
    } else {
      EXPECT_TRUE(c.ok) << g.spec.id;
    }
  }
  EXPECT_GE(caught, 10);
}

// candidates/exclusive_scan/broken/inclusive: writes x[0] + ... + x[i] (inclusive scan).
TEST(ExclusiveScanBroken, InclusiveIsWrongResult) {
  auto codes = run_f32(inclusive_f);
  EXPECT_GE(codes["wrong_result"], 10);
  for (const auto& g : generated()) {
    if (g.spec.dtype != DType::i32) continue;
    auto x = values<std::int32_t>(g.data.inputs[0]);
    std::vector<std::int32_t> y(x.size());
    std::uint32_t acc = 0;
    for (std::size_t i = 0; i < x.size(); ++i) y[i] = std::int32_t(acc += std::uint32_t(x[i]));
    Comparison c = check(g.expected, y);
    bool all_zero = true;
    for (auto v : x) all_zero &= v == 0;
    if (!all_zero) {
      EXPECT_EQ(c.code, "wrong_result") << g.spec.id;
    }
  }
}

// candidates/exclusive_scan/broken/bf16_accumulation: the good algorithm, every partial sum
// rounded to bf16 (blocked order: per tile, then carries).
TEST(ExclusiveScanBroken, Bf16AccumulationIsWrongResult) {
  auto bf16_blocked = [](const std::vector<float>& x) {
    const std::size_t n = x.size(), tiles = (n + kTile - 1) / kTile;
    std::vector<float> totals(tiles, 0.0f), y(n);
    for (std::size_t b = 0; b < tiles; ++b)
      for (std::size_t i = b * kTile; i < std::min(n, (b + 1) * kTile); ++i) totals[b] = round_bits(totals[b] + x[i], 8);
    float carry = 0;
    for (std::size_t b = 0; b < tiles; ++b) {
      float local = 0;
      for (std::size_t i = b * kTile; i < std::min(n, (b + 1) * kTile); ++i) {
        y[i] = round_bits(carry + local, 8);
        local = round_bits(local + x[i], 8);
      }
      carry = round_bits(carry + totals[b], 8);
    }
    return y;
  };
  auto codes = run_f32(bf16_blocked);
  EXPECT_GE(codes["wrong_result"], 10);
}

}  // namespace
}  // namespace kqual::contract
