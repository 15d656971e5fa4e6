// kqual decide: a recorded result judged again from its samples (include/kqual/pipeline/decide.hpp).
#include "kqual/pipeline/decide.hpp"

#include <fmt/format.h>

#include <cmath>

#include "kqual/contract/declared/declared.hpp"
#include "kqual/core/error.hpp"
#include "kqual/decision/profile.hpp"
#include "kqual/decision/qualify.hpp"
#include "kqual/pipeline/compare.hpp"
#include "kqual/pipeline/qualify.hpp"
#include "kqual/report/html.hpp"
#include "kqual/report/results.hpp"

namespace kqual::pipeline {
namespace {

[[noreturn]] void missing(const std::string& what) { throw_error(ErrorKind::input, what); }

std::vector<double> doubles(const json& j, const std::string& path) {
  if (!j.is_array()) missing(path + ": expected an array of numbers");
  std::vector<double> v;
  for (const auto& x : j) {
    if (!x.is_number()) missing(path + ": expected an array of numbers");
    v.push_back(x.get<double>());
  }
  return v;
}

// The findings a qualify-family run had, read back from its document.
decision::QualifyFindings findings_of(const report::QualifyResult& r) {
  decision::QualifyFindings f;
  f.arch = r.artifact.is_object() ? r.artifact.value("arch", std::string("?")) : "?";
  f.correctness_run = r.correctness.has_value();
  // qualify and bench time by definition: a document of either without timing (or with no timed
  // shape) timed nothing, which the rule makes incomplete, never "correct, no performance claim".
  f.timing_run = r.timing.has_value() || r.command == "qualify" || r.command == "bench";
  f.gpu = f.correctness_run || r.timing.has_value();
  if (!f.gpu) {
    // decide_qualify writes "No GPU: only the static phases ran. <why>": keep <why> only.
    const std::string lead = "No GPU: only the static phases ran. ";
    f.why_no_gpu = r.verdict.summary.rfind(lead, 0) == 0 ? r.verdict.summary.substr(lead.size()) : r.verdict.summary;
  }
  if (r.correctness) {
    const json& c = *r.correctness;
    f.correct = c.value("verdict", std::string()) == "accepted";
    f.cases = c.value("cases", 0);
    f.passed = c.value("passed", 0);
    f.failed = c.value("failed", 0);
    f.refused = c.value("refused", 0);
    f.primary_code = c.value("primary_reason", std::string());
    f.harness_failure = c.value("harness_failure", std::string());
    if (c.contains("settled_not_run") && c.at("settled_not_run").is_array()) f.settled_not_run = int(c.at("settled_not_run").size());
    for (const char* key : {"failing_cases", "case_results"})
      if (c.contains(key) && c.at(key).is_array())
        for (const auto& x : c.at(key))
          if (x.value("status", std::string()) == "fail" && f.first_failure.empty()) f.first_failure = x.value("detail", std::string());
  }
  // A qualify whose candidate was wrong never timed it; the rule stops at correctness either way.
  if (r.timing) add_timed_shapes(f, *r.timing);
  else if (f.timing_run) f.timing_not_run = "the document records no timing";
  return f;
}

// Every recorded sample is a positive, finite time: a zero or negative one is a damaged document
// (Error(input) naming the field), not a ratio the rule can take.
void require_positive_samples(const json& doc) {
  if (!doc.contains("timing") || !doc.at("timing").is_object() || !doc.at("timing").contains("shapes")) return;
  const json& shapes = doc.at("timing").at("shapes");
  if (!shapes.is_array()) return;
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    if (!shapes[i].is_object() || !shapes[i].contains("series") || !shapes[i].at("series").is_array()) continue;
    const json& series = shapes[i].at("series");
    for (std::size_t k = 0; k < series.size(); ++k) {
      if (!series[k].is_object() || !series[k].contains("samples_ms") || !series[k].at("samples_ms").is_array()) continue;
      const json& v = series[k].at("samples_ms");
      for (std::size_t n = 0; n < v.size(); ++n)
        if (v[n].is_number() && !(v[n].get<double>() > 0 && std::isfinite(v[n].get<double>())))
          missing(fmt::format("timing.shapes[{}].series[{}].samples_ms[{}]: {} is not a positive, finite time", i, k, n, v[n].dump()));
    }
  }
}

// The policy and mix decide judges with: the recorded ones (the same samples then give the recorded
// verdict), each replaced only by what the command line gives, and every replacement said.
struct Settings {
  decision::SpeedPolicy policy;
  decision::ShapeMix mix;
  std::vector<std::string> replaced;
};

std::string policy_words(const decision::SpeedPolicy& p) {
  return fmt::format("margin {:g} %, {:g} us; regression limit {:g} %", 100 * p.margin_relative, p.margin_absolute_s * 1e6,
                     100 * p.regression_limit);
}

Settings decide_settings(const report::QualifyResult& r, const DecideOptions& o) {
  Settings st;
  const bool recorded = r.verdict.speed.has_value();
  if (recorded) {
    st.policy = r.verdict.speed->policy;
    st.mix = r.verdict.speed->mix;
  }
  const std::string was = recorded ? fmt::format("the recorded {} and profile '{}'", policy_words(st.policy), st.mix.profile)
                                   : std::string("kqual's defaults (no recorded speed verdict)");
  if (!o.profiles.empty()) {
    const decision::DeploymentProfile profile = decision::load_profile(o.profiles[0]);
    st.policy = decision::speed_policy(profile, "", "");
    // Profile shapes matched to the timed ones by value: parsed against the recorded contract.
    const contract::Contract* c = nullptr;
    try {
      c = &contract::ContractLookup().resolve(r.contract.name, std::filesystem::current_path());
    } catch (const Error&) {
      st.replaced.push_back(fmt::format("contract {} not found here: the profile's shapes are matched to the timed ones as "
                                        "written (dim by dim), not completed by the contract",
                                        r.contract.name));
    }
    st.mix = c ? contract_shape_mix(*c, profile) : decision::shape_mix_of(profile);
    st.replaced.push_back(fmt::format("--profile {}: profile '{}' ({}) replaces {}", o.profiles[0], st.mix.profile,
                                      policy_words(st.policy), was));
  }
  if (!o.margin.empty()) {
    const decision::SpeedPolicy before = st.policy;
    decision::parse_margin(o.margin, st.policy);
    st.replaced.push_back(fmt::format("--margin {}: margin {:g} %, {:g} us replaces {:g} %, {:g} us", o.margin,
                                      100 * st.policy.margin_relative, st.policy.margin_absolute_s * 1e6,
                                      100 * before.margin_relative, before.margin_absolute_s * 1e6));
  }
  if (!o.regression_limit.empty()) {
    const double before = st.policy.regression_limit;
    st.policy.regression_limit = decision::parse_fraction("--regression-limit", o.regression_limit);
    st.replaced.push_back(fmt::format("--regression-limit {}: {:g} % replaces {:g} %", o.regression_limit,
                                      100 * st.policy.regression_limit, 100 * before));
  }
  return st;
}

DecideOutcome decide_qualify_doc(const json& doc, const DecideOptions& o) {
  const report::QualifyResult r = report::qualify_result_from_json(doc);
  require_positive_samples(doc);
  if (o.profiles.size() > 1) throw_error(ErrorKind::usage, "decide: a qualify, check or bench result takes one --profile");
  const Settings st = decide_settings(r, o);
  decision::QualifyFindings f = findings_of(r);
  f.policy = st.policy;
  f.mix = st.mix;
  const decision::QualifyVerdict v = decision::decide_qualify(f);
  DecideOutcome out;
  out.notes = st.replaced;
  out.input_schema = doc.value("schema", std::string());
  out.recorded = decision::to_string(r.verdict.verdict);
  out.verdict = decision::to_string(v.verdict);
  out.summary = v.summary;
  out.verdict_json = decision::to_json(v);
  out.exit_code = decision::exit_code(v.verdict);
  if (r.timing && !r.verdict.speed)
    out.notes.push_back("recorded before the speed rule (no verdict.speed): its verdict was the earlier per-shape rule; judged "
                        "again here from the recorded samples");
  std::string& t = out.text;
  t += fmt::format("# kqual decide: {} ({})\n\n", r.candidate.name, out.input_schema);
  t += fmt::format("Recorded verdict: **{}**. Judged again: **{}** (exit {}).\n\n{}\n\n", out.recorded, out.verdict,
                   out.exit_code, v.summary);
  for (const auto& n : st.replaced) t += "- Replaced: " + n + "\n";
  if (!st.replaced.empty()) t += "\n";
  if (v.speed) t += decision::speed_table_markdown(*v.speed) + "\n";
  for (const auto& w : v.would_reverse) t += "- Would reverse: " + w + "\n";
  return out;
}

// Compare: the ship rule per profile (decision::decide) from the recorded startup samples and the
// decision shape's per-process warm medians.
DecideOutcome decide_compare_doc(const json& doc, const DecideOptions& o) {
  const report::CompareResult r = report::compare_result_from_json(doc);
  // compare's warm rule has a margin (compare --margin REL[,ABS]) and no regression limit: --regression-limit
  // would be silently unused, so it is refused.
  if (!o.regression_limit.empty())
    throw_error(ErrorKind::usage, "decide: --regression-limit applies to qualify, check and bench results; compare's warm rule "
                                  "has no per-shape regression limit");
  DecideOutcome out;
  out.input_schema = doc.value("schema", std::string());
  out.recorded = decision::to_string(r.verdict.decision);
  std::vector<decision::DeploymentProfile> profiles;
  for (const auto& p : o.profiles) profiles.push_back(decision::load_profile(p));
  if (profiles.empty() && r.decisions && r.decisions->is_array())
    for (const auto& d : *r.decisions) profiles.push_back(decision::profile_from_json(d.at("profile")));
  // A verdict settled before any profile (NEW wrong, not timed, no startup) is not the profile's to change.
  if (!r.decisions || !r.decisions->is_array() || r.decisions->empty() || !r.warm || !r.startup) {
    out.verdict = out.recorded;
    out.summary = r.verdict.summary;
    out.exit_code = r.verdict.exit_code;
    out.notes.push_back("the recorded verdict was settled before any deployment profile was applied; no profile or margin "
                        "changes it");
    out.text = fmt::format("# kqual decide ({})\n\nRecorded verdict: **{}**, settled before any profile: {}\n", out.input_schema,
                           out.recorded, out.summary);
    out.verdict_json = json{{"decision", out.verdict}, {"summary", out.summary}, {"exit_code", out.exit_code}};
    return out;
  }
  const json& warm = *r.warm;
  const json& st = *r.startup;
  std::vector<compare::StartupPair> pairs;
  for (const auto& m : st.at("modes")) {
    compare::StartupPair p;
    const auto cache = decision::cache_mode_from_string(m.value("cache", std::string()));
    const std::string loading = m.value("loading", std::string());
    if (!cache || (loading != "LAZY" && loading != "EAGER")) missing("startup.modes[]: unknown cache or loading mode");
    p.cache = *cache;
    p.loading = loading == "LAZY" ? startup::LoadingMode::lazy : startup::LoadingMode::eager;
    p.old_side.kernel_first_use_ms = doubles(m.at("old").at("kernel_first_use_ms"), "startup.modes[].old.kernel_first_use_ms");
    p.old_side.first_request_ms = doubles(m.at("old").at("first_request_ms"), "startup.modes[].old.first_request_ms");
    p.new_side.kernel_first_use_ms = doubles(m.at("new").at("kernel_first_use_ms"), "startup.modes[].new.kernel_first_use_ms");
    p.new_side.first_request_ms = doubles(m.at("new").at("first_request_ms"), "startup.modes[].new.first_request_ms");
    pairs.push_back(std::move(p));
  }
  const json* shape = nullptr;
  for (const auto& s : warm.at("shapes"))
    if (s.value("decision_shape", false)) shape = &s;
  if (!shape) missing("warm.shapes: no decision shape recorded");
  const auto wa = doubles(shape->at("old").at("per_process_median_ms"), "warm.shapes[].old.per_process_median_ms");
  const auto wb = doubles(shape->at("new").at("per_process_median_ms"), "warm.shapes[].new.per_process_median_ms");
  const json& newside = r.sides.is_object() && r.sides.contains("new") ? r.sides.at("new") : json::object();
  std::optional<bool> jit;
  if (newside.contains("loading_path")) jit = newside.at("loading_path").get<std::string>() == "ptx_jit";
  const double floor_ms = st.value("noise_floor_ms", 1.0);
  // --margin replaces the recorded warm margin (checked on entry).
  stats::EquivalenceMargin margin{warm.value("margin_relative", 0.02), warm.value("margin_absolute_ms", 0.0)};
  if (!o.margin.empty()) {
    decision::SpeedPolicy p;
    decision::parse_margin(o.margin, p);
    out.notes.push_back(fmt::format("--margin {}: the warm margin {:g} %, {:g} us replaces the recorded {:g} %, {:g} us", o.margin,
                                    100 * p.margin_relative, p.margin_absolute_s * 1e6, 100 * margin.relative, margin.absolute * 1e3));
    margin = {p.margin_relative, p.margin_absolute_s * 1e3};
  }
  const decision::DecisionInput in = compare::decision_input(pairs, wa, wb, jit, r.target.arch, floor_ms, margin);
  json per = json::array();
  out.text = fmt::format("# kqual decide ({})\n\nRecorded verdict: **{}** (profile '{}'). Decided at shape {}.\n\n",
                         out.input_schema, out.recorded, r.verdict.profile.value_or("?"), shape->value("shape", std::string("?")));
  for (std::size_t i = 0; i < profiles.size(); ++i) {
    const decision::Decision d = decision::decide(in, profiles[i]);
    per.push_back({{"profile", profiles[i].name}, {"decision", decision::to_json(d)}});
    out.text += fmt::format("## Profile '{}'\n\n{}\n", profiles[i].name, decision::to_markdown(d));
    if (i == 0) {
      out.verdict = decision::to_string(d.verdict);
      out.summary = d.headline;
      out.exit_code = decision::exit_code(d.verdict);
    }
  }
  if (profiles.empty()) missing("no deployment profile recorded or given (--profile)");
  // The recorded first verdict may also have been turned by the service view, which is a simulation
  // of the run's raw startups: that part is not re-simulated here.
  if (r.decisions->at(0).contains("service") && r.decisions->at(0).at("service").is_object())
    out.notes.push_back("the service view (simulated objectives) is not re-simulated offline; `kqual compare --profile` runs it");
  out.verdict_json = json{{"decision", out.verdict}, {"summary", out.summary}, {"exit_code", out.exit_code}, {"profiles", per}};
  return out;
}

}  // namespace

DecideOutcome decide_results(const json& doc, const DecideOptions& o) {
  switch (report::results_kind(doc)) {
    case report::ResultsKind::compare: return decide_compare_doc(doc, o);
    default: return decide_qualify_doc(doc, o);
  }
}

}  // namespace kqual::pipeline
