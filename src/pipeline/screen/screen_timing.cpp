// kqual screen --timing (screen_timing.hpp): accepted candidates timed against their contract's
// baselines in the lane's session and judged by qualify's speed rule; the campaign ranked.
#include "kqual/pipeline/screen_timing.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "kqual/bench/timing.hpp"
#include "kqual/bench/torch_baseline.hpp"
#include "kqual/bench/torch_submission_timing.hpp"
#include "kqual/build/candidate.hpp"
#include "kqual/build/manifest.hpp"
#include "kqual/contract/contract.hpp"
#include "kqual/core/error.hpp"
#include "kqual/decision/profile.hpp"
#include "kqual/decision/qualify.hpp"
#include "kqual/pipeline/qualify.hpp"
#include "kqual/pipeline/phases.hpp"
#include "kqual/worker/session.hpp"

namespace kqual::pipeline {
namespace fs = std::filesystem;

json ScreenTimingOptions::verdict_options() const {
  if (!on) return json::object();
  return json{{"timing", true},          {"shapes", shapes},         {"dtype", dtype},     {"rounds", rounds},
              {"samples", samples_per_round}, {"l2_flush", flush_mode}, {"clock_guard", clock_guard},
              {"profile", profile},      {"margin", margin},         {"regression_limit", regression_limit}};
}

struct ScreenTimer::Plan {
  std::string error;  // why this contract's candidates cannot be timed ("" when they can)
  bench::TimingOptions timing;
  decision::SpeedPolicy policy;
  decision::ShapeMix mix;
  std::vector<build::BuiltCandidate> baselines;
  std::vector<std::string> baseline_names;
};

ScreenTimer::ScreenTimer(const ScreenTimingOptions& o, std::string arch, fs::path scratch, std::uint64_t seed,
                         contract::ContractLookup contracts)
    : o_(o), arch_(std::move(arch)), scratch_(std::move(scratch)), seed_(seed), contracts_(std::move(contracts)) {}
ScreenTimer::~ScreenTimer() = default;

const ScreenTimer::Plan& ScreenTimer::plan_for(const std::string& contract) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& slot = plans_[contract];
  if (slot) return *slot;
  slot = std::make_unique<Plan>();
  Plan& p = *slot;
  try {
    const contract::Contract& c = contracts_.resolve(contract, fs::current_path());
    const decision::DeploymentProfile profile = o_.profile.empty() ? decision::DeploymentProfile{} : decision::load_profile(o_.profile);
    p.policy = decision::speed_policy(profile, o_.margin, o_.regression_limit);
    p.mix = contract_shape_mix(c, profile);
    if (!o_.dtype.empty() && !parse_dtype(o_.dtype)) throw_error(ErrorKind::usage, fmt::format("--dtype {}: not a dtype kqual knows", o_.dtype));
    p.timing.rounds = o_.rounds;
    p.timing.samples_per_round = o_.samples_per_round;
    p.timing.flush_mode = o_.flush_mode;
    p.timing.flush_l2 = o_.flush_mode != "none";
    p.timing.clock_guard = o_.clock_guard;
    p.timing.seed = seed_;
    for (const auto& text : o_.shapes) p.timing.shapes.push_back(contract::parse_shape(c, text));
    if (o_.shapes.empty())
      for (const auto& [text, calls] : profile.shape_calls) p.timing.shapes.push_back(contract::parse_shape(c, text));
    const fs::path dir = scratch_ / ("baselines-" + contract);
    for (const auto& d : find_baselines(contract, baseline_roots(o_.baseline_dirs))) {
      p.baselines.push_back(build::build_candidate(build::load_manifest(d, contracts_), arch_, dir / d.filename()));
      p.baseline_names.push_back(p.baselines.back().manifest.name);
    }
  } catch (const Error& e) {
    p.error = e.what();
  }
  return p;
}

namespace {

// The speed record journaled with a timed verdict.
json speed_record(const decision::QualifyVerdict& qv, const std::vector<std::string>& baselines) {
  json j{{"decision", decision::to_string(qv.verdict)}, {"summary", qv.summary}, {"baselines", baselines}};
  if (!qv.speed) return j;
  const decision::SpeedJudgement& sp = *qv.speed;
  const decision::OverallEffect& e = sp.overall;
  j["effect"] = e.computed ? json{{"ratio", e.ratio}, {"ci", {e.ci.lo, e.ci.hi}}, {"speedup", e.ratio > 0 ? 1.0 / e.ratio : 0.0}}
                           : json{{"why_not", e.why_not}};
  json rows = json::array();
  for (const auto& s : sp.shapes)
    rows.push_back({{"shape", s.shape}, {"baseline", s.baseline}, {"ratio", s.ratio}, {"ci", {s.ci.lo, s.ci.hi}},
                    {"call", decision::to_string(s.call)}});
  j["shapes"] = rows;
  j["deciding"] = sp.deciding;
  return j;
}

}  // namespace

void reject_failure_while_timed(const bench::TimingReport& tr, ScreenVerdict& v, bool* fault) {
  for (const auto& sh : tr.shapes) {
    if (sh.series.empty()) continue;
    const bench::Series& cs = sh.series.front();
    if (!cs.error.empty() && !bench::refused_before_launch(cs) && !worker::is_harness_failure(cs.error)) {
      const bool broke = cs.error.rfind("crashed", 0) == 0 || cs.error.rfind("hung", 0) == 0 ||
                         cs.error.rfind("sticky_error", 0) == 0 || cs.error.rfind("protocol_error", 0) == 0;
      if (broke && fault) *fault = true;
      v.verdict = ScreenVerdictKind::rejected;
      v.reason = broke ? "worker_fault" : "timed_launch_failed";
      v.codes = {{v.reason, 1}};
      v.detail = fmt::format("while timed at {}: {}", sh.shape, cs.error);
      return;
    }
    if (!cs.verified) {
      v.verdict = ScreenVerdictKind::rejected;
      v.reason = cs.verify_code.empty() ? "timed_output_wrong" : cs.verify_code;
      v.codes = {{v.reason, 1}};
      v.detail = fmt::format("{}: {}", sh.shape, cs.verify_detail);
      return;
    }
  }
}

void ScreenTimer::time(worker::Session& s, const build::BuiltCandidate& b, const std::string& contract, ScreenVerdict& v, bool* fault) {
  const Plan& p = plan_for(contract);
  if (!p.error.empty()) {
    v.speed = json{{"error", "not timed: " + p.error}};
    return;
  }
  std::vector<const build::BuiltCandidate*> base;
  for (const auto& x : p.baselines) base.push_back(&x);
  try {
    // Each candidate at a dtype it claims (--dtype when it claims that one, else its first claim).
    bench::TimingOptions to = p.timing;
    to.dtype = timing_dtype(o_.dtype, b.manifest.supports.dtypes, "candidate " + b.manifest.name);
    const bench::TimingReport tr = bench::time_against_baselines(s, b, base, to);
    decision::QualifyFindings f;
    f.cases = f.passed = f.evidence = 1;  // accepted by the correctness tier
    f.policy = p.policy;
    f.mix = p.mix;
    f.baselines_expected = !p.baselines.empty();
    add_timed_shapes(f, tr);
    const decision::QualifyVerdict qv = decision::decide_qualify(f);
    v.speed = speed_record(qv, p.baseline_names);
    reject_failure_while_timed(tr, v, fault);
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::worker) {
      *fault = true;  // the candidate broke its worker while timed: its own verdict
      v.verdict = ScreenVerdictKind::rejected;
      v.reason = "worker_fault";
      v.codes = {{"worker_fault", 1}};
      v.detail = std::string("while timed: ") + e.what();
    }
    v.speed = json{{"error", std::string("timing failed: ") + e.what()}};
  }
}

namespace {

// The effect against one baseline alone (the peers' figures are against eager): the speed rule's
// overall effect with that baseline's samples in every shape.
json effect_against(const bench::TimingReport& tr, const char* label, const decision::ShapeMix& mix, const decision::SpeedPolicy& policy) {
  std::vector<decision::ShapeSamples> shapes;
  for (const auto& sh : tr.shapes) {
    if (sh.series.empty() || !sh.series.front().error.empty() || !sh.series.front().verified) continue;
    for (const auto& se : sh.series)
      if (se.label == label && se.error.empty() && se.verified && !se.samples_ms.empty())
        shapes.push_back({sh.shape, label, se.samples_ms, sh.series.front().samples_ms, "", ""});
  }
  if (shapes.empty()) return json{{"why_not", std::string("no shape timed against ") + label}};
  const decision::OverallEffect e = decision::judge_speed(shapes, mix, policy).overall;
  if (!e.computed) return json{{"why_not", e.why_not}};
  return json{{"ratio", e.ratio}, {"ci", {e.ci.lo, e.ci.hi}}, {"speedup", e.ratio > 0 ? 1.0 / e.ratio : 0.0}};
}

}  // namespace

void ScreenTimer::time_submission(const contract::Contract& c, const bench::TorchSubmission& s, const bench::SubmissionCheckOptions& co,
                                  ScreenVerdict& v) {
  const Plan& p = plan_for(c.name());
  if (!p.error.empty()) {
    v.speed = json{{"error", "not timed: " + p.error}};
    return;
  }
  bench::SubmissionTimingOptions to;
  to.timing = p.timing;
  to.timing.dtype = timing_dtype(o_.dtype, s.dtypes.empty() ? c.dtypes() : s.dtypes, "the submission");
  const bench::SubmissionTiming t = bench::time_torch_submission(c, s, co, to);
  decision::QualifyFindings f;
  f.cases = f.passed = f.evidence = 1;  // accepted by the correctness tier
  f.policy = p.policy;
  f.mix = p.mix;
  f.timing_run = true;  // asked for (--timing): a timing that timed nothing is incomplete
  if (t.report.shapes.empty()) f.timing_not_run = t.status;
  f.baselines_expected = t.status.find("timed alone") == std::string::npos;
  f.harness_failure = t.harness_failure;
  add_timed_shapes(f, t.report);
  const decision::QualifyVerdict qv = decision::decide_qualify(f);
  v.speed = speed_record(qv, {bench::kTorchEager, bench::kTorchCompiled});
  v.speed["status"] = t.status;
  v.speed["vs_eager"] = effect_against(t.report, bench::kTorchEager, p.mix, p.policy);
  if (!t.timed_output_failure.empty()) {
    v.verdict = ScreenVerdictKind::rejected;
    v.reason = "timed_output_wrong";
    v.codes = {{"timed_output_wrong", 1}};
    v.detail = t.timed_output_failure;
  }
}

namespace {

// How many timed candidates beat a baseline by more than 1.0x and 1.5x: by the whole 95 % interval of the
// time ratio (kqual's reading) and by its point estimate alone (the peers' reading).
struct FasterTally {
  int timed = 0, whole1 = 0, whole15 = 0, point1 = 0, point15 = 0;
  // An effect object ({"ratio", "ci": [lo, hi]}); false when it holds no ratio.
  bool add(const json& e) {
    if (!e.is_object() || !e.contains("ratio")) return false;
    ++timed;
    const double hi = e["ci"][1].get<double>(), ratio = e["ratio"].get<double>();
    whole1 += hi < 1.0;
    whole15 += hi < 1.0 / 1.5;
    point1 += ratio < 1.0;
    point15 += ratio < 1.0 / 1.5;
    return true;
  }
  // The fields under the given names (prefix + "1_0x" / "1_5x"), fractions of the judged candidates.
  void write(json& j, const std::string& counts, const std::string& fractions, const std::string& points, int judged) const {
    auto frac = [judged](int a) { return judged > 0 ? json(double(a) / judged) : json(); };
    j[counts + "1_0x"] = whole1;
    j[counts + "1_5x"] = whole15;
    j[fractions + "1_0x"] = frac(whole1);
    j[fractions + "1_5x"] = frac(whole15);
    j[points + "1_0x"] = point1;
    j[points + "1_5x"] = point15;
  }
};

}  // namespace

bool speed_covers_the_mix(const json& speed) {
  if (speed.value("decision", std::string()) == "incomplete" || speed.contains("error")) return false;
  for (const auto& row : speed.value("shapes", json::array()))
    if (row.value("call", std::string()) == "failed") return false;
  return true;
}

json screen_ranking(const std::vector<ScreenVerdict>& verdicts) {
  struct Row {
    const ScreenVerdict* v;
    double ratio;
    bool has;
  };
  std::vector<Row> rows;
  int judged = 0, accepted = 0;
  FasterTally best, eager;  // against the fastest correct baseline; PyTorch submissions against eager
  for (const auto& v : verdicts) {
    if (v.verdict == ScreenVerdictKind::accepted || v.verdict == ScreenVerdictKind::rejected) ++judged;
    if (v.verdict == ScreenVerdictKind::accepted) ++accepted;
    if (v.speed.is_null() || v.verdict != ScreenVerdictKind::accepted) continue;
    // An effect ranks and counts only where every shape of the mix was timed and none failed: the
    // effect of the shapes that did not crash is no candidate's speed.
    const bool whole = speed_covers_the_mix(v.speed);
    if (whole) eager.add(v.speed.value("vs_eager", json()));
    const json e = whole ? v.speed.value("effect", json()) : json();
    const bool has = best.add(e);
    rows.push_back({&v, has ? e["ratio"].get<double>() : 0.0, has});
  }
  std::stable_sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) {
    if (a.has != b.has) return a.has;
    return a.has && a.ratio < b.ratio;
  });
  json list = json::array();
  int rank = 0;
  for (const auto& r : rows) {
    json j{{"rank", r.has ? ++rank : 0},
           {"name", r.v->name},
           {"candidate", r.v->candidate},
           {"contract", r.v->contract},
           {"decision", r.v->speed.value("decision", std::string())}};
    if (r.has) {
      const json& e = r.v->speed["effect"];
      j["speedup"] = e.value("speedup", 0.0);
      j["ratio"] = r.ratio;
      j["ci"] = e["ci"];
    } else {
      j["why_not"] = r.v->speed.contains("error") ? r.v->speed["error"]
                     : !speed_covers_the_mix(r.v->speed)
                         ? json("not every shape of the mix was timed: " + r.v->speed.value("deciding", r.v->speed.value("summary", std::string())))
                         : r.v->speed.value("effect", json()).value("why_not", json("no effect"));
    }
    list.push_back(j);
  }
  json population{{"candidates", verdicts.size()},
                  {"judged", judged},
                  {"correct", accepted},
                  {"fraction_correct", judged > 0 ? json(double(accepted) / judged) : json()},
                  {"timed_with_effect", best.timed},
                  {"torch_submissions_timed_against_eager", eager.timed}};
  best.write(population, "faster_", "fraction_faster_", "point_estimate_faster_", judged);
  eager.write(population, "faster_than_eager_", "fraction_faster_than_eager_", "point_estimate_faster_than_eager_", judged);
  population["rule"] =
      "faster by more than 1.0x / 1.5x: the overall effect's whole 95 % interval (time ratio to the fastest "
      "correct baseline, weighted over the shapes) below 1 / below 1/1.5; fractions of the candidates judged "
      "(accepted or rejected); the point-estimate counts are the peers' reading, for comparison";
  return json{{"ranked", list}, {"population", population}};
}

}  // namespace kqual::pipeline
