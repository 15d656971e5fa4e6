#pragma once
// kqual screen: many candidates against one contract, with a journal so that an interrupted run
// resumes (docs/screen.md). Builds (NVRTC) run on a pool of CPU threads while the GPU checks run one
// candidate at a time per persistent worker session — one session, or one per GPU with --gpus
// (screen_gpus.hpp); a candidate that crashes, hangs or faults costs only its own verdict (the
// session starts a fresh worker for the next one). --shard I/N screens a deterministic share
// (screen_shard.hpp; docs/scale-out.md).
#include <array>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kqual/contract/declared/declared.hpp"
#include "kqual/core/enum_names.hpp"
#include "kqual/core/json.hpp"
#include "kqual/core/progress.hpp"
#include "kqual/report/screen_result.hpp"

namespace kqual::pipeline {

// --timing and its options (screen_timing.hpp): accepted candidates timed against their contract's
// baselines and ranked.
struct ScreenTimingOptions {
  bool on = false;
  std::vector<std::string> shapes;  // --shape (parsed against each contract); empty: the profile's, else the contract's
  std::string dtype;  // "": each candidate at the first dtype it claims
  int rounds = 3;
  int samples_per_round = 10;
  std::string flush_mode = "write";
  bool clock_guard = true;
  std::string profile, margin, regression_limit;  // the decision's, as qualify takes them
  std::vector<std::filesystem::path> baseline_dirs;
  // The options that decide a timed verdict, for the journal's header ({} when off, so journals of
  // correctness-only screens still resume).
  json verdict_options() const;
};

struct ScreenOptions {
  // Candidate folders (with kqual.toml); a folder without kqual.toml is scanned one level deep.
  std::vector<std::filesystem::path> inputs;
  std::filesystem::path out_dir = "kqual-screen";
  std::string contract;          // "" = each candidate against its own manifest's contract
  contract::ContractSources sources;  // --contracts, --allow-candidate-contract (docs/screen.md)
  std::string arch;              // target when no GPU (default KQUAL_DEFAULT_ARCH)
  bool use_gpu = true;
  double watchdog_seconds = 60;
  std::uint64_t seed = 20261202;
  bool large_cases = true;
  bool all_cases = false;  // every case of a rejected candidate runs (check::CheckOptions::all_cases)
  bool sanitizer_pass = true;
  int jobs = 2;                  // NVRTC compile threads
  bool restart = false;          // ignore (and replace) an existing journal
  // --gpus all|N|LIST: one worker session per GPU, each pinned to its device (PCI bus order); ""
  // = one session on the default device.
  std::string gpus;
  // --workers-per-gpu N: N worker sessions per GPU check candidates side by side (a PyTorch
  // submission spends most of its check in Python and compiling, not on the GPU); a timing waits
  // until its GPU is free and holds it alone.
  int workers_per_gpu = 1;
  std::filesystem::path gpu_list_dir = "/proc/driver/nvidia/gpus";  // where --gpus finds the GPUs (tests: a fake)
  std::string shard;             // --shard I/N: "" = every candidate
  // --shard-list FILE: the campaign's candidate list (screen_shard.hpp); "" = shard-list-<N>.json in
  // the folder above --out. Read when it exists, else written from the candidates found now.
  std::filesystem::path shard_list;
  ScreenTimingOptions timing;    // --timing: the timing tier
  std::filesystem::path submission_worker;  // PyTorch submissions' worker script ("" = tools/torch/submission_worker.py)
  std::string command_line;
  ProgressFn progress;           // one line per candidate as it finishes, or empty
};

// The verdict of one candidate and the counts per verdict are report's types (report/screen_result.hpp):
// the journal, results.json and summary.md are made from them.
using report::kScreenVerdictNames;
using report::ScreenCounts;
using report::ScreenVerdict;
using report::ScreenVerdictKind;
using report::verdict_counts;

struct ScreenOutcome {
  report::ScreenResult result;  // what results.json holds
  json results;                 // ... as written
  int exit_code = 0;
  std::vector<ScreenVerdict> verdicts;  // in candidate order
  std::filesystem::path results_path, summary_path, journal_path;
};

// The candidate folders `inputs` name, sorted within each scanned folder, duplicates removed.
// Error(usage) when an input does not exist or a scan finds no candidate folder. `skipped` (if not
// null) receives the scanned sub-folders without kqual.toml.
std::vector<std::filesystem::path> screen_candidates(const std::vector<std::filesystem::path>& inputs,
                                                     std::vector<std::filesystem::path>* skipped = nullptr);

// Screens every candidate; appends to OUT/journal.jsonl as each finishes; writes OUT/results.json and
// OUT/summary.md atomically at the end. Exit code: 4 if kqual itself failed on a candidate, else 1
// if any was rejected, else 2 if any was refused, else 3 if any is incomplete (no GPU), else 0.
// Error(usage) when the journal was made with other options (unless o.restart).
ScreenOutcome screen(const ScreenOptions& o);

// Shared by screen and screen merge: the exit code the verdicts give (`missing` candidates count as
// incomplete, as screen()'s).
int screen_exit_code(const ScreenCounts& counts, std::size_t missing = 0);

// The journal's file format (docs/screen.md): a header line naming the options that decide a
// verdict, then one ScreenVerdict per line. Exposed for tests.
// Whether a journaled verdict answers a candidate whose key is now `key`: the same key, never an
// `error`, never kqual's own failure (`harness_error`), and an `incomplete` one only while there is
// still no GPU.
bool reusable(const ScreenVerdict& journaled, const std::string& key, bool gpu);

struct ScreenJournal {
  json header;                          // null when the file is absent or held no whole header line
  std::vector<ScreenVerdict> entries;   // whole lines, in file order
  std::uint64_t good_bytes = 0;         // length of the file up to the end of the last whole line
  bool torn_tail = false;               // a last line without its newline, or one that does not parse
};
ScreenJournal read_screen_journal(const std::filesystem::path& file);

}  // namespace kqual::pipeline
