#pragma once
// kqual screen --shard I/N and kqual screen merge (docs/scale-out.md). A candidate belongs to the
// shard the campaign's candidate list (ShardList) gives it, by name: the list is written once when the
// campaign starts, so a re-run, a requeued array task or a candidate edited meanwhile keeps its shard.
// Each shard has its own --out (journal, results.json); merge combines them into one results.json and
// summary.md, refusing by name shards that disagree on what decides a verdict or on the list, and two
// different verdicts for one candidate, and naming the candidates no shard judged.
#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

#include "kqual/core/json.hpp"
#include "kqual/core/progress.hpp"
#include "kqual/pipeline/screen.hpp"

namespace kqual::pipeline {

struct ShardSpec {
  int index = 0;  // 0 <= index < count
  int count = 1;
  std::string text() const;  // "I/N"
};

// "I/N" with 0 <= I < N (shards are numbered from 0, as Slurm's array task ids). Error(usage) naming
// the text and what is wrong with it ("3/2": the index must be below the count).
ShardSpec parse_shard(const std::string& text);

// SHA-256 over the candidate folder's regular files (relative path, size, and each file's SHA-256,
// in path order; names starting with '.' skipped). Error(io) when a file cannot be read.
std::string candidate_content_sha256(const std::filesystem::path& dir);


// The campaign's candidate list, fixed when the campaign starts (docs/scale-out.md, "The candidate
// list"): every candidate by name (its absolute folder) with its shard, in name order, shards dealt
// round-robin. Written once (by `kqual slurm screen` at submission, or by the first shard task to
// start) and read by every later task, so a candidate added, removed or edited meanwhile cannot fall
// into no shard or into two.
struct ShardList {
  std::filesystem::path file;
  int count = 1;
  std::vector<std::string> candidates;  // absolute folders, sorted
  std::vector<int> shard;               // per candidate
  std::string sha256;                   // of the list's candidates and shards
};
// The default file: <campaign>/shard-list-<N>.json, the campaign being the folder above a shard's
// --out (OUT/shard-I-of-N in a Slurm campaign).
std::filesystem::path default_shard_list(const std::filesystem::path& shard_out_dir, int count);
// Reads `file`, or, when it does not exist, writes it from `candidates` (atomically and exclusively:
// of two tasks starting at once, one writes and both read the same list). *created says which.
// Error(usage) when the file is for another shard count; Error(input) when it is not a list.
ShardList open_shard_list(const std::filesystem::path& file, int count, const std::vector<std::filesystem::path>& candidates,
                          bool* created = nullptr);
ShardList read_shard_list(const std::filesystem::path& file);

// What a sharded screen records in results.json under "shard", for merge.
struct ShardRecord {
  ShardSpec spec;
  std::size_t total = 0;               // candidates in the campaign's list
  std::string candidates_sha256;       // the list's sha256
  std::filesystem::path list;          // the list file
  std::vector<std::size_t> share_sizes;  // candidates per shard, for all N shards
  json to_json() const;
};
// The candidates of `spec`'s shard, from the list; `mine` receives their folders.
ShardRecord plan_shards(const ShardSpec& spec, const ShardList& list, std::vector<std::filesystem::path>* mine);

struct MergeOptions {
  std::vector<std::filesystem::path> dirs;  // shard --out folders
  std::filesystem::path out_dir = "kqual-screen-merged";
  std::string command_line;
  ProgressFn progress;
};

struct MergeOutcome {
  json results;
  int exit_code = 0;
  std::vector<ScreenVerdict> verdicts;   // one per candidate, sorted by folder
  std::size_t duplicates = 0;            // verdict rows dropped because another shard had the same verdict
  std::size_t missing = 0;               // candidates of the list that no finished shard judged
  std::vector<std::string> missing_candidates;  // their folders
  std::filesystem::path results_path, summary_path;
};

// Error(usage) when a folder has no results.json and no journal, holds no sharded screen, or when two
// shards differ in contract, seed, options, shard count or candidate list (each named, with both
// folders). Error(input) when one candidate has two different verdicts (or keys), or a verdict from
// a shard its list entry does not name (named, with both). A shard folder with a journal but no
// results.json (its task did not finish) leaves its candidates missing, each named.
MergeOutcome merge_screen(const MergeOptions& o);

}  // namespace kqual::pipeline
