#include "kqual/stats/compare.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "kqual/core/error.hpp"
#include "kqual/stats/summary.hpp"

using namespace kqual::stats;

namespace {

std::vector<double> normal_sample(std::size_t n, double mean, double sd, std::uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::normal_distribution<double> d(mean, sd);
  std::vector<double> x(n);
  for (auto& v : x) v = d(gen);
  return x;
}

}  // namespace

TEST(RankTests, MannWhitneyKnownValue) {
  // Complete separation, n = 5 + 5: U = 0, z = (0 - 12.5 + 0.5) / sqrt(25 * 11 / 12).
  const std::vector<double> a{1, 2, 3, 4, 5}, b{6, 7, 8, 9, 10};
  const RankTest t = mann_whitney_u(a, b);
  EXPECT_DOUBLE_EQ(t.statistic, 0);
  EXPECT_NEAR(t.z, -12.0 / std::sqrt(25.0 * 11 / 12), 1e-12);
  EXPECT_NEAR(t.p_value, 0.012185, 1e-5);  // scipy.stats.mannwhitneyu(method="asymptotic")
  EXPECT_NEAR(mann_whitney_u(b, a).p_value, t.p_value, 1e-12);
}

TEST(RankTests, MannWhitneyAllTiedIsNoEvidence) {
  const std::vector<double> a{1, 1, 1}, b{1, 1, 1, 1};
  EXPECT_EQ(mann_whitney_u(a, b).p_value, 1.0);
}

TEST(RankTests, WilcoxonKnownValue) {
  // Ten distinct positive differences: W+ = 55, mean 27.5, var 96.25.
  std::vector<double> a(10), b(10);
  for (int i = 0; i < 10; ++i) { a[std::size_t(i)] = 100; b[std::size_t(i)] = 100 + i + 1; }
  const RankTest t = wilcoxon_signed_rank(a, b);
  EXPECT_DOUBLE_EQ(t.statistic, 55);
  EXPECT_NEAR(t.p_value, std::erfc(27.0 / std::sqrt(96.25) / std::sqrt(2.0)), 1e-12);
  EXPECT_NEAR(t.p_value, 0.00592, 1e-5);
  EXPECT_THROW(wilcoxon_signed_rank(a, std::vector<double>{1}), kqual::Error);
}

TEST(Bootstrap, FixedSeedReproducesExactly) {
  const auto x = normal_sample(40, 10, 1, 1);
  const auto y = normal_sample(40, 9, 1, 2);
  BootstrapOptions o;
  o.seed = 1234;
  const Interval i1 = bootstrap_median_ci(x, o), i2 = bootstrap_median_ci(x, o);
  EXPECT_EQ(i1.lo, i2.lo);
  EXPECT_EQ(i1.hi, i2.hi);
  TwoSampleOptions t;
  t.bootstrap = o;
  const Interval r1 = bootstrap_effect_ci(x, y, t), r2 = bootstrap_effect_ci(x, y, t);
  EXPECT_EQ(r1.lo, r2.lo);
  EXPECT_EQ(r1.hi, r2.hi);
  // The ends of a one-sample median interval are order statistics, often the same for two seeds;
  // a ratio of two medians takes many more values, so another seed shows there.
  t.bootstrap.seed = 99;
  const Interval r3 = bootstrap_effect_ci(x, y, t);
  EXPECT_TRUE(r3.lo != r1.lo || r3.hi != r1.hi) << "another seed should give another interval";
}

TEST(Bootstrap, MedianIntervalContainsMedianAndCoverageIsRoughlyNominal) {
  // True median 10; 400 independent samples of 31; a 95 % interval should cover 10 about 95 % of
  // the time. The percentile bootstrap of a median is a little conservative or liberal depending
  // on n, so the band is wide but still catches a broken interval (e.g. 50 % or 100 %).
  int covered = 0;
  const int trials = 400;
  for (int t = 0; t < trials; ++t) {
    const auto x = normal_sample(31, 10, 1, 1000 + std::uint64_t(t));
    BootstrapOptions o;
    o.resamples = 1000;
    o.seed = std::uint64_t(t);
    const Interval ci = bootstrap_median_ci(x, o);
    EXPECT_LE(ci.lo, median(x));
    EXPECT_GE(ci.hi, median(x));
    covered += ci.contains(10.0);
  }
  const double coverage = double(covered) / trials;
  EXPECT_GT(coverage, 0.88) << coverage;
  EXPECT_LT(coverage, 0.99) << coverage;
}

TEST(Bootstrap, RatioCoverageRoughlyNominal) {
  int covered = 0;
  const int trials = 200;
  for (int t = 0; t < trials; ++t) {
    const auto a = normal_sample(30, 10, 0.5, 5000 + std::uint64_t(t));
    const auto b = normal_sample(30, 9, 0.5, 9000 + std::uint64_t(t));
    TwoSampleOptions o;
    o.bootstrap.resamples = 1000;
    o.bootstrap.seed = std::uint64_t(t);
    covered += bootstrap_effect_ci(a, b, o).contains(0.9);
  }
  const double coverage = double(covered) / trials;
  EXPECT_GT(coverage, 0.86) << coverage;
  EXPECT_LT(coverage, 0.995) << coverage;
}

TEST(Decision, IdenticalDistributionsAreNoDifference) {
  const auto a = normal_sample(50, 10, 0.1, 11);
  const auto b = normal_sample(50, 10, 0.1, 12);
  const Comparison c = compare(a, b);
  EXPECT_EQ(c.verdict, Verdict::no_difference) << c.reason;
  EXPECT_GT(c.ci.lo, 0.98);
  EXPECT_LT(c.ci.hi, 1.02);
}

TEST(Decision, TenPercentFasterWithSmallNoise) {
  const auto a = normal_sample(30, 10, 0.1, 21);
  const auto b = normal_sample(30, 9, 0.09, 22);
  const Comparison c = compare(a, b);
  EXPECT_EQ(c.verdict, Verdict::faster) << c.reason;
  EXPECT_LT(c.ci.hi, 1.0);
  EXPECT_NEAR(c.estimate, 0.9, 0.01);
  EXPECT_LT(c.test.p_value, 1e-6);
  // And the other way round.
  const Comparison r = compare(b, a);
  EXPECT_EQ(r.verdict, Verdict::slower) << r.reason;
  EXPECT_GT(r.ci.lo, 1.0);
}

TEST(Decision, DifferenceEffectWithAbsoluteNoiseFloor) {
  // 0.3 ms apart, with a 0.5 ms noise floor declared: no difference; without it: slower.
  const auto a = normal_sample(40, 100.0, 0.05, 31);
  const auto b = normal_sample(40, 100.3, 0.05, 32);
  DecisionOptions o;
  o.test.effect = Effect::difference;
  o.margin = {0.0, 0.5};
  Comparison c = compare(a, b, o);
  EXPECT_EQ(c.verdict, Verdict::no_difference) << c.reason;
  EXPECT_DOUBLE_EQ(c.margin, 0.5);
  o.margin = {0.0, 0.0};
  c = compare(a, b, o);
  EXPECT_EQ(c.verdict, Verdict::slower) << c.reason;
  EXPECT_NEAR(c.estimate, 0.3, 0.05);
}

TEST(Decision, NoisySmallSamplesAreInconclusive) {
  const auto a = normal_sample(8, 10, 3, 41);
  const auto b = normal_sample(8, 10.5, 3, 42);
  const Comparison c = compare(a, b);
  EXPECT_EQ(c.verdict, Verdict::inconclusive) << c.reason;
}

TEST(Decision, TooFewSamples) {
  const std::vector<double> a{1, 2, 3}, b{1, 2, 3};
  const Comparison c = compare(a, b);
  EXPECT_EQ(c.verdict, Verdict::inconclusive);
  EXPECT_NE(c.reason.find("too few samples"), std::string::npos);
}

TEST(Decision, PairingRemovesSharedDrift) {
  // Each round drifts by up to ±20 % (thermal, clocks), shared by A and B of that round; B is 3 %
  // faster. Unpaired, the drift drowns the effect; paired, it cancels.
  std::mt19937_64 gen(51);
  std::uniform_real_distribution<double> drift(0.8, 1.2);
  std::normal_distribution<double> noise(0, 0.002);
  std::vector<double> a(40), b(40);
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double d = drift(gen);
    a[i] = 10 * d * (1 + noise(gen));
    b[i] = 9.7 * d * (1 + noise(gen));
  }
  DecisionOptions unpaired, paired;
  paired.test.paired = true;
  const Comparison u = compare(a, b, unpaired), p = compare(a, b, paired);
  EXPECT_EQ(u.verdict, Verdict::inconclusive) << u.reason;
  EXPECT_EQ(p.verdict, Verdict::faster) << p.reason;
  EXPECT_EQ(p.test.name, "Wilcoxon signed-rank");
  EXPECT_LT(p.ci.hi - p.ci.lo, (u.ci.hi - u.ci.lo) / 3);
  EXPECT_DOUBLE_EQ(p.estimate, u.estimate);  // same estimand
}

TEST(Decision, JsonCarriesVerdictAndReason) {
  const auto a = normal_sample(30, 10, 0.1, 61);
  const auto b = normal_sample(30, 9, 0.1, 62);
  const auto j = to_json(compare(a, b));
  EXPECT_EQ(j["verdict"], "faster");
  EXPECT_EQ(j["effect"], "ratio_of_medians");
  EXPECT_TRUE(j["ci"].is_array());
  EXPECT_FALSE(j["reason"].get<std::string>().empty());
}

namespace kqual::stats {
namespace {

// Per-process medians of A and B in pairs: B ahead by 10 % in most pairs but A ahead by 10 % in
// one. The pooled interval may still exclude 1; the order reversed, so no reliable difference.
TEST(Reversal, OrderReversedBetweenRunsIsNoReliableDifference) {
  std::vector<double> a, b;
  for (int i = 0; i < 12; ++i) {
    a.push_back(1.0 + 0.001 * i);
    b.push_back((i == 5 ? 1.10 : 0.90) * a.back());
  }
  DecisionOptions d;
  d.test.paired = true;
  d.margin.relative = 0.02;
  const Comparison plain = compare(a, b, d);
  ASSERT_EQ(plain.verdict, Verdict::faster) << plain.reason;  // without the check
  d.reversal_check = true;
  const Comparison c = compare(a, b, d);
  EXPECT_EQ(c.verdict, Verdict::inconclusive);
  EXPECT_NE(c.reason.find("no reliable difference"), std::string::npos) << c.reason;
  EXPECT_NE(c.reason.find("B ahead beyond the margin in 11 of 12 pairs, A ahead in 1"), std::string::npos) << c.reason;
}

TEST(Reversal, ConsistentOrderKeepsTheVerdict) {
  std::vector<double> a, b;
  for (int i = 0; i < 12; ++i) {
    a.push_back(1.0 + 0.001 * i);
    b.push_back((i % 2 ? 0.99 : 0.90) * a.back());  // B ahead or within the margin, never behind
  }
  DecisionOptions d;
  d.test.paired = true;
  d.margin.relative = 0.02;
  d.reversal_check = true;
  EXPECT_EQ(compare(a, b, d).verdict, Verdict::faster);
}

}  // namespace
}  // namespace kqual::stats
