#include "kqual/pipeline/compare.hpp"

#include "kqual/pipeline/stages.hpp"
#include "kqual/report/memo.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <future>
#include <cmath>
#include <limits>
#include <map>

#include "kqual/artifact/artifact.hpp"
#include "kqual/bench/timing.hpp"
#include "kqual/contract/contract.hpp"
#include "kqual/core/error.hpp"
#include "kqual/core/files.hpp"
#include "kqual/check/evaluate.hpp"
#include "kqual/build/manifest.hpp"
#include "kqual/worker/session.hpp"
#include "kqual/report/provenance.hpp"
#include "kqual/report/results.hpp"
#include "kqual/core/exit_codes.hpp"
#include "kqual/stats/compare.hpp"
#include "kqual/stats/summary.hpp"

namespace kqual::compare {
namespace fs = std::filesystem;
using decision::CacheMode;

std::vector<int> interleave_order(int count) {
  // A B | B A | A B | B A ...: pair p is (A, B) for even p, (B, A) for odd p.
  std::vector<int> out;
  for (int i = 0; i < count; ++i) {
    int pair = i / 2, pos = i % 2;
    out.push_back(pair % 2 == 0 ? pos : 1 - pos);
  }
  return out;
}


namespace {

std::vector<double> to_seconds(const std::vector<double>& ms) {
  std::vector<double> s;
  s.reserve(ms.size());
  for (double v : ms) s.push_back(v * 1e-3);
  return s;
}

}  // namespace

decision::DecisionInput decision_input(const std::vector<StartupPair>& startup, const std::vector<double>& warm_old_ms,
                                       const std::vector<double>& warm_new_ms, std::optional<bool> new_uses_ptx_jit,
                                       const std::string& target_arch, double cold_noise_floor_ms, double warm_margin) {
  decision::DecisionInput in;
  in.new_uses_ptx_jit = new_uses_ptx_jit;
  in.target_arch = target_arch;
  if (startup.empty()) throw_error(ErrorKind::input, "no startup measurement to decide on");
  const startup::LoadingMode loading = startup.front().loading;
  stats::DecisionOptions cold_opt;
  cold_opt.test.effect = stats::Effect::difference;
  cold_opt.margin.absolute = cold_noise_floor_ms * 1e-3;  // [s]
  for (const auto& p : startup) {
    if (p.loading != loading) continue;
    if (p.old_side.kernel_first_use_ms.empty() || p.new_side.kernel_first_use_ms.empty()) continue;
    const auto of = to_seconds(p.old_side.first_request_ms), nf = to_seconds(p.new_side.first_request_ms);
    const auto ok = to_seconds(p.old_side.kernel_first_use_ms), nk = to_seconds(p.new_side.kernel_first_use_ms);
    in.cold.push_back(decision::cold_start_delta(p.cache, of, nf, ok, nk, cold_opt));
  }
  if (in.cold.empty()) throw_error(ErrorKind::input, "no cache mode has startup samples on both sides");
  if (warm_old_ms.empty() || warm_new_ms.empty()) throw_error(ErrorKind::input, "no warm timing on both sides");
  stats::DecisionOptions warm_opt;
  warm_opt.test.paired = warm_old_ms.size() == warm_new_ms.size();
  warm_opt.reversal_check = true;  // process pairs that disagree in order: no reliable difference
  warm_opt.margin.relative = warm_margin;
  in.warm = decision::warm_delta(to_seconds(warm_old_ms), to_seconds(warm_new_ms), warm_opt);
  return in;
}

const char* to_string(CorrectnessRelation r) {
  switch (r) {
    case CorrectnessRelation::not_run: return "not run";
    case CorrectnessRelation::both_accepted: return "both accepted";
    case CorrectnessRelation::new_rejected: return "new rejected";
    case CorrectnessRelation::old_rejected: return "old rejected";
    case CorrectnessRelation::both_rejected_alike: return "both rejected alike";
    case CorrectnessRelation::both_rejected_differently: return "both rejected differently";
  }
  return "?";
}

CorrectnessRelation relate(const CorrectnessSide& a, const CorrectnessSide& b) {
  if (!a.ran || !b.ran) return CorrectnessRelation::not_run;
  if (a.accepted && b.accepted) return CorrectnessRelation::both_accepted;
  if (a.accepted) return CorrectnessRelation::new_rejected;
  if (b.accepted) return CorrectnessRelation::old_rejected;
  return a.failing == b.failing ? CorrectnessRelation::both_rejected_alike : CorrectnessRelation::both_rejected_differently;
}

Resolution resolution(const std::vector<double>& old_ms, const std::vector<double>& new_ms, double target_ms) {
  Resolution r;
  r.runs_per_side = int(std::min(old_ms.size(), new_ms.size()));
  if (old_ms.size() < 2 || new_ms.size() < 2) {
    r.half_width_ms = std::numeric_limits<double>::infinity();
    r.runs_needed = 2;
    return r;
  }
  stats::DecisionOptions d;
  d.test.effect = stats::Effect::difference;
  const stats::Comparison c = stats::compare(old_ms, new_ms, d);
  r.half_width_ms = 0.5 * (c.ci.hi - c.ci.lo);
  // The half-width shrinks as 1/sqrt(n): n' = n (h / target)^2.
  const double need = double(r.runs_per_side) * std::pow(r.half_width_ms / target_ms, 2.0);
  r.runs_needed = std::max(2, int(std::ceil(need)));
  return r;
}

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

// NEW is blamed for correctness only for what it changes.
bool new_is_blamed(const CorrectnessSide& a, const CorrectnessSide& b) {
  if (!a.ran || !b.ran || b.accepted) return false;
  return a.accepted || !new_regressions(a, b).empty();
}

json summary_or_null(const std::vector<double>& v) {
  if (v.empty()) return nullptr;
  return stats::to_json(stats::summarize(v));
}

}  // namespace

Judgement judge(const json& static_part, const Evidence& ev, const JudgeOptions& jo) {
  return judge(report::compare_result_from_json(static_part), ev, jo);
}

Judgement judge(const report::CompareResult& static_part, const Evidence& ev, const JudgeOptions& jo) {
  static const char* kSide[2] = {"old", "new"};
  report::CompareResult r;
  r.provenance = static_part.provenance;
  r.target = static_part.target;
  r.sides = static_part.sides;
  r.artifact_diff = static_part.artifact_diff;
  r.measured = true;
  report::PhaseList& phases = r.phases;
  phases = static_part.phases;
  phases.keep_only({"build", "artifact_diff"});
  std::vector<std::string>& notes = r.notes;
  notes = static_part.notes;
  std::vector<std::string>& not_run = r.not_run;
  report::CompareVerdict& verdict = r.verdict;
  Judgement out;
  auto finish = [&](decision::ShipVerdict decision, int code, const std::string& summary) {
    verdict.decision = decision;
    verdict.exit_code = code;
    verdict.summary = summary;
    out.results = report::to_json(r);
    out.result = r;
    out.exit_code = code;
    return out;
  };
  if (!ev.can_launch) {
    not_run.push_back("correctness and warm timing: no launch plan for a prebuilt artifact (give --manifest DIR)");
    // (warm_timing listed first, as this document has always had it)
    phases.set("warm_timing", "not run: no launch plan (give --manifest)");
    phases.set("correctness", "not run: no launch plan (give --manifest)");
  }

  // ---- Correctness: NEW is blamed only for what it changes ----
  const CorrectnessSide& co = ev.correctness[0];
  const CorrectnessSide& cn = ev.correctness[1];
  const CorrectnessRelation rel = relate(co, cn);
  const bool blamed = new_is_blamed(co, cn);
  if (ev.can_launch && ev.correctness_skipped) {
    phases.set("correctness", "skipped (--no-correctness)");
    not_run.push_back("correctness: skipped (--no-correctness)");
  } else if (ev.can_launch) {
    if (!ev.large_cases)
      not_run.push_back("correctness: the contract's largest cases (e.g. 2^27+5 elements, > 2^31 bytes) left out, as by "
                        "default in compare; --large-cases includes them");
    std::string text;
    for (int k = 0; k < 2; ++k) {
      const CorrectnessSide& c = ev.correctness[k];
      if (!c.ran) continue;
      r.correctness[kSide[k]] = c.report;
      text += fmt::format("{}{}: {} ({} passed, {} failed, {} refused)", text.empty() ? "" : "; ", kSide[k],
                          c.accepted ? "accepted" : "rejected", c.passed, c.failed, c.refused);
    }
    std::string explanation;
    switch (rel) {
      case CorrectnessRelation::both_accepted: explanation = "both builds meet the contract"; break;
      case CorrectnessRelation::new_rejected:
        explanation = fmt::format("OLD meets the contract and NEW does not: {} of {} cases fail, mostly `{}`", cn.failed,
                                  cn.cases, cn.primary_code);
        break;
      case CorrectnessRelation::old_rejected:
        explanation = fmt::format("NEW meets the contract and OLD does not (OLD: {} of {} cases fail, mostly `{}`): the change "
                                  "fixes a defect",
                                  co.failed, co.cases, co.primary_code);
        break;
      case CorrectnessRelation::both_rejected_alike:
        explanation = fmt::format("OLD and NEW both fail the contract, on the same {} case(s) with the same codes (mostly "
                                  "`{}`): the change does not alter correctness; the defect predates it",
                                  cn.failed, cn.primary_code);
        break;
      case CorrectnessRelation::both_rejected_differently: {
        const auto reg = new_regressions(co, cn);
        explanation = reg.empty()
                          ? fmt::format("OLD and NEW both fail the contract; NEW fails a subset of OLD's cases ({} of OLD's "
                                        "{}): the change does not break anything OLD got right",
                                        cn.failed, co.failed)
                          : fmt::format("OLD and NEW both fail the contract, and NEW also fails {} case(s) OLD got right or "
                                        "failed otherwise, e.g. {}",
                                        reg.size(), reg.front());
        break;
      }
      case CorrectnessRelation::not_run: explanation = "not run"; break;
    }
    if (!text.empty()) phases.set("correctness", text);
    r.correctness_relation = report::CorrectnessRelationBlock{to_string(rel), blamed, explanation};
    if (rel != CorrectnessRelation::both_accepted && rel != CorrectnessRelation::not_run)
      verdict.reasons.push_back("correctness: " + explanation);
  }
  r.wall_s = ev.wall_s;
  if (blamed) {
    phases.set("warm_timing", "not run: NEW computes the wrong answer where OLD did not");
    phases.set("startup", "not run: NEW computes the wrong answer where OLD did not");
    return finish(decision::ShipVerdict::do_not_ship, kExitFail,
                  "NEW computes the wrong answer where OLD did not; no speed makes up for that.");
  }
  const bool both_wrong =
      rel == CorrectnessRelation::both_rejected_alike || rel == CorrectnessRelation::both_rejected_differently;

  // ---- Warm time per shape ----
  json warm_j = json::array();
  bool new_timing_failed = false, new_timed_wrong = false, old_timed_wrong = false;
  double est_first_launch_ms[2] = {0, 0};
  for (std::size_t si = 0; si < ev.warm.size() && ev.can_launch; ++si) {
    const WarmShape& ws = ev.warm[si];
    json sj{{"shape", ws.shape}, {"dims", ws.dims}};
    for (int k = 0; k < 2; ++k) {
      const WarmSide& w = ws.side[k];
      sj[kSide[k]] = {{"per_process_median_ms", w.medians},
                      {"summary_of_process_medians_ms", summary_or_null(w.medians)},
                      {"pooled_summary_ms", summary_or_null(w.pooled)},
                      {"errors", w.errors},
                      {"verified", w.verified},
                      {"verify_detail", w.verify_detail}};
      if (k == 1 && (w.medians.empty() || !w.errors.empty())) new_timing_failed = true;
      if (!w.verified) (k == 1 ? new_timed_wrong : old_timed_wrong) = true;
      if (si == jo.decision_index && !w.medians.empty()) est_first_launch_ms[k] = stats::median(w.medians);
    }
    const auto& a = ws.side[0].medians;
    const auto& b = ws.side[1].medians;
    if (!a.empty() && !b.empty()) {
      stats::DecisionOptions d;
      d.test.paired = a.size() == b.size();
      d.reversal_check = true;
      d.margin.relative = jo.warm_margin;
      sj["comparison"] = stats::to_json(stats::compare(a, b, d));
    }
    sj["decision_shape"] = si == jo.decision_index;
    warm_j.push_back(sj);
  }
  if (ev.can_launch) {
    json order = json::array();
    for (int x : ev.order) order.push_back(x == 0 ? "A" : "B");
    r.warm = json{{"unit", "one sample per fresh worker process: the median of its timed samples"},
                 {"processes_per_side", ev.processes},
                 {"samples_per_process", ev.samples},
                 {"warmup_per_process", ev.warmup},
                 {"order", order},
                 {"boundary", ev.boundary},
                 {"margin_relative", jo.warm_margin},
                 {"decision_shape", jo.decision_index < ev.warm.size() ? json(ev.warm[jo.decision_index].shape) : json()},
                 {"shapes", warm_j}};
    phases.set("warm_timing", fmt::format("{} fresh worker processes per side, {} samples per shape each, order A B B A ...",
                                          ev.processes, ev.samples));
  }

  // ---- Startup per mode: first request, and its delta over the artifact-dependent phases ----
  std::vector<StartupPair> pairs;
  json startup_j = json::array();
  json resolution_j = json::array();
  bool unresolved = false;
  for (const StartupMode& m : ev.startup) {
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
    json mj{{"cache", decision::to_string(m.cache)}, {"loading", startup::to_string(m.loading)}, {"environment", m.environment}};
    for (int k = 0; k < 2; ++k) {
      const StartupSide& src = k == 0 ? pair.old_side : pair.new_side;
      const StartupSamples& raw = m.side[k];
      mj[kSide[k]] = {{"runs_ok", src.kernel_first_use_ms.size()},
                      {"failures", raw.failures},
                      {"failure_messages", raw.failure_messages},
                      {"kernel_first_use_ms", src.kernel_first_use_ms},
                      {"first_request_ms", src.first_request_ms},
                      {"kernel_first_use_summary_ms", summary_or_null(src.kernel_first_use_ms)},
                      {"first_request_summary_ms", summary_or_null(src.first_request_ms)},
                      {"module_load_summary_ms", summary_or_null(raw.module_load_ms)},
                      {"jit_wall_summary_ms", summary_or_null(raw.jit_wall_ms)}};
    }
    if (!pair.old_side.kernel_first_use_ms.empty() && !pair.new_side.kernel_first_use_ms.empty()) {
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
      unresolved = unresolved || !ok;
      mj["resolution"] = {{"detectable_difference_ms", res.half_width_ms},
                          {"confidence", 0.95},
                          {"runs_per_side", res.runs_per_side},
                          {"target_ms", jo.resolve_ms},
                          {"runs_per_side_needed_for_target", res.runs_needed},
                          {"resolved", ok}};
      resolution_j.push_back({{"cache", decision::to_string(m.cache)}, {"loading", startup::to_string(m.loading)},
                              {"detectable_difference_ms", res.half_width_ms}, {"runs_per_side", res.runs_per_side},
                              {"runs_per_side_needed_for_target", res.runs_needed}, {"resolved", ok}});
    }
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
                   "driver_init + context + kernel_first_use (module load + function lookup) + the side's median warm kernel "
                   "time at the decision shape as the first launch (probes cannot launch a kernel that takes pointers)"},
                  {"delta_definition",
                   "new − old over the artifact-dependent phases (module load + lookup): driver init and context creation "
                   "run before the artifact is read, so their difference is noise and is left out"},
                  {"resolution", resolution_j},
                  {"notes", ev.startup_notes},
                  {"modes", startup_j}};
  if (!ev.startup.empty())
    phases.set("startup", fmt::format("{} fresh processes per side per mode, {} mode(s)", ev.startup_runs, startup_j.size()));
  if (unresolved)
    verdict.reasons.push_back(fmt::format(
        "startup: at least one cache mode could not resolve {} ms within {} processes per side (see startup.resolution)",
        jo.resolve_ms, jo.startup_max_runs));

  // ---- Decision per profile ----
  if (!ev.can_launch)
    return finish(decision::ShipVerdict::incomplete, kExitIncomplete,
                  "Startup and artifact identity only: without a launch plan (--manifest) there is no warm timing to weigh "
                  "the startup cost against.");
  if (new_timing_failed || (new_timed_wrong && !(both_wrong && old_timed_wrong))) {
    verdict.reasons.push_back(new_timed_wrong ? "NEW's timed output was wrong (re-checked after timing)"
                                              : "NEW could not be timed at every shape (see warm.shapes[].new.errors)");
    return finish(decision::ShipVerdict::do_not_ship, kExitFail,
                  "NEW failed under timing; see the warm timing section.");
  }
  if (both_wrong && new_timed_wrong)
    notes.push_back("both sides' timed outputs are wrong, as their correctness results predict: not held against NEW");
  // A wrong timed output on OLD alone (issue 23): OLD's times are not a baseline NEW can be weighed against.
  if (old_timed_wrong && !both_wrong) {
    std::string where;
    for (const WarmShape& ws : ev.warm)
      if (!ws.side[0].verified) {
        where = fmt::format("shape {}: {}", ws.shape, ws.side[0].verify_detail.empty() ? "re-check failed" : ws.side[0].verify_detail);
        break;
      }
    verdict.reasons.push_back("OLD's timed output was wrong (re-checked after timing; " + where + ")");
    not_run.push_back("decision: OLD's timed output was wrong, so its times are no baseline");
    return finish(decision::ShipVerdict::incomplete, kExitIncomplete,
                  "OLD's timed output was wrong although its correctness check passed; its times are no baseline to weigh NEW "
                  "against.");
  }
  if (jo.decision_index >= ev.warm.size() || ev.warm[jo.decision_index].side[0].medians.empty()) {
    not_run.push_back("decision: OLD could not be timed at the decision shape");
    return finish(decision::ShipVerdict::incomplete, kExitIncomplete, "OLD could not be timed; nothing to weigh NEW against.");
  }
  if (pairs.empty()) {
    not_run.push_back("decision: no startup samples");
    return finish(decision::ShipVerdict::incomplete, kExitIncomplete, "No startup measurement on both sides; nothing to decide on.");
  }
  // The profile's JIT cache mode was measured but failed on a side (issue 23): say so, never let
  // another mode stand in for it.
  if (!jo.profiles.empty())
    for (const StartupMode& m : ev.startup) {
      if (m.cache != jo.profiles.front().jit_cache || m.loading != ev.startup.front().loading) continue;
      for (int k = 0; k < 2; ++k) {
        const StartupSamples& sm = m.side[k];
        if (!sm.kernel_first_use_ms.empty()) continue;
        const std::string why = fmt::format(
            "the startup probes of {} failed in the profile's JIT cache mode '{}' ({} failure(s){})", k == 0 ? "OLD" : "NEW",
            decision::to_string(m.cache), sm.failures,
            sm.failure_messages.empty() ? std::string() : ": " + sm.failure_messages.front());
        verdict.reasons.push_back(why);
        not_run.push_back("decision: " + why);
        return finish(decision::ShipVerdict::incomplete, kExitIncomplete,
                      fmt::format("No first-request measurement of {} in JIT cache mode '{}', the mode profile '{}' decides "
                                  "in; no other mode stands in for it.",
                                  k == 0 ? "OLD" : "NEW", decision::to_string(m.cache), jo.profiles.front().name));
      }
    }
  const auto& wa = ev.warm[jo.decision_index].side[0].medians;
  const auto& wb = ev.warm[jo.decision_index].side[1].medians;
  decision::DecisionInput in =
      decision_input(pairs, wa, wb, jo.new_uses_ptx_jit, jo.arch, jo.cold_noise_floor_ms, jo.warm_margin);
  json decisions = json::array();
  std::vector<decision::Decision> ds;
  for (const auto& p : jo.profiles) {
    decision::Decision d = decision::decide(in, p);
    // The service view may turn the verdict (an objective NEW misses and OLD meets): before d is written.
    const json service = jo.service.enabled ? service_view(ev.startup, ev.warm[jo.decision_index], p, d, jo.service) : json();
    decisions.push_back({{"profile", decision::to_json(p)},
                         {"decision", decision::to_json(d)},
                         {"markdown", decision::to_markdown(d)},
                         {"service", service}});
    ds.push_back(std::move(d));
  }
  if (ds.empty()) throw_error(ErrorKind::usage, "no deployment profile to decide with");
  r.decisions = decisions;
  verdict.profile = jo.profiles.front().name;
  verdict.reasons.push_back(fmt::format("decided at shape {} with profile '{}'", ev.warm[jo.decision_index].shape,
                                           jo.profiles.front().name));
  for (const auto& x : ds.front().reasons) verdict.reasons.push_back(x);
  // Every shape judged with the first profile (issue 23): the decision shape decides, and a shape
  // whose verdict differs is named, so the memo never rests on one shape unsaid.
  {
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
        if (si != jo.decision_index && dd.verdict != ds.front().verdict)
          verdict.reasons.push_back(fmt::format("at shape {} the verdict for profile '{}' would be {} (the decision shape is {}; "
                                                "--decision-shape picks it)",
                                                ev.warm[si].shape, jo.profiles.front().name, decision::to_string(dd.verdict),
                                                ev.warm[jo.decision_index].shape));
      }
      per_shape.push_back(row);
    }
    if (r.warm && r.warm->is_object()) (*r.warm)["verdict_per_shape"] = per_shape;
  }
  for (std::size_t i = 1; i < ds.size(); ++i)
    verdict.reasons.push_back(
        fmt::format("for profile '{}': {}", jo.profiles[i].name, decision::describe(ds[i].verdict)));
  std::string headline = ds.front().headline;
  if (both_wrong)
    headline = "Both builds fail the contract (a defect the change did not introduce); as for speed: " + headline;
  return finish(ds.front().verdict, decision::exit_code(ds.front().verdict), headline);
}

namespace {

struct Side {
  std::string label;  // "old" / "new"
  SideSpec spec;
  bool is_candidate = false;
  fs::path input;  // absolute
  std::optional<build::Manifest> manifest;
  std::string manifest_from;
  std::optional<build::BuiltCandidate> built;
  build::BuildProvenance prov;
  fs::path image;
  std::string image_sha256;
  artifact::Artifact art;
  artifact::Selection sel;
  std::string startup_kernel;
  std::string startup_kernel_from;
  std::string module_pick;  // host binaries: which module was taken
};

bool looks_like_candidate(const fs::path& p) {
  std::error_code ec;
  return fs::is_directory(p, ec) || p.extension() == ".toml";
}

void classify(Side& s) {
  std::error_code ec;
  fs::path p = s.spec.input;
  if (!fs::exists(p, ec))
    throw_error(ErrorKind::input, fmt::format("{} input '{}' does not exist", s.label == "old" ? "OLD" : "NEW", p.string()));
  s.input = fs::weakly_canonical(fs::absolute(p), ec);
  s.is_candidate = looks_like_candidate(p);
  if (s.is_candidate) {
    s.manifest = build::load_manifest(p);
    s.manifest_from = "the candidate's manifest";
  } else if (s.spec.recipe_given) {
    throw_error(ErrorKind::usage,
                fmt::format("--{}-mode/--{}-ptxas/--{}-nvcc (and --ptxas/--nvcc) build a candidate from source; {} '{}' is "
                            "a prebuilt artifact",
                            s.label, s.label, s.label, s.label == "old" ? "OLD" : "NEW", p.string()));
  }
}

void say(const CompareOptions& o, const std::string& line) {
  if (o.progress) o.progress(line);
}

CorrectnessSide to_side(const check::CorrectnessReport& rep) {
  CorrectnessSide c;
  c.ran = true;
  c.accepted = rep.accepted();
  c.cases = rep.cases;
  c.passed = rep.passed;
  c.failed = rep.failed;
  c.refused = rep.refused;
  c.primary_code = rep.primary_code();
  for (const auto& cr : rep.results)
    if (cr.status == "fail") c.failing[cr.spec.id] = cr.code;
  c.report = rep.to_json(false);
  return c;
}

// Runs `runs[side]` fresh probe processes per mode in blocks A B B A and appends the samples.
void measure_startup_blocks(const CompareOptions& o, Side (&sides)[2], const std::vector<decision::CacheMode>& modes,
                            const int (&runs)[2], std::map<std::pair<int, int>, StartupMode>& acc,
                            std::vector<std::string>& notes) {
  const int block_runs[2][2] = {{(runs[0] + 1) / 2, runs[0] / 2}, {(runs[1] + 1) / 2, runs[1] / 2}};
  int blocks_done[2] = {0, 0};
  const std::vector<int> order = interleave_order(4);
  for (int k = 0; k < 4; ++k) {
    const int side = order[std::size_t(k)];
    Side& s = sides[side];
    startup::StartupConfig cfg;
    cfg.artifact = s.image.string();
    cfg.kernel = s.startup_kernel;
    cfg.launch = false;  // candidate kernels take pointers: the harness's launch is timed warm, not here
    cfg.runs = block_runs[side][blocks_done[side]++];
    if (cfg.runs <= 0) continue;
    cfg.cache_modes = modes;
    cfg.loading_modes = o.loading_modes;
    cfg.watchdog_s = o.watchdog_seconds;
    cfg.probe_executable = o.probe_executable;
    say(o, fmt::format("startup: block {}/4 ({}, {} fresh processes per mode, {} mode(s))", k + 1, s.label, cfg.runs,
                       modes.size()));
    startup::StartupReport rep = startup::measure_startup(cfg);
    if (!rep.gpu_ran) throw_error(ErrorKind::cuda, "startup probes could not use the GPU: " + rep.gpu_unavailable);
    for (const auto& n : rep.notes)
      if (std::find(notes.begin(), notes.end(), n) == notes.end()) notes.push_back(n);
    for (const auto& m : rep.modes) {
      StartupMode& a = acc[{int(m.cache), int(m.loading)}];
      a.cache = m.cache;
      a.loading = m.loading;
      if (side == 0) a.environment = m.environment;
      StartupSamples& dst = a.side[side];
      dst.failures += m.failures;
      for (const auto& smp : m.samples) {
        if (!smp.ok) {
          dst.failure_messages.push_back(smp.failure);
          continue;
        }
        auto get = [&](const char* ph) { auto it = smp.phases.find(ph); return it == smp.phases.end() ? 0.0 : it->second; };
        if (!smp.phases.count("kernel_first_use")) continue;
        const double kfu = get("kernel_first_use");
        dst.kernel_first_use_ms.push_back(kfu);
        dst.base_ms.push_back(get("driver_init") + get("context") + kfu);
        dst.launch_ran.push_back(smp.phases.count("first_launch") ? 1.0 : 0.0);
        dst.module_load_ms.push_back(get("module_load"));
        if (smp.phases.count("jit_wall")) dst.jit_wall_ms.push_back(get("jit_wall"));
      }
    }
  }
}

}  // namespace

CompareOutcome run_compare(const CompareOptions& o) {
  // ---- 1. Everything that can be refused without building or touching a GPU ----
  if (o.old_side.input.empty()) throw_error(ErrorKind::usage, "OLD is required");
  Side sides[2];
  sides[0].label = "old";
  sides[0].spec = o.old_side;
  sides[1].label = "new";
  sides[1].spec = o.new_side;
  if (sides[1].spec.input.empty()) sides[1].spec.input = o.old_side.input;
  for (auto& s : sides) classify(s);
  if (sides[0].input == sides[1].input && sides[0].spec.recipe == sides[1].spec.recipe)
    throw_error(ErrorKind::usage,
                fmt::format("OLD and NEW are the same build ({} with {}): give another NEW, or different --old-*/--new-* build "
                            "options (docs/compare.md)",
                            sides[0].input.string(), sides[0].spec.recipe.describe()));
  if (o.startup_runs < 2) throw_error(ErrorKind::usage, "--startup-runs must be at least 2 (two blocks per side)");
  if (!(o.resolve_ms > 0)) throw_error(ErrorKind::usage, "--resolve-ms must be positive");
  if (o.processes < 1 || o.samples < 1 || o.warmup < 0) throw_error(ErrorKind::usage, "--processes/--samples must be >= 1");
  if (o.cache_modes.empty() || o.loading_modes.empty()) throw_error(ErrorKind::usage, "no cache or loading mode selected");
  auto dtype = parse_dtype(o.dtype);
  if (!dtype) throw_error(ErrorKind::usage, fmt::format("--dtype: unknown dtype '{}'", o.dtype));
  std::optional<build::Manifest> shared_manifest;
  if (!o.manifest.empty()) {
    // A launch plan for prebuilt sides: no source needed (the image's symbols name the kernels).
    shared_manifest = build::load_manifest(o.manifest, build::ManifestUse::launch_plan);
  } else {
    for (const auto& s : sides)
      if (s.manifest && !shared_manifest) shared_manifest = s.manifest;
  }
  for (auto& s : sides) {
    if (s.is_candidate || !shared_manifest) continue;
    s.manifest = shared_manifest;
    s.manifest_from = o.manifest.empty() ? "the other side's candidate manifest" : "--manifest " + o.manifest;
  }
  if (sides[0].manifest && sides[1].manifest && sides[0].manifest->contract != sides[1].manifest->contract)
    throw_error(ErrorKind::input, fmt::format("OLD implements {} but NEW implements {}: nothing to compare",
                                              sides[0].manifest->contract, sides[1].manifest->contract));
  JudgeOptions jo;
  for (const auto& p : o.profiles) jo.profiles.push_back(decision::load_profile(p));
  if (jo.profiles.empty()) {
    decision::DeploymentProfile d;
    d.name = "default";
    d.description = "built-in defaults (docs/statistics.md); give --profile FILE for your service";
    jo.profiles.push_back(d);
  }
  const contract::Contract* contract = sides[1].manifest ? &contract::find_contract(sides[1].manifest->contract) : nullptr;
  std::vector<contract::Dims> shapes;
  if (contract) {
    for (const auto& t : o.shapes) shapes.push_back(contract::parse_shape(*contract, t));
    if (shapes.empty()) shapes = contract->benchmark_shapes();
  } else if (!o.shapes.empty()) {
    throw_error(ErrorKind::usage, "--shapes needs a launch plan: compare candidates, or give --manifest");
  }
  std::size_t decision_index = shapes.empty() ? 0 : shapes.size() - 1;
  if (!o.decision_shape.empty()) {
    if (!contract) throw_error(ErrorKind::usage, "--decision-shape needs a launch plan (a candidate or --manifest)");
    contract::Dims d = contract::parse_shape(*contract, o.decision_shape);
    auto it = std::find(shapes.begin(), shapes.end(), d);
    if (it == shapes.end())
      throw_error(ErrorKind::usage, fmt::format("--decision-shape {} is not among the measured shapes", o.decision_shape));
    decision_index = std::size_t(it - shapes.begin());
  }

  // ---- 2. Device (through a worker; never CUDA in this process) and target ----
  pipeline::Target tg = pipeline::open_target({o.use_gpu, o.watchdog_seconds, o.arch});
  worker::Session& session = *tg.session;
  const worker::DeviceFacts& dev = *tg.device;
  const std::string arch = tg.arch;
  const std::string why_no_gpu = tg.why_no_gpu;

  report::CompareResult r;
  r.provenance = report::provenance(o.command_line, tg.device_json());
  r.target = {arch, tg.arch_source};
  std::vector<std::string>& notes = r.notes;

  // ---- 3. Build (or adopt) both sides: static, no GPU ----
  for (auto& s : sides) {
    fs::path dir = session.scratch() / s.label;
    fs::create_directories(dir);
    if (s.is_candidate) {
      say(o, fmt::format("building {}: {}", s.label, s.spec.recipe.describe()));
      s.built = build::build_with_recipe(*s.manifest, s.spec.recipe, arch, dir, &s.prov);
      s.image = s.built->image_path;
    } else {
      s.image = s.input;
      const artifact::Artifact whole = artifact::parse_artifact(s.input.string());
      if (whole.container == artifact::ContainerKind::host_binary) {
        // A host executable or shared library: the driver registers each embedded fatbin as its own
        // module; the one holding the manifest's kernels is the side.
        if (!s.manifest)
          throw_error(ErrorKind::usage,
                      fmt::format("{} is a host binary with {} device module(s): give --manifest DIR so the module holding "
                                  "the kernel can be picked",
                                  s.input.string(), whole.containers.size()));
        build::ModulePick pick = build::pick_module(*s.manifest, s.input, arch, dir);
        s.image = pick.module_path;
        s.module_pick = pick.reason;
        s.prov.notes.push_back(pick.reason);
        say(o, fmt::format("{}: {}", s.label, pick.reason));
      }
      s.prov.recipe = "prebuilt " + std::string(artifact::to_string(whole.container)) + " " + s.input.string();
      if (s.manifest) s.built = build::adopt_prebuilt(*s.manifest, s.image, arch, &s.prov);
    }
    s.art = artifact::parse_artifact(s.image.string());
    s.image_sha256 = s.art.sha256;
    if (s.prov.image_kind.empty()) s.prov.image_kind = artifact::to_string(s.art.container);
    s.sel = artifact::select_for_arch(s.art, artifact::Arch::parse(arch));
    // The kernel the startup probes look up.
    if (s.built && s.manifest) {
      const auto names = s.manifest->kernel_names(s.manifest->supports.dtypes.at(0));
      s.startup_kernel = s.built->lowered.at(names.at(0));
      s.startup_kernel_from = "the manifest's first launch (" + names.at(0) + ")";
    } else if (s.sel.entry) {
      const auto& e = s.art.entries.at(*s.sel.entry);
      if (!e.kernels.empty()) s.startup_kernel = e.kernels.front().name;
      if (!e.ptx_entries.empty()) s.startup_kernel = e.ptx_entries.front();
      s.startup_kernel_from = "the first kernel of the entry the driver loads";
    }
  }
  if (sides[0].image_sha256 == sides[1].image_sha256) {
    if (!sides[0].is_candidate && !sides[1].is_candidate)
      throw_error(ErrorKind::usage, fmt::format("OLD and NEW are byte-identical ({}): nothing to compare",
                                                sides[0].image_sha256.substr(0, 16)));
    notes.push_back("both builds produced byte-identical images: any measured difference is noise");
  }
  const artifact::ArtifactDiff diff = artifact::diff_artifacts(sides[0].art, sides[1].art, artifact::Arch::parse(arch));
  const bool new_jit = sides[1].sel.path == artifact::LoadPath::ptx_jit;
  json side_json = json::object();
  for (auto& s : sides) {
    json j{{"input", s.input.string()},
           {"kind", s.is_candidate ? "candidate" : "artifact"},
           {"build", s.prov.to_json()},
           {"image", {{"path", s.image.string()}, {"sha256", s.image_sha256}, {"kind", s.prov.image_kind}}},
           {"loading_path", artifact::to_string(s.sel.path)},
           {"loading_reason", s.sel.reason},
           {"manifest", s.manifest ? json(s.manifest->file.string()) : json()},
           {"manifest_from", s.manifest_from},
           {"startup_kernel", s.startup_kernel},
           {"module", s.module_pick.empty() ? json() : json(s.module_pick)}};
    if (s.built) j["candidate"] = s.built->to_json(), j["candidate"]["image"]["kind"] = s.prov.image_kind;
    side_json[s.label] = j;
  }
  r.sides = side_json;
  r.artifact_diff = artifact::to_json(diff);
  report::PhaseList& phases = r.phases;
  phases.set("build", fmt::format("old: {}; new: {}", sides[0].prov.recipe, sides[1].prov.recipe));
  phases.set("artifact_diff", fmt::format("old loads by {}, new by {} on {}; {} kernel(s) compared",
                                          artifact::to_string(sides[0].sel.path), artifact::to_string(sides[1].sel.path), arch,
                                          diff.kernels.size()));

  auto write = [&](report::CompareResult result, int code) {
    CompareOutcome out;
    out.results = report::to_json(result);
    out.memo = report::render_compare_memo(result);
    out.result = std::move(result);
    out.exit_code = code;
    const pipeline::Written w = pipeline::write_results(o.out_dir, out.results, out.memo);
    out.results_path = w.results;
    out.memo_path = w.memo;
    return out;
  };

  if (!dev.present) {
    for (const char* ph : {"correctness", "startup", "warm_timing", "decision"}) {
      phases.set(ph, "not run: needs a GPU (" + why_no_gpu + ")");
      r.not_run.push_back(std::string(ph) + ": needs a GPU (" + why_no_gpu + ")");
    }
    report::CompareVerdict& verdict = r.verdict;
    verdict.reasons.push_back("static phases done: both sides built/parsed for " + arch + ", artifact diff computed");
    if (new_jit && !sides[0].art.entries.empty() && sides[0].sel.path == artifact::LoadPath::native_sass)
      verdict.reasons.push_back("NEW is JIT-compiled from PTX on " + arch +
                                " while OLD loads native SASS: expect a first-request cost with a cold JIT cache");
    verdict.decision = decision::ShipVerdict::incomplete;
    verdict.exit_code = kExitIncomplete;
    verdict.summary = "No GPU: only the static phases ran. " + why_no_gpu;
    return write(std::move(r), kExitIncomplete);
  }

  // ---- 4. Measure: correctness of both, warm timing, startup ----
  Evidence ev;
  ev.can_launch = sides[0].built && sides[1].built;
  ev.correctness_skipped = !o.correctness;
  ev.large_cases = o.large_cases;
  auto clock = std::chrono::steady_clock::now();
  auto lap = [&](const char* phase) {
    const auto now = std::chrono::steady_clock::now();
    ev.wall_s[phase] += std::chrono::duration<double>(now - clock).count();
    clock = now;
  };
  if (ev.can_launch) {
    for (auto& s : sides) {
      std::string refusal = check::load_and_describe(session, *s.built);
      if (!refusal.empty()) throw_error(ErrorKind::input, fmt::format("{} ({}): {}", s.label, s.prov.recipe, refusal));
      side_json[s.label]["candidate"] = s.built->to_json();
      side_json[s.label]["candidate"]["image"]["kind"] = s.prov.image_kind;
    }
    r.sides = side_json;
  }
  bench::TimingOptions to;
  to.dtype = *dtype;
  to.shapes = shapes;
  to.rounds = 1;
  to.samples_per_round = o.samples;
  to.warmup = o.warmup;
  to.measure_copy = false;
  to.seed = o.seed;
  to.equivalence_margin = o.warm_margin;
  to.keep_input_files = true;  // the same inputs for every process and both sides
  to.input_root = session.scratch() / "bench";
  // The timing cases (inputs, references) are generated on the CPU while the GPU checks
  // correctness, in a session of their own (no worker is shared between threads).
  std::future<void> primed;
  if (ev.can_launch && contract)
    primed = std::async(std::launch::async, [&] {
      worker::Session prep(session.options());
      bench::prepare_timing_cases(prep, *contract, to);
    });
  if (ev.can_launch && o.correctness) {
    check::CheckOptions co;
    co.seed = o.seed;
    co.include_large = o.large_cases;
    // compare asks whether NEW may replace OLD; the cases past 2^31 elements come with the large
    // ones (--large-cases), and the sanitizer pass is `kqual check`'s (its wall time would dominate
    // compare's budget).
    co.index_cases = o.large_cases;
    co.sanitizer_pass = false;
    // NEW is blamed only for cases OLD passes: both sides' failing cases must be known, so a rejected
    // side runs every case (a correct side runs every case anyway).
    co.all_cases = true;
    // Both sides at once, each in its own worker process (correctness is not timed).
    say(o, "correctness: old and new, each in its own worker");
    worker::Session other(session.options());
    auto new_side = std::async(std::launch::async, [&] {
      return to_side(check::check_correctness(other, *sides[1].built, co));
    });
    ev.correctness[0] = to_side(check::check_correctness(session, *sides[0].built, co));
    ev.correctness[1] = new_side.get();
  }
  if (primed.valid()) {
    try {
      primed.get();
    } catch (const std::exception& e) {
      // Timing generates what it needs itself; only the overlap is lost.
      say(o, std::string("preparing timing inputs ahead failed (timing will generate them): ") + e.what());
    }
  }
  const bool new_blamed = new_is_blamed(ev.correctness[0], ev.correctness[1]);
  lap("load_and_correctness");

  if (ev.can_launch && !new_blamed) {
    ev.order = interleave_order(2 * o.processes);
    ev.processes = o.processes;
    ev.samples = o.samples;
    ev.warmup = o.warmup;
    ev.warm.resize(shapes.size());
    for (std::size_t si = 0; si < shapes.size(); ++si) {
      ev.warm[si].shape = contract::format_dims(shapes[si]);
      ev.warm[si].dims = shapes[si];
    }
    for (std::size_t k = 0; k < ev.order.size(); ++k) {
      Side& s = sides[ev.order[k]];
      say(o, fmt::format("warm timing: process {}/{} ({})", k + 1, ev.order.size(), s.label));
      session.worker().stop();  // a fresh worker process for every block
      bench::TimingReport rep = bench::time_against_baselines(session, *s.built, {}, to);
      ev.boundary = rep.boundary;
      for (std::size_t si = 0; si < rep.shapes.size() && si < shapes.size(); ++si) {
        const bench::Series& se = rep.shapes[si].series.at(0);
        WarmSide& w = ev.warm[si].side[ev.order[k]];
        if (!se.error.empty()) {
          w.errors.push_back(se.error);
          continue;
        }
        if (se.samples_ms.empty()) continue;
        w.medians.push_back(stats::median(se.samples_ms));
        w.pooled.insert(w.pooled.end(), se.samples_ms.begin(), se.samples_ms.end());
        if (!se.verified) {
          w.verified = false;
          w.verify_detail = se.verify_detail;
        }
      }
    }
    session.worker().stop();
    lap("warm_timing");
  }

  if (!new_blamed) {
    // Blocks A B B A of fresh probes; then more blocks, for the modes that could not resolve
    // resolve_ms, up to startup_max_runs per side.
    std::map<std::pair<int, int>, StartupMode> acc;
    const int first[2] = {o.startup_runs, o.startup_runs};
    measure_startup_blocks(o, sides, o.cache_modes, first, acc, ev.startup_notes);
    int done = o.startup_runs;
    const int max_runs = std::max(o.startup_max_runs, o.startup_runs);
    for (int round = 0; round < 4 && done < max_runs; ++round) {
      std::vector<decision::CacheMode> more;
      int target = done;
      for (const auto& [key, m] : acc) {
        if (m.loading != o.loading_modes.front()) continue;
        const Resolution res = resolution(m.side[0].kernel_first_use_ms, m.side[1].kernel_first_use_ms, o.resolve_ms);
        if (res.half_width_ms <= o.resolve_ms) continue;
        // More processes only where they could change the answer: an interval already clear of
        // the noise floor on one side is decided, however wide it is.
        if (m.side[0].kernel_first_use_ms.size() >= 2 && m.side[1].kernel_first_use_ms.size() >= 2) {
          stats::DecisionOptions d;
          d.test.effect = stats::Effect::difference;
          d.margin.absolute = o.cold_noise_floor_ms;
          const stats::Comparison c = stats::compare(m.side[0].kernel_first_use_ms, m.side[1].kernel_first_use_ms, d);
          if (c.verdict != stats::Verdict::inconclusive) continue;
        }
        more.push_back(m.cache);
        const int want = std::min(max_runs, std::max(res.runs_needed, done + 4));
        target = std::max(target, want);
        ev.startup_extensions.push_back(fmt::format("{} cache: ±{:.2f} ms detectable with {} per side, {} needed for {} ms: "
                                                    "extending to {}",
                                                    decision::to_string(m.cache), res.half_width_ms, res.runs_per_side,
                                                    res.runs_needed, o.resolve_ms, want));
      }
      if (more.empty()) break;
      const int extra[2] = {target - done, target - done};
      say(o, fmt::format("startup: {} more fresh processes per side for {} mode(s) to resolve {} ms", target - done, more.size(),
                         o.resolve_ms));
      measure_startup_blocks(o, sides, more, extra, acc, ev.startup_notes);
      done = target;
    }
    ev.startup_runs = done;
    for (auto& [key, m] : acc) ev.startup.push_back(std::move(m));
    lap("startup");
  }

  // ---- 5. Judge and write ----
  jo.decision_index = decision_index;
  jo.new_uses_ptx_jit = new_jit;
  jo.arch = arch;
  jo.cold_noise_floor_ms = o.cold_noise_floor_ms;
  jo.warm_margin = o.warm_margin;
  jo.resolve_ms = o.resolve_ms;
  jo.startup_max_runs = std::max(o.startup_max_runs, o.startup_runs);
  jo.startup_runs_requested = o.startup_runs;
  jo.service.requests = 50000;  // the real run: longer simulations, more replicates (a few seconds of CPU)
  jo.service.bootstrap = 200;
  jo.service.seed = o.seed;
  Judgement j = judge(r, ev, jo);
  return write(std::move(j.result), j.exit_code);
}

}  // namespace kqual::compare
