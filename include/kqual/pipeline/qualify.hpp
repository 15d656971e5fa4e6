#pragma once
// kqual qualify, check, bench and selftest as library calls (the CLI in run/qualify_cmd.cpp is a thin
// layer over them); the phase order is pipeline/phases.hpp.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "kqual/contract/declared/declared.hpp"
#include "kqual/core/json.hpp"
#include "kqual/core/progress.hpp"
#include "kqual/decision/qualify.hpp"
#include "kqual/report/results.hpp"
#include "kqual/worker/timer.hpp"

namespace kqual::pipeline {

struct QualifyOptions {
  std::filesystem::path candidate;        // directory or kqual.toml
  std::filesystem::path out_dir = "kqual-out";
  std::string arch;                       // target when no GPU (default KQUAL_DEFAULT_ARCH)
  bool use_gpu = true;
  double watchdog_seconds = 60;
  std::uint64_t seed = 20261202;
  bool large_cases = true;                // include 2^27+5 and > 2^31-byte cases
  bool all_cases = false;                 // run every case after the first failure (check::CheckOptions::all_cases)
  std::string only_case;                  // --case ID (kqual check): only this case, found under `seed` (check::CheckOptions::only_case)
  bool sanitizer_pass = true;             // small passed cases again under compute-sanitizer memcheck + racecheck
  bool recheck_baselines = false;         // check every baseline again, whatever verdict is kept (baseline_reuse.hpp)
  std::vector<std::string> shapes;        // benchmark shapes, "4096" or "m=..,n=..,k=.." (default: the contract's)
  std::string dtype;                      // benchmark dtype; "": the first dtype the candidate claims
  int rounds = 3;
  int verify_launches = 0;  // > 0: the candidate's timed launches compared with the reference, no element budget (bench::TimingOptions)
  int samples_per_round = 10;
  std::string flush_mode = "write";       // L2 flush before each sample: "write", "clean", "invalidate" or "none" (warm L2)
  worker::TimerKind timer = worker::TimerKind::events;  // what a sample is (bench::TimingOptions::timer)
  int graph_launches = 0;                 // timer "graph": launches per replay (0: ~1 ms per replay)
  std::string timed_inputs = "fresh";     // "fresh" (generated on the device per launch where the contract allows) or "datasets"
  bool clock_guard = true;                // NVML clock per sample, throttled samples discarded
  std::string torch_baselines;            // "" (auto), "none", or "eager,compiled" (bench/torch_baseline.hpp)
  bool correctness = true;
  bool timing = true;
  // Where the judge comes from (docs/declared-contracts.md): the user's contract folders and whether
  // a contract file supplied with the candidate may judge it; the user's baseline folders
  // (--baselines, before $KQUAL_BASELINES and the project's baselines/).
  contract::ContractSources sources;
  std::vector<std::filesystem::path> baseline_dirs;
  // The decision (docs/decision.md): a deployment profile (its [[shape]] mix weighs the shapes and,
  // when no --shape is given, names the shapes timed; "" → the default profile), --margin
  // ("3%,0.5us") and --regression-limit ("10%"); "" → the profile's, else kqual's defaults.
  std::string profile;
  std::string margin;
  std::string regression_limit;
  std::string command_line;
  std::string command = "qualify";        // qualify, check or bench: names the results' schema
  ProgressFn progress;                    // one line per phase, or empty
};

struct QualifyOutcome {
  report::QualifyResult result;  // the results as a type
  json results;                  // ... as results.json carries them: report::to_json(result)
  int exit_code = 0;
  std::filesystem::path results_path, memo_path;
};

// Runs every phase it can; writes results.json and memo.md atomically into out_dir.
QualifyOutcome qualify(const QualifyOptions& o);

// The commands that reproduce the first failing case of `correctness` (a check::CorrectnessReport
// as JSON) of the run `o` describes: replay into OUT/replay, the one case rerun into OUT/rerun, with
// the run's seed and contract folders; absolute paths, and this kqual as self_command() names it.
// Nothing when no case failed.
std::optional<report::ReproduceCommands> reproduce_commands(const QualifyOptions& o, const json& correctness);

// The speed rule's findings from a timing report, one per shape: the candidate's samples, its fastest
// valid baseline's, a failure while timed, and kqual's own failure there (harness_failure). The one
// reading that qualify (live) and kqual decide (offline, pipeline/decide.cpp) share.
void add_timed_shapes(decision::QualifyFindings& f, const bench::TimingReport& tr);

// The profile's shape mix keyed by the contract's completed dims, as the timed shapes are named
// ("tokens=4096,heads=32,d=128" → "d=128,half=64,heads=32,tokens=4096" for rotary; "4096" →
// "n=4096"): profile shapes are matched to timed ones by value, not text. Error(input) when two
// entries name one shape in two spellings (one would silently lose its weight); Error(usage) for a
// shape the contract cannot parse.
decision::ShapeMix contract_shape_mix(const contract::Contract& c, const decision::DeploymentProfile& p);

// A bundled data folder (baselines/, candidates/): $KQUAL_HOME/<name>, else the nearest
// ancestor of `hint` or of the executable that holds <name>/. `hint` is the user's choice (selftest's
// working directory), never a candidate's folder.
std::optional<std::filesystem::path> find_bundled(const std::string& name, const std::filesystem::path& hint);

// The folders baselines come from, in order: `user_dirs` (--baselines), $KQUAL_BASELINES
// (':'-separated), the project's baselines/ ($KQUAL_HOME/baselines, else the nearest baselines/ above
// the kqual executable). Never a folder found from the candidate's location: a candidate cannot
// bring the baselines it is timed against.
std::vector<std::filesystem::path> baseline_roots(const std::vector<std::filesystem::path>& user_dirs);

// The baseline candidate folders of `contract` (<root>/<contract>/<name>/kqual.toml) in those roots,
// each folder once, in root order then name order.
std::vector<std::filesystem::path> find_baselines(const std::string& contract, const std::vector<std::filesystem::path>& roots);

struct SelftestOptions {
  std::vector<std::uint64_t> seeds = {20261202};
  double watchdog_seconds = 60;
  bool large_cases = false;
  std::string command_line;
  std::filesystem::path root;  // folder holding candidates/ (and baselines/) (default: find_bundled)
  // The user's contract folders (--contracts); with --root, <root>/contracts is one of them too (the
  // user picked that tree). allow_candidate_contract: --allow-candidate-contract.
  contract::ContractSources sources;
  std::vector<std::string> contracts;  // only these contracts (default: all)
  bool include_baselines = true;       // baselines are known-good implementations too
  std::string sanitize;                // "", memcheck, racecheck, initcheck, synccheck
  bool sanitizer_pass = true;          // check's sanitizer pass (first seed only; off under --sanitize)
  ProgressFn progress;                 // one line per candidate as it finishes, or empty
  int lanes = 0;                       // worker sessions checking at once on the GPU (0: automatic)
  int jobs = 0;                        // NVRTC compile threads (0: one per host thread)
};
struct SelftestOutcome {
  report::SelftestResult result;  // the results as a type
  json results;                   // ... as results.json carries them: report::to_json(result)
  int exit_code = 0;
};
// Runs every bundled good and known-broken candidate; exit 0 when every broken one is rejected for
// its stated reason and every good one accepted, 1 otherwise, 3 without a GPU.
SelftestOutcome selftest(const SelftestOptions& o);

}  // namespace kqual::pipeline
