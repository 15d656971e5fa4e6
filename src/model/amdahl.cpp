#include "kqual/model/amdahl.hpp"

#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "kqual/core/error.hpp"
#include "kqual/model/units.hpp"

namespace kqual::model {
namespace {

void check_share(double share) {
  if (!(share >= 0.0 && share <= 1.0))  // also refuses NaN
    throw_error(ErrorKind::usage,
                fmt::format("share {} is outside [0, 1]: it is the kernel's fraction of end-to-end time", share));
}

}  // namespace

double amdahl_ceiling(double share) {
  check_share(share);
  if (share == 1.0) return std::numeric_limits<double>::infinity();
  return 1.0 / (1.0 - share);
}

double amdahl_speedup(double share, double kernel_speedup) {
  check_share(share);
  if (!(kernel_speedup > 0.0) || !std::isfinite(kernel_speedup))
    throw_error(ErrorKind::usage,
                fmt::format("kernel speedup {} must be a finite number > 0 (1 = unchanged, 2 = twice as fast)",
                            kernel_speedup));
  return 1.0 / ((1.0 - share) + share / kernel_speedup);
}

Breakeven breakeven_calls(double extra_cold_cost_s, double warm_saving_per_call_s) {
  if (!std::isfinite(extra_cold_cost_s) || !std::isfinite(warm_saving_per_call_s))
    throw_error(ErrorKind::usage, fmt::format("break-even needs finite times (extra cold cost {} s, warm saving {} s)",
                                              extra_cold_cost_s, warm_saving_per_call_s));
  Breakeven b;
  const std::string cold = format_seconds(extra_cold_cost_s), warm = format_seconds(warm_saving_per_call_s);
  const std::string caveat =
      " This is arithmetic on two inputs: measure the extra cold cost over many fresh processes (a distribution, "
      "not one sample) and the warm saving with device timing on the production shapes; it also assumes "
      "every process pays the cold cost once and that calls are evenly costed.";
  if (extra_cold_cost_s <= 0.0) {
    if (warm_saving_per_call_s >= 0.0) {
      b.calls = 0;
      b.explanation = fmt::format(
          "The change costs nothing extra at start ({} extra cold cost) and saves {} per warm call: it pays from "
          "the first call.",
          cold, warm);
    } else if (extra_cold_cost_s == 0.0) {
      // Slower warm and no faster at start: nothing is ever repaid, so the break-even is "never", not "0 calls".
      b.never = true;
      b.calls = std::numeric_limits<double>::infinity();
      b.explanation = fmt::format(
          "The change starts no faster and loses {} on every warm call: it never pays back; every call costs more.",
          format_seconds(-warm_saving_per_call_s));
    } else {
      // Faster at start, slower warm: ahead early, then behind for good. The warm loss is never
      // repaid, so there is no break-even after which the change pays; the crossover is stated.
      b.never = true;
      b.calls = std::numeric_limits<double>::infinity();
      b.explanation = fmt::format(
          "The change starts {} faster but loses {} on every warm call: it is ahead only for the first {} calls of "
          "a process, then behind for good; the warm loss is never paid back.",
          format_seconds(-extra_cold_cost_s), format_seconds(-warm_saving_per_call_s),
          format_count(extra_cold_cost_s / warm_saving_per_call_s));
    }
    b.explanation += caveat;
    return b;
  }
  if (warm_saving_per_call_s <= 0.0) {
    b.never = true;
    b.calls = std::numeric_limits<double>::infinity();
    b.explanation = fmt::format(
        "The change adds {} to every process start and {} per warm call: it never pays back.", cold,
        warm_saving_per_call_s == 0.0 ? "saves nothing" : "costs " + format_seconds(-warm_saving_per_call_s));
    b.explanation += caveat;
    return b;
  }
  b.calls = extra_cold_cost_s / warm_saving_per_call_s;
  b.explanation = fmt::format(
      "A process must serve at least {} calls before saving {} per warm call repays the {} extra cold-start cost; "
      "processes that serve fewer calls (short-lived jobs, autoscaled replicas, CLI tools) come out slower.",
      format_count(b.calls), warm, cold);
  b.explanation += caveat;
  return b;
}

AmdahlReport amdahl_report(double share, const std::vector<double>& kernel_speedups) {
  AmdahlReport r;
  r.share = share;
  r.ceiling = amdahl_ceiling(share);
  for (double k : kernel_speedups) {
    AmdahlPoint p;
    p.kernel_speedup = k;
    p.end_to_end_speedup = amdahl_speedup(share, k);
    p.time_saved_fraction = 1.0 - 1.0 / p.end_to_end_speedup;
    r.points.push_back(p);
  }
  std::string text;
  if (share == 0.0) {
    text = "The kernel takes none of the end-to-end time: no kernel speedup changes end-to-end time (ceiling 1x).";
  } else if (share == 1.0) {
    text = "The kernel is all of the end-to-end time: end-to-end speedup equals kernel speedup, with no ceiling.";
  } else {
    text = fmt::format(
        "The kernel is {} of end-to-end time: even an infinitely fast kernel makes the whole at most {:.3g}x faster "
        "({} of time saved).",
        format_percent(share), r.ceiling, format_percent(share));
  }
  for (const auto& p : r.points)
    text += fmt::format(" At {:.3g}x kernel speedup the whole is {:.3g}x faster ({} of time saved).", p.kernel_speedup,
                        p.end_to_end_speedup, format_percent(p.time_saved_fraction));
  text +=
      " What this establishes: an upper bound from one measured share. What still needs measurement: the share "
      "itself, profiled over a representative run of the same workload mix; the kernel speedup on the production "
      "shapes; and the end-to-end time, since overlap, transfers and launch gaps can hide or change the gain.";
  r.explanation = std::move(text);
  return r;
}

BreakevenReport breakeven_report(double extra_cold_cost_s, double warm_saving_per_call_s, double calls_per_process) {
  BreakevenReport r;
  r.extra_cold_cost_s = extra_cold_cost_s;
  r.warm_saving_per_call_s = warm_saving_per_call_s;
  r.breakeven = breakeven_calls(extra_cold_cost_s, warm_saving_per_call_s);
  if (calls_per_process >= 0) {
    r.has_calls_per_process = true;
    r.calls_per_process = calls_per_process;
    r.net_saving_per_process_s = calls_per_process * warm_saving_per_call_s - extra_cold_cost_s;
    r.verdict = r.net_saving_per_process_s > 0 ? "pays off" : "does not pay off";
  }
  return r;
}

namespace {
json finite_or_null(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }
}  // namespace

json to_json(const AmdahlReport& r) {
  json j;
  j["share"] = r.share;
  j["ceiling"] = finite_or_null(r.ceiling);
  j["ceiling_unbounded"] = !std::isfinite(r.ceiling);
  j["points"] = json::array();
  for (const auto& p : r.points)
    j["points"].push_back({{"kernel_speedup", p.kernel_speedup},
                           {"end_to_end_speedup", p.end_to_end_speedup},
                           {"time_saved_fraction", p.time_saved_fraction}});
  j["explanation"] = r.explanation;
  return j;
}

json to_json(const BreakevenReport& r) {
  json j;
  j["extra_cold_cost_s"] = r.extra_cold_cost_s;
  j["warm_saving_per_call_s"] = r.warm_saving_per_call_s;
  j["breakeven_calls"] = finite_or_null(r.breakeven.calls);
  j["never"] = r.breakeven.never;
  if (r.has_calls_per_process) {
    j["calls_per_process"] = r.calls_per_process;
    j["net_saving_per_process_s"] = r.net_saving_per_process_s;
    j["verdict"] = r.verdict;
  }
  j["explanation"] = r.breakeven.explanation;
  return j;
}

}  // namespace kqual::model
