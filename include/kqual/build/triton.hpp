#pragma once
// Triton kernels as kqual candidates: read a Triton cache folder (the cubin Triton compiled and its
// metadata JSON) and write a candidate folder — the cubin, and a kqual.toml with the launch facts
// Triton knows (kernel name, block = num_warps x warp size, dynamic shared memory) and "TODO:"
// placeholders for what only the user knows (the contract, the argument mapping, the grid).
// parse_manifest refuses a manifest while any placeholder is left. Format facts and the command:
// docs/manifest.md "Triton kernels".
#include <array>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "kqual/artifact/artifact.hpp"

namespace kqual::build {

// One compiled kernel in a Triton cache: <dir>/<stem>.cubin, <stem>.json (metadata) and, from
// Triton 3.x, __grp__<stem>.json (the group: {"child_paths": {file: path}}). Paths may be absent.
struct TritonCacheEntry {
  std::filesystem::path dir;            // the cache entry's folder (Triton names it by a hash)
  std::string stem;                     // Triton's file name: the kernel's name (cut at 150 chars)
  std::filesystem::path cubin, metadata, group;
  std::string label() const;            // "<folder name>/<stem>": unique in a cache
};

// Triton's metadata (<stem>.json) as kqual uses it.
struct TritonMetadata {
  std::string name;                     // the kernel's symbol in the cubin
  int num_warps = 0;
  int warp_size = 32;                   // target.warp_size
  int num_ctas = 1;
  std::array<int, 3> cluster_dims{1, 1, 1};
  int num_stages = 0;                   // 0: not recorded
  std::uint64_t shared = 0;             // [B] dynamic shared memory Triton launches with
  std::string backend;                  // target.backend ("cuda")
  int arch = 0;                         // target.arch (90 = compute capability 9.0)
  bool cooperative = false, pdl = false;  // launch_cooperative_grid, launch_pdl
  // Each key's presence means the kernel takes that trailing pointer (Triton >= 3.3 global
  // scratch, later versions also profile scratch); the size is per program [B] (0: passed null).
  std::optional<std::uint64_t> global_scratch_size, profile_scratch_size;
  std::uint64_t global_scratch_align = 1, profile_scratch_align = 1;
  std::string hash;                     // Triton's cache key, when recorded
  std::string triton_version;           // "3.6.0" (recorded by recent versions)
};

// The kernels of CACHE_DIR: a Triton cache root (~/.triton/cache, one folder per entry) or one
// entry's folder. Sorted by label. Throws Error(input) when the folder does not exist or holds none.
std::vector<TritonCacheEntry> find_triton_kernels(const std::filesystem::path& cache_dir);

// Reads and checks <stem>.json (and the group file, when present). Throws Error(input) naming the
// file: missing, malformed JSON, a missing or mistyped key, not a CUDA target.
TritonMetadata read_triton_metadata(const TritonCacheEntry& e);

struct TritonImportOptions {
  std::filesystem::path cache_dir;
  std::string kernel;                   // stem, metadata name, "<folder>/<stem>" or the folder; empty: the only one
  std::filesystem::path out;            // the candidate folder to create (must not exist)
  std::string arch;                     // optional: the cubin must load on this target (e.g. sm_90)
};

struct TritonImport {
  TritonCacheEntry entry;
  TritonMetadata meta;
  artifact::Arch cubin_arch;
  std::vector<artifact::ParamInfo> params;   // from the cubin, by ordinal
  std::filesystem::path out;                 // the candidate folder written
  std::string manifest;                      // kqual.toml as written
  std::vector<std::string> placeholders;     // the keys left "TODO:" (as parse_manifest names them)
};

// Picks the kernel, checks metadata against the cubin (symbol present, arch equal to the
// metadata's target, loads on `arch` when given; cluster and cooperative launches refused), then
// writes OUT/<stem>.cubin and OUT/kqual.toml through a temporary folder renamed at the end, so an
// error leaves nothing behind. Throws Error(usage) when the choice is ambiguous (the message lists
// the kernels), Error(input) for everything wrong in the cache, naming the file.
TritonImport import_triton_kernel(const TritonImportOptions& o);

// The manifest text for an import (exposed for tests).
std::string triton_manifest_text(const TritonCacheEntry& e, const TritonMetadata& m, const artifact::Arch& cubin_arch,
                                 const std::vector<artifact::ParamInfo>& params, std::vector<std::string>* placeholders);

}  // namespace kqual::build
