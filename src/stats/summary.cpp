#include "kqual/stats/summary.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "kqual/core/error.hpp"

namespace kqual::stats {

double percentile_sorted(std::span<const double> sorted, double p) {
  if (sorted.empty()) throw_error(ErrorKind::internal, "percentile of an empty sample");
  if (!(p >= 0.0 && p <= 100.0)) throw_error(ErrorKind::internal, fmt::format("percentile {} outside [0, 100]", p));
  // Hyndman & Fan type 7: h = (n - 1) p, interpolate between the neighbouring order statistics.
  const double h = double(sorted.size() - 1) * p / 100.0;
  const auto lo = static_cast<std::size_t>(std::floor(h));
  const std::size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (h - double(lo)) * (sorted[hi] - sorted[lo]);
}

double percentile(std::span<const double> sample, double p) {
  std::vector<double> s(sample.begin(), sample.end());
  std::sort(s.begin(), s.end());
  return percentile_sorted(s, p);
}

double median(std::span<const double> sample) { return percentile(sample, 50.0); }

Summary summarize(std::span<const double> sample) {
  if (sample.empty()) throw_error(ErrorKind::internal, "summary of an empty sample");
  std::vector<double> s(sample.begin(), sample.end());
  for (double v : s)
    if (!std::isfinite(v)) throw_error(ErrorKind::internal, fmt::format("summary of a sample holding {}", v));
  std::sort(s.begin(), s.end());
  Summary r;
  r.n = s.size();
  r.min = s.front();
  r.max = s.back();
  r.median = percentile_sorted(s, 50);
  r.p10 = percentile_sorted(s, 10);
  r.p90 = percentile_sorted(s, 90);
  r.mean = std::accumulate(s.begin(), s.end(), 0.0) / double(r.n);
  if (r.n > 1) {
    double ss = 0;
    for (double v : s) ss += (v - r.mean) * (v - r.mean);
    r.stdev = std::sqrt(ss / double(r.n - 1));
  }
  std::vector<double> dev(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) dev[i] = std::fabs(s[i] - r.median);
  std::sort(dev.begin(), dev.end());
  r.mad = percentile_sorted(dev, 50);
  // 1.4826 = 1 / Phi^-1(3/4): makes the MAD a consistent estimator of sigma for normal data.
  r.rel_noise = r.median != 0 ? 1.4826 * r.mad / std::fabs(r.median) : 0.0;
  return r;
}

json to_json(const Summary& s) {
  return json{{"n", s.n},         {"median", s.median}, {"mean", s.mean},   {"min", s.min},
              {"max", s.max},     {"p10", s.p10},       {"p90", s.p90},     {"stdev", s.stdev},
              {"mad", s.mad},     {"rel_noise", s.rel_noise}};
}

}  // namespace kqual::stats
