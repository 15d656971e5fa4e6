#pragma once
// Results documents shaped exactly as kqual writes them, for the HTML report's tests (CPU only).
//
// The static part of each document comes from the real command without a GPU (pipeline::qualify with
// use_gpu = false; compare::run_compare likewise). The measured sections are built from the same
// types and to_json() calls the GPU path uses (check::CorrectnessReport, bench::TimingReport with
// stats::compare per baseline, compare::Evidence through compare::judge), so a change to what the
// code writes changes these documents too; only the numbers are made up.
#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "kqual/bench/timing.hpp"
#include "kqual/pipeline/compare.hpp"
#include "kqual/core/json.hpp"
#include "kqual/decision/profile.hpp"
#include "kqual/decision/qualify.hpp"
#include "kqual/check/evaluate.hpp"
#include "kqual/report/provenance.hpp"
#include "kqual/report/results.hpp"
#include "kqual/pipeline/qualify.hpp"
#include "kqual/stats/compare.hpp"
#include "kqual/stats/summary.hpp"
#include "test_util.hpp"

namespace kqual::test::fixtures {
namespace fs = std::filesystem;

// center + a small deterministic wobble [ms].
inline std::vector<double> samples(double center, double spread, int n, int salt = 0) {
  std::vector<double> v;
  for (int i = 0; i < n; ++i) v.push_back(center + spread * std::sin(1.3 * (i + 1) + 0.7 * salt));
  return v;
}

// The device block the worker reports on the H200 (worker_server.cpp device_json).
inline json h200() {
  return json{{"name", "NVIDIA H200"},
              {"arch", "sm_90"},
              {"sms", 132},
              {"l2_bytes", 62914560},
              {"max_persisting_l2_bytes", 47185920},
              {"max_threads_per_block", 1024},
              {"max_shared_per_block_optin", 232448},
              {"sm_clock_khz", 1980000},
              {"memory_clock_khz", 3201000},
              {"memory_bus_bits", 6144},
              {"total_memory_bytes", 150121545728LL},
              {"driver_version", 13000}};
}

// `kqual qualify --no-gpu` on the bundled residual_add_relu candidate: the document as written.
inline json qualify_static(const fs::path& out, const std::string& command = "qualify") {
  pipeline::QualifyOptions o;
  o.candidate = repo_root() / "candidates/residual_add_relu/good";
  o.out_dir = out;
  o.use_gpu = false;
  o.command = command;
  o.command_line = "kqual " + command + " --no-gpu candidates/residual_add_relu/good";
  return pipeline::qualify(o).results;
}

// The measured sections are added to the static document by key, so they land after its verdict;
// the pipeline writes them in its own order (report::to_json of the typed result).
inline json in_pipeline_order(const json& doc) { return report::to_json(report::qualify_result_from_json(doc)); }

inline check::CorrectnessReport correctness_report(const std::string& name, int passed, int refused,
                                                     const std::vector<std::pair<std::string, std::string>>& failing) {
  check::CorrectnessReport rep;
  rep.candidate = name;
  auto add = [&](const std::string& id, check::CaseStatus status, const std::string& code, const std::string& detail) {
    check::CaseResult c;
    c.spec.id = id;
    c.spec.family = "normal";
    c.spec.dims = {{"n", 257}};
    c.spec.seed = 20261202;
    c.status = status;
    c.code = code;
    c.detail = detail;
    c.reference = "cpu";
    c.wall_ms = 1.5 + 0.1 * double(rep.results.size());
    rep.results.push_back(c);
  };
  for (int i = 0; i < passed; ++i) add(fmt::format("f32/n={}/normal/off=0", 1 + 37 * i), check::CaseStatus::pass, "", "");
  for (int i = 0; i < refused; ++i)
    add(fmt::format("f32/n=1024/normal/off={}", 1 + i), check::CaseStatus::refused, "misaligned", "offset breaks the claimed alignment");
  for (const auto& [id, code] : failing) {
    add(id, check::CaseStatus::fail, code, fmt::format("y[{}] = 0 but expected 1.5 (x = 1, r = 0.5)", id.size()));
    rep.failure_codes[code]++;
  }
  rep.cases = int(rep.results.size());
  rep.passed = rep.evidence = passed;
  rep.refused = refused;
  rep.failed = int(failing.size());
  rep.wall_ms = 420;
  return rep;
}

// A qualify document as the GPU path writes it: the candidate correct and faster than both
// baselines at the large shapes, no difference at the launch-bound one.
inline json qualify_gpu(const fs::path& out, const std::string& command = "qualify") {
  json r = qualify_static(out, command);
  const std::string name = r.at("candidate").at("name").get<std::string>();
  r["provenance"] = report::provenance("kqual " + command + " candidates/residual_add_relu/good", h200());
  r["artifact"]["kernels"] = {{"add_relu_vec<float>",
                               {{"symbol", "_Z12add_relu_vecIfEvPKT_S2_PS0_x"}, {"registers", 18}, {"static_shared_bytes", 0},
                                {"local_bytes", 0}, {"const_bytes", 0}, {"max_threads_per_block", 1024},
                                {"binary_version", 90}, {"ptx_version", 88}, {"params", json::array()}}}};
  // (No reference into r is held: ordered_json keeps its members in a vector, so adding a key moves them.)
  json phases = r.at("phases");
  phases["load"] = "done on NVIDIA H200 (sm_90)";
  const check::CorrectnessReport rep = correctness_report(name, 40, 4, {});
  r["correctness"] = rep.to_json(false);
  phases["correctness"] = fmt::format("accepted: {} passed, {} failed, {} refused of {} cases", rep.passed, rep.failed,
                                      rep.refused, rep.cases);
  r["baselines_correctness"] = json::array({correctness_report("eager", 30, 0, {}).to_json(false),
                                            correctness_report("fused", 30, 0, {}).to_json(false)});

  // Timing, as time_against_baselines fills it.
  bench::TimingReport tr;
  tr.boundary = "CUDA events recorded on the worker's stream immediately before the first and after the last launch of "
                "the implementation's launch plan; L2 flushed before every sample; 3 rounds of 10 samples, interleaved.";
  struct Shape {
    std::int64_t n;
    double cand, eager, fused;  // [ms] medians
  };
  const std::vector<Shape> shapes{{4096, 0.0042, 0.0081, 0.0042}, {1 << 20, 0.0061, 0.0124, 0.0068},
                                  {268435456, 0.805, 1.62, 0.842}};
  stats::DecisionOptions dopt;
  dopt.margin.relative = 0.02;
  for (std::size_t si = 0; si < shapes.size(); ++si) {
    const Shape& s = shapes[si];
    bench::ShapeResult sh;
    sh.dims = {{"n", s.n}};
    sh.shape = fmt::format("n={}", s.n);
    sh.dtype = DType::f32;
    sh.min_bytes = 3.0 * 4.0 * double(s.n);
    sh.flops = 2.0 * double(s.n);
    int salt = 0;
    for (const auto& [label, med] : std::vector<std::pair<std::string, double>>{{name, s.cand}, {"eager", s.eager}, {"fused", s.fused}}) {
      bench::Series se;
      se.label = label;
      se.role = label == name ? "candidate" : "baseline";
      se.samples_ms = samples(med, med * 0.004, 30, salt++);
      se.warmup_ms = samples(med * 1.3, med * 0.01, 5);
      se.summary = stats::summarize(se.samples_ms);
      se.bytes_per_s = sh.min_bytes / (se.summary.median * 1e-3);
      se.flops_per_s = sh.flops / (se.summary.median * 1e-3);
      sh.series.push_back(se);
    }
    double best = 0;
    for (std::size_t i = 1; i < sh.series.size(); ++i) {
      const stats::Comparison cmp = stats::compare(sh.series[i].samples_ms, sh.series[0].samples_ms, dopt);
      sh.vs_baselines.push_back(cmp);
      if (sh.fastest_baseline.empty() || sh.series[i].summary.median < best) {
        best = sh.series[i].summary.median;
        sh.fastest_baseline = sh.series[i].label;
        sh.vs_fastest = cmp;
      }
    }
    if (si + 1 == shapes.size()) {
      sh.copy_samples_ms = samples(0.511, 0.002, 30);
      sh.copy_bytes_per_s = 2.0 * 4.0 * double(s.n) / (stats::median(sh.copy_samples_ms) * 1e-3);
    }
    tr.shapes.push_back(sh);
  }
  r["timing"] = tr.to_json();
  phases["timing"] = fmt::format("done: {} shapes, {} baselines", tr.shapes.size(), 2);
  r["phases"] = phases;

  // The verdict as decide_qualify fills it, written by the same to_json.
  decision::QualifyVerdict verdict;
  verdict.reasons.push_back(fmt::format("correct on all {} cases run ({} refused as outside its claimed domain)", rep.passed,
                                        rep.refused));
  for (const auto& sh : tr.shapes) {
    const auto& v = sh.vs_fastest;
    verdict.reasons.push_back(fmt::format("{}: {:.2f}x the fastest baseline ({}), time ratio 95 % CI [{:.3f}, {:.3f}] → {}",
                                             sh.shape, 1.0 / v.estimate, sh.fastest_baseline, v.ci.lo, v.ci.hi,
                                             stats::to_string(v.verdict)));
    verdict.would_reverse.push_back(fmt::format(
        "{}: a candidate/baseline time ratio above {:.3f} (now {:.3f}) would make it slower than {}", sh.shape, 1.02,
        v.estimate, sh.fastest_baseline));
  }
  verdict.would_reverse.push_back("a correctness failure on inputs outside the tested set (other sizes, dtypes, offsets)");
  verdict.verdict = decision::ShipVerdict::ship;
  verdict.summary = "Correct on every case, and no shape slower than the fastest baseline.";
  // The speed rule's table, as qualify records it (the page colours each shape by its call).
  std::vector<decision::ShapeSamples> judged;
  for (const auto& sh : tr.shapes)
    for (const auto& se : sh.series)
      if (se.label == sh.fastest_baseline) judged.push_back({sh.shape, sh.fastest_baseline, se.samples_ms, sh.series[0].samples_ms, "", ""});
  verdict.speed = decision::judge_speed(judged, decision::ShapeMix{}, decision::SpeedPolicy{});
  r["verdict"] = decision::to_json(verdict);
  return in_pipeline_order(r);
}

// A qualify document for a candidate the contract rejects: no timing (qualify stops there).
inline json qualify_rejected(const fs::path& out) {
  json r = qualify_static(out);
  r["provenance"] = report::provenance("kqual qualify candidates/residual_add_relu/broken/missing_tail", h200());
  const check::CorrectnessReport rep =
      correctness_report(r.at("candidate").at("name").get<std::string>(), 30, 0,
                         {{"f32/n=257/normal/off=0", "wrong_value"}, {"f32/n=1025/normal/off=0", "wrong_value"},
                          {"f32/n=4099/poison/off=0", "unwritten_output"}});
  r["correctness"] = rep.to_json(false);
  r["baselines_correctness"] = json::array({correctness_report("eager", 30, 0, {}).to_json(false)});
  r["phases"]["load"] = "done on NVIDIA H200 (sm_90)";
  r["phases"]["correctness"] = fmt::format("rejected: {} passed, {} failed, {} refused of {} cases", rep.passed, rep.failed,
                                           rep.refused, rep.cases);
  r["phases"]["timing"] = "not run: the candidate is incorrect";
  decision::QualifyVerdict verdict;
  verdict.verdict = decision::ShipVerdict::do_not_ship;
  verdict.summary = "The candidate computes the wrong answer.";
  verdict.reasons = {fmt::format("rejected by the contract: {} of {} cases failed, mostly `{}`", rep.failed, rep.cases,
                                 rep.primary_code())};
  verdict.would_reverse = {"a build that passes every correctness case"};
  r["verdict"] = decision::to_json(verdict);
  return in_pipeline_order(r);
}

// `kqual compare --no-gpu` of the candidate built as native SASS (OLD) and as PTX only (NEW).
inline json compare_static(const fs::path& out) {
  compare::CompareOptions o;
  o.old_side.input = (repo_root() / "candidates/residual_add_relu/good").string();
  o.new_side.input = o.old_side.input;
  o.new_side.recipe.mode = build::ImageMode::ptx;
  o.new_side.recipe_given = true;
  o.use_gpu = false;
  o.out_dir = out;
  o.command_line = "kqual compare --no-gpu candidates/residual_add_relu/good --new-mode ptx";
  return compare::run_compare(o).results;
}

// The same comparison as measured on the GPU: NEW (PTX, JIT at load) +80 ms first request with the
// JIT cache off or cold, nothing warm; warm time 1.00 → 0.90 ms at both shapes.
inline json compare_gpu(const fs::path& out) {
  json st = compare_static(out);
  st["provenance"] = report::provenance("kqual compare candidates/residual_add_relu/good --new-mode ptx", h200());
  st["target"] = {{"arch", "sm_90"}, {"source", "device 0"}};
  compare::Evidence ev;
  auto accepted = [](int cases) {
    check::CorrectnessReport rep = correctness_report("add_relu_vec", cases, 0, {});
    compare::CorrectnessSide c;
    c.ran = true;
    c.accepted = rep.accepted();
    c.cases = c.passed = cases;
    c.report = rep.to_json(false);
    return c;
  };
  ev.correctness[0] = accepted(40);
  ev.correctness[1] = accepted(40);
  ev.processes = 6;
  ev.samples = 20;
  ev.warmup = 5;
  ev.order = compare::interleave_order(12);
  ev.boundary = "CUDA events around the launch plan, in a fresh worker process per sample";
  for (std::int64_t n : {std::int64_t(4096), std::int64_t(268435456)}) {
    compare::WarmShape w;
    w.shape = fmt::format("n={}", n);
    w.dims = {{"n", n}};
    w.side[0].medians = samples(1.00, 0.004, 6);
    w.side[1].medians = samples(0.90, 0.004, 6, 3);
    w.side[0].pooled = w.side[0].medians;
    w.side[1].pooled = w.side[1].medians;
    ev.warm.push_back(w);
  }
  for (decision::CacheMode c : {decision::CacheMode::off, decision::CacheMode::cold, decision::CacheMode::warm}) {
    compare::StartupMode m;
    m.cache = c;
    m.environment = {{"CUDA_CACHE_DISABLE", c == decision::CacheMode::off ? "1" : "0"}};
    const double jit = c == decision::CacheMode::warm ? 0.2 : 80.0;
    for (int k = 0; k < 2; ++k) {
      auto& s = m.side[k];
      s.kernel_first_use_ms = samples(k == 0 ? 0.1 : jit, k == 0 ? 0.01 : jit * 0.025, 12, k);
      for (double v : s.kernel_first_use_ms) {
        s.base_ms.push_back(230 + v);
        s.launch_ran.push_back(0);
        s.module_load_ms.push_back(v * 0.9);
      }
      if (k == 1 && c != decision::CacheMode::warm) s.jit_wall_ms = samples(jit, 2.0, 12);
    }
    ev.startup.push_back(m);
  }
  ev.startup_runs = 12;
  ev.wall_s = {{"load_and_correctness", 6.0}, {"warm_timing", 14.0}, {"startup", 20.0}};
  compare::JudgeOptions jo;
  jo.profiles = {decision::load_profile((repo_root() / "profiles/long-lived-server.toml").string()),
                 decision::load_profile((repo_root() / "profiles/cold-start-heavy.toml").string())};
  jo.decision_index = 1;
  jo.new_uses_ptx_jit = true;
  jo.arch = "sm_90";
  return compare::judge(st, ev, jo).results;
}

}  // namespace kqual::test::fixtures
