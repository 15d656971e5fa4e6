#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>

#include "kqual/core/error.hpp"
#include "kqual/core/self.hpp"
#include "kqual/worker/worker.hpp"

extern char** environ;

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

WorkerClient::~WorkerClient() { stop(); }

void WorkerClient::start() {
  int in_pipe[2], out_pipe[2];
  if (pipe2(in_pipe, O_CLOEXEC) != 0 || pipe2(out_pipe, O_CLOEXEC) != 0)
    throw_error(ErrorKind::io, fmt::format("pipe: {}", std::strerror(errno)));
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, in_pipe[0], 0);
  posix_spawn_file_actions_adddup2(&fa, out_pipe[1], 1);
  posix_spawn_file_actions_addopen(&fa, 2, opts_.stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  std::vector<std::string> env_store;
  // A name in opts_.env replaces the inherited one (not appended after it: getenv returns the first
  // match, so a parent's CUDA_VISIBLE_DEVICES=2,3 would win over a worker's pinned "3").
  auto overridden = [&](const char* entry) {
    for (const auto& kv : opts_.env)
      if (std::strncmp(entry, kv.first.c_str(), kv.first.size()) == 0 && entry[kv.first.size()] == '=') return true;
    return false;
  };
  for (char** e = environ; *e; ++e)
    if (!overridden(*e)) env_store.emplace_back(*e);
  for (const auto& [k, v] : opts_.env) env_store.push_back(k + "=" + v);
  std::vector<char*> envp;
  for (auto& s : env_store) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = opts_.wrapper;
  args.push_back(opts_.exe);
  args.push_back("worker");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = -1;
  int rc = opts_.wrapper.empty() ? posix_spawn(&pid, opts_.exe.c_str(), &fa, nullptr, argv.data(), envp.data())
                                 : posix_spawnp(&pid, args[0].c_str(), &fa, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  ::close(in_pipe[0]);
  ::close(out_pipe[1]);
  if (rc != 0) {
    ::close(in_pipe[1]);
    ::close(out_pipe[0]);
    throw_error(ErrorKind::worker, fmt::format("cannot start worker '{}': {}", args[0], std::strerror(rc)));
  }
  pid_ = pid;
  to_fd_ = in_pipe[1];
  from_fd_ = out_pipe[0];
  pending_.clear();
  ++started_;
}

void WorkerClient::stop() {
  if (pid_ > 0) {
    if (to_fd_ >= 0) {
      const char bye[] = "{\"op\":\"exit\"}\n";
      (void)!::write(to_fd_, bye, sizeof bye - 1);
    }
    // Give it a moment to exit cleanly, then kill.
    for (int i = 0; i < 50; ++i) {
      int st;
      if (waitpid(pid_, &st, WNOHANG) == pid_) { pid_ = -1; break; }
      usleep(10000);
    }
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  if (to_fd_ >= 0) ::close(to_fd_);
  if (from_fd_ >= 0) ::close(from_fd_);
  pid_ = -1;
  to_fd_ = from_fd_ = -1;
}

std::string WorkerClient::stderr_tail() const {
  std::ifstream in(opts_.stderr_path, std::ios::binary);
  std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (s.size() > 2000) s = "..." + s.substr(s.size() - 2000);
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

WorkerReply WorkerClient::call(const json& request, double timeout_s) {
  if (timeout_s <= 0) timeout_s = opts_.watchdog_seconds;
  if (pid_ < 0) start();
  WorkerReply reply;
  std::string line = request.dump() + "\n";
  ignore_sigpipe();
  for (std::size_t off = 0; off < line.size();) {
    ssize_t n = ::write(to_fd_, line.data() + off, line.size() - off);
    if (n <= 0) {
      if (errno == EINTR) continue;
      break;  // the worker is gone; the read below reports how it ended
    }
    off += std::size_t(n);
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  for (;;) {
    auto nl = pending_.find('\n');
    if (nl != std::string::npos) {
      std::string msg = pending_.substr(0, nl);
      pending_.erase(0, nl + 1);
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
    double left = std::chrono::duration<double>(deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
      pid_ = -1;
      stop();
      reply.status = WorkerReply::Status::hung;
      reply.reason = fmt::format("no reply within the {:.3g} s watchdog (op '{}'); worker killed", timeout_s,
                                 request.value("op", std::string("?")));
      if (!reply.harness.empty()) reply.reason = harness_reason(reply.harness, reply.reason);
      return reply;
    }
    pollfd pfd{from_fd_, POLLIN, 0};
    int pr = poll(&pfd, 1, int(std::min(left * 1000.0, 1000.0)) + 1);
    if (pr < 0 && errno != EINTR) throw_error(ErrorKind::io, fmt::format("poll: {}", std::strerror(errno)));
    if (pr <= 0) continue;
    char buf[65536];
    ssize_t n = ::read(from_fd_, buf, sizeof buf);
    if (n > 0) {
      pending_.append(buf, std::size_t(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    // EOF: the worker died.
    int st = 0;
    waitpid(pid_, &st, 0);
    pid_ = -1;
    stop();
    reply.status = WorkerReply::Status::crashed;
    if (WIFSIGNALED(st))
      reply.reason = fmt::format("worker killed by signal {} ({}) during op '{}'", WTERMSIG(st), strsignal(WTERMSIG(st)),
                                 request.value("op", std::string("?")));
    else
      reply.reason = fmt::format("worker exited with status {} during op '{}'", WEXITSTATUS(st),
                                 request.value("op", std::string("?")));
    std::string tail = stderr_tail();
    if (!tail.empty()) reply.reason += "; its stderr ends: " + tail;
    if (!reply.harness.empty()) reply.reason = harness_reason(reply.harness, reply.reason);
    return reply;
  }
}

}  // namespace kqual::worker
