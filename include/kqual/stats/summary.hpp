#pragma once
// Descriptive statistics of one sample (timings, in whatever unit the caller uses).
// Definitions are fixed and documented in docs/statistics.md so that every number in a report can
// be recomputed by hand from the raw samples kept next to it.
#include <cstddef>
#include <span>
#include <vector>

#include "kqual/core/json.hpp"

namespace kqual::stats {

// Percentile p in [0, 100] of an ascending-sorted sample: linear interpolation between closest
// ranks, h = (n - 1) * p / 100, x[floor h] + (h - floor h) * (x[floor h + 1] - x[floor h])
// (Hyndman & Fan type 7, NumPy's and R's default). Throws Error(internal) on an empty sample or p
// outside [0, 100].
double percentile_sorted(std::span<const double> sorted, double p);
// Same, on an unsorted sample (copied and sorted).
double percentile(std::span<const double> sample, double p);
// The 50th percentile (mean of the two middle values for even n).
double median(std::span<const double> sample);

struct Summary {
  std::size_t n = 0;
  double median = 0;
  double mean = 0;
  double min = 0;
  double max = 0;
  double p10 = 0;
  double p90 = 0;
  double stdev = 0;      // sample standard deviation (n - 1 in the denominator); 0 for n = 1
  double mad = 0;        // median absolute deviation from the median, unscaled
  double rel_noise = 0;  // robust relative noise: 1.4826 * MAD / |median| (≈ stdev / mean for a
                         // normal sample); 0 when the median is 0
};

// Throws Error(internal) on an empty sample or a non-finite value.
Summary summarize(std::span<const double> sample);
json to_json(const Summary& s);

}  // namespace kqual::stats
