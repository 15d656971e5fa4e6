// A PyTorch submission timed (bench/torch_submission_timing.hpp) against the NumPy stand-in worker
// (fixtures/fake_submission_worker.py, its "time" op): the datasets, the blocks, the check of the
// timed outputs and the result's shape, on the CPU. Without PyTorch here the baselines cannot run,
// and the result must say so rather than compare against nothing; the PyTorch workers themselves run
// on the GPU machine (tests/device/torch_submission_device_test.cpp).
#include <gtest/gtest.h>

#include <fstream>
#include <functional>

#include "kqual/bench/torch_submission_timing.hpp"
#include "kqual/contract/contract.hpp"
#include "kqual/contract/declared/declared.hpp"
#include "kqual/core/error.hpp"
#include "kqual/core/files.hpp"
#include "bench/submission_test_util.hpp"

namespace kqual::bench {
namespace {
namespace fs = std::filesystem;

using test::submission::kNumpyAddRelu;

class SubmissionTimingTest : public ::testing::Test {
 protected:
  void SetUp() override { KQUAL_NEED_NUMPY(); }
  // `adjust`: changes to the options below (a test's own shapes or limits).
  SubmissionTiming time(const std::string& body, const std::function<void(SubmissionTimingOptions&)>& adjust = {}) {
    const fs::path f = dir_.path() / "submission.py";
    std::ofstream(f) << body;
    TorchSubmission s;
    s.file = f;
    SubmissionCheckOptions co;
    co.worker = KQUAL_FAKE_SUBMISSION_WORKER;
    co.case_timeout_s = 60;
    SubmissionTimingOptions o;
    o.timing.shapes = {contract::parse_shape(c_, "4096"), contract::parse_shape(c_, "65536")};
    o.timing.rounds = 3;
    o.timing.samples_per_round = 6;
    o.timing.warmup = 1;
    o.baselines = std::vector<std::string>{};  // none: this machine has no PyTorch to run them
    o.call_timeout_s = 60;
    if (adjust) adjust(o);
    return time_torch_submission(c_, s, co, o);
  }
  const contract::Contract& c_ = contract::find_contract("residual_add_relu");
  ScratchDir dir_{"kqual-submission-timing-test"};
};

TEST_F(SubmissionTimingTest, ACorrectSubmissionIsTimedAtEveryShapeOnVerifiedOutputs) {
  const SubmissionTiming t = time(kNumpyAddRelu);
  ASSERT_EQ(t.report.shapes.size(), 2u) << t.status;
  EXPECT_NE(t.status.find("timed alone at 2 shape(s)"), std::string::npos) << t.status;
  EXPECT_TRUE(t.timed_output_failure.empty()) << t.timed_output_failure;
  EXPECT_TRUE(t.harness_failure.empty()) << t.harness_failure;
  for (std::size_t i = 0; i < 2; ++i) {
    const ShapeResult& sh = t.report.shapes[i];
    ASSERT_EQ(sh.series.size(), 1u);
    const Series& s = sh.series.front();
    EXPECT_EQ(s.label, "submission");
    EXPECT_EQ(s.role, "candidate");
    EXPECT_TRUE(s.error.empty()) << s.error;
    EXPECT_TRUE(s.verified) << s.verify_detail;
    // Two A B B A pairs (rounds 3): four submission blocks of samples_per_round each.
    EXPECT_EQ(s.samples_ms.size(), 4u * 6u);
    EXPECT_GT(s.summary.median, 0.0);
    EXPECT_EQ(sh.timed_inputs, "datasets");
    EXPECT_TRUE(t.speedups.at(i).empty()) << "no baseline: no speed-up";
    EXPECT_NE(t.windows.at(i).find("eager_call"), std::string::npos) << t.windows.at(i);
  }
  const json j = t.to_json();
  EXPECT_EQ(j["speedups"].size(), 2u);
  EXPECT_EQ(j["timing"]["shapes"].size(), 2u);
}

TEST_F(SubmissionTimingTest, OutputsCachedWhileTimedAreTimedOutputWrong) {
  // Right on every checked call, but once timed it returns its first timed output for every later
  // call: the last output of one of the two datasets is the other's.
  const SubmissionTiming t = time(std::string(kNumpyAddRelu) + "TIMED_WRONG = True\n");
  ASSERT_FALSE(t.report.shapes.empty()) << t.status;
  const Series& s = t.report.shapes.front().series.front();
  EXPECT_FALSE(s.verified);
  EXPECT_EQ(s.verify_code, "timed_output_wrong");
  EXPECT_NE(t.timed_output_failure.find("dataset C"), std::string::npos) << t.timed_output_failure;
}

TEST_F(SubmissionTimingTest, ASubmissionThatRaisesWhileTimedIsItsOwnFailureNotKquals) {
  const SubmissionTiming t = time("def forward(x, r):\n    raise RuntimeError('boom')\n");
  ASSERT_EQ(t.report.shapes.size(), 1u) << "a submission that failed while timed is not timed further";
  const Series& s = t.report.shapes.front().series.front();
  EXPECT_NE(s.error.find("exception while timed"), std::string::npos) << s.error;
  EXPECT_NE(s.error.find("boom"), std::string::npos) << s.error;
  EXPECT_TRUE(t.harness_failure.empty()) << t.harness_failure;
}

TEST_F(SubmissionTimingTest, ShapesPastTheLimitAreLeftOutAndNamed) {
  const SubmissionTiming t = time(kNumpyAddRelu, [&](SubmissionTimingOptions& o) {
    o.timing.shapes = {contract::parse_shape(c_, "65536")};
    o.max_shape_elements = 4096;
  });
  EXPECT_EQ(t.status, "not run: no benchmark shape within the submission's shape limit");
  ASSERT_EQ(t.notes.size(), 1u);
  EXPECT_NE(t.notes[0].find("n=65536: left out"), std::string::npos) << t.notes[0];
}

}  // namespace
}  // namespace kqual::bench
