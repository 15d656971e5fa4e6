// The PyTorch timing worker process (torch_baseline_worker.hpp).
#include "torch_baseline_worker.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "kqual/contract/declared/declared.hpp"
#include "kqual/core/error.hpp"
#include "kqual/core/self.hpp"

namespace kqual::bench {
namespace fs = std::filesystem;

namespace {
constexpr double kTorchExitGraceS = 5;  // [s] for a worker whose pipes closed to end, so its stderr is whole
constexpr double kTorchHelloTimeout = 300;  // [s] import torch, CUDA context, NVML
}  // namespace

TorchWorker::TorchWorker(const std::string& python, const fs::path& script, const json& cfg, const fs::path& err_file, std::string what,
                         const std::vector<std::pair<std::string, std::string>>& env)
    : what_(std::move(what)) {
  ChildSpec spec;
  spec.exe = python;
  spec.args = {script.string(), cfg.dump()};
  spec.env = environment_with(env);
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
  if (io == ChildIo::timed_out) {
    // Where it was stuck: the workers dump every thread's Python stack to stderr a second before the
    // request's deadline (faulthandler), so a hang names its line rather than only its duration. A hint for
    // the reader only: the verdict is the missing reply, and the submission's own code can write to stderr too.
    std::string err = fmt::format("no reply in {:.0f} s", timeout_s);
    if (const std::string tail = child_->stderr_tail(1500); !tail.empty())
      err += "; the worker's stderr ends (its stack dump, or whatever the process wrote last): " + tail;
    return json{{"ok", false}, {"code", "timeout"}, {"error", std::move(err)}};
  }
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

void add_torch_samples(const json& a, int block, Series& se) {
  auto add = [&](const char* key, std::vector<double>& into) {
    for (const auto& x : a.value(key, json::array())) into.push_back(x.get<double>());
  };
  add("samples_ms", se.samples_ms);
  if (block == 0) add("warmup_ms", se.warmup_ms);
  add("sm_mhz", se.sm_clock_mhz);
  add("mem_mhz", se.mem_clock_mhz);
  se.reference_sm_mhz = a.value("reference_sm_mhz", 0u);
  se.max_temperature_c = std::max(se.max_temperature_c, a.value("max_temperature_c", 0u));
  se.clocks_note = a.value("clocks_note", std::string());
  se.discarded += a.value("discarded", 0);
  for (const auto& e : a.value("clock_events", json::array()))
    if (se.clock_events.size() < 20) se.clock_events.push_back(fmt::format("block {}, {}", block + 1, e.get<std::string>()));
  se.clock_guard_exhausted = se.clock_guard_exhausted || a.value("guard_exhausted", false);
}

std::unique_ptr<RecordChannel> record_channel_for(const fs::path& dir, std::vector<std::pair<std::string, std::string>>& env) {
  const fs::path lib = record_library();
  if (lib.empty())
    throw_error(ErrorKind::internal, "libkqual_record.so (kqual's activity recorder) is not beside the kqual executable; set "
                                     "KQUAL_RECORD_LIB to it: a PyTorch submission is not judged without it");
  auto channel = std::make_unique<RecordChannel>(dir);
  for (auto& e : channel->env(lib)) env.push_back(std::move(e));
  return channel;
}

void greet_torch_worker(TorchStart& ts, const TorchOperation& op) {
  if (!ts.w || !ts.hello.is_null()) return;
  ts.hello = ts.w->call(nullptr, kTorchHelloTimeout);
  ts.blocker = torch_hello_blocker(ts.hello, op);
}

TorchStart start_torch_worker(const fs::path& scratch, const TorchOperation& op, const std::string& compile_mode, bool with_reference,
                              bool record, bool greet) {
  TorchStart ts;
  std::string python;
  fs::path script;
  try {
    python = contract::reference_python();
    const auto tools = find_project_folder("tools/torch");
    if (!tools || !fs::exists(*tools / "timing_worker.py"))
      throw_error(ErrorKind::input, "tools/torch/timing_worker.py not found ($KQUAL_HOME/tools/torch, or a folder above the kqual executable)");
    script = *tools / "timing_worker.py";
  } catch (const Error& e) {
    ts.blocker = std::string("not run: ") + e.what();
    return ts;
  }
  const fs::path root = scratch / "torch";
  fs::create_directories(root);
  json cfg{{"compile_mode", compile_mode}};
  if (with_reference && op.reference) {
    cfg["file"] = fs::absolute(op.reference->file).string();
    cfg["function"] = op.reference->function;
  }
  std::vector<std::pair<std::string, std::string>> env;
  std::unique_ptr<RecordChannel> channel;
  if (record) {
    try {
      channel = record_channel_for(root / "record", env);
    } catch (const Error& e) {
      ts.blocker = std::string("not run: ") + e.what();
      return ts;
    }
  }
  ts.w = std::make_unique<TorchWorker>(python, script, cfg, root / "worker-stderr.txt", "the PyTorch timing worker", env);
  if (channel) ts.w->attach_record(std::move(channel));
  if (greet) greet_torch_worker(ts, op);
  return ts;
}

}  // namespace kqual::bench
