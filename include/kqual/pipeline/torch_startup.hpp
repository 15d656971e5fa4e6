#pragma once
// kqual startup-torch: a PyTorch step's first request in fresh processes (import, CUDA context, the first
// matmul and the first conv: handle creation, lazy module loading, heuristics) against the same step
// warm, per CUDA_MODULE_LOADING mode; then, per deployment profile, the service those starts feed
// (compare's service view: the measured first requests as the cold-start distribution), so the memo
// states what the framework's cold start does to the service's first-request p99. docs/upgrade.md.
//
// Each sample is a fresh Python process running tools/torch/startup_probe.py in a pinned environment
// (CUDA_MODULE_LOADING set, a fresh empty JIT cache, the variables that change loading removed). This
// process never touches CUDA or PyTorch.
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "kqual/core/json.hpp"
#include "kqual/startup/startup.hpp"

namespace kqual::pipeline {

struct TorchStartupOptions {
  std::string python = "python3";      // the interpreter with PyTorch
  std::string script;                  // "" → tools/torch/startup_probe.py of the project
  int runs = 10;                       // fresh processes per loading mode (interleaved)
  std::vector<startup::LoadingMode> loading_modes{startup::LoadingMode::lazy, startup::LoadingMode::eager};
  std::string matmul = "4096,4096,4096";  // M,N,K
  std::string conv = "32,64,56,56,64,3";  // N,C,H,W,K,R
  std::string dtype = "bf16";          // f32, bf16, f16
  int steady = 20;                     // warm calls per process after the first
  double watchdog_s = 180;             // per process
  std::vector<std::string> profiles;   // deployment profile TOMLs; none → the built-in defaults
  std::filesystem::path out_dir = "kqual-startup-torch";
  std::string command_line;
  std::function<void(const std::string&)> progress;
};

struct TorchStartupOutcome {
  json results;                        // schema kqual.startup_torch/1
  std::string memo;
  int exit_code = 0;                   // 0, 1 (a process failed: recorded), 3 (no GPU or no PyTorch)
  std::filesystem::path results_path, memo_path;
};

// Refuses bad options and profiles before any process starts (Error(usage|input)); writes results.json,
// memo.md and, per loading mode, first_request_<mode>_ms.txt and warm_step_<mode>_ms.txt (one sample per
// line, for kqual model service --startup/--service file:) into out_dir at the end.
TorchStartupOutcome run_torch_startup(const TorchStartupOptions& o);

}  // namespace kqual::pipeline
