// `kqual startup ART` (and the hidden `__startup-probe` it re-executes for every sample).
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cuda.h>

#include <cstdio>
#include <memory>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "command_util.hpp"
#include "kqual/core/error.hpp"
#include "kqual/run/cli.hpp"
#include "kqual/run/user_paths.hpp"
#include "kqual/core/exit_codes.hpp"
#include "kqual/pipeline/torch_startup.hpp"
#include "kqual/startup/startup.hpp"

namespace kqual::run {
namespace {

// The command, as `kqual --help` lists it.
constexpr CommandDoc kStartupCommand{"startup",
                             "Startup evidence: in fresh processes, time driver init, context, module load (with the driver's JIT wall time), "
                             "function lookup, first launch and steady launches, for JIT cache off/cold/warm and LAZY/EAGER module loading. "
                             "Exit 3 without a GPU (only NVRTC compilation runs), 1 if a probe crashed, hung or failed."};

struct StartupArgs {
  startup::StartupConfig cfg;
  std::string library_shapes = "4096,4096,4096";
  std::string launch_args;
  std::string modes = "off,cold,warm";
  std::string loading = "lazy,eager";
  std::string out;
};

int run_startup(StartupArgs& a, const GlobalOptions& g) {
  auto& cfg = a.cfg;
  if (!a.launch_args.empty() && a.launch_args != "none")
    throw_error(ErrorKind::usage, fmt::format("--launch-args {}: only 'none' (a zero-parameter kernel) is supported", a.launch_args));
  cfg.launch = a.launch_args == "none";
  // One build of cuBLAS: its first request (load, handle, first call per shape), lazy against eager.
  cfg.library = std::filesystem::path(cfg.artifact).filename().string().rfind("libcublas.so", 0) == 0;
  if (cfg.library) {
    cfg.library_shapes.clear();
    std::size_t from = 0;
    for (std::size_t at; (at = a.library_shapes.find(';', from)) != std::string::npos; from = at + 1)
      cfg.library_shapes.push_back(a.library_shapes.substr(from, at - from));
    cfg.library_shapes.push_back(a.library_shapes.substr(from));
  }
  cfg.cache_modes.clear();
  for (const auto& m : split_commas(a.modes)) {
    auto c = decision::cache_mode_from_string(m);
    if (!c) throw_error(ErrorKind::usage, fmt::format("--modes: unknown JIT cache mode '{}' (off, cold, warm)", m));
    cfg.cache_modes.push_back(*c);
  }
  cfg.loading_modes.clear();
  for (const auto& m : split_commas(a.loading)) {
    auto l = startup::loading_mode_from_string(m);
    if (!l) throw_error(ErrorKind::usage, fmt::format("--loading: unknown module loading mode '{}' (lazy, eager)", m));
    cfg.loading_modes.push_back(*l);
  }
  cfg.progress = progress_for(g, "startup").sink();
  const startup::StartupReport rep = startup::measure_startup(cfg);
  json j = startup::to_json(rep);
  j["provenance"] = {{"command_line", g.command_line}, {"cuda_header_version", CUDA_VERSION}};
  if (!a.out.empty()) {
    std::ofstream f(a.out);
    if (!f) throw_error(ErrorKind::io, fmt::format("cannot write {}", a.out));
    f << j.dump(2) << "\n";
  }
  if (g.json) print_json(j);
  else fmt::print("{}", startup::to_text(rep));
  if (!rep.gpu_ran) return kExitIncomplete;
  const bool compile_failed = rep.compile && rep.compile->failures > 0;
  if (rep.failed_probes > 0 || compile_failed) {
    if (!g.json) fmt::print("\n{} probe process(es) failed: recorded above; exit {}\n", rep.failed_probes, kExitFail);
    return kExitFail;
  }
  return kExitPass;
}

// kqual startup-torch: a PyTorch step's first request in fresh processes, and the service it feeds.
constexpr CommandDoc kStartupTorchCommand{
    "startup-torch",
    "A PyTorch step's first request in fresh Python processes (import, CUDA context, first matmul, first conv) against the "
    "same step warm, per module loading mode; then per deployment profile the service those cold starts feed (first-request "
    "p99, objectives). Writes results.json, memo.md and the samples for kqual model service. Exit 3 without a GPU or "
    "PyTorch. docs/upgrade.md"};

struct StartupTorchArgs {
  pipeline::TorchStartupOptions o;
  std::string loading = "lazy,eager";
};

int run_startup_torch(StartupTorchArgs& a, const GlobalOptions& g) {
  a.o.loading_modes.clear();
  for (const auto& m : split_commas(a.loading)) {
    auto l = startup::loading_mode_from_string(m);
    if (!l) throw_error(ErrorKind::usage, fmt::format("--loading: unknown module loading mode '{}' (lazy, eager)", m));
    a.o.loading_modes.push_back(*l);
  }
  a.o.command_line = g.command_line;
  a.o.progress = progress_for(g, "startup-torch").sink();
  const pipeline::TorchStartupOutcome out = pipeline::run_torch_startup(a.o);
  if (g.json) print_json(out.results);
  else fmt::print("{}\nwrote {} and {}\n", out.results.at("summary").get<std::string>(), out.results_path.string(),
                  out.memo_path.string());
  return out.exit_code;
}

void add_startup_torch_command(CLI::App& app, GlobalOptions& g, int* exit_code) {
  auto [cmd, a] = add_command<StartupTorchArgs>(app, g, exit_code, kStartupTorchCommand, run_startup_torch);
  cmd->add_option("--python", a->o.python, "Python interpreter with PyTorch")->capture_default_str();
  cmd->add_option("--runs", a->o.runs, "Fresh processes per loading mode")->capture_default_str()->check(CLI::Range(2, 100000));
  cmd->add_option("--loading", a->loading, "Module loading modes: lazy,eager")->capture_default_str();
  cmd->add_option("--matmul", a->o.matmul, "The step's matmul: M,N,K")->capture_default_str();
  cmd->add_option("--conv", a->o.conv, "The step's conv2d: N,C,H,W,K,R (R x R filter)")->capture_default_str();
  cmd->add_option("--dtype", a->o.dtype, "f32, bf16 or f16")->capture_default_str();
  cmd->add_option("--steady", a->o.steady, "Warm calls per process after the first")->capture_default_str()
      ->check(CLI::Range(1, 100000));
  cmd->add_option("--watchdog", a->o.watchdog_s, "Seconds before a process counts as hung and is killed")
      ->capture_default_str()->check(CLI::PositiveNumber);
  input_path(cmd->add_option("--profile", a->o.profiles, "Deployment profile TOML (repeatable; default: built-in defaults)"),
             PathRole::file);
  output_path(cmd->add_option("--out", a->o.out_dir, "Folder for results.json, memo.md and the samples")->capture_default_str(),
              PathRole::folder);
  add_quiet_flag(cmd, g);
}

}  // namespace

void add_startup_command(CLI::App& app, GlobalOptions& g, int* exit_code) {
  auto [cmd, a] = add_command<StartupArgs>(app, g, exit_code, kStartupCommand, run_startup);
  input_path(cmd->add_option("artifact", a->cfg.artifact,
                             "cubin, fatbin or PTX file; a .cu source with --compile; or a libcublas.so (its first gemm calls)")
                 ->required(),
             PathRole::file);
  cmd->add_option("--library-shapes", a->library_shapes, "libcublas.so: gemm shapes M,N,K;M,N,K... (the first is the first request)")
      ->capture_default_str();
  cmd->add_option("--library-dtype", a->cfg.library_dtype, "libcublas.so: f32, bf16 or f16")->capture_default_str();
  cmd->add_option("--library-api", a->cfg.library_api,
                  "libcublas.so: cublas (cublasSgemm_v2 / cublasGemmEx) or cublaslt (cublasLtMatmul, the libcublasLt beside it)")
      ->capture_default_str();
  cmd->add_option("--runs", a->cfg.runs, "fresh processes per mode")->capture_default_str();
  cmd->add_option("--kernel", a->cfg.kernel,
                  "kernel to look up (C++ name for a .cu; symbol otherwise). Default: the first .entry of a PTX; none for cubin/fatbin");
  cmd->add_option("--launch-args", a->launch_args,
                  "'none': the kernel takes no parameters, so launch it (first launch + steady launches); other kernels are not launched");
  cmd->add_option("--grid", a->cfg.grid, "blocks per launch")->capture_default_str();
  cmd->add_option("--block", a->cfg.block, "threads per block")->capture_default_str();
  cmd->add_option("--steady", a->cfg.steady_launches, "launches after the first, per process")->capture_default_str();
  cmd->add_flag("--compile", a->cfg.compile, "the artifact is CUDA source: compile with NVRTC (timed in its own processes), then load");
  arch_option(cmd->add_option("--arch", a->cfg.arch, "NVRTC target for --compile: sm_XX (SASS) or compute_XX (PTX only)")
                  ->capture_default_str(),
              ArchUse::compile);
  cmd->add_option("--compile-runs", a->cfg.compile_runs, "fresh NVRTC processes (default min(runs, 10))");
  cmd->add_option("--modes", a->modes, "JIT cache modes: off,cold,warm")->capture_default_str();
  cmd->add_option("--loading", a->loading, "module loading modes: lazy,eager")->capture_default_str();
  cmd->add_option("--watchdog", a->cfg.watchdog_s, "seconds before a probe counts as hung and is killed")->capture_default_str();
  output_path(cmd->add_option("--out", a->out, "also write the JSON report to this file"), PathRole::file);
  add_quiet_flag(cmd, g);

  add_startup_torch_command(app, g, exit_code);

  // The probe: one sample, one JSON line on stdout. Hidden (empty group): users never call it.
  auto p = std::make_shared<startup::ProbeRequest>();
  auto* probe = app.add_subcommand("__startup-probe", "internal: one startup sample in this fresh process");
  probe->group("");
  probe->add_option("--artifact", p->artifact);
  probe->add_option("--kernel", p->kernel);
  probe->add_flag("--launch", p->launch);
  probe->add_option("--grid", p->grid);
  probe->add_option("--block", p->block);
  probe->add_option("--steady", p->steady_launches);
  probe->add_option("--spawn-ns", p->spawn_ns);
  probe->add_option("--compile", p->compile_source);
  probe->add_option("--arch", p->arch);
  probe->add_option("--simulate", p->simulate);
  probe->add_option("--library", p->library);
  probe->add_option("--library-dtype", p->library_dtype);
  probe->add_option("--library-api", p->library_api);
  probe->add_option("--library-shape", p->library_shapes);
  probe->callback([p, exit_code] {
    const json j = startup::run_probe(*p);
    std::fwrite(j.dump().c_str(), 1, j.dump().size(), stdout);
    std::fputc('\n', stdout);
    std::fflush(stdout);
    *exit_code = j.value("ok", false) ? kExitPass : (j.value("no_gpu", false) ? kExitIncomplete : kExitFail);
  });
}

}  // namespace kqual::run
