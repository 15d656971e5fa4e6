// The PyTorch timing worker process (torch_baseline_worker.hpp).
#include "torch_baseline_worker.hpp"

#include <fmt/format.h>

#include "kqual/core/error.hpp"

namespace kqual::bench {
namespace fs = std::filesystem;

namespace {
constexpr double kTorchExitGraceS = 5;  // [s] for a worker whose pipes closed to end, so its stderr is whole
}  // namespace

TorchWorker::TorchWorker(const std::string& python, const fs::path& script, const json& cfg, const fs::path& err_file, std::string what)
    : what_(std::move(what)) {
  ChildSpec spec;
  spec.exe = python;
  spec.args = {script.string(), cfg.dump()};
  spec.env = environment_with();
  spec.stderr_file = err_file;
  spec.what = what_;
  try {
    child_ = std::make_unique<Child>(spec);
  } catch (const Error& e) {
    start_error_ = e.what();  // answered as a worker that died: the phase says it did not start
  }
}

json TorchWorker::call(const json* request, double timeout_s) {
  if (!child_) return died();
  const auto deadline = Child::after(timeout_s);
  ChildIo io = request ? child_->write(request->dump() + "\n", deadline) : ChildIo::ok;
  std::string line;
  if (io == ChildIo::ok) io = child_->read_line(line, deadline);
  if (io == ChildIo::timed_out) return json{{"ok", false}, {"code", "timeout"}, {"error", fmt::format("no reply in {:.0f} s", timeout_s)}};
  if (io == ChildIo::closed) return died();
  json j = json::parse(line, nullptr, false);
  if (j.is_discarded()) return json{{"ok", false}, {"code", "protocol"}, {"error", "unreadable reply: " + line.substr(0, 300)}};
  return j;
}

json TorchWorker::died() {
  std::string err = start_error_;
  if (child_) {
    (void)child_->wait(Child::after(kTorchExitGraceS));
    err = child_->stderr_tail(1500);
  }
  return json{{"ok", false}, {"code", "worker_died"}, {"error", what_ + " exited" + (err.empty() ? "" : ": " + err)}};
}

}  // namespace kqual::bench
