// What the check records of a failing case for a reproducer (kqual replay, docs/replay.md): the
// first offending elements of a wrong output, as judge_runs found them (index, expected and written
// element, the reference and bound under an error model), and the report's JSON carrying them with
// the inputs' SHA-256.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>

#include "kqual/check/evaluate.hpp"
#include "kqual/contract/contract.hpp"
#include "kqual/core/files.hpp"
#include "kqual/worker/protocol.hpp"
#include "../../src/check/internal.hpp"
#include "judge_runs_util.hpp"

namespace kqual::check {
namespace {

std::vector<std::uint8_t> f32_bytes(const std::vector<float>& v) {
  std::vector<std::uint8_t> b(v.size() * 4);
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

// The two runs wrote `run1` and `run2` (f32; run 2 = run 1 when absent) where `want` was expected;
// the case judged as the check judges it (run 1 poisoned with 0xFF, run 2 with 0x7F).
CaseResult judged(const contract::Tensor& want, const std::vector<std::uint8_t>& run1, std::vector<std::uint8_t> run2 = {}) {
  if (run2.empty()) run2 = run1;
  CaseResult res;
  const RunToRunPolicy policy{.required = true, .reason = "r", .opt_out = "o", .rule_from = "contract"};
  EXPECT_FALSE(test_util::judge_written(contract::find_contract("residual_add_relu"), policy, {run1, run2, {0xFF, 0x7F}, {}}, {want}, res));
  return res;
}

contract::Tensor expected_y(const std::vector<float>& v) {
  contract::Tensor t;
  t.name = "y";
  t.dtype = DType::f32;
  t.elements = std::int64_t(v.size());
  t.bytes = f32_bytes(v);
  return t;
}

TEST(FailingElements, AnUnwrittenElementIsRecordedWithWhatWasExpected) {
  std::vector<std::uint8_t> run1 = f32_bytes({1, 2, 0, 4}), run2 = run1;
  std::memset(run1.data() + 8, 0xFF, 4);  // element 2 keeps each run's own poison
  std::memset(run2.data() + 8, 0x7F, 4);
  const CaseResult r = judged(expected_y({1, 2, 3, 4}), run1, run2);
  EXPECT_EQ(r.code, "unwritten_output");
  ASSERT_TRUE(r.failing_elements.is_array());
  ASSERT_EQ(r.failing_elements.size(), 1u);
  const json& e = r.failing_elements[0];
  EXPECT_EQ(e["output"], "y");
  EXPECT_EQ(e["run"], 1);
  EXPECT_EQ(e["index"], 2);
  EXPECT_NE(e["expected"].get<std::string>().find("0x40400000"), std::string::npos) << e.dump();
  EXPECT_NE(e["actual"].get<std::string>().find("0xffffffff"), std::string::npos) << e.dump();
  EXPECT_FALSE(e.contains("reference")) << "a bit-exact output has no bound";
}

TEST(FailingElements, AValueEqualToThePoisonInBothRunsIsRecordedAsJudgedByValue) {
  // 0xFF.. written in both runs is a NaN the kernel wrote (docs/contracts.md): nan_policy, and the
  // element is still found when the comparison runs with a pattern no element holds.
  std::vector<std::uint8_t> both = f32_bytes({1, 2, 0, 4});
  std::memset(both.data() + 8, 0xFF, 4);
  const CaseResult r = judged(expected_y({1, 2, 3, 4}), both);
  EXPECT_EQ(r.code, "nan_policy");
  ASSERT_EQ(r.failing_elements.size(), 1u) << r.failing_elements.dump();
  EXPECT_EQ(r.failing_elements[0]["index"], 2);
}

TEST(FailingElements, UnderABoundTheReferenceAndTheBoundComeAlong) {
  contract::Tensor want = expected_y({1, 2, 3, 4});
  want.ref = {1, 2, 3, 4};
  want.bound = {0.5, 0.5, 0.5, 0.5};
  const CaseResult r = judged(want, f32_bytes({1, 7, 3, 9}));
  EXPECT_EQ(r.code, "wrong_result");
  ASSERT_EQ(r.failing_elements.size(), 2u) << r.failing_elements.dump();
  EXPECT_EQ(r.failing_elements[0]["index"], 1);
  EXPECT_EQ(r.failing_elements[0]["reference"], 2.0);
  EXPECT_EQ(r.failing_elements[0]["bound"], 0.5);
  EXPECT_EQ(r.failing_elements[1]["index"], 3);
}

TEST(FailingElements, TheReportCarriesThemWithTheInputHashes) {
  CorrectnessReport rep;
  CaseResult r = judged(expected_y({1, 2, 3, 4}), f32_bytes({1, 2, 3, 5}));
  r.spec.id = "f32/n=4/normal";
  r.status = CaseStatus::fail;
  r.input_sha256 = {{"x", "ab"}, {"r", "cd"}};
  rep.results.push_back(r);
  rep.failed = 1;
  const json j = rep.to_json(false);
  const json& c = j.at("failing_cases").at(0);
  EXPECT_EQ(c.at("input_sha256").at("x"), "ab");
  EXPECT_EQ(c.at("failing_elements").at(0).at("index"), 3);
  // A passing case records neither.
  CaseResult p;
  p.spec.id = "f32/n=1/normal";
  p.status = CaseStatus::pass;
  rep.results = {p};
  EXPECT_FALSE(rep.to_json(true).at("case_results").at(0).contains("failing_elements"));
}

}  // namespace
}  // namespace kqual::check
