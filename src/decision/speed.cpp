#include "kqual/decision/speed.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "kqual/core/enum_names.hpp"
#include "kqual/core/error.hpp"
#include "kqual/core/xoshiro.hpp"
#include "kqual/decision/profile.hpp"
#include "kqual/stats/summary.hpp"

namespace kqual::decision {
namespace {

constexpr EnumNames<ShapeCall, 6> kShapeCallNames{{{{ShapeCall::faster, "faster"},
                                                   {ShapeCall::slower, "slower"},
                                                   {ShapeCall::no_difference, "no_difference"},
                                                   {ShapeCall::inconclusive, "inconclusive"},
                                                   {ShapeCall::not_compared, "not_compared"},
                                                   {ShapeCall::failed, "failed"}}}};

// "n=4096,k=3" and "k=3, n=4096" name the same shape; a bare number is a one-dim contract's n.
std::map<std::string, std::string> shape_key(const std::string& text) {
  std::map<std::string, std::string> out;
  std::size_t i = 0;
  while (i <= text.size()) {
    std::size_t j = text.find(',', i);
    if (j == std::string::npos) j = text.size();
    std::string part = text.substr(i, j - i);
    part.erase(std::remove(part.begin(), part.end(), ' '), part.end());
    if (!part.empty()) {
      const auto eq = part.find('=');
      if (eq == std::string::npos) out["n"] = part;
      else out[part.substr(0, eq)] = part.substr(eq + 1);
    }
    i = j + 1;
  }
  return out;
}

double median_inplace(std::vector<double>& v) {
  const std::size_t h = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + std::ptrdiff_t(h), v.end());
  const double hi = v[h];
  if (v.size() % 2) return hi;
  return 0.5 * (hi + *std::max_element(v.begin(), v.begin() + std::ptrdiff_t(h)));
}

stats::Interval percentile_interval(std::vector<double>& reps, double confidence) {
  std::sort(reps.begin(), reps.end());
  const double tail = (1 - confidence) / 2;
  auto at = [&](double q) {
    const double pos = q * double(reps.size() - 1);
    const std::size_t k = std::size_t(pos);
    const double f = pos - double(k);
    return k + 1 < reps.size() ? reps[k] * (1 - f) + reps[k + 1] * f : reps[k];
  };
  return {at(tail), at(1 - tail)};
}

std::string pct(double fraction) { return fmt::format("{:.1f} %", 100 * fraction); }
std::string us(double s) { return fmt::format("{:.2f} us", s * 1e6); }

// The shape's row: margins, the call on its CI, the regression limit.
void judge_row(ShapeJudgement& j, const ShapeSamples& s, const SpeedPolicy& p) {
  j.baseline_median_s = stats::median(s.baseline_ms) * 1e-3;
  j.candidate_median_s = stats::median(s.candidate_ms) * 1e-3;
  j.ratio = j.candidate_median_s / j.baseline_median_s;
  stats::TwoSampleOptions t;
  t.effect = stats::Effect::ratio;
  t.bootstrap = p.bootstrap;
  j.ci = stats::bootstrap_effect_ci(s.baseline_ms, s.candidate_ms, t);
  const double floor = p.margin_absolute_s / j.baseline_median_s;
  j.margin = std::max(p.margin_relative, floor);
  j.limit = std::max(p.regression_limit, floor);
  const double diff_s = j.candidate_median_s - j.baseline_median_s;
  const std::string ci = fmt::format("ratio {:.3f}, CI [{:.3f}, {:.3f}]", j.ratio, j.ci.lo, j.ci.hi);
  const std::string margin_words =
      floor > p.margin_relative ? fmt::format("{} ({} of {})", pct(j.margin), us(p.margin_absolute_s), us(j.baseline_median_s))
                                : pct(j.margin);
  if (j.ci.hi < 1 - j.margin) {
    j.call = ShapeCall::faster;
    j.sentence = fmt::format("faster beyond the {} margin ({}; {} saved per call)", margin_words, ci, us(-diff_s));
  } else if (j.ci.lo > 1 + j.margin) {
    j.call = ShapeCall::slower;
    j.sentence = fmt::format("slower beyond the {} margin ({}; {} more per call)", margin_words, ci, us(diff_s));
  } else if (j.ci.lo >= 1 - j.margin && j.ci.hi <= 1 + j.margin) {
    j.call = ShapeCall::no_difference;
    j.sentence = fmt::format("no difference: the CI lies inside ±{} ({}; {} per call)", margin_words, ci,
                             diff_s >= 0 ? "+" + us(diff_s) : "-" + us(-diff_s));
  } else {
    j.call = ShapeCall::inconclusive;
    j.sentence = fmt::format("inconclusive: the CI crosses the {} margin ({})", margin_words, ci);
  }
  j.beyond_limit = j.ci.lo > 1 + j.limit;
  j.may_exceed_limit = j.ci.hi > 1 + j.limit;
}

// Weighted geometric mean of the ratios and its bootstrap CI (each shape's two sides resampled
// independently, the weights held at their point values).
void overall_effect(SpeedJudgement& out, const std::vector<const ShapeSamples*>& src) {
  OverallEffect& o = out.overall;
  double log_r = 0, log_m = 0;
  std::vector<std::size_t> idx;
  for (std::size_t i = 0; i < out.shapes.size(); ++i) {
    const ShapeJudgement& j = out.shapes[i];
    if (j.weight <= 0 || !src[i]) continue;
    idx.push_back(i);
    log_r += j.weight * std::log(j.ratio);
    log_m += j.weight * std::log1p(j.margin);
  }
  if (idx.empty()) {
    o.why_not = "no shape of the mix was compared with a baseline";
    return;
  }
  o.computed = true;
  o.ratio = std::exp(log_r);
  o.margin = std::expm1(log_m);
  Xoshiro256 rng(out.policy.bootstrap.seed ^ 0x6f766572616c6cull);
  std::vector<double> reps(std::size_t(std::max(out.policy.bootstrap.resamples, 100)));
  std::vector<double> a, b;
  for (double& r : reps) {
    double acc = 0;
    for (std::size_t i : idx) {
      const ShapeSamples& s = *src[i];
      a.resize(s.baseline_ms.size());
      b.resize(s.candidate_ms.size());
      for (double& v : a) v = s.baseline_ms[rng.index(s.baseline_ms.size())];
      for (double& v : b) v = s.candidate_ms[rng.index(s.candidate_ms.size())];
      acc += out.shapes[i].weight * std::log(median_inplace(b) / median_inplace(a));
    }
    r = std::exp(acc);
  }
  o.ci = percentile_interval(reps, out.policy.bootstrap.confidence);
}

// The first shape for which `holds` is true; nullptr when none.
template <class Pred>
const ShapeJudgement* first_shape(const SpeedJudgement& j, Pred holds) {
  const auto it = std::find_if(j.shapes.begin(), j.shapes.end(), holds);
  return it == j.shapes.end() ? nullptr : &*it;
}

// A verdict and the sentence that decided it.
struct Decided {
  std::string verdict, deciding;
};

// The verdict (rules 1-8 of judge_speed's comment) and the sentence that decided it.
Decided decided_verdict(const SpeedJudgement& j) {
  if (const ShapeJudgement* s = first_shape(j, [](const ShapeJudgement& x) { return x.call == ShapeCall::failed; }))
    return {"do_not_ship", fmt::format("At {} the candidate failed or was wrong while being timed.", s->shape)};
  std::vector<std::string> missing;
  for (const auto& s : j.shapes)
    if (s.call == ShapeCall::not_compared && (s.calls > 0 || !j.mix.from_profile))
      missing.push_back(s.sentence.rfind("not timed", 0) == 0 ? s.shape + " (" + s.sentence + ")" : s.shape);
  for (const auto& [shape, calls] : j.mix.calls) {
    const auto key = shape_key(shape);
    if (std::none_of(j.shapes.begin(), j.shapes.end(), [&](const ShapeJudgement& s) { return shape_key(s.shape) == key; }))
      missing.push_back(shape + " (in the profile, not timed)");
  }
  if (!missing.empty())
    return {"incomplete", fmt::format("Not every shape of the deployment's mix was compared with a valid baseline ({}): no speed "
                                      "claim covers the mix.",
                                      fmt::format("{}", fmt::join(missing, ", ")))};
  if (const ShapeJudgement* s = first_shape(j, [](const ShapeJudgement& x) { return x.weight > 0 && x.beyond_limit; }))
    return {"do_not_ship", fmt::format("{} is {} slower (CI [{:.3f}, {:.3f}]), beyond the {} regression limit: no average makes up "
                                       "for a shape the deployment calls getting that much slower.",
                                       s->shape, pct(s->ratio - 1), s->ci.lo, s->ci.hi, pct(s->limit))};
  const OverallEffect& o = j.overall;
  const std::string overall = fmt::format("the {}-weighted geometric mean time ratio is {:.3f} (CI [{:.3f}, {:.3f}])",
                                          j.mix.from_profile ? "profile" : "time", o.ratio, o.ci.lo, o.ci.hi);
  if (o.ci.lo > 1 + o.margin) return {"do_not_ship", fmt::format("Slower overall: {}, wholly above 1 + {}.", overall, pct(o.margin))};
  if (const ShapeJudgement* s = first_shape(j, [](const ShapeJudgement& x) { return x.weight > 0 && x.may_exceed_limit; }))
    return {"inconclusive", fmt::format("{} may be more than {} slower (CI reaches {:.3f}): {}, but ship needs every shape of the "
                                        "mix under the regression limit.",
                                        s->shape, pct(s->limit), s->ci.hi, overall)};
  if (o.ci.hi < 1 - o.margin)
    return {"ship", fmt::format("Faster overall: {}, wholly below 1 − {}, and no shape of the mix can be past its regression limit.",
                                overall, pct(o.margin))};
  if (o.ci.lo >= 1 - o.margin && o.ci.hi <= 1 + o.margin)
    return {"no_difference", fmt::format("No difference that matters: {}, inside ±{}.", overall, pct(o.margin))};
  return {"inconclusive", fmt::format("Inconclusive: {}, which crosses the ±{} margin.", overall, pct(o.margin))};
}

// ---- "what would reverse it": the verdict re-judged on the CI under one changed figure ----

// The verdict with shape k's weight set to w, the other weighted shapes keeping their relative
// weights: the overall effect and its CI recomputed (its margin too, which follows the weights).
std::string verdict_at_weight(const SpeedJudgement& j, const std::vector<const ShapeSamples*>& src, std::size_t k, double w) {
  SpeedJudgement t = j;
  const double rest = 1 - j.shapes[k].weight;
  for (std::size_t i = 0; i < t.shapes.size(); ++i)
    if (t.shapes[i].weight > 0) t.shapes[i].weight = i == k ? w : t.shapes[i].weight * (1 - w) / rest;
  t.overall = OverallEffect{};
  overall_effect(t, src);
  return decided_verdict(t).verdict;
}

// The verdict with shape k's candidate samples scaled by f (its time ratio f times what it is), the
// other shapes unchanged: the row, the overall effect and their CIs recomputed.
std::string verdict_at_scale(const SpeedJudgement& j, const std::vector<const ShapeSamples*>& src, std::size_t k, double f) {
  ShapeSamples scaled = *src[k];
  for (double& v : scaled.candidate_ms) v *= f;
  std::vector<const ShapeSamples*> moved = src;
  moved[k] = &scaled;
  SpeedJudgement t = j;
  judge_row(t.shapes[k], scaled, t.policy);
  t.overall = OverallEffect{};
  overall_effect(t, moved);
  return decided_verdict(t).verdict;
}

// The point between `from` (where the verdict is `now`) and `to` at which it first changes, and what
// it changes to; nullopt when it is still `now` at `to`. Bisection (geometric for scales), 14 steps:
// the verdict is monotone in a weight or a scale.
struct Flip {
  double at;
  std::string to;
};
template <class At>
std::optional<Flip> flip_point(double from, double to, bool geometric, const std::string& now, At verdict_at) {
  std::string end = verdict_at(to);
  if (end == now) return std::nullopt;
  double lo = from, hi = to;
  for (int step = 0; step < 14; ++step) {
    const double mid = geometric ? std::sqrt(lo * hi) : 0.5 * (lo + hi);
    std::string v = verdict_at(mid);
    if (v == now) lo = mid;
    else {
      hi = mid;
      end = std::move(v);
    }
  }
  return Flip{hi, end};
}

std::string words(const std::string& verdict) {
  if (verdict == "do_not_ship") return "do not ship";
  if (verdict == "no_difference") return "no difference";
  return verdict;
}

std::size_t heaviest(const SpeedJudgement& j) {
  std::size_t k = 0;
  for (std::size_t i = 1; i < j.shapes.size(); ++i)
    if (j.shapes[i].weight > j.shapes[k].weight) k = i;
  return k;
}

// The heaviest shape's ratio that would change the verdict (scaled up or down), re-judged on the CI.
void reverse_by_ratio(SpeedJudgement& j, const std::vector<const ShapeSamples*>& src, double to) {
  const std::size_t k = heaviest(j);
  if (!src[k] || j.shapes[k].weight <= 0) return;
  const auto f = flip_point(1.0, to, true, j.verdict, [&](double x) { return verdict_at_scale(j, src, k, x); });
  if (!f) return;
  const ShapeJudgement& s = j.shapes[k];
  j.would_reverse.push_back(fmt::format("e.g. {} (weight {}) at a time ratio of {:.3f} or {} instead of {:.3f}, the other shapes "
                                        "unchanged: {} (the rule re-applied to its CI)",
                                        s.shape, pct(s.weight), s.ratio * f->at, to > 1 ? "more" : "less", s.ratio, words(f->to)));
}

// A coherent "what would reverse it" for each verdict, following the rule that decided it, each
// figure found by re-judging (CIs, margins and weights recomputed), not from point estimates.
void reversals(SpeedJudgement& j, const std::vector<const ShapeSamples*>& src) {
  auto& w = j.would_reverse;
  const OverallEffect& o = j.overall;
  if (j.verdict == "ship") {
    w.push_back(fmt::format("the overall time ratio's CI reaching 1 − {} = {:.3f} (its upper end is now {:.3f}) would make it no "
                            "longer a clear win",
                            pct(o.margin), 1 - o.margin, o.ci.hi));
    reverse_by_ratio(j, src, 4.0);
    for (std::size_t i = 0; i < j.shapes.size(); ++i) {
      const ShapeJudgement& s = j.shapes[i];
      if (s.weight > 0 && s.ratio > 1)
        w.push_back(fmt::format("{}: its CI reaching above 1 + {} = {:.3f} (now up to {:.3f}) would block it (regression limit)",
                                s.shape, pct(s.limit), 1 + s.limit, s.ci.hi));
      // More weight on a shape that gains less than the whole: the weight at which the verdict changes.
      if (s.weight > 0 && s.weight < 1 && src[i] && s.ratio > o.ratio)
        if (const auto f = flip_point(s.weight, 0.999, false, j.verdict, [&](double x) { return verdict_at_weight(j, src, i, x); }))
          w.push_back(fmt::format("a profile in which {} takes {} or more of the time (now {}): {}", s.shape, pct(f->at),
                                  pct(s.weight), words(f->to)));
    }
  } else if (j.verdict == "do_not_ship") {
    // Decided by a shape that failed while timed: only a run without that failure reverses it.
    if (const auto it = std::find_if(j.shapes.begin(), j.shapes.end(), [](const ShapeJudgement& x) { return x.call == ShapeCall::failed; });
        it != j.shapes.end()) {
      w.push_back(fmt::format("a run in which {} is timed without failing ({}); the speed rule then decides", it->shape, it->sentence));
      return;
    }
    bool by_limit = false;
    for (const auto& s : j.shapes)
      if (s.beyond_limit && s.weight > 0) {
        by_limit = true;
        w.push_back(fmt::format("{}: a time ratio whose CI's lower end is under 1 + {} = {:.3f} (now {:.3f}), or a deployment "
                                "that does not call this shape (weight now {})",
                                s.shape, pct(s.limit), 1 + s.limit, s.ci.lo, pct(s.weight)));
      }
    if (!by_limit && o.computed) {
      w.push_back(fmt::format("the overall time ratio's CI reaching below 1 + {} = {:.3f} (its lower end is now {:.3f})",
                              pct(o.margin), 1 + o.margin, o.ci.lo));
      reverse_by_ratio(j, src, 0.25);
    }
  } else if (j.verdict == "no_difference") {
    w.push_back(fmt::format("an overall time ratio whose CI lies wholly below {:.3f} (ship) or above {:.3f} (do not ship); now "
                            "[{:.3f}, {:.3f}]",
                            1 - o.margin, 1 + o.margin, o.ci.lo, o.ci.hi));
  } else if (j.verdict == "inconclusive") {
    bool named = false;
    for (const auto& s : j.shapes)
      if (s.weight > 0 && s.may_exceed_limit && !s.beyond_limit) {
        named = true;
        w.push_back(fmt::format("{}: more samples (--rounds, --samples) narrowing its CI under 1 + {} = {:.3f} (now up to {:.3f}) "
                                "would let the overall effect decide; a CI wholly above it would block",
                                s.shape, pct(s.limit), 1 + s.limit, s.ci.hi));
      }
    if (!named && o.computed) {
      // Which side of the margin the CI straddles says which outcome more samples can give.
      std::vector<std::string> sides;
      if (o.ci.lo < 1 - o.margin) sides.push_back(fmt::format("wholly below {:.3f} ships", 1 - o.margin));
      if (o.ci.hi > 1 + o.margin) sides.push_back(fmt::format("wholly above {:.3f} is do not ship", 1 + o.margin));
      sides.push_back(fmt::format("inside ±{} is no difference", pct(o.margin)));
      w.push_back(fmt::format("more samples narrowing the overall CI [{:.3f}, {:.3f}] to one side of the margin: {}", o.ci.lo, o.ci.hi,
                              fmt::join(sides, "; ")));
    }
  } else if (j.verdict == "incomplete") {
    w.push_back("timing every shape of the deployment's mix against a baseline that passes its own check");
  }
}

void decide(SpeedJudgement& j) {
  Decided d = decided_verdict(j);
  j.verdict = std::move(d.verdict);
  j.deciding = std::move(d.deciding);
}

}  // namespace

const char* to_string(ShapeCall c) { return kShapeCallNames.name(c, "?"); }

std::optional<ShapeCall> shape_call_from_string(std::string_view s) { return kShapeCallNames.parse(s); }

ShapeMix shape_mix_of(const DeploymentProfile& p) {
  ShapeMix m;
  m.profile = p.name;
  m.from_profile = !p.shape_calls.empty();
  m.calls = p.shape_calls;
  return m;
}

SpeedJudgement judge_speed(const std::vector<ShapeSamples>& shapes, const ShapeMix& mix, const SpeedPolicy& policy) {
  SpeedJudgement out;
  out.policy = policy;
  out.mix = mix;
  std::vector<const ShapeSamples*> src;
  for (const auto& s : shapes) {
    ShapeJudgement j;
    j.shape = s.shape;
    j.baseline = s.baseline;
    if (!mix.from_profile) {
      j.calls = 1;
    } else {
      const auto key = shape_key(s.shape);
      for (const auto& [name, calls] : mix.calls)
        if (shape_key(name) == key) j.calls = calls;
    }
    const ShapeSamples* used = nullptr;
    if (!s.failure.empty()) {
      j.call = ShapeCall::failed;
      j.sentence = "failed while timed: " + s.failure;
    } else if (!s.not_timed.empty()) {
      j.call = ShapeCall::not_compared;
      j.sentence = "not timed (not the candidate's failure): " + s.not_timed;
    } else if (s.baseline.empty() || s.baseline_ms.empty() || s.candidate_ms.empty()) {
      j.call = ShapeCall::not_compared;
      j.sentence = "not compared: no baseline that passed its own check was timed here";
    } else {
      judge_row(j, s, policy);
      used = &s;
    }
    if (j.calls == 0 && j.call != ShapeCall::failed) j.sentence += " (not in the profile's mix: reported, not weighed)";
    out.shapes.push_back(std::move(j));
    src.push_back(used);
  }
  // Weights: calls x the baseline's time, normalised over the compared shapes of the mix.
  double total = 0;
  for (std::size_t i = 0; i < out.shapes.size(); ++i)
    if (src[i]) total += out.shapes[i].calls * out.shapes[i].baseline_median_s;
  for (std::size_t i = 0; i < out.shapes.size(); ++i)
    if (src[i] && total > 0) out.shapes[i].weight = out.shapes[i].calls * out.shapes[i].baseline_median_s / total;
  overall_effect(out, src);
  decide(out);
  reversals(out, src);
  for (const auto& s : out.shapes)
    if (s.weight > 0 && s.call == ShapeCall::slower && !s.may_exceed_limit)
      out.notes.push_back(fmt::format("{} is slower beyond its margin ({:.3f}, CI [{:.3f}, {:.3f}]) but within the {} regression "
                                      "limit; it weighs {} of the deployment's time",
                                      s.shape, s.ratio, s.ci.lo, s.ci.hi, pct(s.limit), pct(s.weight)));
  return out;
}

}  // namespace kqual::decision
