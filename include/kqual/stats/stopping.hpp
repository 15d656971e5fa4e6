#pragma once
// When to stop taking timing samples: the stopping rule every timed measurement uses (the worker's
// bench loop applies it sample by sample; docs/statistics.md).
#include <span>
#include <string>

namespace kqual::stats {

struct StoppingRule {
  int min_samples = 20;            // never stop before this many
  int max_samples = 1000;          // always stop at this many
  double max_seconds = 5.0;        // [s] stop once past this (and past min_samples)
  double target_rel_noise = 0.005; // stop when the median's relative standard error is below this
};

// "" = keep sampling; else why to stop: "max_samples", "noise_target" or "time_cap".
// The noise is robust: the interquartile range / 1.349 (a normal sigma) over the median, divided by
// sqrt(n) — the relative standard error of the median's location, insensitive to the odd outlier.
std::string stop_reason(const StoppingRule& rule, std::span<const double> samples, double elapsed_s);

// The relative noise stop_reason compares with target_rel_noise (0 for fewer than 2 samples).
double relative_noise(std::span<const double> samples);

}  // namespace kqual::stats
