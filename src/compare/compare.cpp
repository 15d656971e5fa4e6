#include "kqual/compare/compare.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "kqual/artifact/artifact.hpp"
#include "kqual/bench/timing.hpp"
#include "kqual/contract/contract.hpp"
#include "kqual/core/error.hpp"
#include "kqual/core/files.hpp"
#include "kqual/harness/evaluate.hpp"
#include "kqual/harness/manifest.hpp"
#include "kqual/harness/session.hpp"
#include "kqual/report/provenance.hpp"
#include "kqual/run/exit_codes.hpp"
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

int exit_code_for(decision::ShipVerdict v) {
  switch (v) {
    case decision::ShipVerdict::ship:
    case decision::ShipVerdict::no_difference: return run::kExitPass;
    case decision::ShipVerdict::do_not_ship:
    case decision::ShipVerdict::inconclusive: return run::kExitFail;
  }
  return run::kExitInternal;
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
  warm_opt.margin.relative = warm_margin;
  in.warm = decision::warm_delta(to_seconds(warm_old_ms), to_seconds(warm_new_ms), warm_opt);
  return in;
}

namespace {

struct Side {
  std::string label;  // "old" / "new"
  SideSpec spec;
  bool is_candidate = false;
  fs::path input;  // absolute
  std::optional<harness::Manifest> manifest;
  std::string manifest_from;
  std::optional<harness::BuiltCandidate> built;
  harness::BuildProvenance prov;
  fs::path image;
  std::string image_sha256;
  artifact::Artifact art;
  artifact::Selection sel;
  std::string startup_kernel;
  std::string startup_kernel_from;
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
    s.manifest = harness::load_manifest(p);
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

// Per (cache, loading): the samples of both sides, merged over the interleaved blocks.
struct StartupAccum {
  StartupPair pair;
  std::vector<double> launch_ran[2];  // 1 when first_launch ran (kernel_first_use includes it)
  std::vector<double> base_ms[2];     // driver_init + context + kernel_first_use
  std::vector<double> module_load_ms[2], jit_wall_ms[2];
  std::size_t failures[2] = {0, 0};
  std::vector<std::string> failure_messages[2];
  std::map<std::string, std::string> environment;
};

json summary_or_null(const std::vector<double>& v) {
  if (v.empty()) return nullptr;
  return stats::to_json(stats::summarize(v));
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
  if (o.processes < 1 || o.samples < 1 || o.warmup < 0) throw_error(ErrorKind::usage, "--processes/--samples must be >= 1");
  if (o.cache_modes.empty() || o.loading_modes.empty()) throw_error(ErrorKind::usage, "no cache or loading mode selected");
  auto dtype = parse_dtype(o.dtype);
  if (!dtype) throw_error(ErrorKind::usage, fmt::format("--dtype: unknown dtype '{}'", o.dtype));
  std::optional<harness::Manifest> shared_manifest;
  if (!o.manifest.empty()) {
    shared_manifest = harness::load_manifest(o.manifest);
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
  std::vector<decision::DeploymentProfile> profiles;
  for (const auto& p : o.profiles) profiles.push_back(decision::load_profile(p));
  if (profiles.empty()) {
    decision::DeploymentProfile d;
    d.name = "default";
    d.description = "built-in defaults (docs/statistics.md); give --profile FILE for your service";
    profiles.push_back(d);
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
  harness::SessionOptions so;
  so.use_gpu = o.use_gpu;
  so.watchdog_seconds = o.watchdog_seconds;
  harness::Session session(so);
  const harness::DeviceFacts& dev = session.device();
  const std::string arch = dev.present ? dev.arch : (o.arch.empty() ? std::string(KQUAL_DEFAULT_ARCH) : o.arch);
  if (dev.present && !o.arch.empty() && o.arch != dev.arch)
    throw_error(ErrorKind::usage, fmt::format("--arch {} given but the device is {}", o.arch, dev.arch));
  const std::string why_no_gpu = o.use_gpu ? dev.why_absent : "GPU phases disabled (--no-gpu)";

  json r{{"schema", "kqual.compare/1"}, {"schema_version", kJsonSchemaVersion}};
  r["provenance"] = report::provenance(o.command_line, dev.present ? dev.device : json());
  r["target"] = {{"arch", arch}, {"source", dev.present ? "device 0" : (o.arch.empty() ? "default (no device)" : "--arch")}};
  json not_run = json::array();
  json notes = json::array();

  // ---- 3. Build (or adopt) both sides: static, no GPU ----
  for (auto& s : sides) {
    fs::path dir = session.scratch() / s.label;
    fs::create_directories(dir);
    if (s.is_candidate) {
      say(o, fmt::format("building {}: {}", s.label, s.spec.recipe.describe()));
      s.built = harness::build_with_recipe(*s.manifest, s.spec.recipe, arch, dir, &s.prov);
      s.image = s.built->image_path;
    } else {
      s.image = s.input;
      if (s.manifest) {
        s.built = harness::adopt_prebuilt(*s.manifest, s.input, arch, &s.prov);
      } else {
        s.prov.recipe = "prebuilt image " + s.input.string();
      }
    }
    s.art = artifact::parse_artifact(s.image.string());
    if (s.art.container == artifact::ContainerKind::host_binary)
      throw_error(ErrorKind::input, fmt::format("{} is a host binary: compare needs a cubin, fatbin or PTX file (extract "
                                                "the device code, e.g. cuobjdump -xelf all {})",
                                                s.image.string(), s.image.string()));
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
           {"startup_kernel", s.startup_kernel}};
    if (s.built) j["candidate"] = s.built->to_json(), j["candidate"]["image"]["kind"] = s.prov.image_kind;
    side_json[s.label] = j;
  }
  r["sides"] = side_json;
  r["artifact_diff"] = artifact::to_json(diff);
  json phases = json::object();
  phases["build"] = fmt::format("old: {}; new: {}", sides[0].prov.recipe, sides[1].prov.recipe);
  phases["artifact_diff"] = fmt::format("old loads by {}, new by {} on {}; {} kernel(s) compared",
                                        artifact::to_string(sides[0].sel.path), artifact::to_string(sides[1].sel.path), arch,
                                        diff.kernels.size());

  json verdict{{"reasons", json::array()}};
  CompareOutcome out;
  auto finish = [&](const std::string& decision_text, int code, const std::string& summary) {
    verdict["decision"] = decision_text;
    verdict["exit_code"] = code;
    verdict["summary"] = summary;
    r["phases"] = phases;
    r["not_run"] = not_run;
    r["notes"] = notes;
    r["verdict"] = verdict;
    out.results = r;
    out.memo = render_memo(r);
    out.exit_code = code;
    // Both files are complete before either becomes visible under its final name.
    fs::create_directories(o.out_dir);
    out.results_path = o.out_dir / "results.json";
    out.memo_path = o.out_dir / "memo.md";
    const fs::path tmp_r = o.out_dir / ".results.json.partial", tmp_m = o.out_dir / ".memo.md.partial";
    write_file_atomic(tmp_r, out.results.dump(2) + "\n");
    write_file_atomic(tmp_m, out.memo);
    fs::rename(tmp_r, out.results_path);
    fs::rename(tmp_m, out.memo_path);
    return out;
  };

  if (!dev.present) {
    for (const char* ph : {"correctness", "startup", "warm_timing", "decision"}) {
      phases[ph] = "not run: needs a GPU (" + why_no_gpu + ")";
      not_run.push_back(std::string(ph) + ": needs a GPU (" + why_no_gpu + ")");
    }
    verdict["reasons"].push_back("static phases done: both sides built/parsed for " + arch + ", artifact diff computed");
    if (new_jit && !sides[0].art.entries.empty() && sides[0].sel.path == artifact::LoadPath::native_sass)
      verdict["reasons"].push_back("NEW is JIT-compiled from PTX on " + arch +
                                   " while OLD loads native SASS: expect a first-request cost with a cold JIT cache");
    return finish("incomplete", run::kExitIncomplete, "No GPU: only the static phases ran. " + why_no_gpu);
  }
  const bool can_launch = sides[0].built && sides[1].built;
  if (!can_launch) {
    not_run.push_back("correctness and warm timing: no launch plan for a prebuilt artifact (give --manifest DIR)");
    phases["correctness"] = phases["warm_timing"] = "not run: no launch plan (give --manifest)";
  }

  // ---- 4. Correctness of both ----
  json correctness = json::object();
  bool new_correct = true;
  if (can_launch) {
    for (auto& s : sides) {
      std::string refusal = harness::load_and_describe(session, *s.built);
      if (!refusal.empty())
        throw_error(ErrorKind::input, fmt::format("{} ({}): {}", s.label, s.prov.recipe, refusal));
      side_json[s.label]["candidate"] = s.built->to_json();
      side_json[s.label]["candidate"]["image"]["kind"] = s.prov.image_kind;
    }
    r["sides"] = side_json;
    if (o.correctness) {
      harness::CheckOptions co;
      co.seed = o.seed;
      co.include_large = o.large_cases;
      std::string text;
      for (auto& s : sides) {
        say(o, "correctness: " + s.label);
        harness::CorrectnessReport rep = harness::check_correctness(session, *s.built, co);
        correctness[s.label] = rep.to_json(false);
        text += fmt::format("{}{}: {} ({} passed, {} failed, {} refused)", text.empty() ? "" : "; ", s.label,
                            rep.accepted() ? "accepted" : "rejected", rep.passed, rep.failed, rep.refused);
        if (!rep.accepted()) {
          if (s.label == "new") new_correct = false;
          verdict["reasons"].push_back(fmt::format("{} is rejected by the contract: {} of {} cases failed, mostly `{}`",
                                                   s.label, rep.failed, rep.cases, rep.primary_code()));
        }
      }
      phases["correctness"] = text;
    } else {
      phases["correctness"] = "skipped (--no-correctness)";
      not_run.push_back("correctness: skipped (--no-correctness)");
    }
  }
  r["correctness"] = correctness;
  if (!new_correct) {
    phases["startup"] = phases["warm_timing"] = "not run: NEW computes the wrong answer";
    return finish(decision::to_string(decision::ShipVerdict::do_not_ship), run::kExitFail,
                  "NEW computes the wrong answer; no speed makes up for that.");
  }

  // ---- 5. Warm timing, interleaved across fresh worker processes ----
  struct WarmSide {
    std::vector<double> medians;  // per process
    std::vector<double> pooled;
    std::vector<std::string> errors;
    bool verified = true;
    std::string verify_detail;
  };
  std::vector<std::array<WarmSide, 2>> warm(shapes.size());
  std::string boundary;
  std::vector<int> order;
  if (can_launch) {
    bench::TimingOptions to;
    to.dtype = *dtype;
    to.shapes = shapes;
    to.rounds = 1;
    to.samples_per_round = o.samples;
    to.warmup = o.warmup;
    to.measure_copy = false;
    to.seed = o.seed;
    to.equivalence_margin = o.warm_margin;
    order = interleave_order(2 * o.processes);
    for (std::size_t k = 0; k < order.size(); ++k) {
      Side& s = sides[order[k]];
      say(o, fmt::format("warm timing: process {}/{} ({})", k + 1, order.size(), s.label));
      session.worker().stop();  // a fresh worker process for every block
      bench::TimingReport rep = bench::time_against_baselines(session, *s.built, {}, to);
      boundary = rep.boundary;
      for (std::size_t si = 0; si < rep.shapes.size() && si < shapes.size(); ++si) {
        const bench::Series& se = rep.shapes[si].series.at(0);
        WarmSide& w = warm[si][std::size_t(order[k])];
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
  }
  json warm_j = json::array();
  bool new_timing_failed = false, new_timed_wrong = false;
  std::vector<double> est_first_launch_ms(2, 0.0);
  for (std::size_t si = 0; si < shapes.size() && can_launch; ++si) {
    json sj{{"shape", contract::format_dims(shapes[si])}, {"dims", shapes[si]}};
    for (int k = 0; k < 2; ++k) {
      const WarmSide& w = warm[si][std::size_t(k)];
      sj[sides[k].label] = {{"per_process_median_ms", w.medians},
                            {"summary_of_process_medians_ms", summary_or_null(w.medians)},
                            {"pooled_summary_ms", summary_or_null(w.pooled)},
                            {"errors", w.errors},
                            {"verified", w.verified},
                            {"verify_detail", w.verify_detail}};
      if (k == 1 && (w.medians.empty() || !w.errors.empty())) new_timing_failed = true;
      if (k == 1 && !w.verified) new_timed_wrong = true;
      if (si == decision_index && !w.medians.empty()) est_first_launch_ms[std::size_t(k)] = stats::median(w.medians);
    }
    const auto& a = warm[si][0].medians;
    const auto& b = warm[si][1].medians;
    if (a.size() >= 1 && b.size() >= 1) {
      stats::DecisionOptions d;
      d.test.paired = a.size() == b.size();
      d.margin.relative = o.warm_margin;
      stats::Comparison c = stats::compare(a, b, d);
      sj["comparison"] = stats::to_json(c);
    }
    sj["decision_shape"] = si == decision_index;
    warm_j.push_back(sj);
  }
  if (can_launch) {
    r["warm"] = {{"unit", "one sample per fresh worker process: the median of its timed samples"},
                 {"processes_per_side", o.processes},
                 {"samples_per_process", o.samples},
                 {"warmup_per_process", o.warmup},
                 {"order", [&] { json v = json::array(); for (int x : order) v.push_back(x == 0 ? "A" : "B"); return v; }()},
                 {"boundary", boundary},
                 {"margin_relative", o.warm_margin},
                 {"decision_shape", shapes.empty() ? json() : json(contract::format_dims(shapes[decision_index]))},
                 {"shapes", warm_j}};
    phases["warm_timing"] = fmt::format("{} fresh worker processes per side, {} samples per shape each, order A B B A ...",
                                        o.processes, o.samples);
  }

  // ---- 6. Startup, interleaved across fresh probe processes (blocks A B B A) ----
  std::map<std::pair<int, int>, StartupAccum> acc;
  const int block_runs[2] = {(o.startup_runs + 1) / 2, o.startup_runs / 2};
  std::vector<std::string> startup_notes;
  for (int k = 0, blocks_done[2] = {0, 0}; k < 4; ++k) {
    const int side = interleave_order(4)[std::size_t(k)];
    Side& s = sides[side];
    startup::StartupConfig cfg;
    cfg.artifact = s.image.string();
    cfg.kernel = s.startup_kernel;
    cfg.launch = false;  // candidate kernels take pointers: the harness's launch is timed warm, not here
    cfg.runs = block_runs[blocks_done[side]++];
    if (cfg.runs <= 0) continue;
    cfg.cache_modes = o.cache_modes;
    cfg.loading_modes = o.loading_modes;
    cfg.watchdog_s = o.watchdog_seconds;
    cfg.probe_executable = o.probe_executable;
    say(o, fmt::format("startup: block {}/4 ({}, {} fresh processes per mode)", k + 1, s.label, cfg.runs));
    startup::StartupReport rep = startup::measure_startup(cfg);
    if (!rep.gpu_ran) throw_error(ErrorKind::cuda, "startup probes could not use the GPU: " + rep.gpu_unavailable);
    for (const auto& n : rep.notes)
      if (std::find(startup_notes.begin(), startup_notes.end(), n) == startup_notes.end()) startup_notes.push_back(n);
    for (const auto& m : rep.modes) {
      StartupAccum& a = acc[{int(m.cache), int(m.loading)}];
      a.pair.cache = m.cache;
      a.pair.loading = m.loading;
      if (side == 0) a.environment = m.environment;
      a.failures[side] += m.failures;
      for (const auto& smp : m.samples) {
        if (!smp.ok) {
          a.failure_messages[side].push_back(smp.failure);
          continue;
        }
        auto get = [&](const char* ph) { auto it = smp.phases.find(ph); return it == smp.phases.end() ? 0.0 : it->second; };
        if (!smp.phases.count("kernel_first_use")) continue;
        const double kfu = get("kernel_first_use");
        (side == 0 ? a.pair.old_side : a.pair.new_side).kernel_first_use_ms.push_back(kfu);
        a.base_ms[side].push_back(get("driver_init") + get("context") + kfu);
        a.launch_ran[side].push_back(smp.phases.count("first_launch") ? 1.0 : 0.0);
        a.module_load_ms[side].push_back(get("module_load"));
        if (smp.phases.count("jit_wall")) a.jit_wall_ms[side].push_back(get("jit_wall"));
      }
    }
  }
  // First request = driver init + context + kernel first use, plus (when the probe could not
  // launch) the side's warm kernel time at the decision shape as the first launch's estimate.
  std::vector<StartupPair> pairs;
  json startup_j = json::array();
  for (auto& [key, a] : acc) {
    for (int side = 0; side < 2; ++side) {
      auto& dst = side == 0 ? a.pair.old_side : a.pair.new_side;
      dst.first_request_ms.clear();
      for (std::size_t i = 0; i < a.base_ms[side].size(); ++i)
        dst.first_request_ms.push_back(a.base_ms[side][i] + (a.launch_ran[side][i] > 0 ? 0.0 : est_first_launch_ms[std::size_t(side)]));
    }
    pairs.push_back(a.pair);
    json mj{{"cache", decision::to_string(a.pair.cache)}, {"loading", startup::to_string(a.pair.loading)},
            {"environment", a.environment}};
    for (int side = 0; side < 2; ++side) {
      const auto& src = side == 0 ? a.pair.old_side : a.pair.new_side;
      mj[sides[side].label] = {{"runs_ok", src.kernel_first_use_ms.size()},
                               {"failures", a.failures[side]},
                               {"failure_messages", a.failure_messages[side]},
                               {"kernel_first_use_ms", src.kernel_first_use_ms},
                               {"first_request_ms", src.first_request_ms},
                               {"kernel_first_use_summary_ms", summary_or_null(src.kernel_first_use_ms)},
                               {"first_request_summary_ms", summary_or_null(src.first_request_ms)},
                               {"module_load_summary_ms", summary_or_null(a.module_load_ms[side])},
                               {"jit_wall_summary_ms", summary_or_null(a.jit_wall_ms[side])}};
    }
    if (a.pair.old_side.kernel_first_use_ms.size() >= 1 && a.pair.new_side.kernel_first_use_ms.size() >= 1) {
      stats::DecisionOptions d;
      d.test.effect = stats::Effect::difference;
      d.margin.absolute = o.cold_noise_floor_ms;
      mj["kernel_first_use_delta_ms"] =
          stats::to_json(stats::compare(a.pair.old_side.kernel_first_use_ms, a.pair.new_side.kernel_first_use_ms, d));
      mj["first_request_delta_ms"] =
          stats::to_json(stats::compare(a.pair.old_side.first_request_ms, a.pair.new_side.first_request_ms, d));
    }
    startup_j.push_back(mj);
  }
  r["startup"] = {{"runs_per_side_per_mode", o.startup_runs},
                  {"order", "blocks A B B A of fresh probe processes (kqual startup's probe), each block every mode"},
                  {"noise_floor_ms", o.cold_noise_floor_ms},
                  {"first_request_definition",
                   "driver_init + context + kernel_first_use (module load + function lookup) + the side's median warm kernel "
                   "time at the decision shape as the first launch (probes cannot launch a kernel that takes pointers)"},
                  {"notes", startup_notes},
                  {"modes", startup_j}};
  phases["startup"] = fmt::format("{} fresh processes per side per mode, {} mode(s)", o.startup_runs, startup_j.size());

  // ---- 7. Decision per profile ----
  if (!can_launch) {
    return finish("incomplete", run::kExitIncomplete,
                  "Startup and artifact identity only: without a launch plan (--manifest) there is no warm timing to "
                  "weigh the startup cost against.");
  }
  if (new_timing_failed || new_timed_wrong) {
    verdict["reasons"].push_back(new_timed_wrong ? "NEW's timed output was wrong (re-checked after timing)"
                                                 : "NEW could not be timed at every shape (see warm.shapes[].new.errors)");
    return finish(decision::to_string(decision::ShipVerdict::do_not_ship), run::kExitFail,
                  "NEW failed under timing; see the warm timing section.");
  }
  const auto& wa = warm[decision_index][0].medians;
  const auto& wb = warm[decision_index][1].medians;
  if (wa.empty()) {
    not_run.push_back("decision: OLD could not be timed at the decision shape");
    return finish("incomplete", run::kExitIncomplete, "OLD could not be timed; nothing to weigh NEW against.");
  }
  decision::DecisionInput in =
      decision_input(pairs, wa, wb, new_jit, arch, o.cold_noise_floor_ms, o.warm_margin);
  json decisions = json::array();
  std::optional<decision::Decision> gate;
  for (const auto& p : profiles) {
    decision::Decision d = decision::decide(in, p);
    decisions.push_back({{"profile", decision::to_json(p)}, {"decision", decision::to_json(d)},
                         {"markdown", decision::to_markdown(d)}});
    if (!gate) gate = d;
  }
  r["decisions"] = decisions;
  verdict["profile"] = profiles.front().name;
  verdict["reasons"].push_back(fmt::format("decided at shape {} with profile '{}'", contract::format_dims(shapes[decision_index]),
                                           profiles.front().name));
  for (const auto& x : gate->reasons) verdict["reasons"].push_back(x);
  for (std::size_t i = 1; i < profiles.size(); ++i)
    verdict["reasons"].push_back(fmt::format("for profile '{}': {}", profiles[i].name,
                                             decisions[i]["decision"]["verdict"].get<std::string>()));
  return finish(decision::to_string(gate->verdict), exit_code_for(gate->verdict), gate->headline);
}

}  // namespace kqual::compare
