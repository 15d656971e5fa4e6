#pragma once
// GPU work runs in worker processes; the coordinating process never initialises CUDA.
// Protocol: one JSON request per line on the worker's stdin, one JSON reply per line on a private
// descriptor (the worker's stdout is redirected to stderr so device printf cannot corrupt it).
// A worker that crashes, hangs past the watchdog, breaks the protocol or hits a sticky device
// error becomes a recorded outcome; the client starts a fresh worker for the next call. The worker
// is a core Child (kqual/core/child.hpp): its own process group, killed whole with its wrapper.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kqual/core/json.hpp"

namespace kqual {
class Child;
}

namespace kqual::worker {

struct WorkerOptions {
  std::string exe;              // the kqual binary (default: /proc/self/exe)
  double watchdog_seconds = 60; // per call, unless the call gives its own
  std::vector<std::pair<std::string, std::string>> env;  // extra environment for the worker
  std::string stderr_path;      // where the worker's stderr goes (tail is quoted on faults)
  // A launcher the worker runs under, e.g. {"compute-sanitizer", "--tool", "memcheck", ...}; the
  // first word is looked up on PATH. Empty: the worker is started directly.
  std::vector<std::string> wrapper;
};

struct WorkerReply {
  enum class Status { ok, error, crashed, hung, protocol_error, sticky_error };
  Status status = Status::ok;
  json body;            // the reply (for ok, error, sticky_error)
  std::string reason;   // human explanation for anything but ok
  // Not ok while the worker was doing kqual's own work (allocating, uploading, reading back; what it
  // was doing): kqual's failure, not the candidate's. The reason then starts with kHarnessFailure.
  std::string harness;
  bool fault() const { return status == Status::crashed || status == Status::hung || status == Status::protocol_error || status == Status::sticky_error; }
};
const char* to_string(WorkerReply::Status s);
inline constexpr const char* kHarnessFailure = "kqual's own failure";
// A failure text that is kqual's own: a reason starting with kHarnessFailure, or "<status>: " and
// one (a timed series' error). Only the start counts: a candidate's output quoted later (its stderr
// after a crash) cannot make its own failure look like kqual's.
bool is_harness_failure(const std::string& text);

class WorkerClient {
 public:
  explicit WorkerClient(WorkerOptions opts);
  ~WorkerClient();
  WorkerClient(const WorkerClient&) = delete;
  WorkerClient& operator=(const WorkerClient&) = delete;

  // Sends one request and waits for its reply (watchdog: timeout_s, or the default when <= 0).
  WorkerReply call(const json& request, double timeout_s = 0);
  int processes_started() const { return started_; }
  void stop();  // ends the current worker (if any)

 private:
  void start();
  // The worker's pipes closed during `request`: how it ended, with its stderr's end.
  WorkerReply ended(const json& request);
  WorkerOptions opts_;
  std::unique_ptr<Child> child_;
  int started_ = 0;
};

// The worker's main loop (kqual worker): reads requests until EOF or {"op":"exit"}.
int run_worker(int in_fd, int out_fd);

}  // namespace kqual::worker
