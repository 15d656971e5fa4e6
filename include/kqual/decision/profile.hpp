#pragma once
// Deployment profile: how the service that runs the kernel lives (docs/statistics.md, "Deployment
// profile"; examples in profiles/). The same measured pair can deserve different verdicts for a
// long-lived server and for a service that starts cold often — the profile says which one this is.
#include <optional>
#include <string>
#include <string_view>

#include "kqual/core/json.hpp"

namespace kqual::decision {

// State of the driver's JIT cache (CUDA_CACHE_PATH) when a process of the service starts.
enum class CacheMode {
  off,   // CUDA_CACHE_DISABLE=1: every PTX load compiles
  cold,  // a fresh cache directory (new container, new host): the first load compiles
  warm,  // the cache already holds this module's compiled code
};
const char* to_string(CacheMode m);                 // "off", "cold", "warm"
std::optional<CacheMode> cache_mode_from_string(std::string_view s);

struct DeploymentProfile {
  std::string name = "default";
  std::string description;
  std::string source;                          // file it came from ("" for built-in defaults)
  double process_starts_per_day = 1;           // [1/day] fresh processes that pay the cold start
  double calls_per_process = 1e6;              // [calls] kernel calls one process serves in its life
  std::optional<double> first_request_budget_ms;  // [ms] limit on process start → first kernel result
  double kernel_share = 1.0;                   // [0..1] share of request time spent in this kernel
  CacheMode jit_cache = CacheMode::cold;       // cache state a fresh process of the service finds
};

// Parses a profile (TOML, flat keys; see profiles/*.toml). Every problem throws Error(input) naming
// the file, the key and the value: unknown key, wrong type, negative or non-finite number,
// kernel_share outside [0, 1], unknown jit_cache, TOML syntax (with line and column).
DeploymentProfile parse_profile(std::string_view toml_text, const std::string& source_name);
// Reads and parses a file; a missing or unreadable file throws Error(input) naming it.
DeploymentProfile load_profile(const std::string& path);

json to_json(const DeploymentProfile& p);

}  // namespace kqual::decision
