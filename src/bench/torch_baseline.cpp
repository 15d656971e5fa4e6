// PyTorch eager / compiled baselines (include/kqual/bench/torch_baseline.hpp): the option, the
// reference of a declared contract, the report, and how a PyTorch series joins a shape.
#include "kqual/bench/torch_baseline.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <toml++/toml.h>

#include "kqual/contract/declared/declared.hpp"
#include "kqual/core/error.hpp"

namespace kqual::bench {
namespace fs = std::filesystem;

std::optional<std::vector<std::string>> parse_torch_baselines(const std::string& text) {
  if (text.empty() || text == "auto") return std::nullopt;
  if (text == "none") return std::vector<std::string>{};
  std::vector<std::string> kinds;
  std::size_t b = 0;
  while (b <= text.size()) {
    std::size_t e = text.find(',', b);
    if (e == std::string::npos) e = text.size();
    const std::string k = text.substr(b, e - b);
    if (k != "eager" && k != "compiled")
      throw_error(ErrorKind::usage, fmt::format("--torch-baselines {}: '{}' is not eager or compiled (or give none, auto)", text, k));
    if (std::find(kinds.begin(), kinds.end(), k) == kinds.end()) kinds.push_back(k);
    b = e + 1;
  }
  return kinds;
}

std::optional<TorchReference> torch_reference_of(const contract::Contract& c) {
  const fs::path file = contract::declared_file(c);
  if (file.empty()) return std::nullopt;
  toml::table t;
  try {
    t = toml::parse_file(file.string());
  } catch (const toml::parse_error&) {
    return std::nullopt;  // it loaded once already: a file changed since is not a baseline's business
  }
  const auto* ref = t["reference"].as_table();
  if (!ref || (*ref)["kind"].value_or(std::string("numpy")) != "torch") return std::nullopt;
  TorchReference r;
  r.file = file.parent_path() / (*ref)["python"].value_or(std::string("reference.py"));
  r.function = (*ref)["function"].value_or(std::string());
  if (const auto* ts = t["tensors"].as_table())
    for (const auto& [name, node] : *ts)
      if (const auto* tt = node.as_table())
        if (const auto* sh = (*tt)["shape"].as_array())
          for (const auto& a : *sh) r.shapes[std::string(name.str())].push_back(a.value_or(std::string()));
  return r;
}

std::string torch_timing_blocker(const TimingOptions& o) {
  if (o.timer != worker::TimerKind::events)
    return fmt::format("--timer {}: the PyTorch worker times with CUDA events only (use --timer events)", to_string(o.timer));
  if (o.flush_l2 && o.flush_mode == "invalidate")
    return "--l2-flush invalidate (PTX discard.global.L2) has no PyTorch equivalent: use write, clean or none";
  return "";
}

namespace {
json torch_overhead_json(const std::vector<TorchOverhead>& v) {
  json a = json::array();
  for (const auto& x : v)
    a.push_back({{"impl", x.impl},
                 {"direct_call_ms", x.direct_ms},
                 {"graph_replay_ms", x.graph_ms},
                 {"overhead_ms", x.overhead_ms},
                 {"direct_call_host_us", x.direct_host_us},
                 {"graph_replay_host_us", x.replay_host_us},
                 {"overhead_host_us", x.overhead_host_us}});
  return a;
}
}  // namespace

json TorchBaselineReport::to_json() const {
  json st = json::array();
  for (const auto& s : startup) {
    json j{{"shape", s.shape}, {"window", s.window}};
    if (s.compile_s >= 0) j["torch_compile_s"] = s.compile_s;
    if (!s.overhead.empty()) j["python_overhead"] = torch_overhead_json(s.overhead);
    st.push_back(j);
  }
  return json{{"ran", ran},
              {"status", status},
              {"torch", torch_version},
              {"device", device},
              {"clocks", clocks},
              {"operation", operation},
              {"compile_mode", compile_mode},
              {"precision", precision},
              {"startup", st},
              {"reused", reused},
              {"notes", notes},
              {"window", "one replay of a CUDA graph holding only the operation's kernels (captured once per shape and dataset, "
                         "inputs and outputs static), timed by CUDA events recorded inside the graph around the kernels: Python "
                         "dispatch, output allocation and the graph launch are outside the samples, the Python overhead reported "
                         "apart per shape (startup[].python_overhead); a call that cannot be captured is timed eagerly, with "
                         "dispatch and allocation in the window (startup[].window says which)"},
              {"order", "blocks A B B A per shape: A the candidate in kqual's worker on the same two datasets, B the PyTorch "
                        "worker (eager and compiled, order swapped between the two B blocks)"}};
}

json TorchFidelityReport::to_json() const {
  json sh = json::array();
  for (const auto& s : shapes) {
    json j{{"shape", s.shape}, {"window", s.window}, {"outputs_verified", s.outputs_verified}};
    if (!s.error.empty()) j["error"] = s.error;
    if (!s.torch_path_ms.empty()) j["torch_path_ms"] = s.torch_path_ms;
    if (!s.kqual_path_ms.empty()) j["kqual_path_ms"] = s.kqual_path_ms;
    if (s.error.empty()) j["torch_vs_kqual"] = stats::to_json(s.torch_vs_kqual);
    if (!s.overhead.empty()) j["python_overhead"] = torch_overhead_json(s.overhead);
    sh.push_back(j);
  }
  return json{{"status", status}, {"torch", torch_version}, {"device", device}, {"shapes", sh}};
}

void add_torch_series(ShapeResult& sh, Series s, const std::vector<double>& candidate_samples, double equivalence_margin) {
  if (!s.samples_ms.empty()) {
    s.summary = stats::summarize(s.samples_ms);
    s.bytes_per_s = sh.min_bytes / (s.summary.median * 1e-3);
    s.flops_per_s = sh.flops / (s.summary.median * 1e-3);
  }
  const bool compared = !s.samples_ms.empty() && !candidate_samples.empty() && !sh.series.empty() && !sh.series[0].samples_ms.empty();
  stats::Comparison cmp;
  if (compared) {
    stats::DecisionOptions dopt;
    dopt.margin.relative = equivalence_margin;
    cmp = stats::compare(s.samples_ms, candidate_samples, dopt);
    sh.vs_baselines.push_back(cmp);
  }
  if (compared && s.verified && s.error.empty()) {
    double best = 0;
    for (const auto& x : sh.series)
      if (x.label == sh.fastest_baseline) best = x.summary.median;
    if (sh.fastest_baseline.empty() || s.summary.median < best) {
      sh.fastest_baseline = s.label;
      sh.vs_fastest = cmp;
    }
  }
  // Without a comparison the series keeps no samples' place in candidate_vs_baselines (to_json pairs
  // the k-th comparison with the k-th series that has samples): it is listed, its samples kept apart.
  if (!compared && !s.samples_ms.empty() && s.error.empty()) s.error = "not compared: the candidate has no samples at this shape";
  if (!compared) s.samples_ms.clear();
  sh.series.push_back(std::move(s));
}

namespace {
std::string median_text(const Series* s) {
  if (!s) return "not run";
  if (s->samples_ms.empty()) return "not timed (" + s->error + ")";
  return fmt::format("{:.4g} ms{}", s->summary.median, s->verified ? "" : " (WRONG output: not a baseline)");
}
}  // namespace

std::vector<std::string> torch_shape_lines(const TimingReport& tr) {
  std::vector<std::string> lines;
  for (const auto& sh : tr.shapes) {
    const Series *cand = nullptr, *eager = nullptr, *compiled = nullptr;
    for (const auto& s : sh.series) {
      if (s.role == "candidate") cand = &s;
      if (s.label == kTorchEager) eager = &s;
      if (s.label == kTorchCompiled) compiled = &s;
    }
    if (!eager && !compiled) continue;
    lines.push_back(fmt::format("{}: eager {}, compiled {}, custom {} (fastest baseline: {})", sh.shape, median_text(eager),
                                median_text(compiled), median_text(cand), sh.fastest_baseline.empty() ? "none" : sh.fastest_baseline));
  }
  return lines;
}

std::string torch_largest_shape_verdict(const TimingReport& tr) {
  const ShapeResult* big = nullptr;
  for (const auto& sh : tr.shapes)
    if (!big || sh.min_bytes > big->min_bytes) big = &sh;
  if (!big) return "";
  const Series *cand = nullptr, *eager = nullptr, *compiled = nullptr;
  for (const auto& s : big->series) {
    if (s.role == "candidate") cand = &s;
    if (s.label == kTorchEager) eager = &s;
    if (s.label == kTorchCompiled) compiled = &s;
  }
  if (!eager && !compiled) return "";
  std::string line = fmt::format("At the largest shape ({}): eager {}, compiled {}, custom {}.", big->shape, median_text(eager),
                                 median_text(compiled), median_text(cand));
  if (big->fastest_baseline == kTorchCompiled || big->fastest_baseline == kTorchEager) {
    const stats::Comparison& v = big->vs_fastest;
    const char* who = big->fastest_baseline == kTorchCompiled ? "torch.compile" : "PyTorch eager";
    if (v.verdict == stats::Verdict::slower)
      line += fmt::format(" {} wins at the largest shape: the candidate takes {:.3f}x its time (95 % CI {:.3f}–{:.3f}).", who,
                          v.estimate, v.ci.lo, v.ci.hi);
    else if (v.verdict == stats::Verdict::faster)
      line += fmt::format(" The candidate beats {} there: {:.3f}x its time (95 % CI {:.3f}–{:.3f}).", who, v.estimate, v.ci.lo, v.ci.hi);
    else
      line += fmt::format(" Against {}, the fastest baseline there: {} ({}).", who, stats::to_string(v.verdict), v.reason);
  }
  return line;
}

}  // namespace kqual::bench
