// The two runs' poison bytes: run 2's must be a finite value in every output dtype, else an
// unwritten element where the reference is NaN would match in both runs.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "kqual/contract/compare.hpp"
#include "kqual/check/evaluate.hpp"
#include "kqual/contract/contract.hpp"
#include "kqual/core/dtype.hpp"
#include "kqual/core/files.hpp"
#include "kqual/worker/protocol.hpp"
#include "../../src/check/internal.hpp"
#include "judge_runs_util.hpp"

namespace kqual::check {
namespace {

contract::Tensor out_of(DType t) {
  contract::Tensor x;
  x.name = "y";
  x.dtype = t;
  x.elements = 1;
  return x;
}

TEST(Poison, RunTwosByteIsFiniteInEveryFloatOutput) {
  for (DType t : kAllDTypes) {
    if (!is_floating(t)) continue;
    const std::uint8_t b = detail::second_poison_byte({out_of(DType::f32), out_of(t)});
    std::uint8_t bytes[8];
    for (auto& x : bytes) x = b;
    EXPECT_TRUE(std::isfinite(contract::element_as_double(t, bytes, 0))) << to_string(t) << " poison 0x" << std::hex << int(b);
    for (auto& x : bytes) x = 0xFF;
    EXPECT_TRUE(std::isnan(contract::element_as_double(t, bytes, 0))) << to_string(t) << ": run 1's 0xFF.. is NaN";
  }
  EXPECT_EQ(detail::second_poison_byte({out_of(DType::f32), out_of(DType::bf16)}), 0x7F);  // unchanged where it was finite
}

// A one-byte output holds a value in every byte: an element equal to one run's poison (0xFF: -1 in
// i8, NaN in e4m3; run 2's 0x7F: 127 in i8) was written when the other run holds something else
// there in the same bytes; an element holding a run's own poison where the other run holds other
// bytes is unwritten in that run.
std::string judge_i8(const std::vector<std::uint8_t>& run1, const std::vector<std::uint8_t>& run2) {
  contract::Tensor want = out_of(DType::i8);
  want.elements = 4;
  want.bytes = {0, 1, 126, 3};
  CaseResult res;
  RunToRunPolicy policy{.required = true, .reason = "r", .opt_out = "o", .rule_from = "contract"};
  const test_util::WrittenRuns w{run1, run2, {0xFF, detail::second_poison_byte({want})}, {}};
  return test_util::judge_written(contract::find_contract("residual_add_relu"), policy, w, {want}, res) ? "" : res.code + ": " + res.detail;
}

// judge_i8 of the two runs fails with `code`, its detail naming `part` (anything, where "").
void expect_i8_failure(const std::vector<std::uint8_t>& run1, const std::vector<std::uint8_t>& run2, const std::string& code,
                       const std::string& part) {
  const std::string r = judge_i8(run1, run2);
  EXPECT_EQ(r.substr(0, r.find(':')), code) << r;
  EXPECT_NE(r.find(part), std::string::npos) << r;
}

TEST(Poison, AOneByteElementWrittenWithARunsPoisonIsJudgedByItsValue) {
  // -1 written where the reference has 1 and 127 where it has 126, in both runs: each run holds the
  // other's poison somewhere, and no element holds both: wrong codes.
  expect_i8_failure({0, 0xFF, 0x7F, 3}, {0, 0xFF, 0x7F, 3}, "wrong_result", "y[1]: expected 1, got -1");
  // Each run's own poison left in element 1: unwritten, as before.
  expect_i8_failure({0, 0xFF, 126, 3}, {0, 0x7F, 126, 3}, "unwritten_output", "run 1 (poison 0xff)");
  EXPECT_EQ(judge_i8({0, 1, 126, 3}, {0, 1, 126, 3}), "");
}

// A kernel whose tail path depends on where the inputs sit (H200, 2026-12-05: fp8 and f16 kernels
// skipping their tail in run 2's placement only): run 1 right, run 2 still holding its poison there.
TEST(Poison, AnElementLeftWithItsPoisonInOneRunOnlyIsUnwrittenInThatRun) {
  expect_i8_failure({0, 1, 126, 3}, {0, 1, 126, 0x7F}, "unwritten_output", "run 2 (poison 0x7f)");
  // The same bytes in run 1 and a value written in run 2: run 1 left it.
  expect_i8_failure({0, 0xFF, 126, 3}, {0, 1, 126, 3}, "unwritten_output", "");
}

}  // namespace
}  // namespace kqual::check
