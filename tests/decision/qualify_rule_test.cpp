// The qualify verdict rule (decision/qualify.hpp), one test per rule, and the shared verdict words.
#include <gtest/gtest.h>

#include "kqual/core/exit_codes.hpp"
#include "kqual/core/xoshiro.hpp"
#include "kqual/decision/qualify.hpp"

namespace kqual::decision {
namespace {

QualifyFindings correct_and_timed() {
  QualifyFindings f;
  f.arch = "sm_90";
  f.cases = f.passed = 171;
  return f;
}

// correct_and_timed() rejected: `failed` of its cases failed.
QualifyFindings rejected(int failed) {
  QualifyFindings f = correct_and_timed();
  f.correct = false;
  f.failed = failed;
  return f;
}

// Samples around `base_us` (baseline) and `ratio` x that (candidate), with a relative spread
// `noise` (deterministic): n = 30 per side, as qualify's default 3 rounds x 10 samples.
ShapeSamples shape(const std::string& name, double base_us, double ratio, double noise = 0.002) {
  ShapeSamples s;
  s.shape = name;
  s.baseline = "plain_fused";
  Xoshiro256 rng(std::hash<std::string>{}(name));
  auto u = [&] { return double(rng.next() >> 11) * 0x1.0p-53 * 2 - 1; };
  for (int i = 0; i < 30; ++i) {
    s.baseline_ms.push_back(base_us * 1e-3 * (1 + noise * u()));
    s.candidate_ms.push_back(ratio * base_us * 1e-3 * (1 + noise * u()));
  }
  return s;
}

TEST(VerdictWords, OneWordPerVerdictRoundTripsAndMapsToItsExitCode) {
  const ShipVerdict all[] = {ShipVerdict::ship, ShipVerdict::do_not_ship, ShipVerdict::no_difference,
                             ShipVerdict::inconclusive, ShipVerdict::incomplete};
  const int codes[] = {kExitPass, kExitFail, kExitPass, kExitFail, kExitIncomplete};
  for (std::size_t i = 0; i < std::size(all); ++i) {
    const std::string word = to_string(all[i]);
    EXPECT_EQ(word.find(' '), std::string::npos) << word;  // results.json words are identifiers
    EXPECT_EQ(ship_verdict_from_string(word), all[i]);
    EXPECT_EQ(exit_code(all[i]), codes[i]) << word;
    EXPECT_STRNE(describe(all[i]), "?");
  }
  EXPECT_STREQ(describe(ShipVerdict::do_not_ship), "do not ship as built");
  EXPECT_FALSE(ship_verdict_from_string("do not ship as built"));  // memo words are not results words
}

TEST(QualifyRule, NoGpuIsIncompleteAndSaysWhatDidNotRun) {
  QualifyFindings f = correct_and_timed();
  f.gpu = false;
  f.why_no_gpu = "libcuda.so.1 not found";
  const QualifyVerdict v = decide_qualify(f);
  EXPECT_EQ(v.verdict, ShipVerdict::incomplete);
  EXPECT_NE(v.summary.find("libcuda.so.1 not found"), std::string::npos);
  EXPECT_EQ(to_json(v).at("exit_code"), kExitIncomplete);
}

TEST(QualifyRule, WrongAnswerIsDoNotShipWhateverTheTiming) {
  QualifyFindings f = rejected(3);
  f.primary_code = "nan_policy";
  f.first_failure = "y[1]: expected nan";
  f.shapes.push_back(shape("n=4096", 4, 0.5));
  const QualifyVerdict v = decide_qualify(f);
  EXPECT_EQ(v.verdict, ShipVerdict::do_not_ship);
  EXPECT_NE(v.reasons.at(0).find("nan_policy"), std::string::npos);
  EXPECT_FALSE(v.speed);
}

TEST(QualifyRule, CorrectWithoutTimingShipsWithoutASpeedClaim) {
  QualifyFindings f = correct_and_timed();
  f.timing_run = false;
  const QualifyVerdict v = decide_qualify(f);
  EXPECT_EQ(v.verdict, ShipVerdict::ship);
  EXPECT_NE(v.summary.find("no performance claim"), std::string::npos);
}

TEST(QualifyRule, AShapeThatFailedWhenTimedIsDoNotShip) {
  QualifyFindings f = correct_and_timed();
  f.shapes.push_back(shape("n=4096", 4, 0.5));
  ShapeSamples bad;
  bad.shape = "n=268435456";
  bad.failure = "timed output differs from the reference";
  f.shapes.push_back(bad);
  const QualifyVerdict v = decide_qualify(f);
  EXPECT_EQ(v.verdict, ShipVerdict::do_not_ship);
  EXPECT_NE(v.summary.find("n=268435456"), std::string::npos) << v.summary;
}

// The case that a reviewer would not sign before: 0.1 us slower at a launch-bound size decided alone.
TEST(QualifyRule, ALaunchBoundShapeATenthOfAMicrosecondSlowerDoesNotBlockAFasterKernel) {
  QualifyFindings f = correct_and_timed();
  f.shapes.push_back(shape("n=4096", 3.87, 3.97 / 3.87, 0.01));
  f.shapes.push_back(shape("n=1048576", 9.0, 0.98));
  f.shapes.push_back(shape("n=268435456", 2400, 0.87));
  const QualifyVerdict v = decide_qualify(f);
  EXPECT_EQ(v.verdict, ShipVerdict::ship) << v.summary;
  ASSERT_TRUE(v.speed);
  EXPECT_EQ(v.speed->shapes.at(0).call, ShapeCall::no_difference) << v.speed->shapes.at(0).sentence;
  EXPECT_GT(v.speed->shapes.at(0).margin, 0.12);  // 0.5 us of 3.87 us
  EXPECT_EQ(to_json(v).at("decision"), "ship");
  EXPECT_TRUE(to_json(v).contains("speed"));
}

TEST(QualifyRule, NoShapeFasterIsNoDifferenceNotShip) {
  QualifyFindings f = correct_and_timed();
  f.shapes.push_back(shape("n=4096", 4, 1.001));
  f.shapes.push_back(shape("n=268435456", 2400, 0.999));
  const QualifyVerdict v = decide_qualify(f);
  EXPECT_EQ(v.verdict, ShipVerdict::no_difference);
  EXPECT_NE(v.summary.find("No difference that matters"), std::string::npos) << v.summary;
}

TEST(QualifyRule, AShapeWithoutABaselineIsNotComparedAndTheVerdictIncomplete) {
  QualifyFindings f = correct_and_timed();
  f.shapes.push_back(shape("n=268435456", 2400, 0.95));
  ShapeSamples alone;
  alone.shape = "n=4096";  // no valid baseline was timed here
  alone.candidate_ms = {0.004, 0.004, 0.004, 0.004, 0.004};
  f.shapes.push_back(alone);
  QualifyVerdict v = decide_qualify(f);
  EXPECT_EQ(v.verdict, ShipVerdict::incomplete);
  EXPECT_NE(v.summary.find("n=4096"), std::string::npos) << v.summary;
  // "No baselines found" never ships: every shape not compared.
  QualifyFindings none = correct_and_timed();
  none.shapes.push_back(alone);
  EXPECT_EQ(decide_qualify(none).verdict, ShipVerdict::incomplete);
  // Unless the user asked for no baselines: then the compared shape carries it.
  f.baselines_expected = false;
  EXPECT_EQ(decide_qualify(f).verdict, ShipVerdict::ship);
}

// `kqual bench` checks no correctness: it never says ship, and says why.
TEST(QualifyRule, BenchNeverSaysShip) {
  QualifyFindings f = correct_and_timed();
  f.correctness_run = false;
  f.shapes.push_back(shape("n=268435456", 2400, 0.80));
  QualifyVerdict v = decide_qualify(f);
  EXPECT_EQ(v.verdict, ShipVerdict::incomplete);
  EXPECT_EQ(v.summary.find("Correct on every case"), std::string::npos) << v.summary;
  EXPECT_NE(v.summary.find("Correctness was not checked"), std::string::npos) << v.summary;
  EXPECT_NE(v.summary.find("faster"), std::string::npos) << v.summary;
  // A tie is no ship either; a loss is still a loss.
  f.shapes = {shape("n=268435456", 2400, 1.0)};
  EXPECT_EQ(decide_qualify(f).verdict, ShipVerdict::incomplete);
  f.shapes = {shape("n=268435456", 2400, 1.30)};
  EXPECT_EQ(decide_qualify(f).verdict, ShipVerdict::do_not_ship);
}

TEST(QualifyRule, RejectedWithNothingFailedIsNoEvidenceNotAWrongAnswer) {
  QualifyFindings f = rejected(0);
  f.refused = 171;
  f.passed = 0;
  const QualifyVerdict v = decide_qualify(f);
  EXPECT_EQ(v.verdict, ShipVerdict::do_not_ship);
  EXPECT_NE(v.summary.find("No evidence"), std::string::npos) << v.summary;
  EXPECT_EQ(v.summary.find("wrong answer"), std::string::npos) << v.summary;
  EXPECT_NE(v.reasons.at(0).find("no_evidence"), std::string::npos);
}

TEST(QualifyRule, ASettledRejectionSaysHowManyCasesWereNotRun) {
  QualifyFindings f = rejected(1);
  f.cases = 5;
  f.settled_not_run = 90;
  f.primary_code = "unwritten_output";
  const QualifyVerdict v = decide_qualify(f);
  EXPECT_NE(v.reasons.at(0).find("5 of 95 cases ran"), std::string::npos) << v.reasons.at(0);
  EXPECT_NE(v.reasons.at(0).find("--all-cases"), std::string::npos);
}

// kqual's own failure (an allocation of its buffers, CUPTI missing for --timer cupti, a worker lost
// outside the candidate's launch) is never the candidate's: incomplete (exit 3), naming what failed,
// ahead of the correctness and speed rules that would otherwise read it as a wrong or failed kernel.
TEST(QualifyRule, KqualsOwnFailureIsIncompleteNeverTheCandidates) {
  QualifyFindings f = rejected(0);  // as check_correctness reports a candidate whose cases kqual could not run
  f.harness_failure = "small/f32/n=1: kqual's own failure (while allocating the case's buffers): CUDA_ERROR_OUT_OF_MEMORY";
  QualifyVerdict v = decide_qualify(f);
  EXPECT_EQ(v.verdict, ShipVerdict::incomplete);
  EXPECT_EQ(to_json(v).at("exit_code"), kExitIncomplete);
  EXPECT_NE(v.summary.find("not the candidate's"), std::string::npos) << v.summary;
  EXPECT_NE(v.reasons.at(0).find("CUDA_ERROR_OUT_OF_MEMORY"), std::string::npos);
  EXPECT_EQ(v.summary.find("wrong answer"), std::string::npos) << v.summary;
  EXPECT_FALSE(v.speed);

  // While being timed: a shape whose timing failed for kqual's reason is not "failed while timed".
  f = correct_and_timed();
  ShapeSamples bad;
  bad.shape = "n=268435456";
  bad.failure = "error: kqual's own failure (while starting CUPTI for the timer 'cupti'): timer 'cupti' is not available";
  f.shapes.push_back(bad);
  f.harness_failure = "timing n=268435456: " + bad.failure;
  v = decide_qualify(f);
  EXPECT_EQ(v.verdict, ShipVerdict::incomplete);
  EXPECT_NE(v.summary.find("CUPTI"), std::string::npos) << v.summary;
}

}  // namespace
}  // namespace kqual::decision
