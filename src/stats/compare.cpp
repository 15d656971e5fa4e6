#include "kqual/stats/compare.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "kqual/core/enum_names.hpp"
#include "kqual/core/error.hpp"
#include "kqual/stats/summary.hpp"
#include "kqual/core/xoshiro.hpp"

namespace kqual::stats {
namespace {

using Xoshiro = Xoshiro256;  // kqual/core/xoshiro.hpp: a seed reproduces an interval on any platform

constexpr EnumNames<Verdict, 4> kVerdictNames{{{{Verdict::faster, "faster"},
                                               {Verdict::slower, "slower"},
                                               {Verdict::no_difference, "no difference"},
                                               {Verdict::inconclusive, "inconclusive"}}}};

void validate(const BootstrapOptions& o) {
  if (o.resamples < 100) throw_error(ErrorKind::internal, fmt::format("bootstrap needs >= 100 resamples, got {}", o.resamples));
  if (!(o.confidence > 0 && o.confidence < 1))
    throw_error(ErrorKind::internal, fmt::format("confidence level {} outside (0, 1)", o.confidence));
}

void require_finite(std::span<const double> x, const char* what) {
  if (x.empty()) throw_error(ErrorKind::internal, fmt::format("{}: empty sample", what));
  for (double v : x)
    if (!std::isfinite(v)) throw_error(ErrorKind::internal, fmt::format("{}: sample holds {}", what, v));
}

// Median of the first n values of v, reordering v (nth_element, O(n)).
double median_inplace(std::vector<double>& v) {
  const std::size_t n = v.size();
  const std::size_t mid = n / 2;
  std::nth_element(v.begin(), v.begin() + long(mid), v.end());
  const double upper = v[mid];
  if (n % 2) return upper;
  const double lower = *std::max_element(v.begin(), v.begin() + long(mid));
  return 0.5 * (lower + upper);
}

Interval percentile_interval(std::vector<double>& reps, double confidence) {
  std::sort(reps.begin(), reps.end());
  const double tail = (1.0 - confidence) / 2.0 * 100.0;
  return {percentile_sorted(reps, tail), percentile_sorted(reps, 100.0 - tail)};
}

double effect_of(double ma, double mb, Effect e) { return e == Effect::ratio ? mb / ma : mb - ma; }

// Average ranks (1-based) of v, ties sharing the mean rank; returns sum over ties of t^3 - t.
double rank_average(const std::vector<double>& v, std::vector<double>& ranks) {
  const std::size_t n = v.size();
  std::vector<std::size_t> idx(n);
  std::iota(idx.begin(), idx.end(), std::size_t{0});
  std::sort(idx.begin(), idx.end(), [&](std::size_t i, std::size_t j) { return v[i] < v[j]; });
  ranks.assign(n, 0);
  double ties = 0;
  for (std::size_t i = 0; i < n;) {
    std::size_t j = i;
    while (j + 1 < n && v[idx[j + 1]] == v[idx[i]]) ++j;
    const double r = 0.5 * double(i + j) + 1.0;
    for (std::size_t k = i; k <= j; ++k) ranks[idx[k]] = r;
    const double t = double(j - i + 1);
    ties += t * t * t - t;
    i = j + 1;
  }
  return ties;
}

double two_sided_p(double z) { return std::erfc(std::fabs(z) / std::sqrt(2.0)); }

// z with continuity correction: |S - mean| shrunk by 0.5, never past zero.
double corrected_z(double s, double mean, double var) {
  if (var <= 0) return 0;
  const double d = s - mean;
  const double c = std::max(0.0, std::fabs(d) - 0.5);
  return std::copysign(c, d) / std::sqrt(var);
}

}  // namespace

const char* to_string(Verdict v) { return kVerdictNames.name(v, "?"); }

Interval bootstrap_median_ci(std::span<const double> x, const BootstrapOptions& opt) {
  validate(opt);
  require_finite(x, "bootstrap_median_ci");
  Xoshiro rng(opt.seed);
  const std::size_t n = x.size();
  std::vector<double> buf(n), reps(std::size_t(opt.resamples));
  for (auto& r : reps) {
    for (std::size_t i = 0; i < n; ++i) buf[i] = x[rng.index(n)];
    r = median_inplace(buf);
  }
  return percentile_interval(reps, opt.confidence);
}

Interval bootstrap_effect_ci(std::span<const double> a, std::span<const double> b, const TwoSampleOptions& opt) {
  validate(opt.bootstrap);
  require_finite(a, "bootstrap_effect_ci (A)");
  require_finite(b, "bootstrap_effect_ci (B)");
  if (opt.paired && a.size() != b.size())
    throw_error(ErrorKind::internal, fmt::format("paired comparison of samples of sizes {} and {}", a.size(), b.size()));
  if (opt.effect == Effect::ratio)
    for (double v : a)
      if (v <= 0) throw_error(ErrorKind::internal, fmt::format("ratio of medians needs positive baseline values, got {}", v));
  Xoshiro rng(opt.bootstrap.seed);
  std::vector<double> ba(a.size()), bb(b.size()), reps(std::size_t(opt.bootstrap.resamples));
  for (auto& r : reps) {
    if (opt.paired) {
      for (std::size_t i = 0; i < a.size(); ++i) {
        const std::size_t k = rng.index(a.size());
        ba[i] = a[k];
        bb[i] = b[k];
      }
    } else {
      for (auto& v : ba) v = a[rng.index(a.size())];
      for (auto& v : bb) v = b[rng.index(b.size())];
    }
    r = effect_of(median_inplace(ba), median_inplace(bb), opt.effect);
  }
  return percentile_interval(reps, opt.bootstrap.confidence);
}

RankTest mann_whitney_u(std::span<const double> a, std::span<const double> b) {
  require_finite(a, "mann_whitney_u (A)");
  require_finite(b, "mann_whitney_u (B)");
  std::vector<double> pooled(a.begin(), a.end());
  pooled.insert(pooled.end(), b.begin(), b.end());
  std::vector<double> ranks;
  const double ties = rank_average(pooled, ranks);
  const double na = double(a.size()), nb = double(b.size()), n = na + nb;
  double ra = 0;
  for (std::size_t i = 0; i < a.size(); ++i) ra += ranks[i];
  RankTest t;
  t.name = "Mann-Whitney U";
  t.statistic = ra - na * (na + 1) / 2;
  const double mean = na * nb / 2;
  const double var = n > 1 ? na * nb / 12.0 * ((n + 1) - ties / (n * (n - 1))) : 0.0;
  t.z = corrected_z(t.statistic, mean, var);
  t.p_value = var > 0 ? two_sided_p(t.z) : 1.0;
  return t;
}

RankTest wilcoxon_signed_rank(std::span<const double> a, std::span<const double> b) {
  require_finite(a, "wilcoxon_signed_rank (A)");
  require_finite(b, "wilcoxon_signed_rank (B)");
  if (a.size() != b.size())
    throw_error(ErrorKind::internal, fmt::format("signed-rank test of samples of sizes {} and {}", a.size(), b.size()));
  std::vector<double> mag;
  std::vector<bool> pos;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double d = b[i] - a[i];
    if (d == 0) continue;  // zero differences carry no sign (Wilcoxon's original treatment)
    mag.push_back(std::fabs(d));
    pos.push_back(d > 0);
  }
  RankTest t;
  t.name = "Wilcoxon signed-rank";
  const double n = double(mag.size());
  if (mag.empty()) return t;
  std::vector<double> ranks;
  const double ties = rank_average(mag, ranks);
  for (std::size_t i = 0; i < mag.size(); ++i)
    if (pos[i]) t.statistic += ranks[i];
  const double mean = n * (n + 1) / 4;
  const double var = n * (n + 1) * (2 * n + 1) / 24 - ties / 48;
  t.z = corrected_z(t.statistic, mean, var);
  t.p_value = var > 0 ? two_sided_p(t.z) : 1.0;
  return t;
}

Comparison compare(std::span<const double> a, std::span<const double> b, const DecisionOptions& opt) {
  Comparison c;
  c.effect = opt.test.effect;
  c.paired = opt.test.paired;
  c.n_a = a.size();
  c.n_b = b.size();
  c.confidence = opt.test.bootstrap.confidence;
  c.null_value = c.effect == Effect::ratio ? 1.0 : 0.0;
  if (a.empty() || b.empty() || std::min(a.size(), b.size()) < opt.min_samples) {
    c.verdict = Verdict::inconclusive;
    c.reason = fmt::format("too few samples ({} and {}; at least {} per side needed)", a.size(), b.size(), opt.min_samples);
    if (!a.empty()) c.median_a = median(a);
    if (!b.empty()) c.median_b = median(b);
    return c;
  }
  c.median_a = median(a);
  c.median_b = median(b);
  c.estimate = effect_of(c.median_a, c.median_b, c.effect);
  c.ci = bootstrap_effect_ci(a, b, opt.test);
  const double abs_a = std::fabs(c.median_a);
  if (c.effect == Effect::ratio)
    c.margin = std::max(opt.margin.relative, abs_a > 0 ? opt.margin.absolute / abs_a : 0.0);
  else
    c.margin = std::max(opt.margin.relative * abs_a, opt.margin.absolute);
  if (c.paired) {
    if (c.effect == Effect::ratio) {
      // Signed ranks of log(b / a): a ratio effect is a shift on the log scale.
      std::vector<double> la(a.size()), lb(b.size());
      for (std::size_t i = 0; i < a.size(); ++i) {
        la[i] = std::log(a[i]);
        lb[i] = b[i] > 0 ? std::log(b[i]) : -HUGE_VAL;
      }
      for (double v : lb)
        if (!std::isfinite(v)) throw_error(ErrorKind::internal, "ratio comparison needs positive candidate values");
      c.test = wilcoxon_signed_rank(la, lb);
    } else {
      c.test = wilcoxon_signed_rank(a, b);
    }
  } else {
    c.test = mann_whitney_u(a, b);
  }
  const double lo = c.null_value - c.margin, hi = c.null_value + c.margin;
  const char* unit = c.effect == Effect::ratio ? "ratio" : "difference";
  const std::string ci_text = fmt::format("{} {:.4g}, {:.0f} % CI [{:.4g}, {:.4g}]", unit, c.estimate,
                                          c.confidence * 100, c.ci.lo, c.ci.hi);
  if (c.ci.lo >= lo && c.ci.hi <= hi) {
    c.verdict = Verdict::no_difference;
    c.reason = fmt::format("{} lies inside the equivalence margin [{:.4g}, {:.4g}]", ci_text, lo, hi);
  } else if (c.ci.hi < c.null_value || c.ci.lo > c.null_value) {
    const bool faster = c.ci.hi < c.null_value;
    if (c.test.p_value < opt.alpha) {
      c.verdict = faster ? Verdict::faster : Verdict::slower;
      c.reason = fmt::format("{} excludes {:g} and {} p = {:.3g} < {:g}", ci_text, c.null_value, c.test.name,
                             c.test.p_value, opt.alpha);
    } else {
      c.verdict = Verdict::inconclusive;
      c.reason = fmt::format("{} excludes {:g} but {} p = {:.3g} >= {:g}: the two disagree, measure more", ci_text,
                             c.null_value, c.test.name, c.test.p_value, opt.alpha);
    }
  } else {
    c.verdict = Verdict::inconclusive;
    c.reason = fmt::format("{} contains {:g} and reaches outside the equivalence margin [{:.4g}, {:.4g}]: measure more",
                           ci_text, c.null_value, lo, hi);
  }
  if (opt.reversal_check && c.paired && a.size() == b.size() &&
      (c.verdict == Verdict::faster || c.verdict == Verdict::slower)) {
    std::size_t b_ahead = 0, a_ahead = 0;
    for (std::size_t i = 0; i < a.size(); ++i) {
      const double e = effect_of(a[i], b[i], c.effect);
      if (e < lo) ++b_ahead;
      if (e > hi) ++a_ahead;
    }
    if (b_ahead > 0 && a_ahead > 0) {
      c.reason = fmt::format("no reliable difference: the order reversed between runs — B ahead beyond the margin in {} "
                             "of {} pairs, A ahead in {} ({} would have said {})",
                             b_ahead, a.size(), a_ahead, ci_text, to_string(c.verdict));
      c.verdict = Verdict::inconclusive;
    }
  }
  return c;
}

json to_json(const Interval& i) { return json::array({i.lo, i.hi}); }

json to_json(const Comparison& c) {
  return json{{"effect", c.effect == Effect::ratio ? "ratio_of_medians" : "difference_of_medians"},
              {"paired", c.paired},
              {"n_a", c.n_a},
              {"n_b", c.n_b},
              {"median_a", c.median_a},
              {"median_b", c.median_b},
              {"estimate", c.estimate},
              {"ci", to_json(c.ci)},
              {"confidence", c.confidence},
              {"margin", c.margin},
              {"test", {{"name", c.test.name}, {"statistic", c.test.statistic}, {"z", c.test.z}, {"p_value", c.test.p_value}}},
              {"verdict", to_string(c.verdict)},
              {"reason", c.reason}};
}

}  // namespace kqual::stats
