#include "kqual/decision/decision.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "kqual/core/enum_names.hpp"
#include "kqual/core/error.hpp"
#include "kqual/core/exit_codes.hpp"
#include "kqual/model/amdahl.hpp"
#include "kqual/model/units.hpp"
#include "kqual/stats/summary.hpp"

namespace kqual::decision {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// The results word of each verdict, and the phrase a memo uses for it.
constexpr EnumNames<ShipVerdict, 5> kShipVerdictNames{{{{ShipVerdict::ship, "ship"},
                                                       {ShipVerdict::do_not_ship, "do_not_ship"},
                                                       {ShipVerdict::no_difference, "no_difference"},
                                                       {ShipVerdict::inconclusive, "inconclusive"},
                                                       {ShipVerdict::incomplete, "incomplete"}}}};
constexpr EnumNames<ShipVerdict, 5> kShipVerdictPhrases{{{{ShipVerdict::ship, "ship"},
                                                         {ShipVerdict::do_not_ship, "do not ship as built"},
                                                         {ShipVerdict::no_difference, "no difference"},
                                                         {ShipVerdict::inconclusive, "inconclusive"},
                                                         {ShipVerdict::incomplete, "incomplete (no decision)"}}}};

// Seconds in the unit a reader expects for their size (min, h and days past a minute: a loss of
// 2.21e+05 s reads as 61.4 h).
std::string dur(double s) {
  const double a = std::fabs(s);
  if (a >= 60.0) return model::format_seconds(s);
  if (a >= 1.0) return fmt::format("{:.3g} s", s);
  if (a >= 1e-3) return fmt::format("{:.3g} ms", s * 1e3);
  if (a >= 1e-6) return fmt::format("{:.3g} µs", s * 1e6);
  return fmt::format("{:.3g} ns", s * 1e9);
}
// "61.389 h net (interval [61.380 h, 61.400 h])": one unit, decimals enough for the width to show.
std::string net_text(double point, double lo, double hi) {
  const model::SecondsTriple t = model::format_seconds_interval(point, lo, hi);
  return fmt::format("{} net (interval [{}, {}])", t.point, t.lo, t.hi);
}
// "12 ms → 15 ms, change 3 ms [2.5 ms, 3.5 ms] (slower)": a measured change with its interval.
std::string change_text(double before_s, double after_s, double delta_s, const stats::Interval& ci, stats::Verdict v) {
  return fmt::format("{} → {}, change {} [{}, {}] ({})", dur(before_s), dur(after_s), dur(delta_s), dur(ci.lo), dur(ci.hi),
                     stats::to_string(v));
}
std::string calls_text(double c) {
  if (std::isinf(c)) return "never";
  return c < 1e6 ? fmt::format("{:.0f}", std::ceil(c)) : fmt::format("{:.3g}", c);
}

struct Effective {
  double point = 0;
  stats::Interval ci;
};
// Rule 0: a difference inside the equivalence margin is no difference, interval included.
Effective effective(stats::Verdict v, double point, stats::Interval ci) {
  if (v == stats::Verdict::no_difference) return {0.0, {0.0, 0.0}};
  return {point, ci};
}

struct Core {
  ShipVerdict verdict = ShipVerdict::inconclusive;
  std::string why;
  bool budget_fired = false;
  Effective cold, warm;
  double net = 0;
  stats::Interval net_ci;
};

Core evaluate(const ColdStartDelta& cold, const WarmDelta& warm, const DeploymentProfile& p, bool ignore_budget) {
  Core c;
  c.cold = effective(cold.verdict, cold.delta_s, cold.delta_ci_s);
  c.warm = effective(warm.verdict, warm.delta_s, warm.delta_ci_s);
  const double n = p.calls_per_process;
  c.net = c.cold.point + n * c.warm.point;
  c.net_ci = {c.cold.ci.lo + n * c.warm.ci.lo, c.cold.ci.hi + n * c.warm.ci.hi};
  if (!ignore_budget && p.first_request_budget_ms) {
    const double budget_s = *p.first_request_budget_ms * 1e-3;
    if (cold.new_first_request_s > budget_s && cold.old_first_request_s <= budget_s) {
      c.verdict = ShipVerdict::do_not_ship;
      c.budget_fired = true;
      c.why = fmt::format("the first request would take {} (median, JIT cache {}), over the {} budget the old build met ({})",
                          dur(cold.new_first_request_s), to_string(cold.mode), dur(budget_s), dur(cold.old_first_request_s));
      return c;
    }
  }
  if (cold.verdict == stats::Verdict::no_difference && warm.verdict == stats::Verdict::no_difference) {
    c.verdict = ShipVerdict::no_difference;
    c.why = "neither the first-request time nor the warm time per call differs beyond the equivalence margin";
  } else if (!cold.too_few.empty() || !warm.too_few.empty()) {
    // Nothing was estimated on a side: its [0, 0] would read as a measured nothing (and a cold cost of
    // none could let a warm gain ship).
    c.verdict = ShipVerdict::inconclusive;
    std::vector<std::string> parts;
    if (!cold.too_few.empty()) parts.push_back("first request: " + cold.too_few);
    if (!warm.too_few.empty()) parts.push_back("warm time: " + warm.too_few);
    c.why = fmt::format("too few fresh processes to estimate a difference ({}): measure more", fmt::join(parts, "; "));
  } else if (c.net_ci.hi < 0) {
    c.verdict = ShipVerdict::ship;
    c.why = fmt::format("each process saves {} over {} calls", net_text(-c.net, -c.net_ci.hi, -c.net_ci.lo), calls_text(n));
  } else if (c.net_ci.lo > 0) {
    c.verdict = ShipVerdict::do_not_ship;
    c.why = fmt::format("each process loses {} over {} calls", net_text(c.net, c.net_ci.lo, c.net_ci.hi), calls_text(n));
  } else {
    c.verdict = ShipVerdict::inconclusive;
    const model::SecondsTriple t = model::format_seconds_interval(c.net, c.net_ci.lo, c.net_ci.hi);
    c.why = fmt::format("the net cost per process, {} with interval [{}, {}], could have either sign: measure more", t.point,
                        t.lo, t.hi);
  }
  return c;
}

const ColdStartDelta* find_mode(const DecisionInput& in, CacheMode m) {
  for (const auto& c : in.cold)
    if (c.mode == m) return &c;
  return nullptr;
}

// stats::compare's first rule: fewer than `least` samples on a side estimate nothing.
std::string too_few(std::size_t a, std::size_t b, std::size_t least) {
  if (std::min(a, b) >= least) return "";
  return fmt::format("{} and {} samples; at least {} per side needed", a, b, least);
}

double breakeven(double cold, double saving) {
  const model::Breakeven b = model::breakeven_calls(cold, saving);
  return b.never ? kInf : b.calls;
}

}  // namespace

const char* to_string(ShipVerdict v) { return kShipVerdictNames.name(v, "?"); }

const char* describe(ShipVerdict v) { return kShipVerdictPhrases.name(v, "?"); }

std::optional<ShipVerdict> ship_verdict_from_string(const std::string& s) { return kShipVerdictNames.parse(s); }

int exit_code(ShipVerdict v) {
  switch (v) {
    case ShipVerdict::ship:
    case ShipVerdict::no_difference: return kExitPass;
    case ShipVerdict::do_not_ship:
    case ShipVerdict::inconclusive: return kExitFail;
    case ShipVerdict::incomplete: return kExitIncomplete;
  }
  return kExitInternal;
}

ColdStartDelta cold_start_delta(CacheMode mode, std::span<const double> old_first, std::span<const double> new_first,
                                std::span<const double> old_delta, std::span<const double> new_delta,
                                const stats::DecisionOptions& opt) {
  stats::DecisionOptions o = opt;
  o.test.effect = stats::Effect::difference;
  const stats::Comparison c = stats::compare(old_delta, new_delta, o);
  ColdStartDelta d;
  d.mode = mode;
  d.old_first_request_s = stats::median(old_first);
  d.new_first_request_s = stats::median(new_first);
  d.delta_s = c.estimate;
  d.delta_ci_s = c.ci;
  d.verdict = c.verdict;
  d.too_few = too_few(old_delta.size(), new_delta.size(), o.min_samples);
  return d;
}

WarmDelta warm_delta(std::span<const double> old_s, std::span<const double> new_s, const stats::DecisionOptions& opt) {
  stats::DecisionOptions o = opt;
  o.test.effect = stats::Effect::difference;
  const stats::Comparison c = stats::compare(old_s, new_s, o);
  WarmDelta d;
  d.old_per_call_s = c.median_a;
  d.new_per_call_s = c.median_b;
  d.delta_s = c.estimate;
  d.delta_ci_s = c.ci;
  d.verdict = c.verdict;
  d.too_few = too_few(old_s.size(), new_s.size(), o.min_samples);
  return d;
}

Decision decide(const DecisionInput& in, const DeploymentProfile& p) {
  if (in.cold.empty()) throw_error(ErrorKind::input, "ship decision: no cold-start measurement given");
  Decision d;
  // The profile's cache mode measured and failed on a side: nothing measures the first request the
  // profile decides on, and another mode is no stand-in for a failure.
  for (const auto& [mode, who] : in.failed_modes)
    if (mode == p.jit_cache && !find_mode(in, p.jit_cache)) {
      d.verdict = ShipVerdict::incomplete;
      d.cache_mode = mode;
      d.headline = fmt::format("No first-request measurement in JIT cache mode '{}', the mode profile '{}' decides in: {}; no "
                               "other mode stands in for it.",
                               to_string(mode), p.name, who);
      d.reasons.push_back(d.headline);
      d.would_reverse.push_back(fmt::format("startup probes that succeed on both sides in JIT cache mode '{}'", to_string(mode)));
      return d;
    }
  // The profile's cache mode, or the worst measured one (largest delta) when it was not measured.
  const ColdStartDelta* cold = find_mode(in, p.jit_cache);
  if (!cold) {
    cold = &*std::max_element(in.cold.begin(), in.cold.end(),
                              [](const auto& a, const auto& b) { return a.delta_s < b.delta_s; });
    d.reasons.push_back(fmt::format("the profile's JIT cache mode '{}' was not measured; the worst measured mode '{}' stands in",
                                    to_string(p.jit_cache), to_string(cold->mode)));
  }
  d.cache_mode = cold->mode;
  const Core core = evaluate(*cold, in.warm, p, false);
  d.verdict = core.verdict;
  d.extra_cold_s = core.cold.point;
  d.extra_cold_ci_s = core.cold.ci;
  d.warm_saving_per_call_s = -core.warm.point;
  d.warm_saving_ci_s = {-core.warm.ci.hi, -core.warm.ci.lo};
  d.net_cost_per_process_s = core.net;
  d.net_cost_per_process_ci_s = core.net_ci;
  d.net_cost_per_day_s = core.net * p.process_starts_per_day;

  const model::Breakeven be = model::breakeven_calls(d.extra_cold_s, d.warm_saving_per_call_s);
  d.breakeven_calls = be.never ? kInf : be.calls;
  d.breakeven_explanation = be.explanation;
  d.breakeven_calls_conservative = breakeven(d.extra_cold_ci_s.hi, d.warm_saving_ci_s.lo);
  d.breakeven_calls_optimistic = breakeven(d.extra_cold_ci_s.lo, d.warm_saving_ci_s.hi);

  d.amdahl_ceiling = model::amdahl_ceiling(p.kernel_share);
  if (in.warm.old_per_call_s > 0 && in.warm.new_per_call_s > 0) {
    const double ks = in.warm.verdict == stats::Verdict::no_difference ? 1.0 : in.warm.old_per_call_s / in.warm.new_per_call_s;
    d.kernel_speedup = ks;
    d.end_to_end_speedup = model::amdahl_speedup(p.kernel_share, ks);
  }

  // Reasons: the rule that fired, then the evidence behind each component.
  d.reasons.insert(d.reasons.begin(), core.why);
  d.reasons.push_back(fmt::format("first request (JIT cache {}): {}", to_string(cold->mode),
                                  change_text(cold->old_first_request_s, cold->new_first_request_s, cold->delta_s,
                                              cold->delta_ci_s, cold->verdict)));
  d.reasons.push_back(fmt::format("warm time per call: {}", change_text(in.warm.old_per_call_s, in.warm.new_per_call_s,
                                                                        in.warm.delta_s, in.warm.delta_ci_s, in.warm.verdict)));
  if (d.kernel_speedup && d.end_to_end_speedup)
    d.reasons.push_back(fmt::format("kernel {:.3g}x → at most {:.3g}x per request with {:.0f} % of request time in this kernel (ceiling {})",
                                    *d.kernel_speedup, *d.end_to_end_speedup, p.kernel_share * 100,
                                    std::isinf(d.amdahl_ceiling) ? std::string("unbounded") : fmt::format("{:.3g}x", d.amdahl_ceiling)));
  d.reasons.push_back(fmt::format("{} process starts per day: net {} per day", p.process_starts_per_day,
                                  d.net_cost_per_day_s <= 0 ? dur(-d.net_cost_per_day_s) + " saved" : dur(d.net_cost_per_day_s) + " lost"));

  // What would reverse it.
  const bool pays_cold = d.extra_cold_s > 0, saves_warm = d.warm_saving_per_call_s > 0;
  if (pays_cold && saves_warm) {
    const std::string range = fmt::format("{} calls per process (between {} and {} over the intervals)", calls_text(d.breakeven_calls),
                                          calls_text(d.breakeven_calls_optimistic), calls_text(d.breakeven_calls_conservative));
    if (d.verdict == ShipVerdict::ship)
      d.would_reverse.push_back("a process serving fewer than " + range + ": below that the extra cold start is not repaid");
    else if (!core.budget_fired)
      d.would_reverse.push_back("a process serving more than " + range + ": the warm gain would repay the extra cold start");
  } else if (pays_cold && !saves_warm) {
    d.would_reverse.push_back("no number of calls: without a warm gain the extra cold start is never repaid; only removing the extra cold cost (see mitigations) would");
  } else if (!pays_cold && saves_warm) {
    d.would_reverse.push_back("no number of calls: the new build costs nothing extra at start-up; only a warm regression or a first-request budget would");
  } else if (d.warm_saving_per_call_s < 0) {
    d.would_reverse.push_back("no number of calls: the new build is slower warm and no slower start makes up for it; only a warm gain would");
  }
  if (p.first_request_budget_ms && !core.budget_fired && cold->new_first_request_s > 0)
    d.would_reverse.push_back(fmt::format("a first-request budget below {} (the new build's median first request)", dur(cold->new_first_request_s)));
  if (!p.first_request_budget_ms && cold->delta_s > 0)
    d.would_reverse.push_back(fmt::format("a first-request budget below {} (the new build's median first request; the profile sets none)",
                                          dur(cold->new_first_request_s)));
  if (core.budget_fired)
    d.would_reverse.push_back(fmt::format("a first-request budget of at least {}, or moving the load off the first request (pre-load)",
                                          dur(cold->new_first_request_s)));
  for (const auto& other : in.cold) {
    if (&other == cold) continue;
    const Core alt = evaluate(other, in.warm, p, false);
    if (alt.verdict != d.verdict)
      d.would_reverse.push_back(fmt::format("a deployment whose JIT cache is '{}' at start (first-request change {}): {}",
                                            to_string(other.mode), dur(other.delta_s), describe(alt.verdict)));
  }

  // Mitigations, each with the rule re-applied to the numbers that stand in for the mitigated build.
  const ColdStartDelta* warm_mode = find_mode(in, CacheMode::warm);
  const bool jit_possible = in.new_uses_ptx_jit.value_or(true);
  if (cold->mode != CacheMode::warm && warm_mode) {
    if (jit_possible)
      d.mitigations.push_back(Mitigation{
          .name = "ship native SASS",
          .action = fmt::format("build the new artifact with SASS for {} (e.g. -gencode arch=compute_{},code={}) so the driver loads it without JIT",
                                in.target_arch, in.target_arch.size() > 3 ? in.target_arch.substr(3) : "XX", in.target_arch),
          .verdict_after = evaluate(*warm_mode, in.warm, p, false).verdict,
          .basis = std::string("the warm-cache measurement (no JIT at load; a native cubin loads at least as fast) — ") +
                   (in.new_uses_ptx_jit ? "artifact identity says the new build is JIT-compiled on the target"
                                        : "artifact identity not given: confirm the new build lacks SASS for the target")});
    d.mitigations.push_back(Mitigation{
        .name = "ship a warm JIT cache",
        .action = "populate CUDA_CACHE_PATH at build or deploy time (one discarded run on the target driver + GPU) and ship it with the service; it is invalidated by a driver upgrade",
        .verdict_after = evaluate(*warm_mode, in.warm, p, false).verdict,
        .basis = "the warm-cache measurement"});
  }
  if (cold->delta_s > 0 || core.budget_fired)
    d.mitigations.push_back(Mitigation{
        .name = "pre-load at start-up",
        .action = "load the module and launch once during process initialisation, before taking traffic, so the first request does not pay the load; each process still pays it",
        .verdict_after = evaluate(*cold, in.warm, p, true).verdict,
        .basis = "the same measurement with the first-request budget no longer applying"});

  d.headline = fmt::format("{} for profile '{}': {}", describe(d.verdict), p.name, core.why);
  return d;
}

json to_json(const Decision& d) {
  auto num = [](double v) { return std::isfinite(v) ? json(v) : json(nullptr); };  // JSON has no infinity
  json j{{"verdict", to_string(d.verdict)},
         {"headline", d.headline},
         {"cache_mode", to_string(d.cache_mode)},
         {"reasons", d.reasons},
         {"extra_cold_s", d.extra_cold_s},
         {"extra_cold_ci_s", stats::to_json(d.extra_cold_ci_s)},
         {"warm_saving_per_call_s", d.warm_saving_per_call_s},
         {"warm_saving_ci_s", stats::to_json(d.warm_saving_ci_s)},
         {"net_cost_per_process_s", d.net_cost_per_process_s},
         {"net_cost_per_process_ci_s", stats::to_json(d.net_cost_per_process_ci_s)},
         {"net_cost_per_day_s", d.net_cost_per_day_s},
         {"breakeven_calls", num(d.breakeven_calls)},
         {"breakeven_never", std::isinf(d.breakeven_calls)},
         {"breakeven_calls_optimistic", num(d.breakeven_calls_optimistic)},
         {"breakeven_calls_conservative", num(d.breakeven_calls_conservative)},
         {"breakeven_explanation", d.breakeven_explanation},
         {"kernel_speedup", d.kernel_speedup ? json(*d.kernel_speedup) : json(nullptr)},
         {"end_to_end_speedup", d.end_to_end_speedup ? json(*d.end_to_end_speedup) : json(nullptr)},
         {"amdahl_ceiling", num(d.amdahl_ceiling)},
         {"would_reverse", d.would_reverse}};
  json ms = json::array();
  for (const auto& m : d.mitigations)
    ms.push_back({{"name", m.name}, {"action", m.action}, {"verdict_after", to_string(m.verdict_after)}, {"basis", m.basis}});
  j["mitigations"] = ms;
  return j;
}

std::string to_markdown(const Decision& d) {
  std::string s = fmt::format("**Verdict: {}** — {}\n\n", describe(d.verdict), d.headline);
  s += "Reasons:\n";
  for (const auto& r : d.reasons) s += "- " + r + "\n";
  if (std::isinf(d.breakeven_calls))
    s += fmt::format("\nBreak-even: never — no number of calls per process repays the change ({}).\n",
                     d.warm_saving_per_call_s < 0 ? "it is slower warm" : "it saves nothing warm");
  else
    s += fmt::format("\nBreak-even: {} calls per process (optimistic {}, conservative {}).\n", calls_text(d.breakeven_calls),
                     calls_text(d.breakeven_calls_optimistic), calls_text(d.breakeven_calls_conservative));
  if (!d.would_reverse.empty()) {
    s += "\nWhat would reverse it:\n";
    for (const auto& r : d.would_reverse) s += "- " + r + "\n";
  }
  if (!d.mitigations.empty()) {
    s += "\nMitigations:\n";
    for (const auto& m : d.mitigations)
      s += fmt::format("- **{}** → {}: {} (basis: {})\n", m.name, describe(m.verdict_after), m.action, m.basis);
  }
  return s;
}

}  // namespace kqual::decision
