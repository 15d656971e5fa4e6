// The phases one candidate goes through (kqual/pipeline/phases.hpp), without a device: the manifest
// and build step with each way it ends, and the one reading of a correctness report that qualify,
// compare, selftest and screen all take their findings from.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "kqual/core/files.hpp"
#include "kqual/pipeline/phases.hpp"
#include "fixture_util.hpp"
#include "test_util.hpp"

namespace kqual::pipeline {
namespace {
namespace fs = std::filesystem;

check::CaseResult phases_case(const std::string& id, check::CaseStatus status, const std::string& code = "",
                              const std::string& detail = "") {
  check::CaseResult r;
  r.spec.id = id;
  r.status = status;
  r.code = code;
  r.detail = detail;
  return r;
}

TEST(CorrectnessSummary, ARejectedReportNamesItsFailuresInTheOrderTheyRan) {
  check::CorrectnessReport rep;
  rep.cases = 3;
  rep.passed = 1;
  rep.failed = 2;
  rep.evidence = 1;
  rep.failure_codes = {{"nan_policy", 1}, {"wrong_result", 1}};
  rep.results = {phases_case("a", check::CaseStatus::pass), phases_case("b", check::CaseStatus::fail, "wrong_result", "b is off"),
                 phases_case("r", check::CaseStatus::refused, "dtype_not_claimed", "not this one"),
                 phases_case("c", check::CaseStatus::fail, "nan_policy", "c swallowed a NaN")};
  rep.settled_not_run = {"d", "e"};
  const CorrectnessSummary s = summarize_correctness(rep);
  EXPECT_FALSE(s.accepted);
  EXPECT_FALSE(s.incomplete);
  EXPECT_EQ(s.cases, 3);
  EXPECT_EQ(s.failed, 2);
  ASSERT_EQ(s.failures.size(), 2u);
  EXPECT_EQ(s.failures[0].id, "b");
  EXPECT_EQ(s.failures[1].code, "nan_policy");
  EXPECT_EQ(s.first_failure(), "b is off");
  EXPECT_EQ(s.first_failure_with({"nan_policy", "unwritten_output"}), "c swallowed a NaN");
  EXPECT_EQ(s.first_failure_with({"unwritten_output"}), "");
  EXPECT_EQ(s.primary_code, rep.primary_code());
  EXPECT_EQ(s.settled_not_run, 2);
  EXPECT_EQ(s.sanitizer, "not run");
  EXPECT_EQ(s.phase_line(), "rejected: 1 passed, 2 failed, 0 refused of 3 cases");
}

TEST(CorrectnessSummary, AcceptedIncompleteAndTheSanitizerLine) {
  check::CorrectnessReport rep;
  rep.cases = 3;
  rep.passed = 2;
  rep.refused = 1;
  rep.evidence = 2;
  rep.sanitizer = json{{"status", "clean"}};
  CorrectnessSummary s = summarize_correctness(rep);
  EXPECT_TRUE(s.accepted);
  EXPECT_EQ(s.first_failure(), "");
  EXPECT_EQ(s.primary_code, "");
  EXPECT_EQ(s.sanitizer, "clean");
  EXPECT_EQ(s.phase_line(), "accepted: 2 passed, 0 failed, 1 refused of 3 cases");
  rep.sanitizer = json{{"status", "incomplete"}, {"why", "compute-sanitizer not found"}};
  EXPECT_EQ(summarize_correctness(rep).sanitizer, "incomplete: compute-sanitizer not found");
  // Passed cases whose expected outputs are all degenerate prove nothing: not accepted.
  rep.evidence = 0;
  EXPECT_FALSE(summarize_correctness(rep).accepted);
  // kqual's own failure decides nothing either way.
  rep.evidence = 2;
  rep.harness_errors = 1;
  rep.harness_failure = "f32/n=1: uploading the inputs failed";
  s = summarize_correctness(rep);
  EXPECT_FALSE(s.accepted);
  EXPECT_TRUE(s.incomplete);
  EXPECT_EQ(s.harness_errors, 1);
  EXPECT_EQ(s.harness_failure, rep.harness_failure);
}

class BuildOneTest : public ::testing::Test {
 protected:
  void SetUp() override {
    tmp_ = std::make_unique<ScratchDir>("kqual-phases-test");
    good_ = test::copy_bundled("candidates/residual_add_relu/good", tmp_->path() / "good");
  }
  BuildOneOptions opts(const std::string& dir) const {
    BuildOneOptions o;
    o.arch = KQUAL_DEFAULT_ARCH;
    o.dir = tmp_->path() / dir;
    return o;
  }
  std::unique_ptr<ScratchDir> tmp_;
  fs::path good_;
};

TEST_F(BuildOneTest, AFolderIsReadAndBuiltIntoItsOwnDir) {
  const BuiltOne b = build_one(good_, opts("b0"));
  ASSERT_TRUE(b.built) << b.manifest_error << b.build_error;
  EXPECT_EQ(b.manifest->contract, "residual_add_relu");
  EXPECT_TRUE(b.manifest_error.empty() && b.passed_over.empty() && b.build_error.empty());
  EXPECT_TRUE(fs::is_directory(tmp_->path() / "b0"));
  EXPECT_GT(b.build_ms, 0);
}

TEST_F(BuildOneTest, EachWayItEndsBeforeTheGpuIsData) {
  // No manifest: nothing built, no folder made.
  BuiltOne none = build_one(tmp_->path() / "nowhere", opts("b1"));
  EXPECT_FALSE(none.manifest);
  EXPECT_FALSE(none.manifest_error.empty());
  EXPECT_FALSE(fs::exists(tmp_->path() / "b1"));
  // Passed over after its manifest: read, not built.
  BuildOneOptions o = opts("b2");
  o.pass_over = [](const build::Manifest& m) { return "not " + m.contract; };
  BuiltOne passed = build_one(good_, o);
  ASSERT_TRUE(passed.manifest);
  EXPECT_EQ(passed.passed_over, "not residual_add_relu");
  EXPECT_FALSE(passed.built);
  EXPECT_FALSE(fs::exists(tmp_->path() / "b2"));
  // A build that fails carries the compiler's words.
  std::ofstream(good_ / "kernel.cu", std::ios::app) << "this is not CUDA\n";
  BuiltOne failed = build_one(good_, opts("b3"));
  ASSERT_TRUE(failed.manifest);
  EXPECT_FALSE(failed.built);
  EXPECT_NE(failed.build_error.find("kernel.cu"), std::string::npos) << failed.build_error;
}

}  // namespace
}  // namespace kqual::pipeline
