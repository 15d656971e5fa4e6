#include "kqual/core/process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>

#include "kqual/core/error.hpp"

extern char** environ;

namespace kqual {
namespace {

long long now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

constexpr std::size_t kStderrCap = 64 * 1024;  // [bytes] kept from a probe's stderr

}  // namespace

std::string signal_name(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev ? std::string("SIG") + abbrev : "signal " + std::to_string(sig);
}

ProcessResult run_process(const std::string& exe, const std::vector<std::string>& args,
                          const std::map<std::string, std::string>& set, const std::vector<std::string>& unset,
                          double timeout_s, const std::string& spawn_ns_arg) {
  // Everything the child needs is built before fork: after fork only async-signal-safe calls.
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    const std::string kv(*e);
    const std::string name = kv.substr(0, kv.find('='));
    bool drop = set.count(name) > 0;
    for (const auto& u : unset) drop = drop || u == name;
    if (!drop) env.push_back(kv);
  }
  for (const auto& [k, v] : set) env.push_back(k + "=" + v);

  ProcessResult r;
  std::vector<std::string> argv_s{exe};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  r.spawn_ns = now_ns();
  if (!spawn_ns_arg.empty()) {
    argv_s.push_back(spawn_ns_arg);
    argv_s.push_back(std::to_string(r.spawn_ns));
  }
  std::vector<char*> argv, envp;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);

  int out_pipe[2], err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0 || pipe2(err_pipe, O_CLOEXEC) != 0)
    throw_error(ErrorKind::io, std::string("pipe: ") + std::strerror(errno));
  const pid_t pid = fork();
  if (pid < 0) throw_error(ErrorKind::io, std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    setpgid(0, 0);
    const rlimit no_core{0, 0};  // a crashing probe is a recorded failure, not a core file
    setrlimit(RLIMIT_CORE, &no_core);
    dup2(out_pipe[1], STDOUT_FILENO);
    dup2(err_pipe[1], STDERR_FILENO);
    execve(exe.c_str(), argv.data(), envp.data());
    _exit(127);
  }
  setpgid(pid, pid);  // also from the parent: no race with the kill below
  close(out_pipe[1]);
  close(err_pipe[1]);

  const long long deadline = r.spawn_ns + (long long)(timeout_s * 1e9);
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  int open_fds = 2;
  char buf[4096];
  while (open_fds > 0) {
    const long long left_ms = (deadline - now_ns()) / 1000000;
    if (left_ms <= 0) {
      r.timed_out = true;
      kill(-pid, SIGKILL);
      break;
    }
    const int n = poll(fds, 2, int(std::min<long long>(left_ms, 1000)));
    if (n < 0 && errno != EINTR) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const ssize_t got = read(fds[i].fd, buf, sizeof buf);
      if (got > 0) {
        std::string& dst = i == 0 ? r.out : r.err;
        if (i == 0 || dst.size() < kStderrCap) dst.append(buf, std::size_t(got));
      } else if (got == 0 || (errno != EINTR && errno != EAGAIN)) {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }
  for (auto& f : fds)
    if (f.fd >= 0) close(f.fd);
  int status = 0;
  // The pipes may close before the process ends (or a probe may close them and hang): the same
  // deadline applies to its exit.
  for (;;) {
    const pid_t w = waitpid(pid, &status, r.timed_out ? 0 : WNOHANG);
    if (w == pid) break;
    if (w < 0 && errno != EINTR) break;
    if (w == 0) {
      if (now_ns() >= deadline) {
        r.timed_out = true;
        kill(-pid, SIGKILL);
      } else {
        usleep(2000);
      }
    }
  }
  r.wall_s = double(now_ns() - r.spawn_ns) * 1e-9;
  if (WIFEXITED(status)) {
    r.exited = true;
    r.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    r.signal = WTERMSIG(status);
  }
  return r;
}

}  // namespace kqual
