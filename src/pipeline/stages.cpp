#include "kqual/pipeline/stages.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "kqual/core/error.hpp"
#include "kqual/core/files.hpp"

namespace kqual::pipeline {
namespace fs = std::filesystem;

Target open_target(const TargetOptions& o) {
  worker::SessionOptions so;
  so.use_gpu = o.use_gpu;
  so.watchdog_seconds = o.watchdog_seconds;
  Target t;
  t.session = std::make_unique<worker::Session>(so);
  t.device = &t.session->device();
  if (t.device->present) {
    if (!o.arch.empty() && o.arch != t.device->arch)
      throw_error(ErrorKind::usage, fmt::format("--arch {} given but the device is {}", o.arch, t.device->arch));
    t.arch = t.device->arch;
    t.arch_source = "device 0";
  } else {
    t.arch = o.arch.empty() ? std::string(KQUAL_DEFAULT_ARCH) : o.arch;
    t.arch_source = o.arch.empty() ? "default (no device)" : "--arch";
    t.why_no_gpu = o.use_gpu ? t.device->why_absent : "GPU phases disabled (--no-gpu)";
  }
  return t;
}

DType timing_dtype(const std::string& asked, const std::vector<DType>& claimed, const std::string& who) {
  std::vector<std::string> names;
  for (DType t : claimed) names.push_back(std::string(to_string(t)));
  if (asked.empty()) {
    if (claimed.empty()) throw_error(ErrorKind::input, fmt::format("{} claims no dtype: nothing to time it at", who));
    return claimed.front();
  }
  const auto t = parse_dtype(asked);
  if (!t) throw_error(ErrorKind::usage, fmt::format("--dtype: unknown dtype '{}'", asked));
  if (std::find(claimed.begin(), claimed.end(), *t) == claimed.end())
    throw_error(ErrorKind::usage, fmt::format("--dtype {}: {} does not claim it (it claims {}); it is timed only at a dtype it "
                                              "claims (leave --dtype out to time it at {})",
                                              asked, who, fmt::join(names, ", "), names.empty() ? "?" : names.front()));
  return *t;
}

Written write_results(const fs::path& dir, const json& results, const std::string& memo) {
  fs::create_directories(dir);
  Written w{dir / "results.json", dir / "memo.md"};
  const fs::path tmp_r = dir / ".results.json.partial", tmp_m = dir / ".memo.md.partial";
  try {
    write_file_atomic(tmp_r, results.dump(2) + "\n");
    write_file_atomic(tmp_m, memo);
    fs::rename(tmp_r, w.results);
    fs::rename(tmp_m, w.memo);
  } catch (...) {
    std::error_code ec;
    fs::remove(tmp_r, ec);
    fs::remove(tmp_m, ec);
    throw;
  }
  return w;
}

}  // namespace kqual::pipeline
