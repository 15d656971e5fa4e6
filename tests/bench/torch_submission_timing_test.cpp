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

class SubmissionTimingTest : public test::submission::SubmissionFixture {
 protected:
  // `adjust`: changes to the options below (a test's own shapes or limits).
  SubmissionTiming time(const std::string& body, const std::function<void(SubmissionTimingOptions&)>& adjust = {}) {
    TorchSubmission s;
    s.file = write_submission(body);
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
    EXPECT_EQ(sh.timed_inputs, "fresh");
    // Every timed call on values of its own; 44 read back over the run (the default aim), the cheapest shape first.
    EXPECT_EQ(s.launches, 24u);
    EXPECT_EQ(s.reference_compared, i == 0 ? 24u : 20u) << "the cheapest shapes take the most read-backs, up to every timed call";
    EXPECT_TRUE(t.speedups.at(i).empty()) << "no baseline: no speed-up";
    EXPECT_NE(t.windows.at(i).find("eager_call"), std::string::npos) << t.windows.at(i);
  }
  EXPECT_EQ(t.report.verification.value("compared_with_reference", 0), 44);
  EXPECT_GE(t.report.verification.value("detection_one_in_ten", 0.0), 0.99);
  EXPECT_NE(t.report.verification.value("statement", std::string()).find("44 of the submission's 48 timed calls"), std::string::npos)
      << t.report.verification.dump();
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
  // The first evidence is the one named: the record shows timed calls that did no GPU work.
  EXPECT_NE(t.timed_output_failure.find("caused no GPU work"), std::string::npos) << t.timed_output_failure;
}

TEST_F(SubmissionTimingTest, ATimedCallWrongOnceInTenIsCaughtWhereItIsReadBack) {
  // Right on the checked calls and on the verified calls after the blocks; every tenth timed call of the run
  // (and no other) returns a wrong output. With every timed call read back (no budget), the tenth is caught:
  // block 2 (6 samples a block), its call 4.
  const SubmissionTiming t = time(std::string(kNumpyAddRelu) + "TIMED_WRONG_EVERY = 10\n", [](SubmissionTimingOptions& o) {
    o.timing.verify_launches = 1000;
    o.timing.verify_element_budget = 0;
  });
  ASSERT_FALSE(t.report.shapes.empty()) << t.status;
  const Series& s = t.report.shapes.front().series.front();
  EXPECT_FALSE(s.verified);
  EXPECT_EQ(s.verify_code, "timed_output_wrong");
  EXPECT_NE(s.verify_detail.find("block 2, timed call 4 (fresh values"), std::string::npos) << s.verify_detail;
  EXPECT_NE(t.timed_output_failure.find("timed call 4"), std::string::npos) << t.timed_output_failure;
}

TEST_F(SubmissionTimingTest, FewerReadBacksAreSpreadOverTheBlocksAndTheChanceIsStated) {
  // Two read back per block at most (4 blocks, 2 shapes): 16 of 48, and the statement says what that catches.
  const SubmissionTiming t = time(kNumpyAddRelu, [](SubmissionTimingOptions& o) {
    o.timing.verify_launches = 16;
    o.timing.verify_element_budget = 0;
  });
  ASSERT_EQ(t.report.shapes.size(), 2u) << t.status;
  std::size_t compared = 0;
  for (const auto& sh : t.report.shapes) {
    EXPECT_TRUE(sh.series.front().verified) << sh.series.front().verify_detail;
    EXPECT_TRUE(sh.series.front().error.empty()) << sh.series.front().error;
    compared += sh.series.front().reference_compared;
  }
  EXPECT_EQ(compared, 16u);
  const std::string said = t.report.verification.value("statement", std::string());
  EXPECT_NE(said.find("16 of the submission's 48 timed calls"), std::string::npos) << said;
  EXPECT_NE(said.find("81.47 %"), std::string::npos) << said;  // 1 - 0.9^16
}

TEST_F(SubmissionTimingTest, DrawsAskedOutOfPlaceOrReadBacksSkippedAreTampering) {
  for (const char* how : {"early", "skip"}) {
    const SubmissionTiming t = time(std::string(kNumpyAddRelu) + "TAMPER_DRAWS = '" + how + "'\n");
    ASSERT_FALSE(t.report.shapes.empty()) << how << ": " << t.status;
    const Series& s = t.report.shapes.front().series.front();
    EXPECT_NE(s.error.find("harness_tampered while timed"), std::string::npos) << how << ": " << s.error;
    EXPECT_NE(s.error.find(std::string(how) == "early" ? "asked before the call ended" : "drawn to be read back"), std::string::npos)
        << how << ": " << s.error;
  }
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
