#pragma once
// The ship decision: measured cold-start and warm deltas (with confidence intervals) + a deployment
// profile → verdict, reasons, break-even, what would reverse it, and mitigations. Pure arithmetic
// on numbers measured elsewhere (kqual startup, kqual bench); the rule is in docs/statistics.md,
// "Ship decision". All times in seconds; deltas are NEW - OLD (positive = the new build costs more).
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "kqual/core/json.hpp"
#include "kqual/decision/profile.hpp"
#include "kqual/stats/compare.hpp"

namespace kqual::decision {

// First-request cost in one cache mode.
struct ColdStartDelta {
  CacheMode mode = CacheMode::cold;
  double old_first_request_s = 0;  // [s] median, process start → first kernel result, old build
  double new_first_request_s = 0;  // [s] same, new build (checked against the profile's budget)
  double delta_s = 0;              // [s] new - old (median difference)
  stats::Interval delta_ci_s;      // [s] its confidence interval
  stats::Verdict verdict = stats::Verdict::inconclusive;  // "slower" = the new build starts slower
  std::string too_few;             // "4 and 4 samples; at least 5 per side needed" when nothing was estimated
};

// Warm (steady-state) time of one kernel call.
struct WarmDelta {
  double old_per_call_s = 0;   // [s] median
  double new_per_call_s = 0;   // [s] median
  double delta_s = 0;          // [s] new - old per call
  stats::Interval delta_ci_s;  // [s]
  stats::Verdict verdict = stats::Verdict::inconclusive;  // "faster" = the new build is faster warm
  std::string too_few;         // as ColdStartDelta's
};

// Builders from raw samples (seconds), through stats::compare with a difference-of-medians effect.
// first_request_*: full first-request samples (for the budget); delta_*: the samples the delta is
// taken on (e.g. module load + first launch only, which excludes driver-init noise). Pass the same
// spans twice when there is one kind of sample.
ColdStartDelta cold_start_delta(CacheMode mode, std::span<const double> old_first_request_s,
                                std::span<const double> new_first_request_s, std::span<const double> old_delta_s,
                                std::span<const double> new_delta_s, const stats::DecisionOptions& opt);
WarmDelta warm_delta(std::span<const double> old_per_call_s, std::span<const double> new_per_call_s,
                     const stats::DecisionOptions& opt);

struct DecisionInput {
  std::vector<ColdStartDelta> cold;   // one per measured cache mode
  // Cache modes that were measured but in which a side's every probe failed ("OLD" or "NEW" and
  // why): a profile deciding in one of them is incomplete; no other mode stands in for it.
  std::vector<std::pair<CacheMode, std::string>> failed_modes;
  WarmDelta warm;
  std::optional<bool> new_uses_ptx_jit;  // from artifact identity: the driver JIT-compiles PTX for the target
  std::string target_arch = "sm_90";
};

// One verdict vocabulary for every command (qualify, check, bench, selftest, compare).
enum class ShipVerdict { ship, do_not_ship, no_difference, inconclusive, incomplete };
// The word results.json carries: "ship", "do_not_ship", "no_difference", "inconclusive", "incomplete".
const char* to_string(ShipVerdict v);
// The words a memo or a terminal prints: "ship", "do not ship as built", "no difference",
// "inconclusive", "incomplete (no decision)".
const char* describe(ShipVerdict v);
// Parses to_string's words; nullopt for anything else.
std::optional<ShipVerdict> ship_verdict_from_string(const std::string& s);
// The process exit code (core/exit_codes.hpp): ship and no difference pass; do not ship and
// inconclusive fail (the evidence does not support shipping); incomplete is 3.
int exit_code(ShipVerdict v);

struct Mitigation {
  std::string name;                 // "ship native SASS", "ship a warm JIT cache", "pre-load at start-up"
  std::string action;               // what to do, concretely
  ShipVerdict verdict_after = ShipVerdict::inconclusive;  // the rule re-applied with the mitigation's numbers
  std::string basis;                // which measured numbers stand in for the mitigated build
};

struct Decision {
  ShipVerdict verdict = ShipVerdict::inconclusive;
  std::string headline;
  CacheMode cache_mode = CacheMode::cold;   // the cold-start mode used (the profile's, or the substitute)
  std::vector<std::string> reasons;
  double extra_cold_s = 0;                  // [s] effective cold delta (0 when "no difference")
  stats::Interval extra_cold_ci_s;
  double warm_saving_per_call_s = 0;        // [s] effective -(warm delta)
  stats::Interval warm_saving_ci_s;
  double net_cost_per_process_s = 0;        // [s] extra cold + calls × warm delta; < 0 = the change saves time
  stats::Interval net_cost_per_process_ci_s;
  double net_cost_per_day_s = 0;            // [s/day]
  double breakeven_calls = 0;               // point estimate; +inf when never
  double breakeven_calls_conservative = 0;  // most cold cost, least saving inside the CIs
  double breakeven_calls_optimistic = 0;    // least cold cost, most saving
  std::string breakeven_explanation;
  std::optional<double> kernel_speedup;     // old / new warm time per call
  std::optional<double> end_to_end_speedup; // Amdahl with the profile's kernel_share
  double amdahl_ceiling = 0;                // 1 / (1 - share); +inf at share 1
  std::vector<std::string> would_reverse;
  std::vector<Mitigation> mitigations;
};

// The rule (docs/statistics.md, "Ship decision"), first match wins:
//   0. a component judged "no difference" counts as 0 (its interval too);
//   1. budget: the new first-request median exceeds the profile's budget while the old one did not
//      → do not ship as built;
//   2. both components "no difference" → no difference;
//   3. net cost per process = extra cold + calls × warm delta, interval from the CI ends:
//      whole interval < 0 → ship; whole interval > 0 → do not ship as built; else inconclusive.
// The cold delta is the one for the profile's jit_cache mode; if that mode was not measured, the
// worst measured mode stands in (said in the reasons). Throws Error(input) with no cold deltas.
Decision decide(const DecisionInput& in, const DeploymentProfile& profile);

json to_json(const Decision& d);
std::string to_markdown(const Decision& d);  // the memo's "Verdict" section

}  // namespace kqual::decision
