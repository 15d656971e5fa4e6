#pragma once
// kqual compare OLD NEW: two artifacts, two builds of one candidate (other compiler, other flags,
// PTX-only vs native SASS), or two builds of a library (libcublas.so: kqual calls its gemm), judged with all five kinds of evidence kept apart: artifact
// diff, startup of both (fresh processes per cache mode), correctness of both, warm timing per
// shape interleaved A/B across fresh worker processes, and the ship decision per deployment
// profile with break-even, what would reverse it and mitigations. docs/compare.md.
//
// The coordinating process never touches CUDA: startup probes and timing workers are child
// processes. Results (results.json + memo.md) are written only once everything is known.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kqual/contract/declared/declared.hpp"
#include "kqual/core/json.hpp"
#include "kqual/decision/decision.hpp"
#include "kqual/decision/qualify.hpp"
#include "kqual/build/toolchain.hpp"
#include "kqual/report/results.hpp"
#include "kqual/startup/startup.hpp"
#include "kqual/stats/compare.hpp"

namespace kqual::compare {

// One side of the comparison: what to build or load, and how.
struct SideSpec {
  std::string input;                 // candidate folder / kqual.toml, or an artifact (cubin, fatbin, PTX)
  build::BuildRecipe recipe;       // candidates only
  bool recipe_given = false;         // a --old-*/--new-* build option was given (refused for artifacts)
};

struct CompareOptions {
  SideSpec old_side, new_side;       // new_side.input empty → the same input as old_side
  std::string manifest;              // launch plan for artifact inputs ("" → a candidate side's)
  contract::ContractSources sources; // --contracts, --allow-candidate-contract (docs/declared-contracts.md)
  std::vector<std::string> profiles; // deployment profiles; the first decides the exit code; none → defaults
  std::filesystem::path out_dir = "kqual-compare";
  std::string arch;                  // target without a GPU (default KQUAL_DEFAULT_ARCH)
  bool use_gpu = true;
  double watchdog_seconds = 60;
  // Startup (fresh probe processes).
  int startup_runs = 8;              // per side and mode to start with, in 2 blocks per side ordered A B B A
  int startup_max_runs = 40;         // more blocks, up to this many per side and mode, while a mode is undecided
                                     // and cannot resolve resolve_ms
  double resolve_ms = 5.0;           // [ms] the first-request difference the run must be able to detect (95 %)
  std::vector<decision::CacheMode> cache_modes{decision::CacheMode::off, decision::CacheMode::cold,
                                               decision::CacheMode::warm};
  std::vector<startup::LoadingMode> loading_modes{startup::LoadingMode::lazy};
  // Whether --modes / --loading were given. Library sides (two libcublas.so) default otherwise to the
  // profiles' JIT cache modes and to lazy then eager loading.
  bool modes_given = false, loading_given = false;
  // Library sides: the API kqual calls through each ("cublas" or "cublaslt"). One build judged cuBLAS
  // against cuBLASLt is `compare LIB LIB --new-api cublaslt` (docs/upgrade.md).
  std::string old_api = "cublas", new_api = "cublas";
  double cold_noise_floor_ms = 1.0;  // [ms] first-request differences below this are "no difference"
  // Warm timing (fresh worker processes, A B B A A B B A ...).
  int processes = 6;                 // per side (6 pairs: the fewest a paired rank test can call at 5 %)
  int samples = 20;                  // timed samples per shape per process
  int warmup = 5;                    // per shape per process, excluded
  std::vector<std::string> shapes;   // "4096" or "m=..,n=.."; empty → the contract's benchmark shapes
  std::string dtype = "f32";
  std::string decision_shape;        // the shape the profile's calls are made at ("" → the last measured)
  // Warm ratios within 1 ± max(relative, absolute / OLD's median) are "no difference" (absolute in ms): compare
  // --margin REL[,ABS], the same words as qualify's (default 2 %).
  stats::EquivalenceMargin warm_margin{0.02, 0.0};
  // Correctness.
  bool correctness = true;
  // The 2^27+5-element and > 2^31-byte cases move gigabytes through files per side (over a minute
  // each on the H200); a default compare leaves them out and says so (--large-cases adds them).
  bool large_cases = false;
  std::uint64_t seed = 20261202;
  std::string command_line;
  std::string probe_executable = "/proc/self/exe";  // kqual binary for startup probes
  std::function<void(const std::string&)> progress;  // one line per step, or empty
};

struct CompareOutcome {
  report::CompareResult result;      // the document as a type
  json results;                      // ... as written: report::to_json(result)
  std::string memo;
  int exit_code = 0;
  std::filesystem::path results_path, memo_path;
};

// Validates everything that needs no GPU first (inputs, profiles, options: Error(usage|input) →
// exit 2, nothing written), builds both sides, diffs them, then runs what the machine allows.
// Writes results.json and memo.md into out_dir only at the end, atomically.
CompareOutcome run_compare(const CompareOptions& o);

// ---- Pure pieces, exposed for tests ----

// Order of fresh processes: 0 = old (A), 1 = new (B); A B B A A B B A ... so that a linear drift
// adds the same total to both sides. `count` entries (for pairs, count = 2 × pairs).
std::vector<int> interleave_order(int count);

// First-request and kernel-first-use samples of one side in one (cache, loading) mode [ms].
struct StartupSide {
  std::vector<double> kernel_first_use_ms;  // module load + lookup (+ first launch when it ran)
  std::vector<double> first_request_ms;     // driver init + context + kernel_first_use (+ est. first launch)
};
struct StartupPair {
  decision::CacheMode cache = decision::CacheMode::cold;
  startup::LoadingMode loading = startup::LoadingMode::lazy;
  StartupSide old_side, new_side;
};

// The decision's inputs from raw samples [ms]: cold deltas per cache mode (of the first loading
// mode present, unpaired, difference of medians, noise floor cold_noise_floor_ms), the warm delta
// from per-process medians (paired: process i of A and of B ran next to each other).
decision::DecisionInput decision_input(const std::vector<StartupPair>& startup, const std::vector<double>& warm_old_ms,
                                       const std::vector<double>& warm_new_ms, std::optional<bool> new_uses_ptx_jit,
                                       const std::string& target_arch, double cold_noise_floor_ms,
                                       const stats::EquivalenceMargin& warm_margin);

// ---- What the GPU phases measured, as data: judge() weighs it (CPU tests build it by hand) ----

// Correctness of one side over the contract's cases.
struct CorrectnessSide : decision::CaseCounts {
  bool ran = false;
  bool accepted = false;
  std::string primary_code;                     // most frequent failure code
  std::map<std::string, std::string> failing;   // case id → failure code
  json report;                                  // the harness's report (JSON), as written to results.json
};
// How the two sides' correctness relate: the upgrade is blamed only for what it changes.
enum class CorrectnessRelation {
  not_run,
  both_accepted,
  new_rejected,               // OLD accepted, NEW rejected: the change breaks it
  old_rejected,               // OLD rejected, NEW accepted: the change fixes it
  both_rejected_alike,        // the same cases fail with the same codes: the change does not alter correctness
  both_rejected_differently,  // both fail, on different cases or codes (NEW fails cases OLD passed → blamed)
};
const char* to_string(CorrectnessRelation r);
CorrectnessRelation relate(const CorrectnessSide& old_side, const CorrectnessSide& new_side);

// Warm timing of one side at one shape, over fresh worker processes.
struct WarmSide {
  std::vector<double> medians;       // [ms] per process: the median of its timed samples
  std::vector<double> pooled;        // [ms] every timed sample
  std::vector<std::string> errors;
  bool verified = true;              // every timed output re-checked against the reference
  std::string verify_detail;
};
struct WarmShape {
  std::string shape;                 // "n=4096"
  std::map<std::string, std::int64_t> dims;
  WarmSide side[2];                  // 0 = old, 1 = new
};

// Startup samples of one side in one (cache, loading) mode [ms].
struct StartupSamples {
  std::vector<double> kernel_first_use_ms;  // module load + lookup (+ first launch when it ran)
  std::vector<double> base_ms;              // driver init + context + kernel_first_use
  std::vector<double> launch_ran;           // 1 when the probe launched (kernel_first_use includes it)
  std::vector<double> module_load_ms, jit_wall_ms;
  // Library sides: library_load, handle, first_call, steady_call and first_call[m,n,k] of later shapes.
  std::map<std::string, std::vector<double>> library_phases_ms;
  std::size_t failures = 0;
  std::vector<std::string> failure_messages;
};
struct StartupMode {
  decision::CacheMode cache = decision::CacheMode::cold;
  startup::LoadingMode loading = startup::LoadingMode::lazy;
  std::map<std::string, std::string> environment;
  StartupSamples side[2];
};

struct Evidence {
  bool can_launch = true;            // both sides have a launch plan (correctness, warm timing)
  bool library = false;              // both sides are libraries: the probes made the first call themselves
  CorrectnessSide correctness[2];
  bool correctness_skipped = false;  // --no-correctness
  bool large_cases = false;          // the largest correctness cases ran
  std::map<std::string, double> wall_s;  // [s] per measured phase
  std::vector<WarmShape> warm;
  std::vector<int> order;            // warm processes: 0 = old, 1 = new
  std::string boundary;
  int processes = 0, samples = 0, warmup = 0;
  std::vector<StartupMode> startup;
  std::vector<std::string> startup_notes;
  int startup_runs = 0;              // per side per mode, after any extension
  std::vector<std::string> startup_extensions;  // why more blocks ran
};

// The first-request resolution of one cache mode: what the run could detect, and what it would take.
struct Resolution {
  double half_width_ms = 0;          // [ms] 95 % CI half-width of the first-request delta: the least detectable
  int runs_per_side = 0;             // n behind it (the smaller side)
  int runs_needed = 0;               // per side for a half-width of target_ms (n × (h / target)², at least 2)
};
Resolution resolution(const std::vector<double>& old_ms, const std::vector<double>& new_ms, double target_ms);

// The service view per profile (docs/service-view.md; src/pipeline/compare/compare_service.cpp): sizes of
// the simulations behind it. run_compare raises them; the defaults keep CPU tests quick.
struct ServiceViewOptions {
  bool enabled = true;
  std::int64_t requests = 10000;     // per simulation
  int bootstrap = 40;                // replicates over the measured startup samples
  std::uint64_t seed = 1;            // one seed for both sides: the same arrivals and restarts
};

struct JudgeOptions {
  std::vector<decision::DeploymentProfile> profiles;  // the first decides the exit code
  std::size_t decision_index = 0;    // into Evidence::warm
  std::optional<bool> new_uses_ptx_jit;
  std::string arch;
  double cold_noise_floor_ms = 1.0;
  stats::EquivalenceMargin warm_margin{0.02, 0.0};  // [relative, ms]
  double resolve_ms = 5.0;
  int startup_max_runs = 40;
  int startup_runs_requested = 8;
  ServiceViewOptions service;
};

struct Judgement {
  report::CompareResult result;      // the complete results
  json results;                      // ... as results.json carries them: report::to_json(result)
  int exit_code = 0;
};
// The results from the static part (provenance, target, sides, artifact_diff, phases.build,
// phases.artifact_diff, notes: what run_compare fills before any GPU work) and the measured
// evidence: correctness, warm, startup, decisions per profile and the verdict. run_compare calls
// exactly this; pure, no GPU.
Judgement judge(const report::CompareResult& static_part, const Evidence& ev, const JudgeOptions& jo);
// The same from a static results document (report::compare_result_from_json of it).
Judgement judge(const json& static_part, const Evidence& ev, const JudgeOptions& jo);

// The service view of one profile: both sides simulated from their startup samples in the
// profile's JIT cache mode and their warm samples at the decision shape; the profile's latency
// objectives checked per side. NEW missing an objective OLD meets turns `d` into do not ship
// (reasons and headline say so). {"computed": false, "reason": ...} when the evidence is missing.
json service_view(const std::vector<StartupMode>& startup, const WarmShape& warm, const decision::DeploymentProfile& p,
                  decision::Decision& d, const ServiceViewOptions& o);


}  // namespace kqual::compare
