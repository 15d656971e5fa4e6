#pragma once
// One long-lived child process spoken to through pipes: requests on its stdin, replies on its
// stdout, both with a deadline. The worker (`kqual worker`), the Python reference process and the
// PyTorch timing worker are each one of these; one-shot children (external tools, startup probes)
// go through run_process (process.hpp).
//
// The child runs in a process group of its own, so a kill reaches whatever it started (a sanitizer's
// target, PyTorch's compile workers). A write to a child that no longer reads gives
// ChildIo::closed, never a SIGPIPE for this process: SIGPIPE is blocked in the writing thread for the
// write only and the one it raised discarded, so kqual needs no process-wide SIGPIPE setting.
// The destructor kills the group and reaps the child; it never throws. Being in a group of its own,
// a child would not get the terminal's Ctrl-C with kqual: where SIGINT, SIGTERM and SIGHUP have their
// default action, the first Child installs a handler that kills every live child's group and then
// lets the signal end kqual as before.
#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kqual/core/enum_names.hpp"
#include "kqual/core/error.hpp"

namespace kqual {

// This process's environment with every name in `set` given its value (replacing the inherited
// one, not appended after it: getenv returns the first match, so a parent's CUDA_VISIBLE_DEVICES=2,3
// would win over a child's "3") and every name in `unset` removed; "NAME=value" each.
std::vector<std::string> environment_with(const std::vector<std::pair<std::string, std::string>>& set = {},
                                          const std::vector<std::string>& unset = {});

struct ChildSpec {
  std::string exe;                // an absolute path, or a name looked up on PATH
  std::vector<std::string> args;  // after exe
  // The child's environment, exactly ("NAME=value" each): nothing is inherited that is not listed
  // (environment_with() gives this process's, changed).
  std::vector<std::string> env;
  // A launcher the child runs under (e.g. {"compute-sanitizer", "--tool", "memcheck"}): the command
  // line is wrapper + exe + args, and the wrapper's first word is looked up on PATH.
  std::vector<std::string> wrapper;
  // Where stderr goes: this file (created or truncated), or, when empty, a pipe kqual drains while it
  // waits on the child, keeping the last `stderr_kept` bytes.
  std::filesystem::path stderr_file;
  std::size_t stderr_kept = 64 * 1024;  // [bytes]
  // How a start that fails is reported: Error(start_error_kind, "cannot start <what> '<argv0>': <why>").
  std::string what = "child process";
  ErrorKind start_error_kind = ErrorKind::io;
};

// The outcome of one write or read.
enum class ChildIo {
  ok,
  timed_out,  // the deadline passed first
  closed,     // the child's end is gone: it exited, or closed its stdin or stdout
};
inline constexpr EnumNames<ChildIo, 3> kChildIoNames{{{{ChildIo::ok, "ok"}, {ChildIo::timed_out, "timed_out"}, {ChildIo::closed, "closed"}}}};
inline const char* to_string(ChildIo v) { return kChildIoNames.name(v); }

// How a child ended.
struct ChildExit {
  bool exited = false;  // a normal exit: `status` holds its exit status
  int status = -1;
  int signal = 0;       // the signal that ended it, when it did not exit
  // "exited with status 3", "killed by signal 11 (Segmentation fault)"
  std::string describe() const;
};

class Child {
 public:
  using Clock = std::chrono::steady_clock;
  // A deadline `seconds` from now.
  static Clock::time_point after(double seconds);

  // Starts the child (posix_spawn; its stdin and stdout are pipes to this process). Throws
  // Error(spec.start_error_kind) when it cannot be started, and Error(io) when no pipe can be made.
  explicit Child(const ChildSpec& spec);
  ~Child();
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  pid_t pid() const { return pid_; }

  // Writes every byte before `deadline` (draining captured stderr while it waits).
  ChildIo write(std::string_view bytes, Clock::time_point deadline);
  // The next line of its stdout, without the '\n'. Bytes past it are kept for the next read.
  ChildIo read_line(std::string& line, Clock::time_point deadline);
  // The next `n` bytes of its stdout.
  ChildIo read_bytes(std::size_t n, std::string& bytes, Clock::time_point deadline);
  // Ends its stdin: a child that reads to the end of its input then ends by itself.
  void close_input();

  // Waits until it ends or `deadline` passes, then kills its process group (SIGKILL: whatever it
  // started goes too) and reaps it. Later calls return the same answer.
  ChildExit wait(Clock::time_point deadline);
  // wait() with no time left: the group killed now.
  ChildExit kill() { return wait(Clock::time_point::min()); }
  bool reaped() const { return reaped_; }

  // The end of its stderr (what was written up to now): at most max_bytes, "..." in front when cut,
  // trailing blanks and newlines removed; "" when there is none.
  std::string stderr_tail(std::size_t max_bytes = 2000);

 private:
  ChildIo fill(Clock::time_point deadline);
  void drain_stderr();
  void close_fd(int& fd);

  pid_t pid_ = -1;
  int to_ = -1, from_ = -1, err_ = -1;  // its stdin, stdout, captured stderr (our ends)
  std::filesystem::path stderr_file_;
  std::size_t stderr_kept_ = 0;
  std::string stderr_;   // captured stderr: its last stderr_kept_ bytes
  std::string pending_;  // stdout bytes read past the last line or bytes returned
  bool reaped_ = false;
  ChildExit exit_;
};

}  // namespace kqual
