// The qualify verdict rule (decision/qualify.hpp), one test per rule, and the shared verdict words.
#include <gtest/gtest.h>

#include "kqual/core/exit_codes.hpp"
#include "kqual/decision/qualify.hpp"

namespace kqual::decision {
namespace {

QualifyFindings correct_and_timed() {
  QualifyFindings f;
  f.arch = "sm_90";
  f.cases = f.passed = 171;
  return f;
}

QualifyShape shape(const std::string& name, stats::Verdict v, double estimate, double lo, double hi) {
  QualifyShape s;
  s.shape = name;
  s.fastest_baseline = "plain_fused";
  stats::Comparison c;
  c.estimate = estimate;
  c.ci = {lo, hi};
  c.verdict = v;
  s.vs_fastest = c;
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
  QualifyFindings f = correct_and_timed();
  f.correct = false;
  f.failed = 3;
  f.primary_code = "nan_policy";
  f.first_failure = "y[1]: expected nan";
  f.shapes.push_back(shape("n=4096", stats::Verdict::faster, 0.5, 0.45, 0.55));
  const QualifyVerdict v = decide_qualify(f);
  EXPECT_EQ(v.verdict, ShipVerdict::do_not_ship);
  EXPECT_NE(v.reasons.at(0).find("nan_policy"), std::string::npos);
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
  f.shapes.push_back(shape("n=4096", stats::Verdict::faster, 0.5, 0.45, 0.55));
  QualifyShape bad;
  bad.shape = "n=268435456";
  bad.failure = "timed output differs from the reference";
  f.shapes.push_back(bad);
  EXPECT_EQ(decide_qualify(f).verdict, ShipVerdict::do_not_ship);
}

TEST(QualifyRule, SlowerThanTheFastestBaselineAtOneShapeIsDoNotShip) {
  QualifyFindings f = correct_and_timed();
  f.shapes.push_back(shape("n=4096", stats::Verdict::slower, 1.08, 1.057, 1.102));
  f.shapes.push_back(shape("n=268435456", stats::Verdict::faster, 0.95, 0.949, 0.951));
  const QualifyVerdict v = decide_qualify(f);
  EXPECT_EQ(v.verdict, ShipVerdict::do_not_ship);
  EXPECT_EQ(v.would_reverse.size(), 3u);  // one per shape, and untested inputs
}

TEST(QualifyRule, NoShapeSlowerShips) {
  QualifyFindings f = correct_and_timed();
  f.shapes.push_back(shape("n=4096", stats::Verdict::no_difference, 1.001, 0.99, 1.01));
  f.shapes.push_back(shape("n=268435456", stats::Verdict::faster, 0.95, 0.949, 0.951));
  const QualifyVerdict v = decide_qualify(f);
  EXPECT_EQ(v.verdict, ShipVerdict::ship);
  EXPECT_EQ(to_json(v).at("decision"), "ship");
}

// Issue 23: the rules below close the loopholes a review found (ship on an inconclusive shape, ship
// with no baseline, "Correct on every case" from bench, "wrong answer" with nothing failed).
TEST(QualifyRule, NoShapeFasterIsNoDifferenceNotShip) {
  QualifyFindings f = correct_and_timed();
  f.shapes.push_back(shape("n=4096", stats::Verdict::no_difference, 1.001, 0.99, 1.01));
  f.shapes.push_back(shape("n=268435456", stats::Verdict::no_difference, 0.999, 0.995, 1.004));
  const QualifyVerdict v = decide_qualify(f);
  EXPECT_EQ(v.verdict, ShipVerdict::no_difference);
  EXPECT_NE(v.summary.find("no speed claim"), std::string::npos) << v.summary;
}

TEST(QualifyRule, AnInconclusiveShapeIsInconclusiveNotShip) {
  QualifyFindings f = correct_and_timed();
  f.shapes.push_back(shape("n=4096", stats::Verdict::inconclusive, 0.97, 0.90, 1.06));
  f.shapes.push_back(shape("n=268435456", stats::Verdict::faster, 0.95, 0.949, 0.951));
  const QualifyVerdict v = decide_qualify(f);
  EXPECT_EQ(v.verdict, ShipVerdict::inconclusive);
  EXPECT_EQ(to_json(v).at("exit_code"), kExitFail);
}

TEST(QualifyRule, AShapeWithoutABaselineIsNotComparedAndTheVerdictIncomplete) {
  QualifyFindings f = correct_and_timed();
  f.shapes.push_back(shape("n=268435456", stats::Verdict::faster, 0.95, 0.949, 0.951));
  QualifyShape alone;
  alone.shape = "n=4096";  // no valid baseline was timed here
  f.shapes.push_back(alone);
  QualifyVerdict v = decide_qualify(f);
  EXPECT_EQ(v.verdict, ShipVerdict::incomplete);
  EXPECT_NE(v.reasons.back().find("not compared"), std::string::npos);
  // "No baselines found" never ships: every shape not compared.
  QualifyFindings none = correct_and_timed();
  none.shapes.push_back(alone);
  EXPECT_EQ(decide_qualify(none).verdict, ShipVerdict::incomplete);
  // Unless the user asked for no baselines: then the faster shape carries it.
  f.baselines_expected = false;
  EXPECT_EQ(decide_qualify(f).verdict, ShipVerdict::ship);
}

TEST(QualifyRule, BenchNeverClaimsCorrectness) {
  QualifyFindings f = correct_and_timed();
  f.correctness_run = false;
  f.shapes.push_back(shape("n=268435456", stats::Verdict::faster, 0.95, 0.949, 0.951));
  const QualifyVerdict v = decide_qualify(f);
  EXPECT_EQ(v.summary.find("Correct on every case"), std::string::npos) << v.summary;
  EXPECT_NE(v.summary.find("Correctness not checked"), std::string::npos) << v.summary;
}

TEST(QualifyRule, RejectedWithNothingFailedIsNoEvidenceNotAWrongAnswer) {
  QualifyFindings f = correct_and_timed();
  f.correct = false;
  f.failed = 0;
  f.refused = 171;
  f.passed = 0;
  const QualifyVerdict v = decide_qualify(f);
  EXPECT_EQ(v.verdict, ShipVerdict::do_not_ship);
  EXPECT_NE(v.summary.find("No evidence"), std::string::npos) << v.summary;
  EXPECT_EQ(v.summary.find("wrong answer"), std::string::npos) << v.summary;
  EXPECT_NE(v.reasons.at(0).find("no_evidence"), std::string::npos);
}

TEST(QualifyRule, ASettledRejectionSaysHowManyCasesWereNotRun) {
  QualifyFindings f = correct_and_timed();
  f.correct = false;
  f.cases = 5;
  f.failed = 1;
  f.settled_not_run = 90;
  f.primary_code = "unwritten_output";
  const QualifyVerdict v = decide_qualify(f);
  EXPECT_NE(v.reasons.at(0).find("5 of 95 cases ran"), std::string::npos) << v.reasons.at(0);
  EXPECT_NE(v.reasons.at(0).find("--all-cases"), std::string::npos);
}

}  // namespace
}  // namespace kqual::decision
