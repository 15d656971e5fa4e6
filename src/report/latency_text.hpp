#pragma once
// Internal to src/report/: a latency [ms] as the memo and the HTML page print it. Not a public
// header.
#include <fmt/format.h>

#include <string>

#include "kqual/core/json.hpp"

namespace kqual::report::detail {

// "1.23 s", "4.56 ms", "789 µs"; anything but a number (null: a failed or timed-out request) is a miss.
inline std::string latency_text(const json& v) {
  if (!v.is_number()) return "miss";
  const double ms = v.get<double>();
  return ms >= 1000 ? fmt::format("{:.3g} s", ms / 1000) : ms >= 1 ? fmt::format("{:.3g} ms", ms) : fmt::format("{:.3g} µs", ms * 1000);
}

}  // namespace kqual::report::detail
