// The PyTorch baseline phase and the fidelity path (torch_baseline.hpp): the timing worker, the
// dataset files, the A B B A blocks and the check of PyTorch's outputs against the contract's
// reference. One shape's blocks (ShapeBlocks) serve both: the baselines ("eager", "compiled") and the
// candidate's own cubin ("cubin") are the same request with another impl.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>

#include "kqual/bench/torch_baseline.hpp"
#include "kqual/bench/torch_baseline_cache.hpp"
#include "kqual/build/candidate.hpp"
#include "kqual/check/evaluate.hpp"
#include "kqual/check/plan.hpp"
#include "kqual/contract/declared/declared.hpp"
#include "kqual/core/self.hpp"
#include "kqual/core/error.hpp"
#include "kqual/core/files.hpp"
#include "kqual/core/sha256.hpp"
#include "kqual/core/version.hpp"
#include "kqual/worker/session.hpp"
#include "torch_baseline_worker.hpp"

namespace kqual::bench {
namespace fs = std::filesystem;

namespace {

constexpr double kTorchCallTimeout = 600;       // [s] one block of one implementation
constexpr double kTorchCompileTimeout = 1800;   // [s] a first block that compiles (max-autotune-no-cudagraphs autotunes)

fs::path torch_write_tensor(const fs::path& dir, const contract::Tensor& t, const char* ext) {
  const fs::path f = dir / (t.name + ext);
  write_file(f, t.bytes.data(), t.bytes.size());
  return f;
}

// What one shape's blocks gave: the candidate's samples (kqual's worker, the same two datasets) and
// one series per PyTorch implementation.
struct TorchShapeRun {
  std::vector<double> cand_samples;
  std::vector<Series> series;  // in `kinds` order; label and role set by the caller
  TorchShapeStartup st;
  std::map<std::string, std::string> expression;  // impl → what the worker ran
  std::vector<std::string> notes;
};

class ShapeBlocks {
 public:
  ShapeBlocks(worker::Session& s, const build::BuiltCandidate& cand, const contract::Contract& c, const TorchOperation& op, TorchWorker& w,
              const contract::Dims& dims, const TimingOptions& o, std::vector<std::string> kinds, const fs::path& dir)
      : s_(s), cand_(cand), c_(c), w_(w), dims_(dims), o_(o), kinds_(std::move(kinds)), dir_(dir) {
    prepared_ = check::prepare_case(s, c, timing_case_spec(c, dims, o));
    alt_ = check::prepare_case(s, c, timing_alt_case_spec(c, dims, o));
    fs::create_directories(dir / "A");
    fs::create_directories(dir / "B");
    std::vector<TorchTensorFiles> in, out;
    for (std::size_t k = 0; k < prepared_->data.inputs.size(); ++k) {
      const contract::Tensor& t = prepared_->data.inputs[k];
      in.push_back({t.name, torch_write_tensor(dir / "A", t, ".in"), torch_write_tensor(dir / "B", alt_->data.inputs.at(k), ".in")});
    }
    for (const auto& t : prepared_->expected) out.push_back({t.name, dir / "A" / (t.name + ".out"), dir / "B" / (t.name + ".out")});
    req_ = torch_shape_request(c, op, prepared_->data.dims, o.dtype, in, out, o);
    run_.series.resize(kinds_.size());
    run_.st.shape = contract::format_dims(dims);
  }
  const contract::Dims& case_dims() const { return prepared_->data.dims; }
  void add_to_requests(const json& extra) { req_.update(extra); }

  TorchShapeRun run() {
    const int pairs = std::max(1, (o_.rounds + 1) / 2);
    for (int p = 0; p < pairs; ++p) {
      candidate_block(p == 0);
      torch_block(2 * p, false, false);
      torch_block(2 * p + 1, true, p + 1 == pairs);
      candidate_block(false);
    }
    return std::move(run_);
  }

 private:
  // The candidate in kqual's worker on the same two datasets the PyTorch worker reads (never fresh
  // device inputs here: the comparison is on the same values), files kept across the blocks.
  void candidate_block(bool first) {
    TimingOptions one = o_;
    one.shapes = {dims_};
    one.rounds = 1;
    one.warmup = first ? o_.warmup : 1;
    one.measure_copy = false;
    one.progress = {};
    one.fresh_inputs = false;
    one.give_hash_slots = false;
    one.keep_input_files = true;
    one.input_root = dir_ / "kqual";
    TimingReport r1 = time_against_baselines(s_, cand_, {}, one);
    const Series& cs = r1.shapes.at(0).series.at(0);
    if (cs.error.empty() && cs.verified) run_.cand_samples.insert(run_.cand_samples.end(), cs.samples_ms.begin(), cs.samples_ms.end());
    else run_.notes.push_back(fmt::format("{}: a candidate block failed: {}", run_.st.shape, cs.error.empty() ? cs.verify_detail : cs.error));
  }

  void torch_block(int block, bool reversed, bool last) {
    for (std::size_t j = 0; j < kinds_.size(); ++j) {
      const std::size_t i = reversed ? kinds_.size() - 1 - j : j;
      Series& se = run_.series[i];
      if (!se.error.empty()) continue;
      json r = req_;
      r["impl"] = kinds_[i];
      r["warmup"] = block == 0 ? o_.warmup : 1;
      r["write_outputs"] = last;
      r["measure_direct"] = block == 0;  // the Python overhead, once per shape
      const json a = w_.call(&r, block == 0 && kinds_[i] == "compiled" ? kTorchCompileTimeout : kTorchCallTimeout);
      if (!a.value("ok", false)) {
        se.error = fmt::format("{}: {}", a.value("code", std::string("?")), a.value("error", std::string()));
        continue;
      }
      take_reply(a, block, kinds_[i], se);
      if (last) verify_outputs(kinds_[i], se);
    }
  }

  void take_reply(const json& a, int block, const std::string& kind, Series& se) {
    auto add = [&](const char* key, std::vector<double>& into) {
      for (const auto& x : a.value(key, json::array())) into.push_back(x.get<double>());
    };
    add_torch_samples(a, block, se);
    if (a.contains("compile_s") && a["compile_s"].is_number() && kind == "compiled") run_.st.compile_s = a["compile_s"].get<double>();
    if (block != 0) return;
    run_.expression[kind] = a.value("expression", std::string());
    std::vector<std::string> notes;
    for (const auto& n : a.value("notes", json::array())) notes.push_back(n.get<std::string>());
    const std::string window = a.value("window", std::string("?"));
    run_.st.window[kind] = notes.empty() ? window : fmt::format("{}: {}", window, fmt::join(notes, "; "));
    for (const auto& n : notes) run_.notes.push_back(fmt::format("{}: {}: {}", run_.st.shape, kind, n));
    if (a.contains("overhead_ms") && a["overhead_ms"].is_number()) {
      TorchOverhead ov;
      ov.impl = kind;
      auto med = [&](const char* key) {
        std::vector<double> v;
        add(key, v);
        return v.empty() ? 0.0 : stats::median(v);
      };
      ov.direct_ms = med("direct_ms");
      ov.graph_ms = med("graph_ms");
      ov.overhead_ms = a["overhead_ms"].get<double>();
      ov.direct_host_us = med("direct_host_us");
      ov.replay_host_us = med("replay_host_us");
      ov.overhead_host_us = a.value("overhead_host_us", 0.0);
      run_.st.overhead.push_back(ov);
    }
  }

  // The outputs of the last block, both datasets, against the reference (a wrong baseline is never the fastest).
  void verify_outputs(const std::string& kind, Series& se) {
    for (int d = 0; d < 2 && se.verified; ++d)
      for (const auto& t : d == 0 ? prepared_->expected : alt_->expected) {
        std::string code;
        const std::string det = check::verify_output_file(c_, t, dir_ / (d == 0 ? "A" : "B") / (t.name + ".out"), 0xFF, &code);
        if (det.empty()) continue;
        se.verified = false;
        se.verify_code = "timed_output_wrong";
        se.verify_detail = fmt::format("PyTorch {} output '{}' on dataset {} ({}): {}", kind, t.name, d == 0 ? "A" : "B", code, det);
        break;
      }
  }

  worker::Session& s_;
  const build::BuiltCandidate& cand_;
  const contract::Contract& c_;
  TorchWorker& w_;
  contract::Dims dims_;
  const TimingOptions& o_;
  std::vector<std::string> kinds_;
  fs::path dir_;
  std::shared_ptr<const check::PreparedCase> prepared_, alt_;
  json req_;
  TorchShapeRun run_;
};

std::string overhead_text(const TorchBaselineReport& rep) {
  std::vector<std::string> parts;
  for (const auto& st : rep.startup)
    for (const auto& ov : st.overhead)
      parts.push_back(fmt::format("{} {} {:+.4f} ms ({:+.1f} us host)", st.shape, ov.impl, ov.overhead_ms, ov.overhead_host_us));
  if (parts.empty()) return "";
  return fmt::format("; Python overhead per call, outside the samples (call without a graph minus graph replay, events): {}",
                     fmt::join(parts, ", "));
}

}  // namespace

namespace {

// What decides a shape's PyTorch series besides the shape and dtype (torch_baseline_cache.hpp).
json torch_identity(const contract::Contract& c, const TorchOperation& op, const TorchBaselineReport& rep, const json& device,
                    const TimingOptions& o, const std::vector<std::string>& kinds) {
  json gpu = json::object();
  if (device.is_object())
    for (const char* k : {"name", "arch", "driver_version", "sms", "total_memory_bytes"})
      if (device.contains(k)) gpu[k] = device[k];
  json id{{"what", "pytorch baselines"}, {"contract", c.name()}, {"operation", op.describe()}, {"torch", rep.torch_version},
          {"compile_mode", rep.compile_mode}, {"precision", rep.precision}, {"kinds", kinds}, {"gpu", gpu},
          {"kqual", git_revision()},
          {"timing", {{"rounds", o.rounds}, {"samples", o.samples_per_round}, {"warmup", o.warmup}, {"flush", o.flush_l2 ? o.flush_mode : "none"},
                      {"clock_guard", o.clock_guard}, {"seed", o.seed}}}};
  if (op.reference) {  // a declared contract's PyTorch reference: its content, not only its name
    std::error_code ec;
    id["reference_sha256"] = fs::is_regular_file(op.reference->file, ec) ? sha256_file_hex(op.reference->file.string()) : "";
  }
  return id;
}

// The median of kind's series at a shape just measured, against the kept one: "" when they agree
// within TorchBaselineCache::kAgreement, else why not.
// *said: each implementation's ratio to its kept median and the tolerance it met.
std::string disagreement(const ShapeResult& sh, const json& kept, const std::vector<std::string>& kinds, std::string* said) {
  for (const auto& k : kinds) {
    const std::string label = k == "eager" ? kTorchEager : kTorchCompiled;
    const auto it = std::find_if(sh.series.begin(), sh.series.end(), [&](const Series& x) { return x.label == label; });
    const std::vector<double> old = kept["series"].contains(k) ? kept["series"][k].value("samples_ms", std::vector<double>{}) : std::vector<double>{};
    if (it == sh.series.end() || !it->error.empty() || it->summary.median <= 0 || old.empty())
      return fmt::format("{} could not be compared at {}", label, sh.shape);
    const double ratio = it->summary.median / stats::median(old);
    const double tolerance = TorchBaselineCache::agreement(old);
    if (std::abs(ratio - 1) > tolerance)
      return fmt::format("{} at {} took {:.3f}x its kept median (more than {:.1f} % away)", label, sh.shape, ratio, 100 * tolerance);
    *said += fmt::format("{}{} {:.3f}x (within {:.1f} %)", said->empty() ? "" : ", ", label, ratio, 100 * tolerance);
  }
  return "";
}

}  // namespace

TorchBaselineReport run_torch_baselines(worker::Session& s, const build::BuiltCandidate& cand, TimingReport& tr, const TimingOptions& o,
                                        const std::optional<std::vector<std::string>>& requested, bool remeasure,
                                        std::shared_ptr<TorchEarlyStart> early) {
  TorchBaselineReport rep;
  const contract::Contract& c = cand.manifest.resolved_contract();
  if (const std::string why = torch_phase_blocker(c, o, requested); !why.empty()) {
    rep.status = why;
    return rep;
  }
  const TorchOperation op = *torch_operation_of(c);
  rep.compile_mode = torch_compile_mode();
  const std::vector<std::string> kinds = requested ? *requested : std::vector<std::string>{"eager", "compiled"};
  TorchStart ts = early && early->ts.w && early->compile_mode == rep.compile_mode ? std::move(early->ts)
                                                                                 : start_torch_worker(s.scratch(), op, rep.compile_mode, true);
  greet_torch_worker(ts, op);
  if (!ts.blocker.empty()) {
    rep.status = ts.blocker;
    return rep;
  }
  rep.torch_version = ts.hello.value("torch", std::string());
  rep.device = ts.hello.value("device", std::string());
  rep.clocks = ts.hello.value("clocks", std::string());
  rep.precision = ts.hello.value("precision", std::string());
  const TorchBaselineCache cache(kqual_cache_dir() / "torch-baselines", torch_identity(c, op, rep, s.device().device, o, kinds));
  std::vector<std::size_t> eligible;
  for (std::size_t si = 0; si < tr.shapes.size(); ++si) {
    const ShapeResult& sh = tr.shapes[si];
    if (sh.series.empty() || !sh.series[0].error.empty() || !sh.series[0].verified)
      rep.notes.push_back(fmt::format("{}: not timed against PyTorch: the candidate has no verified samples there", sh.shape));
    else
      eligible.push_back(si);
  }
  std::vector<std::string> timed;
  // One shape measured in A B B A blocks against the candidate, its series added and kept.
  auto measure = [&](std::size_t si) {
    ShapeResult& sh = tr.shapes[si];
    const int pairs = std::max(1, (o.rounds + 1) / 2);
    if (o.progress) o.progress(fmt::format("timing: PyTorch {} at {} (A B B A x {})", fmt::join(kinds, ", "), sh.shape, pairs));
    const fs::path dir = s.scratch() / "torch" / fmt::format("shape{}", si);
    TorchShapeRun run = ShapeBlocks(s, cand, c, op, *ts.w, sh.dims, o, kinds, dir).run();
    json entry{{"series", json::object()}, {"window", run.st.window}};
    bool keepable = true;
    for (std::size_t i = 0; i < kinds.size(); ++i) {
      Series& se = run.series[i];
      se.label = kinds[i] == "eager" ? kTorchEager : kTorchCompiled;
      se.role = "baseline";
      se.timer = worker::TimerKind::events;
      keepable = keepable && se.error.empty() && se.verified && !se.samples_ms.empty();
      entry["series"][kinds[i]] = kept_series(se);
      add_torch_series(sh, std::move(se), run.cand_samples, o.equivalence_margin);
    }
    if (keepable) cache.keep(cache.key(sh.shape, std::string(to_string(o.dtype))), entry);
    if (rep.operation.empty())
      for (const auto& k : kinds)
        if (!run.expression[k].empty()) rep.operation += (rep.operation.empty() ? "" : "; ") + k + ": " + run.expression[k];
    rep.notes.insert(rep.notes.end(), run.notes.begin(), run.notes.end());
    rep.startup.push_back(std::move(run.st));
    timed.push_back(sh.shape);
    std::error_code ec;
    fs::remove_all(dir, ec);
  };
  // Kept series: reused for every shape but the first (measured again here) where all are kept and the
  // first agrees with its kept medians; the candidate's side is this run's own timing.
  std::map<std::size_t, json> kept;
  if (!remeasure)
    for (std::size_t si : eligible)
      if (auto k = cache.find(cache.key(tr.shapes[si].shape, std::string(to_string(o.dtype))))) kept[si] = std::move(*k);
  std::vector<std::size_t> todo = eligible;
  if (eligible.size() > 1 && kept.size() == eligible.size()) {
    // The middle shape (by the order timed: the contract's shapes grow): less noisy than the smallest, far
    // cheaper than the largest.
    const std::size_t at = (eligible.size() - 1) / 2, check = eligible[at];
    measure(check);
    todo.erase(todo.begin() + std::ptrdiff_t(at));
    std::string agreed;
    if (const std::string why = disagreement(tr.shapes[check], kept[check], kinds, &agreed); !why.empty()) {
      rep.notes.push_back(fmt::format("kept PyTorch series not reused: {}; every shape measured again", why));
    } else {
      for (std::size_t si : todo) {
        ShapeResult& sh = tr.shapes[si];
        for (const auto& k : kinds) {
          Series se = series_from_kept(kept[si]["series"][k]);
          se.label = k == "eager" ? kTorchEager : kTorchCompiled;
          add_torch_series(sh, std::move(se), sh.series[0].samples_ms, o.equivalence_margin);
        }
        TorchShapeStartup st;
        st.shape = sh.shape;
        st.window = kept[si].value("window", std::map<std::string, std::string>{});
        rep.startup.push_back(std::move(st));
        rep.reused.push_back(fmt::format("{} (measured {})", sh.shape, kept[si].value("measured_at", std::string("?"))));
      }
      rep.notes.push_back(fmt::format(
          "PyTorch series reused at {} shape(s), kept from earlier runs with the same operation, PyTorch, GPU, driver, kqual and timing "
          "options: {} measured again here agreed with its kept medians ({}); at the reused shapes this run's candidate samples (its "
          "own timing) are compared with the kept series (--recheck-baselines measures every shape again)",
          todo.size(), tr.shapes[check].shape, agreed));
      todo.clear();
    }
  }
  for (std::size_t si : todo) measure(si);
  rep.ran = !timed.empty() || !rep.reused.empty();
  std::vector<std::string> compile;
  for (const auto& st : rep.startup)
    if (st.compile_s >= 0) compile.push_back(fmt::format("{:.1f} s at {}", st.compile_s, st.shape));
  rep.status = rep.ran ? fmt::format("done: {} at {} shape(s){}, torch {} on {} ({}); CUDA-graph replays of the operation's kernels, A B B A "
                                     "blocks against the candidate on the same datasets{}{}{}",
                                     fmt::join(kinds, ", "), timed.size() + rep.reused.size(),
                                     rep.reused.empty() ? "" : fmt::format(" ({} reused from earlier runs)", rep.reused.size()),
                                     rep.torch_version, rep.device, op.describe(),
                                     compile.empty() ? "" : fmt::format("; torch.compile (mode {}) startup (compilation, first call) {}",
                                                                        rep.compile_mode, fmt::join(compile, ", ")),
                                     overhead_text(rep), rep.clocks == "nvml" ? "" : "; " + rep.clocks)
                       : "not run: no shape with verified candidate samples";
  return rep;
}

std::shared_ptr<TorchEarlyStart> start_torch_baselines_early(worker::Session& s, const build::BuiltCandidate& cand, const TimingOptions& o,
                                                             const std::optional<std::vector<std::string>>& requested) {
  const contract::Contract& c = cand.manifest.resolved_contract();
  if (!torch_phase_blocker(c, o, requested).empty()) return nullptr;
  auto early = std::make_shared<TorchEarlyStart>();
  early->compile_mode = torch_compile_mode();
  early->ts = start_torch_worker(s.scratch(), *torch_operation_of(c), early->compile_mode, true, false, /*greet=*/false);
  return early;
}

TorchFidelityReport time_cubin_through_torch(worker::Session& s, const build::BuiltCandidate& cand, const TimingOptions& o) {
  TorchFidelityReport rep;
  const contract::Contract& c = cand.manifest.resolved_contract();
  if (const std::string why = torch_timing_blocker(o); !why.empty()) {
    rep.status = "not run: " + why;
    return rep;
  }
  // The operation matters only for the tensors' shapes here: a contract PyTorch cannot run still
  // has its domain's.
  const TorchOperation op = torch_operation_of(c).value_or(TorchOperation{});
  TorchStart ts = start_torch_worker(s.scratch(), op, "default", false);
  if (!ts.blocker.empty()) {
    rep.status = ts.blocker;
    return rep;
  }
  rep.torch_version = ts.hello.value("torch", std::string());
  rep.device = ts.hello.value("device", std::string());
  const std::vector<contract::Dims> shapes = o.shapes.empty() ? c.benchmark_shapes() : o.shapes;
  for (std::size_t si = 0; si < shapes.size(); ++si) {
    TorchFidelityShape row;
    row.shape = contract::format_dims(shapes[si]);
    const fs::path dir = s.scratch() / "torch" / fmt::format("fidelity{}", si);
    try {
      ShapeBlocks blocks(s, cand, c, op, *ts.w, shapes[si], o, {"cubin"}, dir);
      const check::ResolvedPlan plan = check::resolve_plan(cand, o.dtype, blocks.case_dims(), s.device());
      if (!plan.refusal.empty()) throw_error(ErrorKind::unsupported, "refused: " + plan.refusal);
      blocks.add_to_requests(json{{"cubin", torch_cubin_launch(cand.image_path, plan.launches, plan.scratch)}});
      TorchShapeRun run = blocks.run();
      const Series& se = run.series.at(0);
      row.torch_path_ms = se.samples_ms;
      row.kqual_path_ms = run.cand_samples;
      row.window = run.st.window.count("cubin") ? run.st.window.at("cubin") : "";
      row.overhead = run.st.overhead;
      row.outputs_verified = se.error.empty() && se.verified;
      if (!se.error.empty()) row.error = "the PyTorch path: " + se.error;
      else if (!se.verified) row.error = se.verify_detail;
      else if (run.cand_samples.empty()) row.error = "kqual's path gave no samples: " + fmt::format("{}", fmt::join(run.notes, "; "));
      else {
        stats::DecisionOptions dopt;
        dopt.margin.relative = o.equivalence_margin;
        row.torch_vs_kqual = stats::compare(row.kqual_path_ms, row.torch_path_ms, dopt);
      }
    } catch (const Error& e) {
      row.error = e.what();
    }
    std::error_code ec;
    fs::remove_all(dir, ec);
    rep.shapes.push_back(std::move(row));
  }
  std::size_t compared = 0;
  for (const auto& x : rep.shapes) compared += x.error.empty();
  rep.status = fmt::format("done: {} of {} shape(s) compared, torch {} on {}", compared, rep.shapes.size(), rep.torch_version, rep.device);
  return rep;
}

}  // namespace kqual::bench
