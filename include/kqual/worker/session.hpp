#pragma once
// Coordinator-side state for one kqual run: a private scratch directory (tensors exchanged with
// workers), one reusable worker process, and what the worker said about the device.
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kqual/core/files.hpp"
#include "kqual/core/json.hpp"
#include "kqual/worker/worker.hpp"

namespace kqual::worker {

struct DeviceFacts {
  bool present = false;
  std::string why_absent;   // when !present
  json device;              // name, arch, sms, l2_bytes, ... (worker's "hello")
  std::string arch;         // "sm_90"
  int sms = 0;
  int l2_bytes = 0;
  int max_threads = 1024;
  int max_shared_optin = 48 * 1024;
};

// What the sessions of one run share for the modules above this one, in a type this module cannot
// name: check/ keeps the run's reference processes here (a contract::ReferenceHost, made on first
// use). A session made from another's options() shares it; it ends with the last of them.
struct RunShared {
  std::mutex mu;
  std::shared_ptr<void> references;  // set once, under mu
};

struct SessionOptions {
  double watchdog_seconds = 60;
  bool use_gpu = true;      // false: static phases only, never start a worker
  std::string exe;          // kqual binary for workers (default /proc/self/exe)
  std::vector<std::string> worker_wrapper;  // candidates' worker runs under this (e.g. compute-sanitizer)
  // Extra environment for both workers (candidates' and references'): kqual screen --gpus pins a
  // session to one device with CUDA_VISIBLE_DEVICES and CUDA_DEVICE_ORDER=PCI_BUS_ID.
  std::vector<std::pair<std::string, std::string>> worker_env;
  std::shared_ptr<RunShared> run_shared;  // empty: the session makes its own
};

class Session {
 public:
  explicit Session(SessionOptions opts = {});
  // Probes the device once through a worker; never initialises CUDA in this process.
  const DeviceFacts& device();
  WorkerClient& worker() { return *worker_; }
  // A second worker process for trusted GPU references (fp64 kernels): separate from the
  // candidates' worker, so no candidate kernel can reach a reference result. Started on first use.
  WorkerClient& reference_worker();
  const std::filesystem::path& scratch() const { return scratch_.path(); }
  const SessionOptions& options() const { return opts_; }
  RunShared& run_shared() { return *opts_.run_shared; }

 private:
  SessionOptions opts_;
  ScratchDir scratch_;
  std::unique_ptr<WorkerClient> worker_;
  std::unique_ptr<WorkerClient> reference_worker_;
  std::optional<DeviceFacts> device_;
};

}  // namespace kqual::worker
