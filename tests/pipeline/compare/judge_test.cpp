// judge() and the memo on evidence shaped exactly as the GPU path produces it: the static part comes
// from a real `run_compare` without a GPU, the measured parts from the same structs the GPU phases
// fill, every comparison through stats (so a CI is written as [lo, hi], as on the device). The memo
// crashed on that shape on the H200 ("cannot use at() with array") while CPU tests fed it a
// hand-written one; these tests keep the two paths the same.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cmath>

#include "compare_util.hpp"
#include "kqual/pipeline/compare.hpp"
#include "kqual/pipeline/decide.hpp"
#include "kqual/core/files.hpp"
#include "kqual/decision/profile.hpp"
#include "kqual/report/memo.hpp"
#include "kqual/check/evaluate.hpp"

namespace fs = std::filesystem;
using namespace kqual;
using decision::CacheMode;

namespace {


// center + small deterministic jitter.
std::vector<double> noisy(double center, double spread, int n, int salt = 0) {
  std::vector<double> v;
  for (int i = 0; i < n; ++i) v.push_back(center + spread * std::sin(1.7 * (i + 1) + salt));
  return v;
}

// The static part as run_compare writes it (no GPU here: static phases only).
json static_part(const test::TempDir& t) {
  compare::CompareOptions o;
  o.old_side.input = (test::repo_root() / "candidates/residual_add_relu/good").string();
  o.new_side.input = o.old_side.input;
  o.new_side.recipe.mode = build::ImageMode::ptx;
  o.new_side.recipe_given = true;
  o.use_gpu = false;
  o.out_dir = t.path / "static";
  compare::CompareOutcome out = compare::run_compare(o);
  EXPECT_EQ(out.exit_code, 3);
  return out.results;
}

compare::CorrectnessSide accepted_side(int cases) {
  check::CorrectnessReport rep;  // the harness's own report, as its JSON goes into results.json
  rep.cases = rep.passed = rep.evidence = cases;
  compare::CorrectnessSide c;
  c.ran = true;
  c.accepted = rep.accepted();
  c.cases = c.passed = cases;
  c.report = rep.to_json(false);
  return c;
}

compare::CorrectnessSide rejected_side(int cases, std::map<std::string, std::string> failing) {
  check::CorrectnessReport rep;
  rep.cases = cases;
  rep.failed = int(failing.size());
  rep.passed = cases - rep.failed;
  rep.evidence = rep.passed;
  for (const auto& [id, code] : failing) rep.failure_codes[code]++;
  compare::CorrectnessSide c;
  c.ran = true;
  c.accepted = rep.accepted();
  c.cases = cases;
  c.failed = rep.failed;
  c.passed = rep.passed;
  c.primary_code = rep.primary_code();
  c.failing = std::move(failing);
  c.report = rep.to_json(false);
  return c;
}

// A PTX-only NEW: +80 ms JIT with the cache off or cold, none warm; warm 1.00 → 0.90 ms.
compare::Evidence jit_evidence(int runs = 12) {
  compare::Evidence ev;
  ev.correctness[0] = accepted_side(40);
  ev.correctness[1] = accepted_side(40);
  ev.processes = 6;
  ev.samples = 20;
  ev.warmup = 5;
  ev.order = compare::interleave_order(12);
  ev.boundary = "events around the launch plan";
  for (const char* shape : {"n=4096", "n=268435456"}) {
    compare::WarmShape w;
    w.shape = shape;
    w.dims = {{"n", std::string(shape) == "n=4096" ? 4096 : 268435456}};
    w.side[0].medians = noisy(1.00, 0.004, 6);
    w.side[1].medians = noisy(0.90, 0.004, 6, 3);
    w.side[0].pooled = w.side[0].medians;
    w.side[1].pooled = w.side[1].medians;
    ev.warm.push_back(w);
  }
  for (CacheMode c : {CacheMode::off, CacheMode::cold, CacheMode::warm}) {
    compare::StartupMode m;
    m.cache = c;
    m.environment = {{"CUDA_CACHE_DISABLE", c == CacheMode::off ? "1" : "0"}};
    const double jit = c == CacheMode::warm ? 0.2 : 80.0;
    for (int k = 0; k < 2; ++k) {
      auto& s = m.side[k];
      s.kernel_first_use_ms = noisy(k == 0 ? 0.1 : jit, k == 0 ? 0.01 : 2.0, runs, k);
      for (double v : s.kernel_first_use_ms) {
        s.base_ms.push_back(230 + v);
        s.launch_ran.push_back(0);
        s.module_load_ms.push_back(v * 0.9);
      }
      if (k == 1 && c != CacheMode::warm) s.jit_wall_ms = noisy(jit, 2.0, runs);
    }
    ev.startup.push_back(m);
  }
  ev.startup_runs = runs;
  ev.wall_s = {{"startup", 20.0}};
  return ev;
}

compare::JudgeOptions options() {
  compare::JudgeOptions jo;
  jo.profiles = {decision::load_profile((test::repo_root() / "profiles/long-lived-server.toml").string()),
                 decision::load_profile((test::repo_root() / "profiles/cold-start-heavy.toml").string())};
  jo.decision_index = 1;
  jo.new_uses_ptx_jit = true;
  jo.arch = "sm_90";
  return jo;
}

// judge() on the static part of a fresh run_compare and the measured evidence `ev`.
compare::Judgement judge_with(const compare::Evidence& ev, const compare::JudgeOptions& jo = options()) {
  test::TempDir t;
  return compare::judge(static_part(t), ev, jo);
}

}  // namespace

TEST(CompareJudge, GpuShapedEvidenceRendersTheMemo) {
  const compare::Judgement j = judge_with(jit_evidence());
  const json& r = j.results;
  // Every interval is [lo, hi], as stats writes it.
  const json& d = r.at("startup").at("modes").at(0).at("first_request_delta_ms");
  ASSERT_TRUE(d.at("ci").is_array());
  std::string memo;
  ASSERT_NO_THROW(memo = report::render_compare_memo(r));
  EXPECT_NE(memo.find("## 3. Startup"), std::string::npos) << memo;
  EXPECT_NE(memo.find("## 5. Decision per deployment profile"), std::string::npos) << memo;
  EXPECT_NE(memo.find(fmt::format("{:+.2f}", d.at("estimate").get<double>())), std::string::npos) << memo;
  EXPECT_NE(memo.find("detectable (95 %)"), std::string::npos) << memo;
  // Two profiles, two verdicts: the long-lived server repays the JIT, the cold-start-heavy one does not.
  ASSERT_EQ(r.at("decisions").size(), 2u);
  EXPECT_EQ(r.at("decisions").at(0).at("decision").at("verdict"), "ship");
  EXPECT_EQ(r.at("decisions").at(1).at("decision").at("verdict"), "do_not_ship");
  EXPECT_EQ(j.exit_code, 0);  // the first profile is the gate
  EXPECT_EQ(r.at("verdict").at("decision"), "ship");
  EXPECT_TRUE(r.contains("wall_s"));
  // The service view per profile, from the same startup and warm samples (issue 25), in the memo too.
  for (const auto& x : r.at("decisions")) ASSERT_TRUE(x.at("service").at("computed").get<bool>()) << x.at("service").dump();
  EXPECT_NE(memo.find("#### Service view"), std::string::npos) << memo;
  EXPECT_NE(memo.find("Latency distribution, first_request requests"), std::string::npos) << memo;
  // Exit codes are 0 or 1 on valid evidence, never 4.
  compare::JudgeOptions cold_first = options();
  std::swap(cold_first.profiles[0], cold_first.profiles[1]);
  EXPECT_EQ(judge_with(jit_evidence(), cold_first).exit_code, 1);
}

TEST(CompareJudge, MemoNamesTheDetectableDifferenceAndTheRunsNeeded) {
  const json r = judge_with(jit_evidence()).results;
  for (const auto& m : r.at("startup").at("modes")) {
    const json& res = m.at("resolution");
    EXPECT_GT(res.at("detectable_difference_ms").get<double>(), 0.0) << m.dump();
    EXPECT_GE(res.at("runs_per_side_needed_for_target").get<int>(), 2);
    EXPECT_EQ(res.at("runs_per_side").get<int>(), 12);
  }
  // off/cold: ±2 ms of JIT jitter on 12 runs resolves 5 ms.
  EXPECT_TRUE(r.at("startup").at("modes").at(0).at("resolution").at("resolved").get<bool>());
}

TEST(CompareJudge, ResolutionScalesAsOneOverRootN) {
  // Spread 10 ms per side, 10 runs: the half-width h10; 40 runs halve it (about).
  const auto a10 = noisy(100, 10, 10, 1), b10 = noisy(100, 10, 10, 2);
  const compare::Resolution r10 = compare::resolution(a10, b10, 5.0);
  EXPECT_GT(r10.half_width_ms, 0.0);
  EXPECT_EQ(r10.runs_per_side, 10);
  EXPECT_EQ(r10.runs_needed, std::max(2, int(std::ceil(10 * std::pow(r10.half_width_ms / 5.0, 2)))));
  // One sample per side cannot resolve anything.
  EXPECT_TRUE(std::isinf(compare::resolution({1.0}, {2.0}, 5.0).half_width_ms));
}

TEST(CompareJudge, BothSidesFailingAlikeIsNotBlamedOnNew) {
  compare::Evidence ev = jit_evidence();
  const std::map<std::string, std::string> fails{{"f32/n=1/nan", "nan_policy"}, {"f32/n=4097/nan", "nan_policy"}};
  ev.correctness[0] = rejected_side(40, fails);
  ev.correctness[1] = rejected_side(40, fails);
  ev.warm[1].side[0].verified = ev.warm[1].side[1].verified = false;  // both timed outputs wrong, as predicted
  EXPECT_EQ(compare::relate(ev.correctness[0], ev.correctness[1]), compare::CorrectnessRelation::both_rejected_alike);
  const compare::Judgement j = judge_with(ev);
  const json& r = j.results;
  EXPECT_EQ(r.at("correctness_relation").at("relation"), "both rejected alike");
  EXPECT_FALSE(r.at("correctness_relation").at("new_blamed").get<bool>());
  EXPECT_NE(r.at("verdict").at("summary").get<std::string>().find("Both builds fail the contract"), std::string::npos)
      << r.at("verdict").dump(2);
  EXPECT_EQ(r.at("verdict").at("decision"), "ship");  // the long-lived profile's speed verdict stands
  EXPECT_NE(report::render_compare_memo(r).find("the change does not alter correctness"), std::string::npos);
}

TEST(CompareJudge, NewBreakingWhatOldGotRightIsBlamed) {
  compare::Evidence ev = jit_evidence();
  ev.correctness[0] = rejected_side(40, {{"f32/n=1/nan", "nan_policy"}});
  ev.correctness[1] = rejected_side(40, {{"f32/n=1/nan", "nan_policy"}, {"f32/n=4097/tail", "wrong_result"}});
  EXPECT_EQ(compare::relate(ev.correctness[0], ev.correctness[1]), compare::CorrectnessRelation::both_rejected_differently);
  compare::Judgement j = judge_with(ev);
  EXPECT_EQ(j.results.at("verdict").at("decision"), "do_not_ship");
  EXPECT_EQ(j.exit_code, 1);
  EXPECT_NE(j.results.at("correctness_relation").at("explanation").get<std::string>().find("f32/n=4097/tail"),
            std::string::npos);
  // OLD fine, NEW broken: blamed.
  ev.correctness[0] = accepted_side(40);
  j = judge_with(ev);
  EXPECT_EQ(j.results.at("correctness_relation").at("relation"), "new rejected");
  EXPECT_EQ(j.exit_code, 1);
  // NEW fixes OLD's defect: not blamed; the decision is on speed.
  ev.correctness[0] = rejected_side(40, {{"f32/n=1/nan", "nan_policy"}});
  ev.correctness[1] = accepted_side(40);
  j = judge_with(ev);
  EXPECT_EQ(j.results.at("correctness_relation").at("relation"), "old rejected");
  EXPECT_EQ(j.results.at("verdict").at("decision"), "ship");
}

TEST(CompareJudge, WrongTimedOutputOnNewAloneIsBlamed) {
  compare::Evidence ev = jit_evidence();
  ev.warm[1].side[1].verified = false;
  ev.warm[1].side[1].verify_detail = "timed output wrong";
  const compare::Judgement j = judge_with(ev);
  EXPECT_EQ(j.results.at("verdict").at("decision"), "do_not_ship");
  EXPECT_NO_THROW(report::render_compare_memo(j.results));
}

TEST(CompareJudge, NoLaunchPlanIsIncompleteNotAnError) {
  compare::Evidence ev = jit_evidence();
  ev.can_launch = false;
  ev.warm.clear();
  const compare::Judgement j = judge_with(ev);
  EXPECT_EQ(j.exit_code, 3);
  EXPECT_NO_THROW(report::render_compare_memo(j.results));
}

// Issue 23, compare's rules: a wrong timed output on OLD alone leaves no baseline (incomplete, named);
// a failed startup mode is named, never replaced by another; every shape is judged and a shape whose
// verdict differs from the decision shape's is named.
TEST(CompareJudge, WrongTimedOutputOnOldAloneIsReportedAndLeavesNoBaseline) {
  compare::Evidence ev = jit_evidence();
  ev.warm[0].side[0].verified = false;
  ev.warm[0].side[0].verify_detail = "y[17] expected 1.5, got 0";
  const compare::Judgement j = judge_with(ev);
  EXPECT_EQ(j.exit_code, 3);
  EXPECT_EQ(j.results.at("verdict").at("decision"), "incomplete");
  const std::string reasons = j.results.at("verdict").at("reasons").dump();
  EXPECT_NE(reasons.find("OLD's timed output was wrong"), std::string::npos) << reasons;
  EXPECT_NE(reasons.find("y[17] expected 1.5, got 0"), std::string::npos) << reasons;
}

TEST(CompareJudge, AFailedStartupModeIsNamedNotReplaced) {
  compare::Evidence ev = jit_evidence();
  // The first profile (long-lived server) decides in one cache mode; NEW's probes all failed there.
  const CacheMode mode = options().profiles.front().jit_cache;
  for (auto& m : ev.startup)
    if (m.cache == mode) {
      m.side[1] = compare::StartupSamples{};
      m.side[1].failures = 12;
      m.side[1].failure_messages = {"probe exited with signal SIGSEGV"};
    }
  const compare::Judgement j = judge_with(ev);
  EXPECT_EQ(j.exit_code, 3);
  const std::string reasons = j.results.at("verdict").at("reasons").dump();
  EXPECT_NE(reasons.find("startup probes of NEW failed"), std::string::npos) << reasons;
  EXPECT_NE(reasons.find(decision::to_string(mode)), std::string::npos) << reasons;
  EXPECT_NE(reasons.find("SIGSEGV"), std::string::npos) << reasons;
  EXPECT_EQ(reasons.find("stands in"), std::string::npos) << reasons;
}

TEST(CompareJudge, EveryShapeIsJudgedAndADissentingShapeIsNamed) {
  compare::Evidence ev = jit_evidence();
  // At the small shape NEW is slower; the decision shape (the large one) ships.
  ev.warm[0].side[1].medians = noisy(1.30, 0.004, 6, 3);
  ev.warm[0].side[1].pooled = ev.warm[0].side[1].medians;
  const compare::Judgement j = judge_with(ev);
  const json& per = j.results.at("warm").at("verdict_per_shape");
  ASSERT_EQ(per.size(), 2u);
  EXPECT_EQ(per.at(1).at("decision_shape"), true);
  EXPECT_EQ(per.at(1).at("verdict"), j.results.at("verdict").at("decision"));
  EXPECT_NE(per.at(0).at("verdict"), per.at(1).at("verdict")) << per.dump();
  const std::string reasons = j.results.at("verdict").at("reasons").dump();
  EXPECT_NE(reasons.find("at shape n=4096 the verdict"), std::string::npos) << reasons;
  EXPECT_NE(reasons.find("the decision shape is n=268435456"), std::string::npos) << reasons;
}

// compare's --margin has qualify's words, REL[,ABS]: an absolute part makes a 0.1 ms warm saving on 1 ms "no
// difference"; it is recorded, decide gives the recorded verdict back, and decide --margin with it answers the same.
TEST(CompareJudge, TheWarmMarginHasAnAbsolutePartAsQualifysHas) {
  const json plain = judge_with(jit_evidence()).results;
  compare::JudgeOptions jo = options();
  jo.warm_margin = {0.02, 0.2};  // [ms]: 20 % of OLD's 1 ms
  const json wide = judge_with(jit_evidence(), jo).results;
  EXPECT_DOUBLE_EQ(wide.at("warm").at("margin_absolute_ms").get<double>(), 0.2);
  const std::string shape_plain = plain.at("warm").at("shapes").at(0).at("comparison").dump();
  const std::string shape_wide = wide.at("warm").at("shapes").at(0).at("comparison").dump();
  EXPECT_NE(shape_plain.find("faster"), std::string::npos) << shape_plain;
  EXPECT_NE(shape_wide.find("no difference"), std::string::npos) << shape_wide;
  const pipeline::DecideOutcome back = pipeline::decide_results(wide, {});
  EXPECT_EQ(back.verdict, back.recorded) << back.text;
  pipeline::DecideOptions o;
  o.margin = "2%,200us";
  const pipeline::DecideOutcome asked = pipeline::decide_results(plain, o);
  EXPECT_EQ(asked.verdict, back.recorded) << asked.text;
  EXPECT_NE(asked.verdict, pipeline::decide_results(plain, {}).verdict) << "the absolute part changed nothing here";
}

// kqual decide on a compare result: the recorded profiles give the recorded verdicts; another
// profile is answered from the same samples, offline.
TEST(CompareJudge, DecideReJudgesTheRecordedSamplesPerProfile) {
  const json r = judge_with(jit_evidence()).results;
  const pipeline::DecideOutcome same = pipeline::decide_results(r, {});
  EXPECT_EQ(same.recorded, "ship");
  EXPECT_EQ(same.verdict, "ship") << same.text;
  ASSERT_EQ(same.verdict_json.at("profiles").size(), 2u);
  EXPECT_EQ(same.verdict_json.at("profiles").at(1).at("decision").at("verdict"), "do_not_ship");
  // Each profile's decision as judge() recorded it (judge() then appends the service view's reasons,
  // which decide does not re-simulate).
  for (std::size_t i = 0; i < 2; ++i)
    for (const char* k : {"verdict", "headline", "net_cost_per_process_s", "net_cost_per_process_ci_s", "breakeven_calls"})
      EXPECT_EQ(same.verdict_json.at("profiles").at(i).at("decision").at(k).dump(), r.at("decisions").at(i).at("decision").at(k).dump())
          << k;
  pipeline::DecideOptions o;
  o.profiles = {(test::repo_root() / "profiles/cold-start-heavy.toml").string()};
  const pipeline::DecideOutcome other = pipeline::decide_results(r, o);
  EXPECT_EQ(other.verdict, "do_not_ship");
  EXPECT_EQ(other.exit_code, 1);
}
