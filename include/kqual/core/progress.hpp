#pragma once
// Progress lines for long commands, on stderr so that stdout keeps the results (text or --json):
//   kqual compare [  12.3 s] warm timing: process 3/12 (new)
// One helper for every command (qualify, check, bench, selftest, compare, startup, inspect); library
// code below `run` takes a plain callback (ProgressFn) and never prints itself.
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <string_view>

namespace kqual {

using ProgressFn = std::function<void(const std::string&)>;

class Progress {
 public:
  // enabled = false (--quiet): every line is dropped. `out` is where lines go (tests pass a file).
  Progress(std::string command, bool enabled, std::FILE* out = stderr);
  // One line: "kqual <command> [<seconds since construction> s] <line>", flushed.
  void say(std::string_view line) const;
  double elapsed_s() const;
  bool enabled() const { return enabled_; }
  // For library calls that take a callback; empty when disabled, so callers can skip the work of
  // building lines nobody reads.
  ProgressFn sink() const;

 private:
  std::string command_;
  bool enabled_;
  std::FILE* out_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace kqual
