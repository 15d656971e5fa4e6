#include "kqual/stats/summary.hpp"

#include <gtest/gtest.h>

#include <vector>

#include "kqual/core/error.hpp"

using namespace kqual::stats;

TEST(Percentile, Type7LinearInterpolation) {
  const std::vector<double> x{4, 1, 3, 2};  // sorted: 1 2 3 4
  EXPECT_DOUBLE_EQ(percentile(x, 0), 1);
  EXPECT_DOUBLE_EQ(percentile(x, 100), 4);
  EXPECT_DOUBLE_EQ(percentile(x, 50), 2.5);
  EXPECT_DOUBLE_EQ(percentile(x, 10), 1.3);  // h = 3 * 0.1 = 0.3
  EXPECT_DOUBLE_EQ(percentile(x, 90), 3.7);  // h = 2.7
  EXPECT_DOUBLE_EQ(median(std::vector<double>{5, 1, 3}), 3);
  EXPECT_DOUBLE_EQ(median(std::vector<double>{7}), 7);
}

TEST(Percentile, RejectsEmptyAndOutOfRange) {
  const std::vector<double> none;
  EXPECT_THROW(percentile(none, 50), kqual::Error);
  const std::vector<double> x{1, 2};
  EXPECT_THROW(percentile(x, -1), kqual::Error);
  EXPECT_THROW(percentile(x, 100.5), kqual::Error);
}

TEST(Summary, KnownValues) {
  const std::vector<double> x{2, 4, 4, 4, 5, 5, 7, 9};
  const Summary s = summarize(x);
  EXPECT_EQ(s.n, 8u);
  EXPECT_DOUBLE_EQ(s.mean, 5);
  EXPECT_DOUBLE_EQ(s.median, 4.5);
  EXPECT_DOUBLE_EQ(s.min, 2);
  EXPECT_DOUBLE_EQ(s.max, 9);
  EXPECT_NEAR(s.stdev, 2.138089935, 1e-9);  // sqrt(32 / 7)
  // |x - 4.5| = 2.5 .5 .5 .5 .5 .5 2.5 4.5 → median 0.5
  EXPECT_DOUBLE_EQ(s.mad, 0.5);
  EXPECT_NEAR(s.rel_noise, 1.4826 * 0.5 / 4.5, 1e-12);
  EXPECT_DOUBLE_EQ(s.p10, 2 + 0.7 * 2);  // h = 0.7
  EXPECT_DOUBLE_EQ(s.p90, 7 + 0.3 * 2);  // h = 6.3
}

TEST(Summary, SingleValueAndBadInput) {
  const Summary s = summarize(std::vector<double>{3});
  EXPECT_EQ(s.stdev, 0);
  EXPECT_EQ(s.mad, 0);
  EXPECT_EQ(s.p10, 3);
  EXPECT_THROW(summarize(std::vector<double>{}), kqual::Error);
  EXPECT_THROW(summarize(std::vector<double>{1, std::nan("")}), kqual::Error);
  const auto j = to_json(summarize(std::vector<double>{1, 2, 3}));
  EXPECT_EQ(j["median"], 2.0);
  EXPECT_EQ(j["n"], 3);
}
