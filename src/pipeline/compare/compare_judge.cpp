// kqual compare's verdict: judge() weighs the measured evidence (correctness relation, warm time per
// shape, startup per mode, decision per profile, which shape decides) into the results and exit code.
#include "kqual/pipeline/compare.hpp"

#include <fmt/format.h>

#include "compare_internal.hpp"
#include "kqual/core/error.hpp"
#include "kqual/core/exit_codes.hpp"
#include "kqual/stats/compare.hpp"
#include "kqual/stats/summary.hpp"

namespace kqual::compare {

namespace {

// Cases NEW fails that OLD passed, or fails with another code: what the change itself broke.
std::vector<std::string> new_regressions(const CorrectnessSide& a, const CorrectnessSide& b) {
  std::vector<std::string> out;
  for (const auto& [id, code] : b.failing) {
    auto it = a.failing.find(id);
    if (it == a.failing.end()) out.push_back(fmt::format("{} ({}; OLD passed it)", id, code));
    else if (it->second != code) out.push_back(fmt::format("{} ({}; OLD failed it as {})", id, code, it->second));
  }
  return out;
}

}  // namespace

// NEW is blamed for correctness only for what it changes.
bool new_is_blamed(const CorrectnessSide& a, const CorrectnessSide& b) {
  if (!a.ran || !b.ran || b.accepted) return false;
  return a.accepted || !new_regressions(a, b).empty();
}

namespace {

constexpr const char* kJudgeSideName[2] = {"old", "new"};

json summary_or_null(const std::vector<double>& v) {
  if (v.empty()) return nullptr;
  return stats::to_json(stats::summarize(v));
}

// The results as the static part left them (provenance, target, sides, contract, artifact diff, the
// build and artifact_diff phases, notes), marked measured.
report::CompareResult judge_start_from_static(const report::CompareResult& static_part) {
  report::CompareResult r;
  r.provenance = static_part.provenance;
  r.target = static_part.target;
  r.sides = static_part.sides;
  r.contract = static_part.contract;
  r.artifact_diff = static_part.artifact_diff;
  r.measured = true;
  r.phases = static_part.phases;
  r.phases.keep_only({"build", "artifact_diff"});
  r.notes = static_part.notes;
  return r;
}

// The verdict written into the results; the judgement carries both forms and the exit code.
Judgement judge_finish(report::CompareResult& r, decision::ShipVerdict decision, int code, const std::string& summary) {
  r.verdict.decision = decision;
  r.verdict.exit_code = code;
  r.verdict.summary = summary;
  Judgement out;
  out.results = report::to_json(r);
  out.result = r;
  out.exit_code = code;
  return out;
}

// What the correctness relation means, in words (for the relation block and the verdict's reasons).
std::string judge_explain_relation(CorrectnessRelation rel, const CorrectnessSide& co, const CorrectnessSide& cn) {
  switch (rel) {
    case CorrectnessRelation::both_accepted: return "both builds meet the contract";
    case CorrectnessRelation::new_rejected:
      return fmt::format("OLD meets the contract and NEW does not: {} of {} cases fail, mostly `{}`", cn.failed, cn.cases,
                         cn.primary_code);
    case CorrectnessRelation::old_rejected:
      return fmt::format("NEW meets the contract and OLD does not (OLD: {} of {} cases fail, mostly `{}`): the change "
                         "fixes a defect",
                         co.failed, co.cases, co.primary_code);
    case CorrectnessRelation::both_rejected_alike:
      return fmt::format("OLD and NEW both fail the contract, on the same {} case(s) with the same codes (mostly "
                         "`{}`): the change does not alter correctness; the defect predates it",
                         cn.failed, cn.primary_code);
    case CorrectnessRelation::both_rejected_differently: {
      const auto reg = new_regressions(co, cn);
      return reg.empty() ? fmt::format("OLD and NEW both fail the contract; NEW fails a subset of OLD's cases ({} of OLD's "
                                       "{}): the change does not break anything OLD got right",
                                       cn.failed, co.failed)
                         : fmt::format("OLD and NEW both fail the contract, and NEW also fails {} case(s) OLD got right or "
                                       "failed otherwise, e.g. {}",
                                       reg.size(), reg.front());
    }
    case CorrectnessRelation::not_run: return "not run";
  }
  return "";
}

// Correctness of both sides and how they relate: NEW is blamed only for what it changes.
struct JudgedCorrectness {
  CorrectnessRelation relation = CorrectnessRelation::not_run;
  bool blamed = false;      // NEW breaks what OLD got right
  bool both_wrong = false;  // both sides fail the contract (alike or not)
};

JudgedCorrectness judge_correctness(report::CompareResult& r, const Evidence& ev) {
  const CorrectnessSide& co = ev.correctness[0];
  const CorrectnessSide& cn = ev.correctness[1];
  JudgedCorrectness jc;
  jc.relation = relate(co, cn);
  jc.blamed = new_is_blamed(co, cn);
  jc.both_wrong = jc.relation == CorrectnessRelation::both_rejected_alike ||
                  jc.relation == CorrectnessRelation::both_rejected_differently;
  if (ev.can_launch && ev.correctness_skipped) {
    r.phases.set("correctness", "skipped (--no-correctness)");
    r.not_run.push_back("correctness: skipped (--no-correctness)");
  } else if (ev.can_launch) {
    if (!ev.large_cases)
      r.not_run.push_back("correctness: the contract's largest cases (e.g. 2^27+5 elements, > 2^31 bytes) left out, as by "
                          "default in compare; --large-cases includes them");
    std::string text;
    for (int k = 0; k < 2; ++k) {
      const CorrectnessSide& c = ev.correctness[k];
      if (!c.ran) continue;
      r.correctness[kJudgeSideName[k]] = c.report;
      text += fmt::format("{}{}: {} ({} passed, {} failed, {} refused)", text.empty() ? "" : "; ", kJudgeSideName[k],
                          c.accepted ? "accepted" : "rejected", c.passed, c.failed, c.refused);
    }
    const std::string explanation = judge_explain_relation(jc.relation, co, cn);
    if (!text.empty()) r.phases.set("correctness", text);
    r.correctness_relation = report::CorrectnessRelationBlock{to_string(jc.relation), jc.blamed, explanation};
    if (jc.relation != CorrectnessRelation::both_accepted && jc.relation != CorrectnessRelation::not_run)
      r.verdict.reasons.push_back("correctness: " + explanation);
  }
  return jc;
}

// What the warm timing found on each side, for the decision and for the startup estimate.
struct JudgedWarm {
  bool new_timing_failed = false;  // NEW untimed or in error at some shape
  bool new_timed_wrong = false, old_timed_wrong = false;  // a timed output failed its re-check
  double est_first_launch_ms[2] = {0, 0};  // [ms] each side's median warm time at the decision shape
};

// One shape of the warm timing: each side's process medians, errors and re-check, and OLD against NEW.
json judge_warm_shape(const WarmShape& ws, bool is_decision_shape, const JudgeOptions& jo, JudgedWarm& jw) {
  json sj{{"shape", ws.shape}, {"dims", ws.dims}};
  for (int k = 0; k < 2; ++k) {
    const WarmSide& w = ws.side[k];
    sj[kJudgeSideName[k]] = {{"per_process_median_ms", w.medians},
                             {"summary_of_process_medians_ms", summary_or_null(w.medians)},
                             {"pooled_summary_ms", summary_or_null(w.pooled)},
                             {"errors", w.errors},
                             {"verified", w.verified},
                             {"verify_detail", w.verify_detail}};
    if (k == 1 && (w.medians.empty() || !w.errors.empty())) jw.new_timing_failed = true;
    if (!w.verified) (k == 1 ? jw.new_timed_wrong : jw.old_timed_wrong) = true;
    if (is_decision_shape && !w.medians.empty()) jw.est_first_launch_ms[k] = stats::median(w.medians);
  }
  const auto& a = ws.side[0].medians;
  const auto& b = ws.side[1].medians;
  if (!a.empty() && !b.empty()) {
    stats::DecisionOptions d;
    d.test.paired = a.size() == b.size();
    d.reversal_check = true;
    d.margin = jo.warm_margin;
    sj["comparison"] = stats::to_json(stats::compare(a, b, d));
  }
  sj["decision_shape"] = is_decision_shape;
  return sj;
}

// Warm time per shape (results.warm and its phase), when both sides could be launched.
JudgedWarm judge_warm_timing(report::CompareResult& r, const Evidence& ev, const JudgeOptions& jo) {
  JudgedWarm jw;
  if (!ev.can_launch) return jw;
  json warm_j = json::array();
  for (std::size_t si = 0; si < ev.warm.size(); ++si) warm_j.push_back(judge_warm_shape(ev.warm[si], si == jo.decision_index, jo, jw));
  json order = json::array();
  for (int x : ev.order) order.push_back(x == 0 ? "A" : "B");
  r.warm = json{{"unit", "one sample per fresh worker process: the median of its timed samples"},
               {"processes_per_side", ev.processes},
               {"samples_per_process", ev.samples},
               {"warmup_per_process", ev.warmup},
               {"order", order},
               {"boundary", ev.boundary},
               {"margin_relative", jo.warm_margin.relative},
               {"margin_absolute_ms", jo.warm_margin.absolute},
               {"decision_shape", jo.decision_index < ev.warm.size() ? json(ev.warm[jo.decision_index].shape) : json()},
               {"shapes", warm_j}};
  r.phases.set("warm_timing", fmt::format("{} fresh worker processes per side, {} samples per shape each, order A B B A ...",
                                          ev.processes, ev.samples));
  return jw;
}

// One startup mode's samples as the decision takes them: the first request is the probe's phases
// plus, where the probe did not launch, the side's warm time at the decision shape.
StartupPair judge_startup_pair(const StartupMode& m, const double (&est_first_launch_ms)[2]) {
  StartupPair pair;
  pair.cache = m.cache;
  pair.loading = m.loading;
  for (int k = 0; k < 2; ++k) {
    StartupSide& dst = k == 0 ? pair.old_side : pair.new_side;
    const StartupSamples& src = m.side[k];
    dst.kernel_first_use_ms = src.kernel_first_use_ms;
    for (std::size_t i = 0; i < src.base_ms.size(); ++i)
      dst.first_request_ms.push_back(src.base_ms[i] +
                                     (i < src.launch_ran.size() && src.launch_ran[i] > 0 ? 0.0 : est_first_launch_ms[k]));
  }
  return pair;
}

// One startup mode in results.startup.modes: each side's samples and summaries and, when both sides
// ran, the first-request deltas and what the run could resolve (also appended to resolution_j).
// Returns false when both sides ran but the resolution target was not met.
bool judge_startup_mode(const StartupMode& m, const StartupPair& pair, const JudgeOptions& jo, json& mj, json& resolution_j) {
  mj = {{"cache", decision::to_string(m.cache)}, {"loading", startup::to_string(m.loading)}, {"environment", m.environment}};
  for (int k = 0; k < 2; ++k) {
    const StartupSide& src = k == 0 ? pair.old_side : pair.new_side;
    const StartupSamples& raw = m.side[k];
    mj[kJudgeSideName[k]] = {{"runs_ok", src.kernel_first_use_ms.size()},
                             {"failures", raw.failures},
                             {"failure_messages", raw.failure_messages},
                             {"kernel_first_use_ms", src.kernel_first_use_ms},
                             {"first_request_ms", src.first_request_ms},
                             {"kernel_first_use_summary_ms", summary_or_null(src.kernel_first_use_ms)},
                             {"first_request_summary_ms", summary_or_null(src.first_request_ms)},
                             {"module_load_summary_ms", summary_or_null(raw.module_load_ms)},
                             {"jit_wall_summary_ms", summary_or_null(raw.jit_wall_ms)}};
    if (!raw.library_phases_ms.empty()) {
      json lp = json::object();
      for (const auto& [ph, v] : raw.library_phases_ms) lp[ph] = summary_or_null(v);
      mj[kJudgeSideName[k]]["library_phases_summary_ms"] = lp;
    }
  }
  if (pair.old_side.kernel_first_use_ms.empty() || pair.new_side.kernel_first_use_ms.empty()) return true;
  stats::DecisionOptions d;
  d.test.effect = stats::Effect::difference;
  d.margin.absolute = jo.cold_noise_floor_ms;
  // Driver init and context creation happen before the artifact is read: their difference is
  // noise, so the delta is taken over module load + lookup (+ first launch) only.
  mj["first_request_delta_ms"] =
      stats::to_json(stats::compare(pair.old_side.kernel_first_use_ms, pair.new_side.kernel_first_use_ms, d));
  mj["whole_first_request_delta_ms"] =
      stats::to_json(stats::compare(pair.old_side.first_request_ms, pair.new_side.first_request_ms, d));
  const Resolution res = resolution(pair.old_side.kernel_first_use_ms, pair.new_side.kernel_first_use_ms, jo.resolve_ms);
  const bool ok = res.half_width_ms <= jo.resolve_ms;
  mj["resolution"] = {{"detectable_difference_ms", res.half_width_ms},
                      {"confidence", 0.95},
                      {"runs_per_side", res.runs_per_side},
                      {"target_ms", jo.resolve_ms},
                      {"runs_per_side_needed_for_target", res.runs_needed},
                      {"resolved", ok}};
  resolution_j.push_back({{"cache", decision::to_string(m.cache)}, {"loading", startup::to_string(m.loading)},
                          {"detectable_difference_ms", res.half_width_ms}, {"runs_per_side", res.runs_per_side},
                          {"runs_per_side_needed_for_target", res.runs_needed}, {"resolved", ok}});
  return ok;
}

// Startup per mode: first request, and its delta over the artifact-dependent phases (results.startup,
// its phase, and a reason when a mode could not be resolved). The pairs the decision weighs.
std::vector<StartupPair> judge_startup(report::CompareResult& r, const Evidence& ev, const JudgeOptions& jo,
                                       const double (&est_first_launch_ms)[2]) {
  std::vector<StartupPair> pairs;
  json startup_j = json::array();
  json resolution_j = json::array();
  bool unresolved = false;
  for (const StartupMode& m : ev.startup) {
    StartupPair pair = judge_startup_pair(m, est_first_launch_ms);
    json mj;
    if (!judge_startup_mode(m, pair, jo, mj, resolution_j)) unresolved = true;
    pairs.push_back(pair);
    startup_j.push_back(mj);
  }
  r.startup = json{{"runs_per_side_per_mode", ev.startup_runs},
                  {"runs_requested", jo.startup_runs_requested},
                  {"max_runs", jo.startup_max_runs},
                  {"extensions", ev.startup_extensions},
                  {"order", "blocks A B B A of fresh probe processes (kqual startup's probe), each block every mode"},
                  {"noise_floor_ms", jo.cold_noise_floor_ms},
                  {"resolve_ms", jo.resolve_ms},
                  {"first_request_definition",
                   ev.library ? "driver_init + context + library load (dlopen of the named libcublas and its libcublasLt) "
                                "+ handle (cublasCreate, workspace) + the first gemm call at the decision shape, synchronized"
                              : "driver_init + context + kernel_first_use (module load + function lookup) + the side's median "
                                "warm kernel time at the decision shape as the first launch (probes cannot launch a kernel "
                                "that takes pointers)"},
                  {"delta_definition",
                   ev.library ? "new − old over library load + handle + first call: driver init and context creation run "
                                "before the library is opened, so their difference is noise and is left out"
                              : "new − old over the artifact-dependent phases (module load + lookup): driver init and context "
                                "creation run before the artifact is read, so their difference is noise and is left out"},
                  {"resolution", resolution_j},
                  {"notes", ev.startup_notes},
                  {"modes", startup_j}};
  if (!ev.startup.empty())
    r.phases.set("startup", fmt::format("{} fresh processes per side per mode, {} mode(s)", ev.startup_runs, startup_j.size()));
  if (unresolved)
    r.verdict.reasons.push_back(fmt::format(
        "startup: at least one cache mode could not resolve {} ms within {} processes per side (see startup.resolution)",
        jo.resolve_ms, jo.startup_max_runs));
  return pairs;
}

// A verdict reached before any profile decides: the evidence cannot carry a decision (or condemns NEW).
struct JudgeStop {
  decision::ShipVerdict decision;
  int exit_code;
  std::string summary;
};

// The profile's JIT cache mode was measured but failed on a side: say so, never let another mode
// stand in for it.
std::optional<JudgeStop> judge_profile_mode_failed(report::CompareResult& r, const Evidence& ev, const JudgeOptions& jo) {
  if (jo.profiles.empty()) return std::nullopt;
  for (const StartupMode& m : ev.startup) {
    if (m.cache != jo.profiles.front().jit_cache || m.loading != ev.startup.front().loading) continue;
    for (int k = 0; k < 2; ++k) {
      const StartupSamples& sm = m.side[k];
      if (!sm.kernel_first_use_ms.empty()) continue;
      const std::string why = fmt::format(
          "the startup probes of {} failed in the profile's JIT cache mode '{}' ({} failure(s){})", k == 0 ? "OLD" : "NEW",
          decision::to_string(m.cache), sm.failures,
          sm.failure_messages.empty() ? std::string() : ": " + sm.failure_messages.front());
      r.verdict.reasons.push_back(why);
      r.not_run.push_back("decision: " + why);
      return JudgeStop{decision::ShipVerdict::incomplete, kExitIncomplete,
                       fmt::format("No first-request measurement of {} in JIT cache mode '{}', the mode profile '{}' decides "
                                   "in; no other mode stands in for it.",
                                   k == 0 ? "OLD" : "NEW", decision::to_string(m.cache), jo.profiles.front().name)};
    }
  }
  return std::nullopt;
}

// Whether the measurements can carry a decision: no launch plan, NEW failing under timing, OLD's
// times no baseline, nothing timed at the decision shape, no startup samples, or the profile's mode
// missing: each stops here, with its reason.
std::optional<JudgeStop> judge_stop_before_deciding(report::CompareResult& r, const Evidence& ev, const JudgeOptions& jo,
                                                    const JudgedCorrectness& jc, const JudgedWarm& jw,
                                                    const std::vector<StartupPair>& pairs) {
  if (!ev.can_launch)
    return JudgeStop{decision::ShipVerdict::incomplete, kExitIncomplete,
                     "Startup and artifact identity only: without a launch plan (--manifest) there is no warm timing to weigh "
                     "the startup cost against."};
  if (jw.new_timing_failed || (jw.new_timed_wrong && !(jc.both_wrong && jw.old_timed_wrong))) {
    r.verdict.reasons.push_back(jw.new_timed_wrong ? "NEW's timed output was wrong (re-checked after timing)"
                                                   : "NEW could not be timed at every shape (see warm.shapes[].new.errors)");
    return JudgeStop{decision::ShipVerdict::do_not_ship, kExitFail, "NEW failed under timing; see the warm timing section."};
  }
  if (jc.both_wrong && jw.new_timed_wrong)
    r.notes.push_back("both sides' timed outputs are wrong, as their correctness results predict: not held against NEW");
  // A wrong timed output on OLD alone: OLD's times are not a baseline NEW can be weighed against.
  if (jw.old_timed_wrong && !jc.both_wrong) {
    std::string where;
    for (const WarmShape& ws : ev.warm)
      if (!ws.side[0].verified) {
        where = fmt::format("shape {}: {}", ws.shape, ws.side[0].verify_detail.empty() ? "re-check failed" : ws.side[0].verify_detail);
        break;
      }
    r.verdict.reasons.push_back("OLD's timed output was wrong (re-checked after timing; " + where + ")");
    r.not_run.push_back("decision: OLD's timed output was wrong, so its times are no baseline");
    return JudgeStop{decision::ShipVerdict::incomplete, kExitIncomplete,
                     "OLD's timed output was wrong although its correctness check passed; its times are no baseline to weigh "
                     "NEW against."};
  }
  if (jo.decision_index >= ev.warm.size() || ev.warm[jo.decision_index].side[0].medians.empty()) {
    r.not_run.push_back("decision: OLD could not be timed at the decision shape");
    return JudgeStop{decision::ShipVerdict::incomplete, kExitIncomplete, "OLD could not be timed; nothing to weigh NEW against."};
  }
  if (pairs.empty()) {
    r.not_run.push_back("decision: no startup samples");
    return JudgeStop{decision::ShipVerdict::incomplete, kExitIncomplete, "No startup measurement on both sides; nothing to decide on."};
  }
  return judge_profile_mode_failed(r, ev, jo);
}

// The decision per profile at the decision shape, each with its service view (results.decisions).
// The first profile's verdict before the service view turns it goes to speed_verdict.
std::vector<decision::Decision> judge_decide_per_profile(report::CompareResult& r, const Evidence& ev, const JudgeOptions& jo,
                                                         const std::vector<StartupPair>& pairs,
                                                         std::optional<decision::ShipVerdict>& speed_verdict) {
  const auto& wa = ev.warm[jo.decision_index].side[0].medians;
  const auto& wb = ev.warm[jo.decision_index].side[1].medians;
  decision::DecisionInput in =
      decision_input(pairs, wa, wb, jo.new_uses_ptx_jit, jo.arch, jo.cold_noise_floor_ms, jo.warm_margin);
  json decisions = json::array();
  std::vector<decision::Decision> ds;
  for (const auto& p : jo.profiles) {
    decision::Decision d = decision::decide(in, p);
    if (!speed_verdict) speed_verdict = d.verdict;
    // The service view may turn the verdict (an objective NEW certainly misses and OLD certainly meets:
    // do not ship; one the intervals leave open: inconclusive): before d is written.
    // A profile whose mode failed on a side has no first request to simulate: incomplete as it is.
    const bool mode_failed = d.verdict == decision::ShipVerdict::incomplete;
    const json service = jo.service.enabled && !mode_failed ? service_view(ev.startup, ev.warm[jo.decision_index], p, d, jo.service) : json();
    decisions.push_back({{"profile", decision::to_json(p)},
                         {"decision", decision::to_json(d)},
                         {"markdown", decision::to_markdown(d)},
                         {"service", service}});
    ds.push_back(std::move(d));
  }
  if (ds.empty()) throw_error(ErrorKind::usage, "no deployment profile to decide with");
  r.decisions = decisions;
  return ds;
}

// Every shape judged with the first profile: the decision shape decides, and a shape whose verdict
// differs is named, so the memo never rests on one shape unsaid. Compared with the decision shape's
// verdict before the service view (simulated at the decision shape only), so that a verdict the
// service view turned does not make every other shape look different.
void judge_every_shape(report::CompareResult& r, const Evidence& ev, const JudgeOptions& jo,
                       const std::vector<StartupPair>& pairs, decision::ShipVerdict speed_verdict) {
  json per_shape = json::array();
  for (std::size_t si = 0; si < ev.warm.size(); ++si) {
    const auto& a = ev.warm[si].side[0].medians;
    const auto& b = ev.warm[si].side[1].medians;
    json row{{"shape", ev.warm[si].shape}, {"decision_shape", si == jo.decision_index}};
    if (a.empty() || b.empty()) {
      row["verdict"] = "not_compared";
    } else {
      const decision::Decision dd = decision::decide(
          decision_input(pairs, a, b, jo.new_uses_ptx_jit, jo.arch, jo.cold_noise_floor_ms, jo.warm_margin), jo.profiles.front());
      row["verdict"] = decision::to_string(dd.verdict);
      if (si != jo.decision_index && dd.verdict != speed_verdict)
        r.verdict.reasons.push_back(fmt::format("at shape {} the verdict for profile '{}' would be {} (the decision shape is {}; "
                                                "--decision-shape picks it)",
                                                ev.warm[si].shape, jo.profiles.front().name, decision::to_string(dd.verdict),
                                                ev.warm[jo.decision_index].shape));
    }
    per_shape.push_back(row);
  }
  if (r.warm && r.warm->is_object()) (*r.warm)["verdict_per_shape"] = per_shape;
}

}  // namespace

Judgement judge(const json& static_part, const Evidence& ev, const JudgeOptions& jo) {
  return judge(report::compare_result_from_json(static_part), ev, jo);
}

Judgement judge(const report::CompareResult& static_part, const Evidence& ev, const JudgeOptions& jo) {
  report::CompareResult r = judge_start_from_static(static_part);
  if (!ev.can_launch) {
    r.not_run.push_back("correctness and warm timing: no launch plan for a prebuilt artifact (give --manifest DIR)");
    // (warm_timing listed first, as this document has always had it)
    r.phases.set("warm_timing", "not run: no launch plan (give --manifest)");
    r.phases.set("correctness", "not run: no launch plan (give --manifest)");
  }
  const JudgedCorrectness jc = judge_correctness(r, ev);
  r.wall_s = ev.wall_s;
  if (jc.blamed) {
    r.phases.set("warm_timing", "not run: NEW computes the wrong answer where OLD did not");
    r.phases.set("startup", "not run: NEW computes the wrong answer where OLD did not");
    return judge_finish(r, decision::ShipVerdict::do_not_ship, kExitFail,
                        "NEW computes the wrong answer where OLD did not; no speed makes up for that.");
  }
  const JudgedWarm jw = judge_warm_timing(r, ev, jo);
  const std::vector<StartupPair> pairs = judge_startup(r, ev, jo, jw.est_first_launch_ms);
  if (const auto stop = judge_stop_before_deciding(r, ev, jo, jc, jw, pairs))
    return judge_finish(r, stop->decision, stop->exit_code, stop->summary);

  std::optional<decision::ShipVerdict> speed_verdict;  // the first profile's, before the service view turns it
  const std::vector<decision::Decision> ds = judge_decide_per_profile(r, ev, jo, pairs, speed_verdict);
  r.verdict.profile = jo.profiles.front().name;
  r.verdict.reasons.push_back(fmt::format("decided at shape {} with profile '{}'", ev.warm[jo.decision_index].shape,
                                          jo.profiles.front().name));
  for (const auto& x : ds.front().reasons) r.verdict.reasons.push_back(x);
  judge_every_shape(r, ev, jo, pairs, *speed_verdict);
  for (std::size_t i = 1; i < ds.size(); ++i)
    r.verdict.reasons.push_back(fmt::format("for profile '{}': {}", jo.profiles[i].name, decision::describe(ds[i].verdict)));
  std::string headline = ds.front().headline;
  if (jc.both_wrong)
    headline = "Both builds fail the contract (a defect the change did not introduce); as for speed: " + headline;
  return judge_finish(r, ds.front().verdict, decision::exit_code(ds.front().verdict), headline);
}

}  // namespace kqual::compare
