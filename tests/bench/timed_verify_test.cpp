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

TEST(TimedVerify, TheTargetIsSpreadOverTheSampledShapesAndRounds) {
  TimingOptions o;  // 3 rounds of 10 samples, target 44
  // Three sampled shapes: 15 per shape, 5 per call: 45 launches over the run.
  EXPECT_EQ(detail::saved_launches_per_call(o, 3), 5);
  EXPECT_GE(3 * o.rounds * detail::saved_launches_per_call(o, 3), o.verify_launches);
  // One sampled shape: all of the target on it, at most every sample of a call.
  EXPECT_EQ(detail::saved_launches_per_call(o, 1), 10);
  o.samples_per_round = 30;
  EXPECT_EQ(detail::saved_launches_per_call(o, 1), 15);
  // Nothing sampled (every launch hashed against a device reference), or no target: the one launch
  // the baselines share.
  EXPECT_EQ(detail::saved_launches_per_call(o, 0), 1);
  o.verify_launches = 0;
  EXPECT_EQ(detail::saved_launches_per_call(o, 3), 1);
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
  const json v = detail::verification_summary(rep, 44);
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
