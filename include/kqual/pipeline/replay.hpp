#pragma once
// kqual replay RESULTS.json [--case ID] --out DIR: one recorded failing case turned into a folder that
// stands alone (docs/replay.md). The candidate's source or image and its manifest (paths rewritten
// to the copies), a declared contract's folder, the case's inputs regenerated on the CPU from the
// contract and the recorded case spec (.npy files and the raw bytes with their layout), the
// reference output, the failing elements the results recorded, and a README with the one command
// that runs exactly that case again (kqual check --case ID --seed S), under compute-sanitizer and
// cuda-gdb too. A compare result gives both sides on the case where they differ. Cases generated on
// the device are described by the generator's seed and streams instead of gigabytes of bytes.
//
// No GPU: everything here runs on the CPU. The folder appears whole or not at all.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "kqual/contract/declared/declared.hpp"
#include "kqual/core/json.hpp"
#include "kqual/core/progress.hpp"

namespace kqual::pipeline {

struct ReplayOptions {
  std::filesystem::path results;     // results.json of kqual qualify, check or compare (named in errors)
  std::string case_id;               // "": the first failing case (compare: the first where the sides differ)
  std::filesystem::path out_dir;     // the reproducer folder; must not exist, or be empty
  // Where a declared contract is looked up (--contracts), beside the folder the run recorded.
  contract::ContractSources sources;
  // Inputs and reference outputs past this many bytes together are not written (the README's command
  // regenerates them); 0: no limit.
  std::uint64_t max_bytes = std::uint64_t(8) << 30;
  ProgressFn progress;               // one line per step, or empty
};

// One tensor the folder holds: where, and how its bytes are laid out.
struct ReplayTensor {
  std::string name, role;        // role: "input" or "reference"
  std::string dtype;             // kqual's word ("f32", "bf16", ...)
  std::string npy_dtype;         // the .npy descr ("<f4"; bf16 as "<u2": its bits)
  std::vector<std::int64_t> shape;
  std::int64_t elements = 0;
  std::uint64_t bytes = 0;
  std::string npy, raw;          // paths relative to the folder
  std::string sha256;            // of the raw bytes
};

struct ReplayOutcome {
  std::filesystem::path dir;      // the folder written
  std::string schema;             // the results' schema ("kqual.check/1", "kqual.compare/1")
  std::string case_id, code;      // the case replayed and its failure code (compare: the side that failed)
  // The code the README's command gives for this case: `code`, except for a diagnosis made over the
  // run's cases (index_overflow: every smaller case passed), which one case alone shows as its fault.
  std::string expect_code;
  std::uint64_t run_seed = 0;     // the case generator's seed of the recorded run
  std::vector<std::string> sides;             // "candidate", or "old" and "new"
  std::vector<std::string> commands;          // one per side: kqual check <side> --case ID --seed S ...
  std::vector<ReplayTensor> tensors;          // inputs and reference outputs written
  bool generated_on_device = false;           // the case's inputs are made by the device generator
  bool inputs_verified = false;               // regenerated hashes equal the ones results.json recorded
  std::vector<std::string> notes;             // what the folder does not hold, and why
  json to_json() const;                       // the command's --json body (after schema_header("replay"))
};

// Reads `doc` (the document at o.results), picks the case, checks that the candidate, its source and
// the contract are still the ones the run used, and writes the folder. Error(input) naming what is
// missing for an unknown case id, results without a failing case, a candidate that moved or changed,
// or an output folder in the way; nothing is left behind on any error.
ReplayOutcome replay(const json& doc, const ReplayOptions& o);

// The case generator's seed of the run that wrote `command_line` (its --seed, else the default of
// check, qualify and compare).
std::uint64_t recorded_run_seed(const std::string& command_line);

// A .npy file (format version 1.0) of `bytes` with numpy dtype `descr` and `shape`, written to `path`.
void write_npy(const std::filesystem::path& path, const std::string& descr, const std::vector<std::int64_t>& shape,
               const void* bytes, std::size_t size);

}  // namespace kqual::pipeline
