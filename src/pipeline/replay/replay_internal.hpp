#pragma once
// Internal to src/pipeline/replay/: the steps of kqual replay (replay.hpp). replay_results.cpp reads
// what results.json recorded and picks the case; replay_sources.cpp finds the candidate and the
// contract the run used (refusing what moved or changed) and copies them; replay_case.cpp
// regenerates the case's inputs and reference and writes them; replay_readme.cpp writes the README.
// replay.cpp runs the steps in a folder beside the target and renames it at the end. Not a public header.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "kqual/build/manifest.hpp"
#include "kqual/contract/contract.hpp"
#include "kqual/core/json.hpp"
#include "kqual/pipeline/replay.hpp"

namespace kqual::pipeline::replay_detail {
namespace fs = std::filesystem;

// One judged kernel as the results recorded it: the candidate of a qualify / check document, or one
// side of a compare.
struct RecordedSide {
  std::string label;            // "candidate", "old", "new": also its folder in the reproducer
  fs::path manifest;            // the manifest as recorded (relative to where the run started, or absolute)
  bool artifact = false;        // compare: a prebuilt image judged with a launch plan
  fs::path image_input;         // artifact: the image file given to compare
  fs::path source;              // the source the run compiled (absolute), when recorded
  std::string source_sha256;    // ... and its SHA-256
  json correctness;             // check::CorrectnessReport::to_json(false) of this side (null: not run)
  json entry;                   // the picked case's entry in its failing_cases (null: it passed on this side)
};

struct Recorded {
  std::string schema;           // "kqual.check/1", ...
  std::string command_line, kqual_version, git_revision;
  std::string contract_name, contract_origin;  // origin: "built-in", "user", "project", "candidate"
  fs::path contract_file;       // a declared contract's file, as recorded
  std::string contract_sha256;
  std::vector<RecordedSide> sides;
};

// replay_results.cpp. What `doc` recorded; Error(input) for a document replay does not read
// (selftest, decide, ...) or one whose correctness phase did not run.
Recorded read_recorded(const json& doc);
// Picks the case (`id`, else the first failing one; compare: the first where the sides differ) and
// sets each side's `entry`; returns the case's entry (the spec as recorded). Error(input) naming the
// recorded failing cases for an unknown id, and saying so when no case failed.
json pick_case(Recorded& r, const std::string& id, std::vector<std::string>& notes);
// The case spec an entry records (id, family, dtype, dims, offset_elements, seed).
contract::CaseSpec spec_of(const json& entry);

// replay_sources.cpp. The side's manifest, read from where the run read it; Error(input) when it
// moved, or when its source changed since the run (the reproducer would not be that kernel).
build::Manifest load_side(const RecordedSide& s, const contract::ContractLookup& contracts);
// The contract lookup for the manifests the run read: o.sources, plus the folder the run found a
// declared contract in.
contract::ContractLookup recorded_contract_lookup(const Recorded& r, const ReplayOptions& o);
// Error(input) when the manifest's contract is not the one the run recorded (another name, or a
// declared contract's file with another SHA-256).
void require_recorded_contract(const contract::Contract& c, const Recorded& r, const contract::ContractLookup& contracts);
// The side's folder in the reproducer: its manifest with `source` / `image` and a contract path
// rewritten to the copies (or to the contract's name), the source and the files it includes with
// quotes, or the image. Returns the files written, relative to `dir`'s parent; `notes` says what a
// quoted include outside the source's folder left out.
std::vector<std::string> copy_side(const build::Manifest& m, const RecordedSide& s, const fs::path& dir, std::vector<std::string>& notes);
// A declared contract's folder copied to <dir>/<name>/ (nothing for a built-in one). True when copied.
bool copy_contract(const contract::Contract& c, const fs::path& dir);

// The text of a manifest with the values of some [candidate] keys replaced (key -> TOML string value);
// `rename` turns [candidate] source into image (an artifact side judged with a candidate's plan).
std::string rewrite_manifest(const std::string& text, const fs::path& file, const std::vector<std::pair<std::string, std::string>>& values,
                             bool source_to_image);

// replay_case.cpp. The case regenerated on the CPU and written under `dir` (inputs/, reference/,
// layout.json); a generated case (made on the device) described instead. `recorded_sha256`: per side,
// the input hashes the results recorded ({} when none).
struct CaseFiles {
  std::vector<ReplayTensor> tensors;
  json layout;                  // layout.json
  json generated;               // the device generator's description (generated cases), else null
  bool inputs_verified = false;
  std::vector<std::string> notes;
};
CaseFiles write_case(const contract::Contract& c, const contract::CaseSpec& spec, const std::vector<json>& recorded_sha256,
                     const fs::path& dir, std::uint64_t max_bytes, const ProgressFn& progress);
// The .npy descr of a dtype ("<f4"; bf16 "<u2", fp8 "|u1": their bits).
std::string npy_descr(DType t);

// replay_readme.cpp. README.md of the folder.
struct ReadmeFacts {
  const Recorded& recorded;
  const contract::CaseSpec& spec;
  const json& entry;            // the case as recorded (code, detail)
  const ReplayOutcome& outcome;
  const CaseFiles& files;
  bool contract_copied = false;
};
std::string readme_text(const ReadmeFacts& f);
// The command that re-runs the case on one side, from inside the folder.
std::string check_command(const std::string& side, const std::string& case_id, std::uint64_t seed, bool contracts_folder);

}  // namespace kqual::pipeline::replay_detail
