#include "kqual/core/progress.hpp"

#include <fmt/format.h>

namespace kqual {

Progress::Progress(std::string command, bool enabled, std::FILE* out)
    : command_(std::move(command)), enabled_(enabled), out_(out), start_(std::chrono::steady_clock::now()) {}

double Progress::elapsed_s() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

void Progress::say(std::string_view line) const {
  if (!enabled_ || !out_) return;
  // One write per line, so lines from a command and its threads do not interleave mid-line.
  const std::string text = fmt::format("kqual {} [{:7.1f} s] {}\n", command_, elapsed_s(), line);
  std::fwrite(text.data(), 1, text.size(), out_);
  std::fflush(out_);
}

ProgressFn Progress::sink() const {
  if (!enabled_) return {};
  Progress self = *this;
  return [self](const std::string& line) { self.say(line); };
}

}  // namespace kqual
