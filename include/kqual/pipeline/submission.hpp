#pragma once
// `kqual check SUBMISSION.py --problem PROBLEM` and `kqual check DIR` where DIR's kqual.toml says
// [candidate] kind = "torch_module": a PyTorch submission judged against a contract
// (bench/torch_submission.hpp), written to results.json and summary.md (docs/torch-submissions.md).
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "kqual/bench/torch_submission.hpp"
#include "kqual/contract/declared/lookup.hpp"
#include "kqual/bench/torch_submission_timing.hpp"
#include "kqual/decision/qualify.hpp"

namespace kqual::pipeline {

struct SubmissionOptions {
  std::filesystem::path candidate;         // a .py file, or a torch_module manifest (folder or file)
  std::string problem;                     // --problem: a contract name, contract.toml or its folder (required for a .py)
  std::string class_name;                  // --class (default: the manifest's, else ModelNew)
  std::vector<std::string> allow_kernels;  // --allow-kernel REGEX, added to the manifest's
  std::string stream = "own";              // --stream: "own" (a stream of kqual's) or "default" (PyTorch's default stream)
  std::filesystem::path out_dir = "kqual-out";
  std::uint64_t seed = 20261205;
  double watchdog_seconds = 120;           // per case
  bool use_gpu = true;
  bool all_cases = false;                  // every case after the first failure
  std::filesystem::path worker;            // the submission worker script ("" = tools/torch/submission_worker.py)
  std::int64_t max_case_elements = std::int64_t(1) << 24;  // correctness cases larger than this are left out
  // `kqual qualify`: an accepted submission timed against PyTorch eager and torch.compile of its
  // problem and decided by the speed rule (docs/decision.md), as a kernel candidate is.
  bool timing = false;
  bench::SubmissionTimingOptions timing_options;  // rounds, samples, warm-up, flush, clock guard, margin
  std::vector<std::string> shapes;                 // --shape (parsed against the contract); empty: the profile's, else the contract's
  std::string dtype;                               // --dtype; "": the first dtype the submission claims
  std::string torch_baselines;                     // --torch-baselines ("" auto, "none", "eager,compiled")
  std::string profile, margin, regression_limit;  // the decision's, as qualify takes them
  ProgressFn progress;
  contract::ContractSources sources = {};          // --contracts, --allow-candidate-contract: as for a kernel candidate
};

struct SubmissionOutcome {
  std::string name, contract;
  bench::SubmissionCheck check;
  std::optional<bench::SubmissionTiming> timing;    // qualify: when the submission was accepted
  std::optional<decision::QualifyVerdict> verdict;  // qualify: the decision
  std::filesystem::path results_path, summary_path;
  // check: 0 accepted, 1 rejected, 3 not run here (no PyTorch / GPU), 4 kqual's side failed;
  // qualify: the decision's exit code (decision::exit_code).
  int exit_code = 0;
};

// Whether `candidate` is a PyTorch submission: a .py file, or a manifest of kind torch_module.
bool is_torch_submission(const std::filesystem::path& candidate);

// check (o.timing false) or qualify (true). Throws Error(input) for a missing --problem, a contract that cannot be resolved, a manifest that
// cannot be read.
SubmissionOutcome check_submission(const SubmissionOptions& o);

}  // namespace kqual::pipeline
