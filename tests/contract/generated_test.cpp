// Cases past 2^31 elements: counter-based values the CPU can recompute anywhere, the windows a
// check compares, and the claims that call for them.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <algorithm>
#include <limits>
#include <set>

#include "kqual/contract/contract.hpp"
#include "kqual/contract/generated.hpp"
#include "kqual/contract/reference_host.hpp"
#include "kqual/core/narrow_float.hpp"

namespace kqual::contract {
namespace {

float as_float(std::uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

TEST(Generated, ValuesAreFiniteInRangeAndDependOnSeedStreamAndIndex) {
  std::set<std::uint32_t> seen;
  for (std::uint64_t i = 0; i < 4096; ++i) {
    const float f = as_float(generated_bits(7, 0, i, DType::f32));
    ASSERT_TRUE(std::isfinite(f));
    ASSERT_GE(f, -1.0f);
    ASSERT_LT(f, 1.0f);
    ASSERT_EQ(f, std::ldexp(std::round(std::ldexp(f, 23)), -23));  // a multiple of 2^-23
    const float h = as_float(generated_bits(7, 1, i, DType::bf16) << 16);
    ASSERT_TRUE(std::isfinite(h));
    ASSERT_GE(std::fabs(h), 0x1p-7f);
    ASSERT_LT(std::fabs(h), 1.0f);
    seen.insert(generated_bits(7, 0, i, DType::f32));
  }
  EXPECT_GT(seen.size(), 4000u);  // not constant, hardly repeating
  EXPECT_EQ(generated_bits(7, 0, 123, DType::f32), generated_bits(7, 0, 123, DType::f32));
  EXPECT_NE(generated_bits(7, 0, 123, DType::f32), generated_bits(8, 0, 123, DType::f32));
  EXPECT_NE(generated_bits(7, 0, 123, DType::f32), generated_bits(7, 1, 123, DType::f32));
  EXPECT_NE(generated_bits(7, 0, (std::uint64_t(1) << 32) + 5, DType::f32), generated_bits(7, 0, 5, DType::f32));
  EXPECT_NE(std::string(generated_kernel_source()).find("kqual_generate"), std::string::npos);
}

// f16 (timed inputs): a finite f16 of magnitude in [2^-7, 1), both signs and every mantissa bit in use.
TEST(Generated, F16ValuesAreFiniteHalvesOfModestMagnitudeWithEveryMantissa) {
  std::set<std::uint32_t> mantissas, exponents;
  int negative = 0;
  for (std::uint64_t i = 0; i < 20000; ++i) {
    const std::uint32_t b = generated_bits(7, 2, i, DType::f16);
    ASSERT_LT(b, 0x10000u) << "an f16 has 16 bits";
    const double v = decode_narrow(kF16, std::uint16_t(b));
    ASSERT_TRUE(std::isfinite(v)) << b;
    ASSERT_GE(std::fabs(v), 0x1p-7) << b;
    ASSERT_LT(std::fabs(v), 1.0) << b;
    negative += v < 0;
    mantissas.insert(b & 0x3FFu);
    exponents.insert((b >> 10) & 0x1Fu);
  }
  EXPECT_EQ(mantissas.size(), 1024u);
  EXPECT_EQ(exponents, (std::set<std::uint32_t>{8, 9, 10, 11, 12, 13, 14}));
  EXPECT_GT(negative, 9000);
  EXPECT_LT(negative, 11000);
  EXPECT_EQ(generated_dtype_code(DType::f16), 3);
  EXPECT_NE(std::string(generated_kernel_source()).find("dtype == 3"), std::string::npos);
}

TEST(Generated, WindowsCoverHeadTailAndBothSidesOfTheWrapPoints) {
  const std::int64_t n = (std::int64_t(1) << 32) + 1000;
  const auto w = index_windows(n, 4096, 1, 3);
  auto covers = [&](std::int64_t i) {
    for (const auto& [b, c] : w)
      if (i >= b && i < b + c) return true;
    return false;
  };
  for (std::int64_t i : {std::int64_t(0), n - 1, (std::int64_t(1) << 31) - 1, std::int64_t(1) << 31, (std::int64_t(1) << 32) - 1,
                         std::int64_t(1) << 32})
    EXPECT_TRUE(covers(i)) << i;
  for (std::size_t k = 1; k < w.size(); ++k) EXPECT_GT(w[k].first, w[k - 1].first + w[k - 1].second);  // sorted, disjoint
  for (const auto& [b, c] : w) EXPECT_LE(b + c, n);
  const auto small = index_windows(100, 4096, 1, 3);  // shorter than a window: one window, the whole tensor
  ASSERT_EQ(small.size(), 1u);
  EXPECT_EQ(small[0], std::make_pair(std::int64_t(0), std::int64_t(100)));
}

TEST(Generated, ResidualAddReluAsksForThemOnlyWhenTheClaimReachesPast2To31) {
  const Contract& c = find_contract("residual_add_relu");
  Supports s;
  s.dtypes = {DType::f32, DType::bf16};
  EXPECT_TRUE(c.index_cases(s, 1).empty());  // default claim: max_n = 2^31 - 1
  s.max_n = std::int64_t(1) << 31;            // index 2^31 - 1 still fits an int
  EXPECT_TRUE(c.index_cases(s, 1).empty());
  s.max_n = std::numeric_limits<std::int64_t>::max();
  const auto cases = c.index_cases(s, 1);
  ASSERT_EQ(cases.size(), 3u);  // past 2^31 in f32 and bf16, past 2^32 in bf16 (the narrowest)
  for (const auto& k : cases) {
    EXPECT_EQ(k.family, kGeneratedFamily);
    EXPECT_GT(k.dim("n"), (std::int64_t(1) << 31));
    EXPECT_FALSE(c.validate(c.request(k.dtype, k.dims), s).has_value()) << k.id;
  }
  EXPECT_GT(cases.back().dim("n"), std::int64_t(1) << 32);
  EXPECT_EQ(cases.back().dtype, DType::bf16);
}

TEST(Generated, AWindowsReferenceIsTheContractsOwnOnTheGatheredInputs) {
  const Contract& c = find_contract("residual_add_relu");
  Supports s;
  s.dtypes = {DType::f32};
  s.max_n = std::numeric_limits<std::int64_t>::max();
  const CaseSpec big = c.index_cases(s, 3).at(0);
  const auto windows = c.index_case_windows(big);
  ASSERT_GE(windows.size(), 3u);
  const OutputWindow& w = windows.back();  // the tail
  EXPECT_EQ(w.begin + w.count, big.dim("n"));
  const CaseData sub = generated_subcase(c, big, w);
  ASSERT_EQ(sub.inputs.size(), 2u);
  const auto y = c.reference(sub).at(0);
  ASSERT_EQ(y.elements, w.count);
  for (std::int64_t k = 0; k < w.count; k += 997) {
    const float x = as_float(generated_bits(big.seed, 0, std::uint64_t(w.begin + k), DType::f32));
    const float r = as_float(generated_bits(big.seed, 1, std::uint64_t(w.begin + k), DType::f32));
    const float want = x + r > 0.0f ? x + r : 0.0f;
    float got;
    std::memcpy(&got, y.bytes.data() + std::size_t(k) * 4, 4);
    EXPECT_EQ(got, want) << k;
  }
}

}  // namespace
}  // namespace kqual::contract

namespace kqual::contract {
namespace {

// For every contract with 2-D windows: on a small matrix standing in for the huge one, each window's
// expected values (the contract's reference on the gathered sub-case) equal the same stretch of the
// reference on the whole matrix. This is what makes a window a fair judge of the big output.
TEST(Generated, EveryWindowEqualsTheSameStretchOfTheWholeReference) {
  for (const char* name : {"transpose", "softmax", "reduce_sum", "residual_add_relu", "exclusive_scan"}) {
    const Contract& c = find_contract(name);
    CaseSpec big;
    big.dtype = std::string(name) == "exclusive_scan" ? DType::i32 : DType::f32;
    big.family = kGeneratedFamily;
    big.seed = 99;
    big.id = std::string(name) + "/small-stand-in";
    if (std::string(name) == "residual_add_relu" || std::string(name) == "exclusive_scan") big.dims = {{"n", 70001}};
    else big.dims = {{"rows", 300}, {"cols", 53}};
    const auto windows = c.index_case_windows(big);
    ASSERT_GE(windows.size(), 3u) << name;
    OutputWindow whole;
    whole.tensor = windows.front().tensor;
    whole.sub_dims = big.dims;
    for (const auto& t : c.tensors())
      if (t.role == Role::input) whole.gather[t.name] = {{0, c.tensor_elements(t.name, big.dims)}};
    whole.why = "whole";
    ReferenceHost host;  // built-in contracts compute on the CPU: it stays empty
    const auto full = c.reference(generated_subcase(c, big, whole), host);
    const Tensor& f = *std::find_if(full.begin(), full.end(), [&](const Tensor& t) { return t.name == whole.tensor; });
    const std::size_t es = dtype_size(f.dtype);
    for (const auto& w : windows) {
      const auto part = c.window_reference(big, w, host);
      const Tensor& p = *std::find_if(part.begin(), part.end(), [&](const Tensor& t) { return t.name == w.tensor; });
      ASSERT_EQ(p.elements, w.count) << name << " " << w.why;
      ASSERT_LE(w.begin + w.count, f.elements) << name << " " << w.why;
      EXPECT_EQ(0, std::memcmp(p.bytes.data(), f.bytes.data() + std::size_t(w.begin) * es, std::size_t(w.count) * es))
          << name << " " << w.why;
      if (!p.ref.empty()) {
        for (std::int64_t k = 0; k < w.count; ++k) {
          ASSERT_EQ(p.ref[std::size_t(k)], f.ref[std::size_t(w.begin + k)]) << name << " " << w.why;
        }
      }
    }
  }
}

TEST(Generated, MatrixCasesPassTwoTo31WithWholeRowsAndOnlyWhenClaimed) {
  EXPECT_FALSE(past_int32_matrix((std::int64_t(1) << 31) - 1, 1031).has_value());
  const auto d = past_int32_matrix(std::numeric_limits<std::int64_t>::max(), 1031);
  ASSERT_TRUE(d.has_value());
  EXPECT_GT(d->at("rows") * d->at("cols"), std::int64_t(1) << 31);
  EXPECT_EQ(d->at("cols"), 1031);
  const auto tight = past_int32_matrix((std::int64_t(1) << 31) + 2000, 1031);  // just one more row fits
  ASSERT_TRUE(tight.has_value());
  EXPECT_GT(tight->at("rows") * 1031, std::int64_t(1) << 31);
  EXPECT_LE(tight->at("rows") * 1031, (std::int64_t(1) << 31) + 2000);
  for (const char* name : {"transpose", "softmax", "reduce_sum"}) {
    const Contract& c = find_contract(name);
    Supports s;
    s.dtypes = {DType::f32};
    EXPECT_TRUE(c.index_cases(s, 1).empty()) << name;  // default claim
    s.max_n = std::numeric_limits<std::int64_t>::max();
    const auto cases = c.index_cases(s, 1);
    ASSERT_EQ(cases.size(), 1u) << name;
    EXPECT_GT(cases[0].dim("rows") * cases[0].dim("cols"), std::int64_t(1) << 31) << name;
    // The windows include the rows around element 2^31 of the big tensor.
    bool at_wrap = false;
    const std::int64_t wrap = std::int64_t(1) << 31;
    for (const auto& w : c.index_case_windows(cases[0])) {
      for (const auto& [b, n] : w.gather.begin()->second) {
        at_wrap = at_wrap || (b <= wrap && b + n > wrap);  // reads it
      }
      at_wrap = at_wrap || (w.begin <= wrap && w.begin + w.count > wrap);                                     // writes it
    }
    EXPECT_TRUE(at_wrap) << name;
  }
}

TEST(Generated, ScanCasesAreI32WithTheCarryOfEverythingBefore) {
  const Contract& c = find_contract("exclusive_scan");
  Supports s;
  s.dtypes = {DType::f32};
  s.max_n = std::int64_t(1) << 34;
  EXPECT_TRUE(c.index_cases(s, 1).empty());  // f32 only: no exact window
  s.dtypes = {DType::i32, DType::f32};
  const auto cases = c.index_cases(s, 1);
  ASSERT_EQ(cases.size(), 2u);  // past 2^31 and past 2^32
  EXPECT_EQ(cases[0].dtype, DType::i32);
  EXPECT_GT(cases[1].dim("n"), std::int64_t(1) << 32);
}

}  // namespace
}  // namespace kqual::contract
