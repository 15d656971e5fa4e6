// How many of the candidate's timed launches are compared with the reference, which ones, and the
// detection power stated for it (src/bench/timed_verify.hpp). The comparisons themselves run on the
// GPU machine (tests/device/qualify_device_test.cpp: the softmax that skips every third launch).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <set>

#include "../../src/bench/timed_verify.hpp"

namespace kqual::bench {
namespace {

TEST(TimedVerify, TheDefaultTargetCatchesOneLaunchInTenWithNinetyNinePercent) {
  TimingOptions o;
  EXPECT_GE(detail::detection_one_in_ten(std::size_t(o.verify_launches)), 0.99);
  EXPECT_LT(detail::detection_one_in_ten(std::size_t(o.verify_launches - 1)), 0.99);  // the smallest such number
  EXPECT_DOUBLE_EQ(detail::detection_one_in_ten(0), 0.0);
  EXPECT_NEAR(detail::detection_one_in_ten(1), 0.1, 1e-12);
}

int compared_over_run(const TimingOptions& o, const std::vector<int>& per_call) {
  int n = 0;
  for (int c : per_call) n += c * o.rounds;
  return n;
}

TEST(TimedVerify, TheTargetGoesToTheCheapestShapesFirst) {
  TimingOptions o;  // 3 rounds of 10 samples, target 44
  // softmax's benchmark shapes (output elements): one per call everywhere, then the smallest shape
  // up to every sample, then the next: 30 + 12 + 3 = 45 compared launches, 99.1 %.
  const std::vector<std::int64_t> softmax = {4096 * 128, 4096 * 1024, 8192LL * 8192};
  EXPECT_EQ(detail::saved_launches_per_call(o, softmax), (std::vector<int>{10, 4, 1}));
  EXPECT_GE(compared_over_run(o, detail::saved_launches_per_call(o, softmax)), o.verify_launches);
  // A shape whose launches are all verified otherwise (-1) gets none beyond the baselines' one.
  EXPECT_EQ(detail::saved_launches_per_call(o, {-1, 1 << 20}), (std::vector<int>{0, 10}));
  // One sampled shape: all of the target on it, at most every sample of a call.
  o.samples_per_round = 30;
  EXPECT_EQ(detail::saved_launches_per_call(o, {1 << 20}), (std::vector<int>{15}));
}

TEST(TimedVerify, TheElementBudgetStopsShortAndTheFigureSaysSo) {
  TimingOptions o;
  // rmsnorm's shapes: 16M and 134M outputs. One per call on each (450M elements), the 16M shape up
  // to every sample (+432M); the big one's second would pass 2^30: 33 launches, 96.6 %.
  const std::vector<std::int64_t> rmsnorm = {4096LL * 4096, 16384LL * 8192};
  const auto per_call = detail::saved_launches_per_call(o, rmsnorm);
  EXPECT_EQ(per_call, (std::vector<int>{10, 1}));
  EXPECT_LT(detail::detection_one_in_ten(std::size_t(compared_over_run(o, per_call))), 0.99);
  // Asked for explicitly (no budget): the target is reached.
  o.verify_element_budget = 0;
  EXPECT_GE(compared_over_run(o, detail::saved_launches_per_call(o, rmsnorm)), o.verify_launches);
  // The statement names the shortfall when nothing failed.
  TimingReport rep;
  ShapeResult sh;
  sh.shape = "cols=4096,rows=4096";
  Series c;
  c.launches = 39;
  c.samples_ms.assign(36, 0.01);  // 36 timed launches, 3 warm-ups
  c.reference_compared = 33;
  sh.series.push_back(c);
  rep.shapes.push_back(sh);
  const std::string said = detail::verification_summary(rep, 44, 1 << 30)["statement"];
  EXPECT_NE(said.find("fewer than the 44 aimed at (99.03 %)"), std::string::npos) << said;
  EXPECT_NE(said.find("2^30 output elements"), std::string::npos) << said;
  EXPECT_NE(said.find("--verify-launches"), std::string::npos) << said;
  rep.shapes[0].series[0].verified = false;  // a wrong launch stops the comparisons: no shortfall to explain
  EXPECT_EQ(std::string(detail::verification_summary(rep, 44, 1 << 30)["statement"]).find("fewer than"), std::string::npos);
}

// --verify-launches 1000 with 3 rounds x 10 samples: 30 timed launches compared, every one there is.
// The statement blamed the 2^30 element limit (there was none: --verify-launches lifts it) and said
// "99 %" for any target; it names the binding limit and the target's own figure.
TEST(TimedVerify, TheShortfallNamesTheLimitThatBoundIt) {
  TimingReport rep;
  ShapeResult sh;
  sh.shape = "n=4096";
  Series c;
  c.launches = 33;
  c.samples_ms.assign(30, 0.01);
  c.reference_compared = 30;
  sh.series.push_back(c);
  rep.shapes.push_back(sh);
  const std::string said = detail::verification_summary(rep, 1000, 0)["statement"];
  EXPECT_NE(said.find("fewer than the 1000 aimed at (100.00 %)"), std::string::npos) << said;
  EXPECT_NE(said.find("every one of the 30 timed launches was compared already"), std::string::npos) << said;
  EXPECT_EQ(said.find("2^30"), std::string::npos) << said;
  EXPECT_EQ(said.find("--verify-launches N asks"), std::string::npos) << said;
}

TEST(TimedVerify, SavedLaunchesAreDistinctTimedSamplesWithTheSharedOneLast) {
  std::random_device entropy;
  std::set<std::size_t> seen_first_positions;
  for (int trial = 0; trial < 50; ++trial) {
    const int warmup = 3, samples = 10;
    const std::size_t shared = std::size_t(warmup + trial % samples);
    const auto picks = detail::pick_saved_launches(shared, warmup, samples, 5, entropy);
    ASSERT_EQ(picks.size(), 5u);
    EXPECT_EQ(picks.back(), shared);
    std::set<std::size_t> distinct(picks.begin(), picks.end());
    EXPECT_EQ(distinct.size(), picks.size());
    for (std::size_t p : picks) {
      EXPECT_GE(p, std::size_t(warmup));  // a timed sample, never a warm-up launch
      EXPECT_LT(p, std::size_t(warmup + samples));
    }
    seen_first_positions.insert(picks.front());
  }
  // Drawn at random, not a fixed pattern a kernel could learn.
  EXPECT_GT(seen_first_positions.size(), 3u);
  // More than the call has: every sample once.
  EXPECT_EQ(detail::pick_saved_launches(1, 1, 4, 9, entropy).size(), 4u);
}

TEST(TimedVerify, TheSummaryStatesTheFigureAndTheReRuns) {
  TimingReport rep;
  for (const char* shape : {"rows=4096,cols=128", "rows=4096,cols=1024"}) {
    ShapeResult sh;
    sh.shape = shape;
    Series c;
    c.role = "candidate";
    c.launches = 39;
    c.reference_compared = 15;
    c.rerun_compared = 39;
    sh.series.push_back(c);
    rep.shapes.push_back(sh);
  }
  const json v = detail::verification_summary(rep, 44, 1 << 30);
  EXPECT_EQ(v["launches"], 78);
  EXPECT_EQ(v["compared_with_reference"], 30);
  EXPECT_EQ(v["compared_with_untimed_rerun"], 78);
  EXPECT_NEAR(v["detection_one_in_ten"].get<double>(), 1 - std::pow(0.9, 30), 1e-12);
  const std::string said = v["statement"];
  EXPECT_NE(said.find("30 of the candidate's 78"), std::string::npos) << said;
  EXPECT_NE(said.find("95.76 %"), std::string::npos) << said;
  EXPECT_NE(said.find("launched again untimed"), std::string::npos) << said;
  EXPECT_EQ(v["shapes"].size(), 2u);
}

}  // namespace
}  // namespace kqual::bench
