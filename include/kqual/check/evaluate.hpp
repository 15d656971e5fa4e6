#pragma once
// Check a built candidate against its contract: cases, references, the worker runs, comparisons.
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "kqual/contract/contract.hpp"
#include "kqual/core/enum_names.hpp"
#include "kqual/core/json.hpp"
#include "kqual/build/candidate.hpp"
#include "kqual/check/plan.hpp"
#include "kqual/worker/session.hpp"

namespace kqual::check {

// What became of one case; its word is the case's "status" in the JSON.
enum class CaseStatus {
  pass,
  fail,
  refused,  // outside the candidate's claims or launch plan: code says which refusal
  skipped,  // not run: the device cannot hold the case
  not_run,  // kqual's own failure (code harness_error): no verdict either way
};
inline constexpr EnumNames<CaseStatus, 5> kCaseStatusNames{{{{CaseStatus::pass, "pass"},
                                                             {CaseStatus::fail, "fail"},
                                                             {CaseStatus::refused, "refused"},
                                                             {CaseStatus::skipped, "skipped"},
                                                             {CaseStatus::not_run, "not_run"}}}};
inline const char* to_string(CaseStatus s) { return kCaseStatusNames.name(s); }
// A status put in a JSON document is its word, never the enumerator's number.
inline void to_json(json& j, CaseStatus s) { j = to_string(s); }

// The id of a compute-sanitizer finding as results.json records it ("sanitizer/memcheck"): no case of the
// contract, so neither `kqual replay` nor `kqual check --case` can run it alone.
inline constexpr std::string_view kSanitizerFindingPrefix = "sanitizer/";
inline bool is_sanitizer_finding_id(std::string_view id) { return id.substr(0, kSanitizerFindingPrefix.size()) == kSanitizerFindingPrefix; }

struct CaseResult {
  contract::CaseSpec spec;
  CaseStatus status = CaseStatus::fail;  // set by whoever judges the case; a case never judged passes nothing
  std::string code;    // failure or refusal code
  std::string detail;  // what the candidate did, in words (no kqual source locations: labels.hpp)
  std::string debug;   // the worker's message as it came, for kqual's developers ("" when none)
  double kernel_ms = 0;
  std::string degenerate;  // why the expected output alone proves little (a constant kernel passes); "" if not
  std::string reference;   // "cpu" or "gpu-fp64"
  double wall_ms = 0;      // generation, reference, worker round trip and comparison
  std::string checks_not_run;  // a check the platform could not provide for this case ("" = all ran)
  // Two runs that gave different bytes: RunToRun::to_json() (null when they were the same, or not
  // compared). A passing case with a difference carries `note` (within the bound, not required).
  json run_to_run;
  std::string note;
  // A failing case, for a reproducer (kqual replay): the SHA-256 of each input's bytes as uploaded
  // (host-made cases), and the first offending elements of a wrong output (judge_runs.cpp:
  // [{"output", "run", "index", "expected", "actual", "reference", "bound"}]); empty otherwise.
  std::map<std::string, std::string> input_sha256;
  json failing_elements;
  // The outputs this case also ran on their inputs ("y on x": the candidate claims in_place and the
  // case passed with separate buffers; in_place.hpp); "" when it did not run in place.
  std::string in_place;
  // A compute-sanitizer finding over several small cases (sanitizer_pass.cpp): it fails the check, but
  // it is no case of its own (no dims, no dtype of its own), so it speaks for no claim.
  bool sanitizer_finding = false;
};

struct CorrectnessReport {
  std::string candidate;
  int cases = 0, passed = 0, failed = 0, refused = 0;
  int evidence = 0;                  // passed cases whose expected output is not degenerate
  int skipped = 0;                   // cases above CheckOptions::max_case_elements (not run)
  // Cases not run because kqual itself failed (harness_error: its allocation, the upload, the worker
  // lost outside the candidate's launch, the reference): no verdict, neither accepted nor rejected.
  int harness_errors = 0;
  std::string harness_failure;       // the first one: "<case id>: <what failed>"
  double wall_ms = 0;
  json sanitizer;                    // the sanitizer pass: status clean|findings|incomplete|not_run, tools, cases
  std::map<std::string, int> failure_codes;
  std::vector<CaseResult> results;   // every case run
  // Cases not run because the verdict was already settled: the first failing case rejects the
  // candidate (CheckOptions::all_cases runs them all). Their ids, in the order they would have run.
  std::vector<std::string> settled_not_run;
  std::set<std::string> checks_not_run;  // checks the platform could not provide (e.g. no unmapped-page traps)
  // The run-to-run rule per dtype run: [{"dtype", "required", "reason", "opt_out", "rule_from"}].
  json run_to_run_rule = json::array();
  // Each [supports] claim and the cases that exercised it, or why none did (claims.hpp):
  // [{"claim", "value", "coverage", "by"}].
  json claims = json::array();
  // Degenerate outputs (all zero, all equal) are not accepted as evidence on their own.
  bool accepted() const { return failed == 0 && evidence > 0 && harness_errors == 0; }
  bool incomplete() const { return harness_errors > 0 && failed == 0; }  // kqual's failure decided nothing
  std::string primary_code() const;  // the most frequent failure code
  json to_json(bool all_cases) const;
};

struct CheckOptions {
  std::uint64_t seed = 20261202;
  bool include_large = true;
  bool stop_on_fault = true;  // stop a candidate's cases after a crash/hang/sticky error
  // false (the default): the first failing case rejects the candidate; after it only the diagnosis
  // that names the defect class runs (out-of-bounds read, uninitialised shared memory, a race when
  // the kernel uses shared memory), and the remaining cases are listed as not run. true: every
  // case runs, for a report that lists every failing case (--all-cases).
  bool all_cases = false;
  std::int64_t max_case_elements = 0;  // > 0: skip cases whose tensors hold more elements in all
  // After the cases pass: a few small ones again under compute-sanitizer memcheck and racecheck
  // (reads past a tensor inside its last aligned vector, shared-memory races). Reported as not run
  // when compute-sanitizer is absent.
  bool sanitizer_pass = true;
  // Cases past 2^31 / 2^32 elements when the claims reach there (generated on the device, checked in
  // windows; a few seconds), with their own watchdog: a wrapped 32-bit loop may never end.
  bool index_cases = true;
  double index_case_timeout_s = 30;
  int sanitizer_cases = 3;
  std::int64_t sanitizer_max_elements = std::int64_t(1) << 16;
  // Not empty: only the case with this id runs (kqual check --case ID, a reproducer's command), found
  // by find_case under `seed` whatever include_large and index_cases say; the sanitizer pass follows
  // as usual. An id that is not one of the candidate's cases is an input error (require_case).
  std::string only_case;
};

// The case `id` among the contract's cases for the claims `cand` under `seed`: the correctness cases,
// the large ones included, then the cases past 2^31 elements (generated on the device); nullopt when
// no case has that id. Case ids and seeds are a pure function of the contract, the claims and `seed`.
std::optional<contract::CaseSpec> find_case(const contract::Contract& c, const contract::Supports& cand, std::uint64_t seed,
                                            const std::string& id);
// find_case, or Error(input) naming the id, the contract and the seed, with a few ids that exist.
contract::CaseSpec require_case(const contract::Contract& c, const contract::Supports& cand, std::uint64_t seed,
                                const std::string& id);

CorrectnessReport check_correctness(worker::Session& s, const build::BuiltCandidate& b, const CheckOptions& o);

// The order cases run in: cheapest and most decisive first. Small cases of the plain value families
// (the boundary sizes: 1, tile-1, tile, tile+1, ...), then small cases of the special families
// (NaN/Inf/-0, denormals, extremes), then the large ones, each group by size; the contract's order
// is kept within equal keys.
void order_cases(const contract::Contract& c, std::vector<contract::CaseSpec>& cases);

// A case's inputs and expected outputs, generated once and shared by every implementation run on it
// in this process (a bounded cache; KQUAL_CASE_CACHE_MB sets its size, 0 turns it off).
struct PreparedCase {
  contract::CaseData data;
  std::vector<contract::Tensor> expected;
  std::string reference;   // "cpu" or "gpu-fp64"
  std::string degenerate;  // why the expected outputs alone prove little; "" if they do not
};
std::shared_ptr<const PreparedCase> prepare_case(worker::Session& s, const contract::Contract& c, const contract::CaseSpec& spec);

// Runs one case; exposed for tests and for re-checking timed outputs.
CaseResult run_case(worker::Session& s, const build::BuiltCandidate& b, const contract::Contract& c, const contract::CaseSpec& spec);

// Expected outputs for a case: the contract's reference with the run's ReferenceHost (on the CPU,
// or in a declared contract's Python reference process), or its fp64 GPU reference (run in the
// session's reference worker, never the candidates') when the contract prefers it for this size and
// a device is present. *which is set to "cpu" or "gpu-fp64".
std::vector<contract::Tensor> compute_reference(worker::Session& s, const contract::Contract& c, const contract::CaseData& data,
                                                std::string* which = nullptr);
// The processes this session's run computes references in, made on first use and shared by every
// session made from its options (one Python reference process per declared contract per run).
contract::ReferenceHost& reference_host(worker::Session& s);
// Runs the contract's GPU reference unconditionally (tests cross-check it against the CPU one).
std::vector<contract::Tensor> gpu_reference(worker::Session& s, const contract::Contract& c, const contract::CaseData& data);

// The failure code of a worker request that did not succeed, named by its cause: the driver's error
// when the worker reports one (illegal_address, misaligned_address, illegal_instruction,
// stack_overflow, launch_failure, device_assert; another sticky error: device_fault; another
// launch error: launch_error), hang (the watchdog, or CUDA_ERROR_LAUNCH_TIMEOUT), crash,
// worker_protocol, or harness_error (kqual's own error in the worker, not the candidate's).
std::string fault_code(const worker::WorkerReply& r);

// Compares a produced output file with the reference; "" when bit-exact per the contract.
std::string verify_output_file(const contract::Contract& c, const contract::Tensor& expected,
                               const std::filesystem::path& file, std::uint8_t poison, std::string* code);

}  // namespace kqual::check
