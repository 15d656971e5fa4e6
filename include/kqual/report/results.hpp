#pragma once
// The results documents as types: what `kqual qualify` / `check` / `bench`, `kqual compare` and
// `kqual selftest` write to results.json. The pipeline (src/pipeline/) fills these structs; the
// renderers (memo, compare memo) read them; JSON appears only at the edge, through one
// to_json / from_json pair per document (src/report/results.cpp). to_json(from_json(doc)) == doc
// for every document kqual writes, key order included (tests/report/results_test.cpp).
//
// Blocks typed elsewhere stay typed here (decision::QualifyVerdict, bench::TimingReport). A block
// is kept as `json` where its to_json drops what a from_json would need (check::CorrectnessReport
// writes only the failing cases; build::BuiltCandidate writes a summary of its manifest) or where
// it is only ever JSON today and typing it would be large (provenance, the contract's domain, the
// compare document's sides, artifact diff, warm, startup and decisions blocks); docs/architecture.md
// lists them.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kqual/bench/timing.hpp"
#include "kqual/core/json.hpp"
#include "kqual/decision/decision.hpp"
#include "kqual/decision/qualify.hpp"

namespace kqual::report {

// The "phases" block: one status line per phase, in the order the phases were first reported.
class PhaseList {
 public:
  // Sets a phase's status; a phase already listed keeps its place.
  void set(const std::string& phase, std::string status);
  // The status, or "" when the phase is not listed.
  std::string get(const std::string& phase) const;
  bool has(const std::string& phase) const;
  // Drops every phase but these (in their current order).
  void keep_only(const std::vector<std::string>& phases);
  const std::vector<std::pair<std::string, std::string>>& entries() const { return entries_; }
  bool operator==(const PhaseList&) const = default;

 private:
  std::vector<std::pair<std::string, std::string>> entries_;
};

// ---- kqual qualify / check / bench (schema kqual.<command>/1) ----

// The candidate's claimed domain, as its manifest states it.
struct Claims {
  std::vector<std::string> dtypes;        // "f32", "bf16", ...
  std::int64_t min_alignment_bytes = 16;  // [bytes] pointer alignment the kernel requires
  std::int64_t max_n = 0;
  bool in_place = false;
};

struct QualifyCandidate {
  std::string name, manifest, contract, description;
  Claims claims;
};

// One of the contract's refusal examples, checked in this run.
struct RefusalChecked {
  std::string request;  // "f32 n=1025 elements(x=1025, ...) offset=1"
  std::string code;     // the refusal code ("misaligned")
  std::string reason;
};

struct QualifyContract {
  std::string name, summary, numerical_policy;
  // Where the judge came from (contract::ContractProvenance): "built-in", "user", "project" or
  // "candidate" (a contract file supplied with the candidate, accepted by --allow-candidate-contract);
  // a declared contract's file and its SHA-256.
  std::string origin = "built-in", file, file_sha256;
  json domain;  // contract::Contract::domain_json(), only ever JSON
  std::vector<RefusalChecked> refusals_checked;
};

// The first failing case of a check and the two commands that reproduce it, exactly as a user
// types them (docs/replay.md): a `kqual replay` folder from this run's results.json, and the one
// case rerun by `kqual check --case ID --seed S`. results.json "reproduce".
struct ReproduceCommands {
  std::string case_id;
  std::string replay;  // kqual replay OUT/results.json --case ID --out OUT/replay
  std::string check;   // kqual check CAND --case ID --seed S --out OUT/rerun
};

struct QualifyResult {
  std::string command = "qualify";  // qualify, check or bench: names the schema (kqual.<command>/1)
  json provenance;                  // report::provenance()
  QualifyCandidate candidate;
  QualifyContract contract;
  // check::CorrectnessReport::to_json(false) of the candidate and of each baseline; absent when the
  // correctness phase did not run. JSON: the report keeps only its failing cases.
  std::optional<json> correctness;
  std::optional<std::vector<json>> baselines_correctness;
  std::optional<bench::TimingReport> timing;  // absent when the timing phase did not run
  json artifact;                              // build::BuiltCandidate::to_json() of the candidate
  std::vector<json> baselines;                // ... and of each baseline built
  PhaseList phases;
  // [s] where the run's time went, step by step in order ("compile", "load", "correctness", "baseline
  // NAME", "timing", "PyTorch baselines"); results.json "wall_seconds", the memo's "Wall time" line.
  std::vector<std::pair<std::string, double>> wall_seconds;
  decision::QualifyVerdict verdict;
  std::optional<ReproduceCommands> reproduce;  // when a case failed
  // qualify: PyTorch eager and torch.compile of the contract, when they were timed or refused
  // (bench::TorchBaselinesReport's JSON, only ever JSON).
  std::optional<json> torch_baselines = {};
};

json to_json(const QualifyResult& r);
// Error(input) naming the field when the document is not shaped as a qualify-family document;
// fields a hand-made document leaves out take their defaults.
QualifyResult qualify_result_from_json(const json& doc);

// bench::TimingReport as TimingReport::to_json() writes it (series, summaries, comparisons).
bench::TimingReport timing_report_from_json(const json& j);

// ---- kqual compare (schema kqual.compare/1) ----

struct CompareTarget {
  std::string arch;    // "sm_90"
  std::string source;  // "device 0", "--arch", "default (no device)"
};

struct CorrectnessRelationBlock {
  std::string relation;  // compare::to_string(CorrectnessRelation)
  bool new_blamed = false;
  std::string explanation;
};

struct CompareVerdict {
  std::vector<std::string> reasons;
  std::optional<std::string> profile;  // the deployment profile that decided (when one did)
  decision::ShipVerdict decision = decision::ShipVerdict::incomplete;
  int exit_code = 0;
  std::string summary;
};

struct CompareResult {
  json provenance;
  CompareTarget target;
  json sides;          // {"old": {...}, "new": {...}}: input, build provenance, image, loading path, candidate
  json artifact_diff;  // artifact::to_json(ArtifactDiff)
  // The contract both sides are judged by, when a launch plan names one: {"name", "source": {origin,
  // supplied_with_candidate, file, sha256}} (the source as qualify's contract.source).
  std::optional<json> contract;
  // The measured part (compare::judge() ran, so a GPU was there): correctness, then whatever the
  // run reached. An unmeasured document (no GPU) has none of these.
  bool measured = false;
  std::optional<CorrectnessRelationBlock> correctness_relation;
  json correctness = json::object();  // {"old": report, "new": report}: CorrectnessReport::to_json(false)
  std::map<std::string, double> wall_s;  // [s] per measured phase
  std::optional<json> warm;              // per shape, both sides' process medians and their comparison
  std::optional<json> startup;           // per cache mode, samples' summaries, deltas, resolution
  std::optional<json> decisions;         // per profile: decision::to_json(profile), to_json(Decision), markdown
  PhaseList phases;
  std::vector<std::string> not_run;
  std::vector<std::string> notes;
  CompareVerdict verdict;
};

json to_json(const CompareResult& r);
CompareResult compare_result_from_json(const json& doc);

// ---- kqual selftest (schema kqual.selftest/1) ----

struct SelftestContractRow {
  std::string contract;
  int broken = 0, broken_rejected = 0, broken_for_intended_reason = 0;
  int good = 0, good_accepted = 0;
};

struct SelftestClassRow {
  std::string defect_class;  // "class": the stated reason of the known-broken candidates
  int checks = 0, rejected_for_it = 0;
  std::vector<std::string> candidates;  // "<contract>/<name>"
};

// One seed's run of one candidate.
struct SelftestSeed : decision::CaseCounts {  // the counts written: cases, passed, failed, evidence, skipped
  std::uint64_t seed = 0;
  std::string outcome;  // "accepted", "rejected: <code>", "load failed: ..."
  bool as_expected = false;
  std::map<std::string, int> failure_codes;
  std::string first_failure;
  bool timed = false;
  json sanitizer_pass;  // the check's sanitizer block, or "not run"
  double wall_ms = 0;
  json slowest_cases;  // [{"id", "wall_ms"}]
};

struct SelftestCandidate {
  std::string candidate, contract, dir, kind;  // kind: good, broken, baseline
  std::string expected;                        // "accepted" or "rejected: <code> or <code>"
  std::optional<std::string> outcome;          // set when the candidate did not get to run its seeds
  std::optional<json> sanitizer;               // --sanitize: the sanitizer log's summary
  std::optional<std::vector<SelftestSeed>> seeds;
  std::optional<bool> as_expected;
};

struct SelftestSanitizer {
  std::string tool, path, note;
};

struct SelftestResult {
  json provenance;
  bool device_present = false;
  std::string why_no_device;
  std::vector<std::uint64_t> seeds;
  std::vector<SelftestContractRow> contracts;
  std::vector<SelftestClassRow> classes;
  std::vector<SelftestCandidate> candidates;
  int checks = 0, unexpected = 0;
  std::optional<SelftestSanitizer> sanitizer;
  // The run's parallelism: worker sessions (lanes) on the GPU and NVRTC compile threads (absent in
  // documents from before they were recorded).
  std::optional<int> lanes = {}, compile_threads = {};
};

json to_json(const SelftestResult& r);
SelftestResult selftest_result_from_json(const json& doc);

}  // namespace kqual::report
