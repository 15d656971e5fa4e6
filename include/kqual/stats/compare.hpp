#pragma once
// Inference on timing samples: seeded bootstrap confidence intervals, rank tests, and the
// equivalence decision that turns "B vs A" into faster / slower / no difference / inconclusive.
// Every rule is written out in docs/statistics.md; tests/stats/ checks them on samples with known
// answers. Convention everywhere: samples are costs (times), lower is better; A is the baseline
// (old), B the candidate (new); effects are B relative to A.
#include <cstdint>
#include <span>
#include <string>

#include "kqual/core/json.hpp"

namespace kqual::stats {

struct Interval {
  double lo = 0;
  double hi = 0;
  bool contains(double v) const { return lo <= v && v <= hi; }
};

struct BootstrapOptions {
  int resamples = 10000;        // bootstrap replicates
  double confidence = 0.95;     // two-sided level of the percentile interval
  std::uint64_t seed = 0x6b7175616cull;  // same seed + same data = same interval, bit for bit
};

// Percentile-bootstrap confidence interval of the median of one sample.
// Throws Error(internal) on an empty sample or invalid options.
Interval bootstrap_median_ci(std::span<const double> x, const BootstrapOptions& opt = {});

enum class Effect {
  ratio,       // median(B) / median(A): 0.9 = B takes 10 % less time
  difference,  // median(B) - median(A), in the samples' unit: negative = B takes less time
};

// Paired: a[i] and b[i] were measured together (same round, same process, interleaved); the
// bootstrap then resamples pairs jointly, which keeps the drift shared by a pair out of the
// interval. The estimand is the same either way (ratio or difference of the two medians); paired
// requires equal sizes.
struct TwoSampleOptions {
  Effect effect = Effect::ratio;
  bool paired = false;
  BootstrapOptions bootstrap{};
};

struct RankTest {
  std::string name;     // "Mann-Whitney U" or "Wilcoxon signed-rank"
  double statistic = 0; // U of sample A (unpaired) or W+ (paired)
  double z = 0;         // normal approximation, tie- and continuity-corrected
  double p_value = 1;   // two-sided
};

// Two-sided Mann-Whitney U test (normal approximation with tie correction and continuity
// correction; adequate from about 8 samples per side). p = 1 when all values are equal.
RankTest mann_whitney_u(std::span<const double> a, std::span<const double> b);
// Two-sided Wilcoxon signed-rank test on d[i] = b[i] - a[i] (zeros dropped, Pratt not applied;
// normal approximation with tie and continuity correction). Sizes must match.
RankTest wilcoxon_signed_rank(std::span<const double> a, std::span<const double> b);

// How close counts as "the same". The margin, in the effect's unit, is
//   ratio:      max(relative, absolute / |median(A)|)      around 1
//   difference: max(relative * |median(A)|, absolute)      around 0
// so `absolute` is a noise floor in the samples' unit (e.g. 0.5 ms for a module load).
struct EquivalenceMargin {
  double relative = 0.02;
  double absolute = 0.0;
};

enum class Verdict { faster, slower, no_difference, inconclusive };
const char* to_string(Verdict v);  // "faster", "slower", "no difference", "inconclusive"

struct DecisionOptions {
  TwoSampleOptions test{};
  EquivalenceMargin margin{};
  double alpha = 0.05;          // rank test level required to call faster / slower
  std::size_t min_samples = 5;  // per side; fewer → inconclusive
  // Paired runs (a[i], b[i] measured together, e.g. one pair of fresh processes): when some pairs
  // put B ahead and others put A ahead, each beyond the margin, the order reversed between runs and
  // a faster/slower call is not reliable — the verdict becomes inconclusive ("no reliable
  // difference") whatever the interval says.
  bool reversal_check = false;
};

struct Comparison {
  Effect effect = Effect::ratio;
  bool paired = false;
  std::size_t n_a = 0, n_b = 0;
  double median_a = 0, median_b = 0;
  double estimate = 0;        // ratio or difference of medians
  Interval ci;                // bootstrap interval of the estimate
  double confidence = 0.95;
  double null_value = 1;      // 1 for a ratio, 0 for a difference
  double margin = 0;          // effective margin, in the estimate's unit (see EquivalenceMargin)
  RankTest test;
  Verdict verdict = Verdict::inconclusive;
  std::string reason;         // one sentence: which rule fired, with the numbers
};

// The decision rule (docs/statistics.md, "Equivalence decision"), first match wins:
//   1. fewer than min_samples on a side                → inconclusive
//   2. CI inside [null - margin, null + margin]        → no difference (even if "significant")
//   3. CI entirely below null and rank p < alpha       → faster
//   4. CI entirely above null and rank p < alpha       → slower
//   5. otherwise                                       → inconclusive (reason says which check failed)
Comparison compare(std::span<const double> a, std::span<const double> b, const DecisionOptions& opt = {});

// The interval of the effect alone (no test, no verdict).
Interval bootstrap_effect_ci(std::span<const double> a, std::span<const double> b, const TwoSampleOptions& opt);

json to_json(const Interval& i);
json to_json(const Comparison& c);

}  // namespace kqual::stats
