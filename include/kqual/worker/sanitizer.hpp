#pragma once
// compute-sanitizer as a worker wrapper: where it is, and what its log says.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "kqual/core/json.hpp"

namespace kqual::worker {

// compute-sanitizer: $KQUAL_COMPUTE_SANITIZER, PATH, then the toolkit's usual places; nullopt when
// absent. Throws Error(input) when KQUAL_COMPUTE_SANITIZER names something that is not executable.
std::optional<std::string> find_compute_sanitizer();

// One finding of a sanitizer log: the tool's first line ("Invalid __global__ read of size 16 bytes",
// "Race reported between ...") and the lines after it that say where (kernel, address, allocation).
struct SanitizerFinding {
  // out_of_bounds_read, out_of_bounds_write, misaligned_access, race, race_warning (racecheck not
  // sure: reported, not a failure), uninitialized_read, sanitizer_error
  std::string code;
  std::string headline;  // the tool's line, without its "=========" prefix
  std::vector<std::string> context;  // up to 4 following lines
  std::size_t allocation_bytes = 0;  // "of size N bytes" when the tool names the nearest allocation
};
struct SanitizerLog {
  bool written = false;  // the log exists
  int errors = -1;       // the ERROR SUMMARY count; -1 when the summary is missing (the worker died?)
  std::vector<SanitizerFinding> findings;  // in log order, at most 20
  json to_json() const;
};
SanitizerLog read_sanitizer_log(const std::filesystem::path& log);

}  // namespace kqual::worker
