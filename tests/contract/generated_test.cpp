// Cases past 2^31 elements: counter-based values the CPU can recompute anywhere, the windows a
// check compares, and the claims that call for them.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <set>

#include "kqual/contract/contract.hpp"
#include "kqual/contract/generated.hpp"

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
