#pragma once
// kqual screen --shard I/N and kqual screen merge (docs/scale-out.md). A candidate belongs to shard
// (first 64 bits of the SHA-256 of its content) mod N: the same share whatever the order or the
// number of the other candidates, so a re-run or a requeued array task takes the same share. Each
// shard has its own --out (journal, results.json); merge combines them into one results.json and
// summary.md, refusing by name shards that disagree on what decides a verdict, and counting the
// candidates judged twice and those no shard judged.
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

// The shard a candidate of this content hash belongs to, of `count`.
int shard_of(const std::string& content_sha256, int count);

// What a sharded screen records in results.json under "shard", for merge.
struct ShardRecord {
  ShardSpec spec;
  std::size_t total = 0;               // candidates given to every shard
  std::string candidates_sha256;       // of the sorted list of every candidate's folder
  std::vector<std::size_t> share_sizes;  // candidates per shard, for all N shards
  json to_json() const;
};
// Shares every candidate into shards; `shard_of_candidate` receives each one's shard.
ShardRecord plan_shards(const ShardSpec& spec, const std::vector<std::filesystem::path>& candidates,
                        std::vector<int>* shard_of_candidate);

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
  std::size_t duplicates = 0;            // verdict rows dropped because another shard had the candidate
  std::size_t missing = 0;               // candidates of shards with no results
  std::filesystem::path results_path, summary_path;
};

// Error(usage) when a folder has no results.json and no journal, holds no sharded screen, or when two
// shards differ in contract, seed, options, shard count or candidate list (each named, with both
// folders). A shard folder with a journal but no results.json (its task did not finish) counts its
// candidates as missing.
MergeOutcome merge_screen(const MergeOptions& o);

}  // namespace kqual::pipeline
