// transpose in f16: a bit copy, NaN payloads and -0 included; the families give every finite f16 bit
// pattern (index), random bits and NaN payloads, infinities, -0 and subnormals (specials); no f16 case
// past 2^31 elements; and the bundled kernel's f16 path emulated on the CPU and judged as the check
// judges it: the good one accepted, the known-broken one (column pairs) rejected for its stated reason,
// and a copy through f32 arithmetic rejected.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <set>

#include "contract/f16_test_util.hpp"
#include "kqual/contract/compare.hpp"
#include "kqual/contract/contract.hpp"

namespace kqual::contract {
namespace {
using namespace emulation;

const Contract& C() { return find_contract("transpose"); }

CaseData make(std::int64_t rows, std::int64_t cols, const std::string& fam, std::uint64_t seed = 5) {
  return C().make_case(CaseSpec{"t", fam, DType::f16, {{"rows", rows}, {"cols", cols}}, 0, seed});
}

// candidates/transpose/good/kernel.cu: y[j][i] = x[i][j] as __half values (bit copies) for the
// columns it moves: all of them, or with -DKQUAL_BUG_F16_PAIRED_COLUMNS cols / 2 pairs of them.
// through_f32: each element as __float2half_rn(__half2float(x) + 0.0f), a copy through arithmetic.
Kernel transpose_kernel(bool paired_columns, bool through_f32 = false) {
  return [=](const CaseData& d, Outputs& out) {
    const std::int64_t rows = d.dims.at("rows"), cols = d.dims.at("cols");
    const std::int64_t moved = paired_columns ? cols / 2 * 2 : cols;
    const Tensor& x = d.inputs.at(0);
    for (std::int64_t i = 0; i < rows; ++i)
      for (std::int64_t j = 0; j < moved; ++j) {
        std::uint16_t h = half_at(x, std::size_t(i * cols + j));
        if (through_f32) h = f2h(h2f(h) + 0.0f);
        put_half(out.at("y"), std::size_t(j * rows + i), h);
      }
  };
}

TEST(TransposeF16, BitCopiesAndStrictComparison) {
  const CaseData d = make(33, 31, "specials");
  const Tensor y = C().reference(d).at(0);
  for (std::int64_t i = 0; i < 33; ++i)
    for (std::int64_t j = 0; j < 31; ++j) ASSERT_EQ(half_at(y, std::size_t(j * 33 + i)), half_at(d.inputs[0], std::size_t(i * 31 + j)));
  // The corners: a quiet NaN with a payload, -0, a signalling NaN, a negative NaN.
  EXPECT_EQ(half_at(d.inputs[0], 0), 0x7E01);
  EXPECT_EQ(half_at(d.inputs[0], 33 * 31 - 1), 0x8000);
  EXPECT_EQ(half_at(d.inputs[0], 30), 0x7C01);
  EXPECT_EQ(half_at(d.inputs[0], 32 * 31), 0xFE13);
  std::vector<std::uint8_t> got = y.bytes;
  EXPECT_TRUE(C().compare(y, got.data(), 0xFF).ok);
  put_half(got, 0, 0x7E00);  // another NaN: its payload lost
  EXPECT_EQ(C().compare(y, got.data(), 0xFF).code, "wrong_result");
  got = y.bytes;
  put_half(got, 33 * 31 - 1, 0x0000);  // +0 for -0
  EXPECT_EQ(C().compare(y, got.data(), 0xFF).code, "wrong_result");
  got = y.bytes;
  put_half(got, 5, 0xFFFF);  // the poison of run 1
  EXPECT_EQ(C().compare(y, got.data(), 0xFF).code, "unwritten_output");
}

TEST(TransposeF16, FamiliesGiveEveryFiniteValueAndTheSpecials) {
  // index: 63488 elements hold every finite f16 bit pattern once (subnormals, +-0 and 65504 included).
  const CaseData idx = make(248, 256, "index");
  std::set<std::uint16_t> seen;
  for (std::size_t i = 0; i < 63488; ++i) seen.insert(half_at(idx.inputs[0], i));
  EXPECT_EQ(seen.size(), 63488u);
  for (int h : {0x0000, 0x8000, 0x0001, 0x03FF, 0x7BFF, 0xFBFF}) EXPECT_TRUE(seen.count(std::uint16_t(h))) << h;
  for (std::uint16_t h : seen) EXPECT_NE(h & 0x7C00, 0x7C00) << h;  // no Inf or NaN
  // specials: NaNs with payloads (quiet and signalling), +-Inf, -0, subnormals among finite values.
  const CaseData sp = make(1009, 1013, "specials");
  std::set<std::uint16_t> specials;
  for (std::size_t i = 0; i < std::size_t(1009 * 1013); ++i) specials.insert(half_at(sp.inputs[0], i));
  for (int h : {0x7E01, 0xFE13, 0x7C01, 0xFD5A, 0x7E00, 0x7C00, 0xFC00, 0x8000, 0x0001, 0x83FF})
    EXPECT_TRUE(specials.count(std::uint16_t(h))) << h;
  // random_bits: finite patterns only.
  const CaseData rb = make(64, 64, "random_bits");
  for (std::size_t i = 0; i < 4096; ++i) EXPECT_NE(half_at(rb.inputs[0], i) & 0x7C00, 0x7C00);
}

TEST(TransposeF16, CasesAndNoneGeneratedPast2To31) {
  int odd_width = 0;
  const int offsets = f16_cases(C(), {"index", "specials"}, 2, [&](const CaseSpec& c) { odd_width += int(c.dim("cols") % 2); });
  EXPECT_GT(offsets, 0);
  EXPECT_GT(odd_width, 5);
  ASSERT_NO_FATAL_FAILURE(expect_one_f32_index_case(C()));
  EXPECT_NE(C().numerical_policy().find("f16 shapes past 2^31 elements"), std::string::npos);
}

TEST(TransposeF16, TheGoodKernelIsAcceptedAndACopyThroughArithmeticIsNot) {
  Supports s;
  ASSERT_NO_FATAL_FAILURE(expect_good_f16_accepted(C(), "transpose", "good", transpose_kernel(false), 8, &s));
  // __half2float, + 0.0f, __float2half_rn: -0 becomes +0 and NaN payloads are lost.
  const Judged a = judge(C(), s, transpose_kernel(false, true), 8);
  EXPECT_EQ(a.code, "wrong_result") << a.verdict;
}

TEST(TransposeF16, TheKnownBrokenF16KernelIsRejectedForItsStatedReason) {
  BrokenF16 b;
  ASSERT_NO_FATAL_FAILURE(judge_broken_f16(C(), "transpose", "KQUAL_BUG_F16_PAIRED_COLUMNS", transpose_kernel(true), {1, 2, 3}, b));
}

}  // namespace
}  // namespace kqual::contract
