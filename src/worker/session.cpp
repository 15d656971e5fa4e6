#include "kqual/worker/session.hpp"

#include "kqual/worker/protocol.hpp"

#include <fmt/format.h>

namespace kqual::worker {

Session::Session(SessionOptions opts) : opts_(std::move(opts)), scratch_("kqual") {
  if (!opts_.run_shared) opts_.run_shared = std::make_shared<RunShared>();
  WorkerOptions w;
  w.exe = opts_.exe;
  w.watchdog_seconds = opts_.watchdog_seconds;
  w.stderr_path = (scratch_.path() / "worker-stderr.log").string();
  w.wrapper = opts_.worker_wrapper;
  w.env = opts_.worker_env;
  worker_ = std::make_unique<WorkerClient>(w);
}

WorkerClient& Session::reference_worker() {
  if (!reference_worker_) {
    WorkerOptions w;
    w.exe = opts_.exe;
    w.watchdog_seconds = std::max(opts_.watchdog_seconds, 120.0);
    w.stderr_path = (scratch_.path() / "reference-worker-stderr.log").string();
    w.env = opts_.worker_env;  // the reference runs on the same device as the candidates
    reference_worker_ = std::make_unique<WorkerClient>(w);
  }
  return *reference_worker_;
}

const DeviceFacts& Session::device() {
  if (device_) return *device_;
  DeviceFacts f;
  if (!opts_.use_gpu) {
    f.why_absent = "GPU phases disabled (--no-gpu)";
  } else {
    // Driver init + context creation take ~0.3 s; give the first call extra room.
    WorkerReply r = worker_->call(to_json(HelloRequest{}), std::max(opts_.watchdog_seconds, 120.0));
    if (r.status == WorkerReply::Status::ok) {
      f.present = true;
      f.device = r.body.at("device");
      f.arch = f.device.at("arch");
      f.sms = f.device.at("sms");
      f.l2_bytes = f.device.at("l2_bytes");
      f.max_threads = f.device.at("max_threads_per_block");
      f.max_shared_optin = f.device.at("max_shared_per_block_optin");
    } else {
      f.why_absent = r.reason;
    }
  }
  device_ = f;
  return *device_;
}

}  // namespace kqual::worker
