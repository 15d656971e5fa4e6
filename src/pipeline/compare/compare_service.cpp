// kqual compare's service view (docs/service-view.md): per deployment profile, OLD and NEW run
// through the same simulated service — the same arrivals, restarts and fleet — each paying its own
// measured startups (resampled) and serving with its own measured warm times, scaled to requests by
// the profile's kernel share (Amdahl). The profile's latency objectives are checked per side, on the
// intervals of the simulated percentiles, and may turn the profile's verdict.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kqual/model/service.hpp"
#include "kqual/model/service_report.hpp"
#include "kqual/model/units.hpp"
#include "kqual/pipeline/compare.hpp"
#include "kqual/stats/summary.hpp"

namespace kqual::compare {
namespace {

namespace svc = model::service;
using decision::CacheMode;

constexpr double kTargetUtilisation = 0.7;  // fleet sized for this on OLD's numbers when the profile gives no replicas

std::vector<double> seconds(const std::vector<double>& ms) {
  std::vector<double> s;
  s.reserve(ms.size());
  for (double v : ms) s.push_back(v * 1e-3);
  return s;
}

const StartupMode* find_mode(const std::vector<StartupMode>& modes, CacheMode cache) {
  if (modes.empty()) return nullptr;
  for (const auto& m : modes)
    if (m.cache == cache && m.loading == modes.front().loading) return &m;
  return nullptr;
}

json not_computed(const std::string& why) { return json{{"computed", false}, {"reason", why}}; }

std::string value_text(const svc::ObjectiveResult& r) {
  if (std::isinf(r.value_s)) return "a miss (failed or timed-out requests)";
  std::string s = model::format_seconds(r.value_s);
  if (r.ci_lo_s && r.ci_hi_s) {
    const model::SecondsTriple t = model::format_seconds_interval(r.value_s, *r.ci_lo_s, *r.ci_hi_s);
    if (std::isfinite(*r.ci_hi_s)) s = fmt::format("{} [{}, {}]", t.point, t.lo, t.hi);
  }
  return s;
}

std::string by_text(const svc::ObjectiveResult& r) {
  if (std::isinf(r.by_s)) return "on failed or timed-out requests";
  return r.meets ? fmt::format("{} to spare", model::format_seconds(-r.by_s))
                 : fmt::format("over by {}", model::format_seconds(r.by_s));
}

// What one objective does to the profile's verdict.
enum class Effect { none, inconclusive, do_not_ship };

const char* to_string(Effect e) {
  switch (e) {
    case Effect::none: return "none";
    case Effect::inconclusive: return "inconclusive";
    case Effect::do_not_ship: return "do_not_ship";
  }
  return "?";
}

struct ObjectiveCall {
  std::string verdict;  // the sentence for the reasons, the memo and the page
  std::string why;      // the interval(s) the effect rests on
  Effect effect = Effect::none;
};

// The interval rule: a side meets an objective only when the whole CI of its percentile lies within
// the bound and misses it only when the whole CI lies above. NEW missing an objective OLD meets turns
// the verdict to do not ship; where the intervals leave that open (NEW may miss, OLD may meet), the
// verdict is inconclusive. Every other combination is stated without turning anything.
ObjectiveCall judge_objective(const std::string& obj, const svc::ObjectiveResult& a, const svc::ObjectiveResult& b) {
  using S = svc::Standing;
  const std::string values = fmt::format("NEW {} ({}), OLD {} ({})", value_text(b), by_text(b), value_text(a), by_text(a));
  ObjectiveCall c;
  if (a.standing == S::meets && b.standing == S::misses) {
    c.effect = Effect::do_not_ship;
    c.why = b.standing_text;
    c.verdict = fmt::format("NEW misses {} that OLD meets ({}): {}", obj, b.standing_text, values);
  } else if (a.standing != S::misses && b.standing != S::meets) {
    c.effect = Effect::inconclusive;
    std::vector<std::string> open;
    if (b.standing == S::inconclusive) open.push_back("NEW: " + b.standing_text);
    if (a.standing == S::inconclusive) open.push_back("OLD: " + a.standing_text);
    for (const auto& x : open) c.why += (c.why.empty() ? "" : "; ") + x;
    c.verdict = fmt::format("inconclusive whether NEW misses {} that OLD meets ({}): {}", obj, c.why, values);
  } else if (a.standing == S::misses && b.standing == S::meets) {
    c.verdict = fmt::format("NEW meets {} that OLD misses: {}", obj, values);
  } else if (a.standing == S::meets && b.standing == S::meets) {
    c.verdict = fmt::format("both meet {}: {}", obj, values);
  } else if (a.standing == S::misses && b.standing == S::misses) {
    c.verdict = fmt::format("both miss {}: {}", obj, values);
  } else if (a.standing == S::misses) {  // NEW inconclusive: no worse than OLD whichever way it falls
    c.verdict = fmt::format("OLD misses {}; NEW may or may not meet it ({}): {}", obj, b.standing_text, values);
  } else {  // NEW meets, OLD inconclusive: no worse than OLD whichever way OLD falls
    c.verdict = fmt::format("NEW meets {}; OLD may or may not ({}): {}", obj, a.standing_text, values);
  }
  return c;
}

// Per objective: the call, into the reasons and the JSON; then the verdict turned where an objective
// says so (a certain miss outweighs an open one; an open one makes ship or no difference inconclusive).
json judge_objectives(const std::vector<svc::Objective>& objectives, const svc::ServiceReport (&rep)[2],
                      const decision::DeploymentProfile& p, decision::Decision& d) {
  json out = json::array();
  const json side_json[2] = {svc::to_json(rep[0]), svc::to_json(rep[1])};
  std::optional<std::pair<std::string, ObjectiveCall>> first_miss, first_open;
  for (std::size_t i = 0; i < objectives.size(); ++i) {
    const std::string obj = objectives[i].text();
    const ObjectiveCall call = judge_objective(obj, rep[0].objectives[i], rep[1].objectives[i]);
    if (call.effect == Effect::do_not_ship && !first_miss) first_miss.emplace(obj, call);
    if (call.effect == Effect::inconclusive && !first_open) first_open.emplace(obj, call);
    d.reasons.push_back("service view: " + call.verdict);
    out.push_back({{"objective", obj}, {"old", side_json[0]["objectives"][i]}, {"new", side_json[1]["objectives"][i]},
                   {"verdict", call.verdict}, {"effect", to_string(call.effect)}});
  }
  using V = decision::ShipVerdict;
  if (first_miss && d.verdict != V::do_not_ship) {
    d.verdict = V::do_not_ship;
    d.headline = fmt::format("{} for profile '{}': NEW misses the latency objective {} that OLD meets (service view: {})",
                             decision::describe(d.verdict), p.name, first_miss->first, first_miss->second.why);
  } else if (!first_miss && first_open && (d.verdict == V::ship || d.verdict == V::no_difference)) {
    d.verdict = V::inconclusive;
    d.headline = fmt::format("{} for profile '{}': the service view cannot tell whether NEW misses the latency objective {} "
                             "that OLD meets ({}); more measured process starts narrow the interval",
                             decision::describe(d.verdict), p.name, first_open->first, first_open->second.why);
  }
  return out;
}

// Startups per side in the profile's JIT cache mode: driver init + context + module load + lookup,
// resampled from the measured ones (and, after a driver upgrade, each replica's first from the cold
// cache's); why_not when the view cannot be computed.
struct ServiceStarts {
  svc::Distribution start[2];
  std::optional<svc::Distribution> first_start[2];
  double fail_share[2] = {0, 0};
  std::vector<std::string> notes;
  std::string why_not;
};

ServiceStarts service_starts(const std::vector<StartupMode>& startup, const StartupMode& mode, const decision::DeploymentProfile& p) {
  const decision::ServiceProfile& sp = p.service;
  ServiceStarts out;
  const StartupMode* cold = find_mode(startup, CacheMode::cold);
  for (int k = 0; k < 2; ++k) {
    const StartupSamples& s = mode.side[k];
    if (s.base_ms.empty()) {
      out.why_not = fmt::format("{} has no successful startup in JIT cache mode '{}'", k == 0 ? "OLD" : "NEW",
                                decision::to_string(p.jit_cache));
      return out;
    }
    out.start[k] = svc::empirical(seconds(s.base_ms), fmt::format("{} measured starts, JIT cache {}", s.base_ms.size(),
                                                                  decision::to_string(p.jit_cache)));
    out.start[k].offset_s = sp.other_startup_ms * 1e-3;
    out.fail_share[k] = double(s.failures) / double(s.failures + s.base_ms.size());
    if (sp.driver_upgrade && p.jit_cache == CacheMode::warm) {
      if (cold && !cold->side[k].base_ms.empty()) {
        out.first_start[k] = svc::empirical(seconds(cold->side[k].base_ms),
                                            fmt::format("{} measured starts, JIT cache cold", cold->side[k].base_ms.size()));
        out.first_start[k]->offset_s = out.start[k].offset_s;
      } else if (k == 0) {
        out.notes.push_back("driver_upgrade: no cold-cache measurement, so each replica's first start is drawn from the warm one");
      }
    }
  }
  if (out.first_start[0] || out.first_start[1])
    out.notes.push_back(fmt::format(
        "driver_upgrade: the JIT cache is empty after the upgrade, so each replica's first start (its first restart in "
        "the simulated run; in start episodes, that share of the starts) is drawn from the cold-cache measurement; later "
        "starts from the '{}' one",
        decision::to_string(p.jit_cache)));
  if (sp.driver_upgrade && p.jit_cache != CacheMode::warm)
    out.notes.push_back(fmt::format("driver_upgrade: with jit_cache '{}' every start already finds no usable cache",
                                    decision::to_string(p.jit_cache)));
  if (out.fail_share[0] >= 1 || out.fail_share[1] >= 1) out.why_not = "every measured start of a side failed";
  return out;
}

// Service time per request: the rest of the request + the kernel's calls (Amdahl), each side's
// calls drawn from its warm samples at the decision shape; why_not when there is no request time.
struct ServiceTimes {
  svc::Distribution serve[2];
  double calls_per_request = 1, rest_s = 0;
  std::string why_not;
};

ServiceTimes service_times(const WarmShape& warm, const decision::DeploymentProfile& p) {
  ServiceTimes out;
  const std::vector<double>& wa = warm.side[0].pooled.empty() ? warm.side[0].medians : warm.side[0].pooled;
  const std::vector<double>& wb = warm.side[1].pooled.empty() ? warm.side[1].medians : warm.side[1].pooled;
  if (wa.empty() || wb.empty()) {
    out.why_not = "no warm samples on both sides at the decision shape";
    return out;
  }
  const double kernel_old_s = stats::median(wa) * 1e-3;
  if (p.service.request_time_ms) {
    const double req_s = *p.service.request_time_ms * 1e-3;
    out.calls_per_request = req_s * p.kernel_share / kernel_old_s;
    out.rest_s = req_s * (1 - p.kernel_share);
  } else if (p.kernel_share > 0) {
    out.rest_s = kernel_old_s * (1 - p.kernel_share) / p.kernel_share;
  } else {
    out.why_not = "kernel_share is 0 and [service] request_time_ms is not given: no request time to simulate";
    return out;
  }
  for (int k = 0; k < 2; ++k) {
    out.serve[k] = svc::empirical(seconds(k == 0 ? wa : wb), fmt::format("{} warm samples at {}", (k == 0 ? wa : wb).size(), warm.shape));
    out.serve[k].scale = out.calls_per_request;
    out.serve[k].offset_s = out.rest_s;
  }
  return out;
}

// Load and fleet: the arrival rate and replicas from the profile, or derived from it (replicas
// sized on OLD's numbers); the simulation both sides run through, less their own startups and
// service times. why_not when there is no arrival rate.
struct ServiceFleet {
  svc::ServiceConfig config;
  double rate = 0;
  std::string why_not;
};

ServiceFleet service_fleet(const decision::DeploymentProfile& p, const ServiceStarts& starts, const ServiceTimes& times,
                           const ServiceViewOptions& o) {
  const decision::ServiceProfile& sp = p.service;
  ServiceFleet out;
  const double starts_per_s = p.process_starts_per_day / 86400.0;
  out.rate = sp.arrival_rate_per_s.value_or(p.calls_per_process * starts_per_s / times.calls_per_request);
  if (!(out.rate > 0)) {
    out.why_not = "no arrival rate: give [service] arrival_rate (the profile's process starts and calls give 0)";
    return out;
  }
  int replicas = 1;
  if (sp.replicas) {
    replicas = *sp.replicas;
  } else {
    const double load = out.rate * times.serve[0].mean() + starts_per_s * starts.start[0].mean();  // [busy replicas] on OLD's numbers
    replicas = int(std::clamp(std::ceil(load / kTargetUtilisation), 1.0, 100000.0));
  }
  svc::ServiceConfig& c = out.config;
  c.arrivals.kind = sp.burstiness == 1 ? svc::Arrivals::Kind::poisson : svc::Arrivals::Kind::gamma;
  c.arrivals.rate_per_s = out.rate;
  c.arrivals.burstiness = sp.burstiness;
  c.arrivals.source =
      sp.burstiness == 1 ? fmt::format("poisson:{:.6g}", out.rate) : fmt::format("gamma:{:.6g}:{:g}", out.rate, sp.burstiness);
  c.replicas = replicas;
  c.restart_rate_per_s = starts_per_s / double(replicas);
  c.preload = sp.preload;
  c.cold_fleet = false;  // steady state: new processes come from the profile's starts, not a deploy of the whole fleet
  c.requests = o.requests;
  c.first_k = sp.first_k;
  if (sp.timeout_ms) c.timeout_s = *sp.timeout_ms * 1e-3;
  c.seed = o.seed;
  return out;
}

// The view's "inputs": what the simulation ran with, and where each figure came from.
json service_inputs(const decision::DeploymentProfile& p, const StartupMode& mode, const WarmShape& warm, const ServiceFleet& fleet,
                    const ServiceTimes& times, const ServiceViewOptions& o) {
  const decision::ServiceProfile& sp = p.service;
  return json{{"jit_cache", decision::to_string(p.jit_cache)},
              {"loading", startup::to_string(mode.loading)},
              {"arrival_rate_per_s", fleet.rate},
              {"arrival_rate_from", sp.arrival_rate_per_s ? "[service] arrival_rate"
                                                          : "calls_per_process × process_starts_per_day / 86400 / kernel "
                                                            "calls per request"},
              {"replicas", fleet.config.replicas},
              {"replicas_from", sp.replicas ? "[service] replicas"
                                            : fmt::format("sized for {:.0f} % utilisation on OLD's numbers",
                                                          kTargetUtilisation * 100)},
              {"restart_rate_per_replica_per_h", fleet.config.restart_rate_per_s * 3600},
              {"kernel_calls_per_request", times.calls_per_request},
              {"other_request_time_ms", times.rest_s * 1e3},
              {"kernel_share", p.kernel_share},
              {"decision_shape", warm.shape},
              {"requests", o.requests},
              {"bootstrap", o.bootstrap},
              {"seed", o.seed}};
}

}  // namespace

json service_view(const std::vector<StartupMode>& startup, const WarmShape& warm, const decision::DeploymentProfile& p,
                  decision::Decision& d, const ServiceViewOptions& o) {
  const StartupMode* mode = find_mode(startup, p.jit_cache);
  if (!mode)
    return not_computed(fmt::format("no startup measurement in the profile's JIT cache mode '{}'", decision::to_string(p.jit_cache)));
  const ServiceStarts starts = service_starts(startup, *mode, p);
  if (!starts.why_not.empty()) return not_computed(starts.why_not);
  const ServiceTimes times = service_times(warm, p);
  if (!times.why_not.empty()) return not_computed(times.why_not);
  const ServiceFleet fleet = service_fleet(p, starts, times, o);
  if (!fleet.why_not.empty()) return not_computed(fleet.why_not);

  svc::ReportOptions ro;
  ro.percentiles = {50, 90, 99, 99.9};
  ro.bootstrap = o.bootstrap;
  ro.objectives = p.objectives;
  ro.search_requests = std::max<std::int64_t>(2000, o.requests / 2);
  ro.min_starts = svc::samples_needed(99) + 41;  // 500: enough for a first-request p99 with an upper bound
  svc::ServiceReport rep[2];
  for (int k = 0; k < 2; ++k) {
    svc::ServiceConfig x = fleet.config;
    x.startup = starts.start[k];
    x.first_startup = starts.first_start[k];
    x.service = times.serve[k];
    x.start_failure_share = starts.fail_share[k];
    rep[k] = svc::analyse(x, ro);
  }

  // ---- Objectives: which side meets each, judged on the intervals; the verdict they turn ----
  const json objectives = judge_objectives(p.objectives, rep, p, d);
  std::vector<std::string> warnings;
  for (int k = 0; k < 2; ++k)
    for (const auto& w : rep[k].warnings) warnings.push_back(fmt::format("{}: {}", k == 0 ? "OLD" : "NEW", w));
  return json{{"computed", true},
              {"definition",
               "a discrete-event simulation (docs/service-view.md): one FCFS queue, the replicas, process starts at the "
               "profile's rate; each start pays a startup resampled from the side's measured ones (driver init + context + "
               "module load + lookup) on its first request (or before traffic with preload); a request takes the rest of "
               "the request plus kernel calls drawn from the side's warm samples; failed starts and timeouts are misses; "
               "intervals: bootstrap over the measured startups"},
              {"inputs", service_inputs(p, *mode, warm, fleet, times, o)},
              {"old", svc::to_json(rep[0])},
              {"new", svc::to_json(rep[1])},
              {"objectives", objectives},
              {"warnings", warnings},
              {"notes", starts.notes}};
}

}  // namespace kqual::compare
