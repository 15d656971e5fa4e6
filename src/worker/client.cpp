#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "kqual/core/child.hpp"
#include "kqual/core/error.hpp"
#include "kqual/core/self.hpp"
#include "kqual/worker/worker.hpp"

namespace kqual::worker {

const char* to_string(WorkerReply::Status s) {
  switch (s) {
    case WorkerReply::Status::ok: return "ok";
    case WorkerReply::Status::error: return "error";
    case WorkerReply::Status::crashed: return "crashed";
    case WorkerReply::Status::hung: return "hung";
    case WorkerReply::Status::protocol_error: return "protocol_error";
    case WorkerReply::Status::sticky_error: return "sticky_error";
  }
  return "?";
}

namespace {

constexpr double kWorkerExitGraceS = 0.5;  // [s] for a worker asked to exit to do so itself
constexpr double kWorkerEndS = 30;         // [s] for a worker whose pipe closed to end (a sanitizer wrapper writes its report)

// "kqual's own failure (while allocating the case's buffers): <what happened> — not the candidate's"
std::string harness_reason(const std::string& what, const std::string& reason) {
  return fmt::format("{} (while {}): {} — not the candidate's", kHarnessFailure, what, reason);
}

}  // namespace

bool is_harness_failure(const std::string& text) {
  const std::string mark = kHarnessFailure;
  if (text.rfind(mark, 0) == 0) return true;
  for (auto s : {WorkerReply::Status::error, WorkerReply::Status::crashed, WorkerReply::Status::hung})
    if (text.rfind(std::string(to_string(s)) + ": " + mark, 0) == 0) return true;
  return false;
}

WorkerClient::WorkerClient(WorkerOptions opts) : opts_(std::move(opts)) {
  // KQUAL_EXE lets test binaries and other embedders name the kqual binary that serves as worker.
  if (opts_.exe.empty())
    if (const char* e = std::getenv("KQUAL_EXE"); e && *e) opts_.exe = e;
  if (opts_.exe.empty()) opts_.exe = self_executable_or_throw().string();
  if (opts_.stderr_path.empty()) opts_.stderr_path = fmt::format("/tmp/kqual-worker-{}.log", getpid());
}

WorkerClient::~WorkerClient() {
  try {
    stop();
  } catch (...) {  // destructors never throw: the Child's own destructor still kills and reaps
  }
}

void WorkerClient::start() {
  ChildSpec spec;
  spec.exe = opts_.exe;
  spec.args = {"worker"};
  spec.env = environment_with(opts_.env);  // a name in opts_.env replaces the inherited one
  spec.wrapper = opts_.wrapper;
  spec.stderr_file = opts_.stderr_path;
  spec.what = "worker";
  spec.start_error_kind = ErrorKind::worker;
  child_ = std::make_unique<Child>(spec);
  ++started_;
}

void WorkerClient::stop() {
  if (!child_) return;
  // Asked to exit, given a moment to do so cleanly (a sanitizer wrapper writes its summary then),
  // then its process group killed.
  const auto grace = Child::after(kWorkerExitGraceS);
  (void)child_->write("{\"op\":\"exit\"}\n", grace);
  (void)child_->wait(grace);
  child_.reset();
}

WorkerReply WorkerClient::ended(const json& request) {
  WorkerReply reply;
  reply.status = WorkerReply::Status::crashed;
  const ChildExit e = child_->wait(Child::after(kWorkerEndS));
  const std::string op = request.value("op", std::string("?"));
  if (!e.exited && e.signal > 0)
    reply.reason = fmt::format("worker killed by signal {} ({}) during op '{}'", e.signal, strsignal(e.signal), op);
  else
    reply.reason = fmt::format("worker exited with status {} during op '{}'", e.status, op);
  const std::string tail = child_->stderr_tail(2000);
  if (!tail.empty()) reply.reason += "; its stderr ends: " + tail;
  child_.reset();
  return reply;
}

WorkerReply WorkerClient::call(const json& request, double timeout_s) {
  if (timeout_s <= 0) timeout_s = opts_.watchdog_seconds;
  if (!child_) start();
  WorkerReply reply;
  const auto deadline = Child::after(timeout_s);
  // A worker that is gone makes the write say closed; the read below reports how it ended.
  ChildIo io = child_->write(request.dump() + "\n", deadline);
  std::string msg;
  while (io != ChildIo::timed_out && (io = child_->read_line(msg, deadline)) == ChildIo::ok) {
    try {
      reply.body = json::parse(msg);
    } catch (const std::exception& e) {
      reply.status = WorkerReply::Status::protocol_error;
      reply.reason = fmt::format("worker sent a malformed reply ({}): {}", e.what(), msg.substr(0, 200));
      stop();
      return reply;
    }
    if (reply.body.is_object() && reply.body.contains("phase") && !reply.body.contains("ok")) {
      // A phase line: what the worker's own work is doing now ("" once the candidate's part runs).
      reply.harness = reply.body.value("phase", std::string());
      reply.body = json();
      continue;
    }
    bool ok = reply.body.value("ok", false);
    if (ok) {
      reply.harness.clear();
      return reply;
    }
    reply.reason = reply.body.value("error", std::string("worker reported an error without a message"));
    reply.harness = reply.body.value("harness", std::string());  // only recoverable errors carry it
    if (!reply.harness.empty()) reply.reason = harness_reason(reply.harness, reply.reason);
    if (reply.body.value("sticky", false)) {
      reply.status = WorkerReply::Status::sticky_error;
      stop();  // the context is unusable: the worker exits after replying
    } else {
      reply.status = WorkerReply::Status::error;
    }
    return reply;
  }
  if (io == ChildIo::timed_out) {
    child_.reset();  // its process group killed, the worker reaped
    reply.status = WorkerReply::Status::hung;
    reply.reason = fmt::format("no reply within the {:.3g} s watchdog (op '{}'); worker killed", timeout_s,
                               request.value("op", std::string("?")));
  } else {  // closed: the worker died
    const std::string harness = reply.harness;
    reply = ended(request);
    reply.harness = harness;
  }
  if (!reply.harness.empty()) reply.reason = harness_reason(reply.harness, reply.reason);
  return reply;
}

}  // namespace kqual::worker
