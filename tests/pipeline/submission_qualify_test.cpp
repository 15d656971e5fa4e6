// kqual qualify of a PyTorch submission, end to end on the CPU against the NumPy stand-in for its
// worker (tests/bench/fixtures/fake_submission_worker.py): the check, the timing (no PyTorch here, so
// no baseline, said so), the qualify rule's decision, results.json and summary.md; a submission whose
// timed outputs are wrong is do not ship.
#include <gtest/gtest.h>

#include <fstream>

#include "bench/submission_test_util.hpp"
#include "kqual/core/files.hpp"
#include "kqual/core/error.hpp"
#include "kqual/pipeline/submission.hpp"
#include "kqual/report/submission_result.hpp"

namespace kqual::pipeline {
namespace {
namespace fs = std::filesystem;
using test::submission::kNumpyAddRelu;

// What the command wrote is one result: results.json reads back into report::SubmissionResult and
// writes out unchanged (key order included), and summary.md is what report/ renders from it.
void expect_written_from_one_result(const SubmissionOutcome& out) {
  const json doc = json::parse(read_text_file(out.results_path));
  const report::SubmissionResult r = report::submission_result_from_json(doc);
  EXPECT_EQ(doc.dump(2), report::to_json(r).dump(2));
  EXPECT_EQ(read_text_file(out.summary_path), report::render_submission_summary_md(r));
  EXPECT_EQ(r.check.accepted, out.check.accepted);
  EXPECT_EQ(r.check.failures.size(), out.check.failures.size());
  EXPECT_EQ(r.decision.has_value(), out.verdict.has_value());
}

class SubmissionQualify : public test::submission::SubmissionFixture {
 protected:
  SubmissionOutcome qualify(const std::string& body) {
    SubmissionOptions o;
    o.candidate = write_submission(body);
    o.problem = "residual_add_relu";
    o.out_dir = dir_.path() / "out";
    o.worker = KQUAL_FAKE_SUBMISSION_WORKER;
    o.max_case_elements = 1 << 16;
    o.watchdog_seconds = 60;
    o.timing = true;
    o.shapes = shapes_;
    o.torch_baselines = "none";
    o.timing_options.timing.rounds = 3;
    o.timing_options.timing.samples_per_round = 6;
    return check_submission(o);
  }
  std::vector<std::string> shapes_ = {"4096", "65536"};
};

TEST_F(SubmissionQualify, AnAcceptedSubmissionIsTimedAndDecided) {
  const SubmissionOutcome out = qualify(kNumpyAddRelu);
  ASSERT_TRUE(out.check.accepted) << out.check.summary();
  ASSERT_TRUE(out.timing.has_value());
  EXPECT_EQ(out.timing->report.shapes.size(), 2u) << out.timing->status;
  EXPECT_NE(out.timing->status.find("timed alone"), std::string::npos) << out.timing->status;
  ASSERT_TRUE(out.verdict.has_value());
  const json r = json::parse(read_text_file(out.results_path));
  EXPECT_EQ(r.value("kind", ""), "torch_submission_qualify");
  EXPECT_EQ(r.value("schema", ""), "kqual.submission-qualify/1");
  EXPECT_EQ(r["decision"].value("decision", ""), decision::to_string(out.verdict->verdict));
  EXPECT_EQ(out.exit_code, decision::exit_code(out.verdict->verdict));
  EXPECT_NE(out.verdict->verdict, decision::ShipVerdict::do_not_ship) << out.verdict->summary;
  EXPECT_NE(out.verdict->verdict, decision::ShipVerdict::incomplete) << out.verdict->summary;
  const std::string md = read_text_file(out.summary_path);
  EXPECT_NE(md.find("## Speed against PyTorch"), std::string::npos) << md;
  EXPECT_NE(md.find("| n=4096 | eager_call"), std::string::npos) << md;
  expect_written_from_one_result(out);
}

TEST_F(SubmissionQualify, TimedOutputsThatAreWrongAreDoNotShip) {
  const SubmissionOutcome out = qualify(std::string(kNumpyAddRelu) + "TIMED_WRONG = True\n");
  ASSERT_TRUE(out.check.accepted) << "right on every checked call: " << out.check.summary();
  ASSERT_TRUE(out.timing.has_value());
  EXPECT_FALSE(out.timing->timed_output_failure.empty());
  ASSERT_TRUE(out.verdict.has_value());
  EXPECT_EQ(out.verdict->verdict, decision::ShipVerdict::do_not_ship) << out.verdict->summary;
  EXPECT_EQ(out.exit_code, 1);
  EXPECT_NE(read_text_file(out.summary_path).find("**Timed outputs wrong**"), std::string::npos);
  expect_written_from_one_result(out);
}

TEST_F(SubmissionQualify, ARejectedSubmissionIsNotTimed) {
  const SubmissionOutcome out = qualify(std::string(kNumpyAddRelu) + R"PY(
def forward(x, r):
    return [add_relu(x, r) * 2]
)PY");
  EXPECT_FALSE(out.check.accepted);
  EXPECT_FALSE(out.timing.has_value());
  ASSERT_TRUE(out.verdict.has_value());
  EXPECT_EQ(out.verdict->verdict, decision::ShipVerdict::do_not_ship);
  EXPECT_EQ(out.exit_code, 1);
  expect_written_from_one_result(out);
}

// Every shape past the submission's size limit: nothing is timed, which is incomplete (exit 3), never
// "ship: correctness only" (exit 0) as `kqual check` would say.
TEST_F(SubmissionQualify, AQualifyThatTimedNothingIsIncomplete) {
  shapes_ = {"536870912"};
  const SubmissionOutcome out = qualify(kNumpyAddRelu);
  ASSERT_TRUE(out.check.accepted) << out.check.summary();
  ASSERT_TRUE(out.timing.has_value());
  EXPECT_TRUE(out.timing->report.shapes.empty()) << out.timing->status;
  ASSERT_TRUE(out.verdict.has_value());
  EXPECT_EQ(out.verdict->verdict, decision::ShipVerdict::incomplete) << out.verdict->summary;
  EXPECT_EQ(out.exit_code, 3);
  EXPECT_NE(out.verdict->summary.find("nothing was timed"), std::string::npos) << out.verdict->summary;
  expect_written_from_one_result(out);
}

// The worker's own failure while timed (worker_error: ENOSPC writing the timed outputs) is kqual's:
// incomplete, "not the submission's", never do_not_ship "failed while timed".
TEST_F(SubmissionQualify, KqualsOwnWorkerFailureWhileTimedIsNotTheSubmissions) {
  const SubmissionOutcome out = qualify(std::string(kNumpyAddRelu) + "TIME_WORKER_ERROR = True\n");
  ASSERT_TRUE(out.check.accepted) << out.check.summary();
  ASSERT_TRUE(out.verdict.has_value());
  EXPECT_EQ(out.verdict->verdict, decision::ShipVerdict::incomplete) << out.verdict->summary;
  EXPECT_EQ(out.exit_code, 3);
  EXPECT_NE(out.verdict->summary.find("not the candidate's"), std::string::npos) << out.verdict->summary;
  EXPECT_EQ(out.verdict->summary.find("failed or was wrong"), std::string::npos) << out.verdict->summary;
}

// `kqual check` without a GPU: nothing ran, said so; the document is the submission schema's, and a
// field of the wrong shape in it is named when read back.
TEST_F(SubmissionQualify, ACheckThatDidNotRunIsWrittenFromOneResult) {
  SubmissionOptions o;
  o.candidate = write_submission(kNumpyAddRelu);
  o.problem = "residual_add_relu";
  o.out_dir = dir_.path() / "out-nogpu";
  o.use_gpu = false;
  const SubmissionOutcome out = check_submission(o);
  EXPECT_EQ(out.exit_code, 3);
  expect_written_from_one_result(out);
  json doc = json::parse(read_text_file(out.results_path));
  EXPECT_EQ(doc.value("schema", ""), "kqual.submission/1");
  EXPECT_FALSE(report::submission_result_from_json(doc).qualify);
  doc["check"]["failures"] = json::array({json{{"case", "n=1"}, {"code", "wrong"}, {"detail", ""}, {"kernels", json::array()}}});
  try {
    (void)report::submission_result_from_json(doc);
    ADD_FAILURE() << "accepted the failure code 'wrong'";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("check.failures[0].code"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace kqual::pipeline
