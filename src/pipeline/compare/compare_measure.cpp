// kqual compare's GPU phases: both sides' correctness, warm timing in interleaved fresh worker
// processes, and startup probes in blocks A B B A, extended where a mode cannot resolve its target.
#include "compare_internal.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <future>
#include <filesystem>
#include <map>
#include <optional>

#include "kqual/bench/timing.hpp"
#include "kqual/pipeline/phases.hpp"
#include "kqual/core/error.hpp"
#include "kqual/startup/startup.hpp"
#include "kqual/stats/compare.hpp"
#include "kqual/stats/summary.hpp"

namespace kqual::compare {

namespace {
namespace fs = std::filesystem;

// One side's checked correctness as the judge reads it.
CorrectnessSide to_side(const pipeline::CheckedOne& one) {
  const pipeline::CorrectnessSummary& sum = *one.correctness;
  CorrectnessSide c;
  c.ran = true;
  c.accepted = sum.accepted;
  c.counts() = sum.counts();
  c.primary_code = sum.primary_code;
  for (const auto& f : sum.failures) c.failing[f.id] = f.code;
  c.report = one.report->to_json(false);
  return c;
}

// A library probe's report of what it loaded, kept once per side; a probe that mapped another file
// than the side names is an error: the measurement would be of the wrong build.
void note_library_identity(Side& s, const json& raw) {
  const json lib = raw.value("library", json::object());
  std::error_code ec;
  const fs::path loaded = fs::weakly_canonical(lib.value("loaded", std::string()), ec);
  // cuBLAS: the named file itself; cuBLASLt: the libcublasLt of the named file's folder.
  if (s.library_api == "cublas" ? loaded != s.input : loaded.parent_path() != s.input.parent_path())
    throw_error(ErrorKind::input, fmt::format("{}: the startup probe loaded '{}', not the named '{}'", s.label,
                                              lib.value("loaded", std::string()), s.input.string()));
  for (const auto& m : lib.value("mapped", json::array())) {
    const fs::path mapped = fs::weakly_canonical(m.get<std::string>(), ec);
    if (mapped.parent_path() != s.input.parent_path())
      throw_error(ErrorKind::input,
                  fmt::format("{}: the startup probe mapped '{}' from another directory than '{}': the measurement would mix "
                              "two builds",
                              s.label, m.get<std::string>(), s.input.string()));
  }
  if (s.library_identity.is_null() || !s.library_identity.contains("probe"))
    s.library_identity["probe"] = {{"loaded", lib.value("loaded", "")},
                                   {"cublaslt_loaded_first", lib.value("cublaslt_loaded_first", "")},
                                   {"mapped", lib.value("mapped", json::array())},
                                   {"version", lib.value("version", "")},
                                   {"routine", lib.value("routine", "")}};
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
    cfg.library = s.is_library;
    cfg.library_api = s.library_api;
    cfg.library_dtype = o.dtype;
    cfg.library_shapes = s.library_shapes;
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
        dst.launch_ran.push_back(smp.phases.count("first_launch") || smp.phases.count("first_call") ? 1.0 : 0.0);
        if (s.is_library) {
          for (const auto& [ph, ms] : smp.phases)
            if (ph == "library_load" || ph == "handle" || ph.rfind("first_call", 0) == 0 || ph == "steady_call")
              dst.library_phases_ms[ph].push_back(ms);
          note_library_identity(s, smp.raw);
        } else {
          dst.module_load_ms.push_back(get("module_load"));
        }
        if (smp.phases.count("jit_wall")) dst.jit_wall_ms.push_back(get("jit_wall"));
      }
    }
  }
}

// The worker's own report of the cuBLAS it loaded ("cuBLAS 13.0.2 (<path>)", recorded when the side was
// loaded): it must be the side's file.
void note_worker_library(Side& s) {
  const bool lt = s.library_api == "cublaslt";
  const std::string version = s.built->library_versions.value(lt ? "cuBLASLt" : "cuBLAS", std::string());
  if (version.find(lt ? s.input.parent_path().string() + "/" : s.input.string()) == std::string::npos)
    throw_error(ErrorKind::input, fmt::format("{}: the worker loaded {}, not {} of '{}'", s.label,
                                              version.empty() ? std::string("no cuBLAS") : version,
                                              lt ? "the cuBLASLt" : "the cuBLAS", s.input.string()));
  s.library_identity["worker"] = version;
}

// Both sides' correctness at once, each in its own worker process (correctness is not timed).
void measure_correctness(const CompareOptions& o, Side (&sides)[2], worker::Session* (&per_side)[2], Evidence& ev) {
  pipeline::CheckOneOptions co;
  co.load = false;  // measure() loaded both; `other` needs no load of its own: each case's run names the module
  co.check.seed = o.seed;
  co.check.include_large = o.large_cases;
  // compare asks whether NEW may replace OLD; the cases past 2^31 elements come with the large
  // ones (--large-cases), and the sanitizer pass is `kqual check`'s (its wall time would dominate
  // compare's budget).
  co.check.index_cases = o.large_cases;
  co.check.sanitizer_pass = false;
  // NEW is blamed only for cases OLD passes: both sides' failing cases must be known, so a rejected
  // side runs every case (a correct side runs every case anyway).
  co.check.all_cases = true;
  say(o, "correctness: old and new, each in its own worker");
  // Artifact sides share a session's options; NEW checks in a session of its own so both run at once.
  std::optional<worker::Session> other;
  worker::Session* new_session = per_side[1];
  if (per_side[0] == per_side[1]) new_session = &other.emplace(per_side[0]->options());
  auto new_side = std::async(std::launch::async, [&] { return to_side(pipeline::check_one(*new_session, *sides[1].built, co)); });
  ev.correctness[0] = to_side(pipeline::check_one(*per_side[0], *sides[0].built, co));
  ev.correctness[1] = new_side.get();
}

// Warm time per shape: 2 x o.processes fresh worker processes in interleaved order, each timing one
// side alone.
void measure_warm(const CompareOptions& o, Side (&sides)[2], worker::Session* (&per_side)[2],
                  const std::vector<contract::Dims>& shapes, const bench::TimingOptions& to, Evidence& ev) {
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
    worker::Session& session = *per_side[ev.order[k]];
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
  for (auto* session : per_side) session->worker().stop();
}

// Startup: blocks A B B A of fresh probes; then more blocks, for the modes that could not resolve
// resolve_ms, up to startup_max_runs per side.
void measure_startup_modes(const CompareOptions& o, Side (&sides)[2], Evidence& ev) {
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
}

}  // namespace

Evidence measure(const CompareOptions& o, Side (&sides)[2], worker::Session& session, const contract::Contract* contract,
                 const std::vector<contract::Dims>& shapes, DType dtype) {
  Evidence ev;
  ev.can_launch = sides[0].built && sides[1].built;
  ev.library = sides[0].is_library;
  ev.correctness_skipped = !o.correctness;
  ev.large_cases = o.large_cases;
  auto clock = std::chrono::steady_clock::now();
  auto lap = [&](const char* phase) {
    const auto now = std::chrono::steady_clock::now();
    ev.wall_s[phase] += std::chrono::duration<double>(now - clock).count();
    clock = now;
  };
  // Library sides run in sessions of their own whose workers load that side's file.
  std::optional<worker::Session> library_sessions[2];
  worker::Session* per_side[2] = {&session, &session};
  for (int k = 0; k < 2; ++k)
    if (sides[k].is_library) {
      worker::SessionOptions so = session.options();
      so.worker_env.emplace_back("KQUAL_CUBLAS_LIBRARY", sides[k].input.string());
      per_side[k] = &library_sessions[k].emplace(so);
    }
  if (ev.can_launch) {
    pipeline::CheckOneOptions load_only;
    load_only.correctness = false;
    for (int k = 0; k < 2; ++k) {
      Side& s = sides[k];
      const std::string refusal = pipeline::check_one(*per_side[k], *s.built, load_only).load_error;
      if (!refusal.empty()) throw_error(ErrorKind::input, fmt::format("{} ({}): {}", s.label, s.prov.recipe, refusal));
      if (s.is_library) note_worker_library(s);
    }
  }
  bench::TimingOptions to;
  to.dtype = dtype;
  to.shapes = shapes;
  to.rounds = 1;
  to.samples_per_round = o.samples;
  to.warmup = o.warmup;
  to.measure_copy = false;
  to.seed = o.seed;
  to.equivalence_margin = o.warm_margin.relative;
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
  if (ev.can_launch && o.correctness) measure_correctness(o, sides, per_side, ev);
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
    measure_warm(o, sides, per_side, shapes, to, ev);
    lap("warm_timing");
  }
  if (!new_blamed) {
    measure_startup_modes(o, sides, ev);
    lap("startup");
  }
  return ev;
}

}  // namespace kqual::compare
