#pragma once
// The phases every kqual command runs, in this order (docs/architecture.md):
//   target → build → load → check → time → decide → write
// written once here and composed by every command (qualify, check and bench; selftest; screen; compare;
// submission): the target (open_target), one candidate's manifest → build (build_one) and load → check →
// time (check_one), the one reading of the check's report that every command's verdict, phase line and row
// comes from (summarize_correctness), and the write (write_results). Which phases a command runs, and what it
// does between them, lives in that command's file; what each phase does lives in its module (build/, check/,
// bench/, startup/, decision/, report/).
//
// Builds and checks are two steps because they run on different threads: screen and selftest build
// on a pool of CPU threads (build_pool.hpp) ahead of the GPU lanes that check; qualify and compare
// build (or adopt) their sides themselves and hand the built candidate to check_one.
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kqual/bench/timing.hpp"
#include "kqual/build/candidate.hpp"
#include "kqual/build/manifest.hpp"
#include "kqual/check/evaluate.hpp"
#include "kqual/core/dtype.hpp"
#include "kqual/core/json.hpp"
#include "kqual/decision/qualify.hpp"
#include "kqual/worker/session.hpp"

namespace kqual::pipeline {

// ---- target ----

struct TargetOptions {
  bool use_gpu = true;
  double watchdog_seconds = 60;
  std::string arch;  // --arch: the target without a device; must match the device when there is one
};

// Phase "target": a session (scratch folder + worker; the device is probed through the worker,
// never in this process) and the arch every build is made for.
struct Target {
  std::unique_ptr<worker::Session> session;
  const worker::DeviceFacts* device = nullptr;
  std::string arch;         // "sm_90"
  std::string arch_source;  // "device 0", "--arch", "default (no device)"
  std::string why_no_gpu;   // "" when the device is present
  bool gpu() const { return device->present; }
  json device_json() const { return device->present ? device->device : json(); }
};
// Error(usage) when --arch disagrees with the device.
Target open_target(const TargetOptions& o);

// The dtype a candidate is timed at: `asked` (--dtype) when the candidate claims it, or, when
// nothing was asked ("" ), the first dtype it claims. A candidate is never timed at a dtype it does
// not claim: it would refuse every shape, and that refusal is not its failure. Error(usage) for an
// unknown dtype or one the candidate does not claim, naming `who` and its claims.
DType timing_dtype(const std::string& asked, const std::vector<DType>& claimed, const std::string& who);

// Phase "write", the one every command's results go through (qualify, compare, screen and its merge,
// submission, selftest, startup-torch): results.json and the files rendered from the same result
// (memo.md, summary.md, ranking.html) into dir, each complete before any appears under its final name
// (a run that stops half-way leaves the previous set untouched). Text that is not valid UTF-8 (a
// compiler's or a worker's bytes quoted in a reason) is replaced, never a failure to write.
struct ResultFile {
  std::string name;  // beside results.json: "memo.md", "summary.md", ...
  std::string text;
};
struct Written {
  std::filesystem::path results;
  std::vector<std::filesystem::path> files;  // as given, in order
};
Written write_results(const std::filesystem::path& dir, const json& results, const std::vector<ResultFile>& files);

// ---- manifest → build ----

struct BuildOneOptions {
  std::string arch;            // what the candidate is built for ("sm_90")
  std::filesystem::path dir;   // the build's own folder (copies of one manifest share file names); created when the build starts
  // Asked with the manifest before the build: "" builds it, anything else is why not
  // (BuiltOne::passed_over: another contract's folder, a screen against another contract).
  std::function<std::string(const build::Manifest&)> pass_over;
  contract::ContractLookup contracts = {};  // what the manifest's contract value finds: the command's lookup
};

// One candidate folder's manifest and build. A manifest or build that fails is the candidate's
// outcome, kept as data (the caller decides whether it is a verdict or an error to raise).
struct BuiltOne {
  std::optional<build::Manifest> manifest;     // read
  std::optional<build::BuiltCandidate> built;  // built: ready for check_one
  std::string manifest_error;                  // the manifest did not load (Error's message)
  std::string passed_over;                     // BuildOneOptions::pass_over declined it: not built
  std::string build_error;                     // the build failed (Error's message, compiler log included)
  double build_ms = 0;                         // [ms] manifest and build, wall time
};

// Reads `folder`'s kqual.toml and builds it. Only kqual's Error is caught (as the candidate's
// manifest or build error); anything else propagates.
BuiltOne build_one(const std::filesystem::path& folder, const BuildOneOptions& o);

// ---- the correctness report, read once ----

struct CaseFailure {
  std::string id, code, detail;
};

// What a correctness report says, in the terms every command reads it in: qualify's findings and
// phase lines, compare's sides, selftest's seed rows, screen's verdicts.
struct CorrectnessSummary : decision::CaseCounts {
  bool accepted = false;    // no failure, some evidence, no case kqual failed to run
  bool incomplete = false;  // kqual's own failure decided nothing (harness errors, no failure)
  int harness_errors = 0;   // cases not run because kqual itself failed
  std::string harness_failure;  // the first of them: "<case id>: <what failed>"
  int settled_not_run = 0;  // cases not run because the first failure settled the verdict
  std::string primary_code;               // the most frequent failure code ("" when none failed)
  std::map<std::string, int> failure_codes;
  std::vector<CaseFailure> failures;      // every failing case, in the order they ran
  std::string sanitizer;                  // the sanitizer pass's phase line: "clean", "findings: <why>", "not run"
  double wall_ms = 0;                     // [ms] every case's generation, reference, run and comparison

  // The first failing case's detail; "" when none failed.
  std::string first_failure() const;
  // The first failing case's detail among those failing with one of `codes`; "" when none does.
  std::string first_failure_with(const std::vector<std::string>& codes) const;
  // The correctness phase's line: "accepted: 12 passed, 0 failed, 3 refused of 15 cases".
  std::string phase_line() const;
};

CorrectnessSummary summarize_correctness(const check::CorrectnessReport& rep);

// ---- load → check → time ----

struct CheckOneOptions {
  bool load = true;         // load_and_describe first; false when the caller loaded it in this session already
  bool correctness = true;  // the contract's cases; false: load (and timing) only
  check::CheckOptions check;
  // Timed alone (no baselines) when set, after a check that accepted it (or without a check).
  std::optional<bench::TimingOptions> timing;
};

// One built candidate through its GPU phases in one worker session.
struct CheckedOne {
  std::string load_error;                          // the worker refused the module: nothing else ran
  std::optional<check::CorrectnessReport> report;  // when the check ran
  std::optional<CorrectnessSummary> correctness;   // summarize_correctness(*report)
  std::optional<bench::TimingReport> timing;       // when timed
  double wall_ms = 0;                              // [ms] load, check and timing
  bool loaded() const { return load_error.empty(); }
};

// Loads `b` in `s` (describing its kernels into b.kernels), checks it and times it, as `o` asks.
// Errors of the worker or of kqual propagate (Error): the caller knows whose they are.
CheckedOne check_one(worker::Session& s, build::BuiltCandidate& b, const CheckOneOptions& o);

}  // namespace kqual::pipeline
