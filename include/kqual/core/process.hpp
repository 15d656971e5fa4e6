#pragma once
// Running a child process: exact environment, captured output, watchdog. Startup probes (fresh
// processes per sample) and external tools (ptxas, nvcc) both go through here.
#include <map>
#include <string>
#include <vector>

namespace kqual {

struct ProcessResult {
  bool exited = false;      // normal exit (exit_code valid)
  int exit_code = -1;
  int signal = 0;           // terminating signal when it crashed
  bool timed_out = false;   // killed by the watchdog
  std::string out, err;     // captured stdout / stderr (stderr capped)
  long long spawn_ns = 0;   // CLOCK_MONOTONIC just before fork
  double wall_s = 0;
};

// Runs exe with args. The child's environment is the parent's minus every name in `unset`, with
// `set` applied on top. The child gets its own process group; on timeout the whole group is killed
// (SIGKILL). `spawn_ns_arg`, when non-empty, is an argument appended as "<arg> <spawn ns>".
ProcessResult run_process(const std::string& exe, const std::vector<std::string>& args,
                          const std::map<std::string, std::string>& set, const std::vector<std::string>& unset,
                          double timeout_s, const std::string& spawn_ns_arg = "");

std::string signal_name(int sig);

}  // namespace kqual
