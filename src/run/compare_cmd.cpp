// kqual compare OLD [NEW] — thin CLI over src/compare (docs/compare.md).
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <iostream>

#include "kqual/pipeline/compare.hpp"
#include "kqual/core/error.hpp"
#include "kqual/run/cli.hpp"
#include "kqual/run/user_paths.hpp"

namespace kqual::run {
namespace {

void apply_side(compare::SideSpec& side, const std::string& label, const std::string& mode, const std::string& ptxas,
                const std::string& nvcc, const std::string& both_ptxas, const std::string& both_nvcc) {
  if (!mode.empty()) {
    auto m = build::image_mode_from_string(mode);
    if (!m) throw_error(ErrorKind::usage, fmt::format("--{}-mode: '{}' is not sass or ptx", label, mode));
    side.recipe.mode = *m;
  }
  side.recipe.ptxas = !ptxas.empty() ? ptxas : both_ptxas;
  side.recipe.nvcc = !nvcc.empty() ? nvcc : both_nvcc;
  side.recipe_given = !mode.empty() || !side.recipe.ptxas.empty() || !side.recipe.nvcc.empty();
}

}  // namespace

void add_compare_command(CLI::App& app, CliState& s, bool run_commands) {
  CompareCliOptions& c = s.compare;
  GlobalOptions& g = s.g;
  int* exit_code = &s.exit_code;
  auto* cmd = app.add_subcommand(
      "compare",
      "Should NEW replace OLD? Two artifacts (cubin/fatbin/PTX), two builds of one candidate, or two builds of cuBLAS "
      "(libcublas.so: kqual's own gemm call through each): artifact diff, startup per JIT cache mode, correctness, warm time per shape (fresh processes, A B B A), break-even and the verdict per "
      "deployment profile. Writes results.json + memo.md. docs/compare.md");
  input_path(cmd->add_option("old", c.o.old_side.input, "OLD: candidate folder (or kqual.toml), a cubin/fatbin/PTX file, or a libcublas.so")
                 ->required(),
             PathRole::file_or_folder);
  input_path(cmd->add_option("new", c.o.new_side.input,
                             "NEW: same kinds; omit it to compare two builds of OLD (then --old-*/--new-* options must differ)"),
             PathRole::file_or_folder);
  cmd->add_option("--old-mode", c.old_mode, "Build OLD as: sass (native cubin, default) or ptx (PTX only: driver JIT)");
  cmd->add_option("--new-mode", c.new_mode, "Build NEW as: sass or ptx");
  cmd->add_option("--old-ptxas", c.old_ptxas,
                  "Build OLD with NVRTC → PTX → this ptxas → cubin: a path, 'default' (the toolkit's) or 'triton' (the one in "
                  "the Triton wheel)");
  cmd->add_option("--new-ptxas", c.new_ptxas, "Same for NEW");
  cmd->add_option("--ptxas", c.ptxas, "Same for both sides (a side's own option wins)");
  cmd->add_option("--old-nvcc", c.old_nvcc, "Build OLD with this nvcc (-cubin, or -ptx with --old-mode ptx): path or 'default'");
  cmd->add_option("--new-nvcc", c.new_nvcc, "Same for NEW");
  cmd->add_option("--nvcc", c.nvcc, "Same for both sides");
  input_path(cmd->add_option("--manifest", c.o.manifest,
                             "Launch plan and contract for artifact inputs (a candidate folder or kqual.toml)"),
             PathRole::file_or_folder);
  input_path(cmd->add_option("--profile", c.o.profiles,
                             "Deployment profile TOML (repeatable; the first decides the exit code; default: built-in defaults)"),
             PathRole::file);
  output_path(cmd->add_option("--out", c.o.out_dir, "Folder for results.json and memo.md")->capture_default_str(), PathRole::folder);
  add_contract_source_options(cmd, c.o.sources);
  arch_option(cmd->add_option("--arch", c.o.arch, "Target when no GPU is present (default " KQUAL_DEFAULT_ARCH ")"),
              ArchUse::compile);
  add_negatable_flag(cmd, "gpu", c.o.use_gpu, "--no-gpu: static phases only (build, artifact diff); exit 3");
  cmd->add_option("--watchdog", c.o.watchdog_seconds, "Seconds a worker or probe may take per request")->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--startup-runs", c.o.startup_runs, "Fresh startup probe processes per side per mode to begin with")
      ->capture_default_str()->check(CLI::Range(2, 100000));
  cmd->add_option("--startup-max-runs", c.o.startup_max_runs,
                  "Run more probe blocks, up to this many processes per side per mode, while a mode cannot resolve "
                  "--resolve-ms")
      ->capture_default_str()->check(CLI::Range(2, 100000));
  cmd->add_option("--resolve-ms", c.o.resolve_ms,
                  "First-request difference the run must be able to detect at 95 % (its CI half-width) [ms]")
      ->capture_default_str()->check(CLI::PositiveNumber);
  cmd->add_option("--modes", c.modes, "JIT cache modes: off,cold,warm (libraries: default the profiles' modes)")->delimiter(',')->capture_default_str();
  cmd->add_option("--loading", c.loading, "Module loading: lazy,eager (the first one feeds the decision; libraries: default lazy,eager)")->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--noise-floor-ms", c.o.cold_noise_floor_ms, "First-request differences below this are no difference [ms]")
      ->capture_default_str()->check(CLI::NonNegativeNumber);
  cmd->add_option("--processes", c.o.processes, "Fresh worker processes per side for warm timing")->capture_default_str()
      ->check(CLI::Range(1, 100000));
  cmd->add_option("--samples", c.o.samples, "Timed samples per shape per process")->capture_default_str()
      ->check(CLI::Range(1, 100000));
  cmd->add_option("--warmup", c.o.warmup, "Untimed runs per shape per process")->capture_default_str()->check(CLI::Range(0, 100000));
  cmd->add_option("--shapes,--sizes", c.o.shapes, "Shapes to time: 4096 or m=..,n=..;... (default: the contract's)")
      ->delimiter(';');
  cmd->add_option("--dtype", c.o.dtype, "Timing dtype")->capture_default_str();
  cmd->add_option("--decision-shape", c.o.decision_shape,
                  "Shape the profile's calls are made at (default: the last timed shape)");
  cmd->add_option("--margin", c.margin,
                  "Practical margin REL[,ABS], as qualify's: NEW and OLD are equivalent warm where the difference is within "
                  "max(REL, ABS / OLD's time), e.g. 2% or 3%,0.5us")
      ->capture_default_str();
  cmd->add_option("--old-api", c.o.old_api, "Library sides: call OLD through cublas (cublasSgemm_v2 / cublasGemmEx) or "
                                           "cublaslt (cublasLtMatmul, the libcublasLt beside it)")
      ->capture_default_str();
  cmd->add_option("--new-api", c.o.new_api, "Same for NEW: one build judged cuBLAS against cuBLASLt is LIB LIB --new-api cublaslt")
      ->capture_default_str();
  add_negatable_flag(cmd, "correctness", c.o.correctness, "--no-correctness: skip the contract's correctness cases");
  add_negatable_flag(cmd, "large-cases", c.o.large_cases, "--large-cases: also run the contract's largest correctness cases (2^27+5 elements, > 2^31 bytes; over a minute per side)");
  cmd->add_option("--seed", c.o.seed, "Case-generator seed")->capture_default_str();
  add_quiet_flag(cmd, g);
  if (!run_commands) return;
  cmd->callback([&c, &g, exit_code, cmd] {
    c.o.command_line = g.command_line;
    c.o.modes_given = cmd->count("--modes") > 0;
    c.o.loading_given = cmd->count("--loading") > 0;
    // Fewer fresh processes than the decision rule needs can only end inconclusive: refused before anything runs.
    if (c.o.processes < 6)
      throw_error(ErrorKind::usage, fmt::format("--processes {}: a warm verdict needs at least 6 worker processes per side (6 "
                                                "pairs are the fewest a paired rank test can call at 5 %); fewer can only be "
                                                "inconclusive", c.o.processes));
    if (c.o.startup_runs < 5 || c.o.startup_max_runs < c.o.startup_runs)
      throw_error(ErrorKind::usage, fmt::format("--startup-runs {} --startup-max-runs {}: a first-request verdict needs at "
                                                "least 5 probe processes per side and mode, and the most runs may not be "
                                                "fewer than the first", c.o.startup_runs, c.o.startup_max_runs));
    decision::SpeedPolicy margin;
    decision::parse_margin(c.margin, margin);
    c.o.warm_margin = {margin.margin_relative, margin.margin_absolute_s * 1e3};
    apply_side(c.o.old_side, "old", c.old_mode, c.old_ptxas, c.old_nvcc, c.ptxas, c.nvcc);
    apply_side(c.o.new_side, "new", c.new_mode, c.new_ptxas, c.new_nvcc, c.ptxas, c.nvcc);
    c.o.cache_modes.clear();
    for (const auto& m : c.modes) {
      auto cm = decision::cache_mode_from_string(m);
      if (!cm) throw_error(ErrorKind::usage, fmt::format("--modes: '{}' is not off, cold or warm", m));
      c.o.cache_modes.push_back(*cm);
    }
    c.o.loading_modes.clear();
    for (const auto& l : c.loading) {
      if (l == "lazy" || l == "LAZY") c.o.loading_modes.push_back(startup::LoadingMode::lazy);
      else if (l == "eager" || l == "EAGER") c.o.loading_modes.push_back(startup::LoadingMode::eager);
      else throw_error(ErrorKind::usage, fmt::format("--loading: '{}' is not lazy or eager", l));
    }
    c.o.progress = progress_for(g, "compare").sink();
    compare::CompareOutcome out = compare::run_compare(c.o);
    if (g.json) {
      std::cout << out.results.dump(2) << "\n";
    } else {
      const report::CompareResult& r = out.result;
      for (const auto& [k, x] : r.phases.entries()) fmt::print("  {:<14} {}\n", k, x);
      if (r.decisions)
        for (const auto& d : *r.decisions)  // per profile: decision::to_json(profile), to_json(Decision)
        {
          const json be = d.at("decision").value("breakeven_calls", json());
          fmt::print("  profile {:<28} {} (break-even: {})\n", d.at("profile").at("name").get<std::string>(),
                     d.at("decision").at("verdict").get<std::string>(),
                     be.is_number() ? fmt::format("{:.4g} calls per process", be.get<double>())
                     : d.at("decision").value("breakeven_never", false)
                         ? std::string("never: no warm saving repays the extra first-request cost")
                         : std::string("—"));
        }
      fmt::print("verdict: {} — {}\n", decision::to_string(r.verdict.decision), r.verdict.summary);
      fmt::print("wrote {} and {}\n", out.results_path.string(), out.memo_path.string());
    }
    *exit_code = out.exit_code;
  });
}

}  // namespace kqual::run
