#pragma once
// The state of the driver's JIT cache (CUDA_CACHE_PATH) when a process starts: what startup probes
// set up and measure, and what a deployment profile says its service finds. A vocabulary word both
// sides share, so it lives below them.
#include <optional>
#include <string_view>

namespace kqual {

enum class CacheMode {
  off,   // CUDA_CACHE_DISABLE=1: every PTX load compiles
  cold,  // a fresh cache directory (new container, new host): the first load compiles
  warm,  // the cache already holds this module's compiled code
};
const char* to_string(CacheMode m);  // "off", "cold", "warm"
std::optional<CacheMode> cache_mode_from_string(std::string_view s);

}  // namespace kqual
