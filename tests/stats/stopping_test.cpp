// The stopping rule of timed measurements (stats/stopping.hpp).
#include <gtest/gtest.h>

#include <vector>

#include "kqual/stats/stopping.hpp"

namespace kqual::stats {
namespace {

TEST(Stopping, NeverBeforeMinSamplesAlwaysAtMax) {
  StoppingRule r{5, 8, 100.0, 0.5};
  std::vector<double> flat(4, 1.0);
  EXPECT_EQ(stop_reason(r, flat, 1000.0), "");  // neither noise nor time stops it below the minimum
  StoppingRule strict{2, 8, 100.0, 0.0};         // a noise target no data can meet
  std::vector<double> noisy{1, 2, 1, 3, 1, 2, 5, 1};
  EXPECT_EQ(stop_reason(strict, std::vector<double>(noisy.begin(), noisy.begin() + 7), 1.0), "");
  EXPECT_EQ(stop_reason(strict, noisy, 1.0), "max_samples");
}

TEST(Stopping, QuietSamplesStopOnTheNoiseTarget) {
  StoppingRule r{5, 1000, 100.0, 0.005};
  std::vector<double> s{1.000, 1.001, 0.999, 1.000, 1.002, 0.998};
  EXPECT_LT(relative_noise(s), 0.005);
  EXPECT_EQ(stop_reason(r, s, 0.1), "noise_target");
}

TEST(Stopping, NoisySamplesStopOnTheTimeCapOnly) {
  StoppingRule r{3, 1000, 2.0, 0.005};
  std::vector<double> s{1, 2, 4, 1, 3};
  EXPECT_GT(relative_noise(s), 0.005);
  EXPECT_EQ(stop_reason(r, s, 1.0), "");
  EXPECT_EQ(stop_reason(r, s, 2.5), "time_cap");
}

TEST(Stopping, RelativeNoiseIsRobustToOneOutlier) {
  std::vector<double> s(21, 1.0);
  for (std::size_t i = 0; i < s.size(); ++i) s[i] += 0.001 * double(i % 3);
  const double before = relative_noise(s);
  s.back() = 50.0;  // one wild sample
  EXPECT_LT(relative_noise(s), before * 2 + 1e-6);
}

}  // namespace
}  // namespace kqual::stats
