#include "kqual/stats/stopping.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

namespace kqual::stats {

double relative_noise(std::span<const double> samples) {
  if (samples.size() < 2) return 0;
  std::vector<double> s(samples.begin(), samples.end());
  std::sort(s.begin(), s.end());
  const double med = s[s.size() / 2], q1 = s[s.size() / 4], q3 = s[3 * s.size() / 4];
  if (med <= 0) return 0;
  return (q3 - q1) / med / 1.349 / std::sqrt(double(s.size()));
}

std::string stop_reason(const StoppingRule& rule, std::span<const double> samples, double elapsed_s) {
  const int n = int(samples.size());
  if (n >= rule.min_samples && n >= 2 && relative_noise(samples) < rule.target_rel_noise) return "noise_target";
  if (n >= rule.min_samples && elapsed_s > rule.max_seconds) return "time_cap";
  if (n >= rule.max_samples) return "max_samples";
  return "";
}

}  // namespace kqual::stats
