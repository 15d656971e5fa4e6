// A long-lived child process behind pipes, with deadlines (core/child.hpp).
#include "kqual/core/child.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstring>
#include <mutex>

extern char** environ;

namespace kqual {
namespace {

// [ms] left until `deadline`, rounded up (a poll that returns early only loops), 0 once past.
int child_ms_until(Child::Clock::time_point deadline) {
  const auto now = Child::Clock::now();
  if (deadline <= now) return 0;
  const auto ms = std::chrono::ceil<std::chrono::milliseconds>(deadline - now).count();
  return int(std::min<long long>(ms, INT_MAX));
}

// SIGPIPE blocked in this thread for one write. A write to a pipe whose reader is gone raises
// SIGPIPE for the writing thread; blocked, it stays pending, and the destructor takes it back with
// sigtimedwait before restoring the mask, so it is never delivered. A SIGPIPE that was pending
// before is left alone (the write's merges into it, as a signal of that kind does anyway).
class SigpipeHeldForWrite {
 public:
  SigpipeHeldForWrite() {
    sigemptyset(&pipe_);
    sigaddset(&pipe_, SIGPIPE);
    sigset_t pending;
    sigemptyset(&pending);
    was_pending_ = sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE) == 1;
    pthread_sigmask(SIG_BLOCK, &pipe_, &old_);
  }
  ~SigpipeHeldForWrite() {
    if (raised_ && !was_pending_) {
      const timespec now{0, 0};
      while (sigtimedwait(&pipe_, nullptr, &now) < 0 && errno == EINTR) {
      }
    }
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }
  SigpipeHeldForWrite(const SigpipeHeldForWrite&) = delete;
  SigpipeHeldForWrite& operator=(const SigpipeHeldForWrite&) = delete;
  void raised() { raised_ = true; }

 private:
  sigset_t pipe_, old_;
  bool was_pending_ = false, raised_ = false;
};

// A child in a process group of its own no longer gets what the terminal sends kqual's group
// (Ctrl-C's SIGINT, a hangup) nor a SIGTERM sent to that group. So that it still ends with kqual, as
// it did in kqual's group, the first Child installs a handler for those three signals, where their
// action is the default: it kills the group of every child alive, then the signal ends kqual as it
// would have (SA_RESETHAND put the default back; SA_NODEFER lets the raise through at once).
constexpr std::size_t kLiveChildSlots = 1024;
std::atomic<pid_t> g_live_children[kLiveChildSlots];  // pids of children not yet reaped; 0 = free

extern "C" void child_groups_end_with_kqual(int sig) {
  for (auto& slot : g_live_children)
    if (const pid_t p = slot.load(std::memory_order_relaxed); p > 0) ::kill(-p, SIGKILL);  // async-signal-safe
  raise(sig);
}

void child_install_ending_once() {
  static std::once_flag once;
  std::call_once(once, [] {
    for (const int sig : {SIGINT, SIGTERM, SIGHUP}) {
      struct sigaction old{};
      if (sigaction(sig, nullptr, &old) != 0 || (old.sa_flags & SA_SIGINFO) || old.sa_handler != SIG_DFL) continue;
      struct sigaction sa{};
      sa.sa_handler = child_groups_end_with_kqual;
      sigemptyset(&sa.sa_mask);
      sa.sa_flags = SA_RESETHAND | SA_NODEFER;
      sigaction(sig, &sa, nullptr);
    }
  });
}

// More than kLiveChildSlots children at once go unlisted: they end with kqual only if idle.
void child_list(pid_t pid) {
  for (auto& slot : g_live_children) {
    pid_t free_slot = 0;
    if (slot.compare_exchange_strong(free_slot, pid)) return;
  }
}

void child_unlist(pid_t pid) {
  for (auto& slot : g_live_children) {
    pid_t mine = pid;
    if (slot.compare_exchange_strong(mine, 0)) return;
  }
}

void set_nonblocking(int fd) { fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK); }

// Closes both ends of the pipes made so far (a start that failed half way).
void close_pipes(std::initializer_list<int*> fds) {
  for (int* p : fds)
    for (int i = 0; i < 2; ++i)
      if (p[i] >= 0) ::close(p[i]);
}

// The last `max` bytes of a file, without reading the rest.
std::string child_file_tail(const std::filesystem::path& p, std::size_t max) {
  const int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "";
  struct stat st{};
  std::string s;
  if (fstat(fd, &st) == 0 && st.st_size > 0) {
    const std::size_t size = std::size_t(st.st_size), take = std::min(size, max + 1);  // one more: was it cut?
    s.resize(take);
    std::size_t got = 0;
    while (got < take) {
      const ssize_t n = pread(fd, s.data() + got, take - got, off_t(size - take + got));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      got += std::size_t(n);
    }
    s.resize(got);
  }
  ::close(fd);
  return s;
}

}  // namespace

std::vector<std::string> environment_with(const std::vector<std::pair<std::string, std::string>>& set,
                                          const std::vector<std::string>& unset) {
  auto named = [](const char* entry, const std::string& name) {
    return std::strncmp(entry, name.c_str(), name.size()) == 0 && entry[name.size()] == '=';
  };
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    bool drop = false;
    for (const auto& kv : set) drop = drop || named(*e, kv.first);
    for (const auto& u : unset) drop = drop || named(*e, u);
    if (!drop) env.emplace_back(*e);
  }
  for (const auto& [k, v] : set) env.push_back(k + "=" + v);
  return env;
}

std::string ChildExit::describe() const {
  if (exited) return fmt::format("exited with status {}", status);
  if (signal > 0) return fmt::format("killed by signal {} ({})", signal, strsignal(signal));
  return "ended in a way the system did not report";
}

Child::Clock::time_point Child::after(double seconds) {
  // Past ~10^9 s the duration would overflow: such a deadline is "never".
  if (!(seconds < 1e9)) return Clock::time_point::max();
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(std::max(seconds, 0.0)));
}

Child::Child(const ChildSpec& spec) : stderr_file_(spec.stderr_file), stderr_kept_(spec.stderr_kept) {
  // Everything the child needs is built before the spawn.
  std::vector<std::string> args = spec.wrapper;
  args.push_back(spec.exe);
  args.insert(args.end(), spec.args.begin(), spec.args.end());
  std::vector<char*> argv, envp;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env = spec.env;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);

  // O_CLOEXEC: a child another thread starts meanwhile must not hold our ends (its copy of the
  // stdout pipe's write end would keep us from ever seeing this child's EOF).
  int in[2] = {-1, -1}, out[2] = {-1, -1}, err[2] = {-1, -1};
  const bool capture = spec.stderr_file.empty();
  if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0 || (capture && pipe2(err, O_CLOEXEC) != 0)) {
    const int e = errno;
    close_pipes({in, out, err});
    throw_error(ErrorKind::io, fmt::format("pipe: {}", std::strerror(e)));
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, in[0], STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&fa, out[1], STDOUT_FILENO);
  if (capture) posix_spawn_file_actions_adddup2(&fa, err[1], STDERR_FILENO);
  else posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, spec.stderr_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  child_install_ending_once();
  // Its own process group; no signal blocked; SIGPIPE at its default whatever this process does.
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  posix_spawnattr_setpgroup(&attr, 0);
  sigset_t none, pipe_default;
  sigemptyset(&none);
  sigemptyset(&pipe_default);
  sigaddset(&pipe_default, SIGPIPE);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &pipe_default);
  pid_t pid = -1;
  const bool search = args[0].find('/') == std::string::npos;
  const int rc = search ? posix_spawnp(&pid, args[0].c_str(), &fa, &attr, argv.data(), envp.data())
                        : posix_spawn(&pid, args[0].c_str(), &fa, &attr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  ::close(in[0]);
  ::close(out[1]);
  if (capture) ::close(err[1]);
  if (rc != 0) {
    ::close(in[1]);
    ::close(out[0]);
    if (capture) ::close(err[0]);
    throw_error(spec.start_error_kind, fmt::format("cannot start {} '{}': {}", spec.what, args[0], std::strerror(rc)));
  }
  pid_ = pid;
  child_list(pid_);
  to_ = in[1];
  from_ = out[0];
  err_ = capture ? err[0] : -1;
  // Ours never block: every wait is a poll with the caller's deadline.
  set_nonblocking(to_);
  set_nonblocking(from_);
  if (err_ >= 0) set_nonblocking(err_);
}

Child::~Child() {
  if (!reaped_) (void)kill();
  close_fd(to_);
  close_fd(from_);
  close_fd(err_);
}

void Child::close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

void Child::close_input() { close_fd(to_); }

void Child::drain_stderr() {
  if (err_ < 0) return;
  char buf[16384];
  for (;;) {
    const ssize_t n = ::read(err_, buf, sizeof buf);
    if (n > 0) {
      stderr_.append(buf, std::size_t(n));
      if (stderr_.size() > stderr_kept_) stderr_.erase(0, stderr_.size() - stderr_kept_);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n == 0 || errno != EAGAIN) close_fd(err_);  // its end is closed (or broken): nothing more will come
    return;
  }
}

ChildIo Child::write(std::string_view bytes, Clock::time_point deadline) {
  if (to_ < 0) return ChildIo::closed;
  SigpipeHeldForWrite held;
  std::size_t off = 0;
  while (off < bytes.size()) {
    const ssize_t n = ::write(to_, bytes.data() + off, bytes.size() - off);
    if (n > 0) {
      off += std::size_t(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) {
      // The pipe is full: wait for room, draining its stderr meanwhile (a child blocked writing
      // stderr would never read its stdin again).
      pollfd fds[2] = {{to_, POLLOUT, 0}, {err_, POLLIN, 0}};
      const int ms = child_ms_until(deadline);
      const int pr = poll(fds, err_ >= 0 ? 2 : 1, ms);
      if (pr < 0 && errno != EINTR) throw_error(ErrorKind::io, fmt::format("poll: {}", std::strerror(errno)));
      if (err_ >= 0 && fds[1].revents) drain_stderr();
      if (pr == 0 && ms == 0) return ChildIo::timed_out;
      continue;
    }
    if (n < 0 && errno == EPIPE) held.raised();
    close_fd(to_);  // its reader is gone (EPIPE) or the pipe broke: no later write can succeed
    return ChildIo::closed;
  }
  return ChildIo::ok;
}

// More of its stdout into pending_: ok when some came, closed at its end, timed_out past deadline.
ChildIo Child::fill(Clock::time_point deadline) {
  for (;;) {
    if (from_ < 0) return ChildIo::closed;
    pollfd fds[2] = {{from_, POLLIN, 0}, {err_, POLLIN, 0}};
    const int ms = child_ms_until(deadline);
    const int pr = poll(fds, err_ >= 0 ? 2 : 1, ms);
    if (pr < 0) {
      if (errno == EINTR) continue;
      throw_error(ErrorKind::io, fmt::format("poll: {}", std::strerror(errno)));
    }
    if (err_ >= 0 && fds[1].revents) drain_stderr();
    if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) {
      char buf[65536];
      const ssize_t n = ::read(from_, buf, sizeof buf);
      if (n > 0) {
        pending_.append(buf, std::size_t(n));
        return ChildIo::ok;
      }
      if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      close_fd(from_);
      return ChildIo::closed;
    }
    if (pr == 0 && ms == 0) return ChildIo::timed_out;
  }
}

ChildIo Child::read_line(std::string& line, Clock::time_point deadline) {
  for (;;) {
    if (const auto nl = pending_.find('\n'); nl != std::string::npos) {
      line.assign(pending_, 0, nl);
      pending_.erase(0, nl + 1);
      return ChildIo::ok;
    }
    if (const ChildIo r = fill(deadline); r != ChildIo::ok) return r;
  }
}

ChildIo Child::read_bytes(std::size_t n, std::string& bytes, Clock::time_point deadline) {
  while (pending_.size() < n)
    if (const ChildIo r = fill(deadline); r != ChildIo::ok) return r;
  bytes.assign(pending_, 0, n);
  pending_.erase(0, n);
  return ChildIo::ok;
}

ChildExit Child::wait(Clock::time_point deadline) {
  if (reaped_) return exit_;
  // Until it ends or the deadline passes: WNOWAIT leaves it unreaped, so its pid, which names its
  // process group, cannot be reused before the kill below.
  for (;;) {
    siginfo_t si{};
    const int r = waitid(P_PID, id_t(pid_), &si, WEXITED | WNOHANG | WNOWAIT);
    if (r == 0 && si.si_pid == pid_) break;
    if (r < 0 && errno != EINTR) break;
    if (Clock::now() >= deadline) break;
    drain_stderr();
    usleep(useconds_t(std::clamp(child_ms_until(deadline), 1, 5) * 1000));
  }
  ::kill(-pid_, SIGKILL);  // the group: whatever it started, even after it ended itself
  child_unlist(pid_);      // before the reap: once reaped, its pid may name another process
  int st = 0;
  pid_t w;
  while ((w = waitpid(pid_, &st, 0)) < 0 && errno == EINTR) {
  }
  reaped_ = true;
  if (w == pid_ && WIFEXITED(st)) {
    exit_.exited = true;
    exit_.status = WEXITSTATUS(st);
  } else if (w == pid_ && WIFSIGNALED(st)) {
    exit_.signal = WTERMSIG(st);
  }
  drain_stderr();
  return exit_;
}

std::string Child::stderr_tail(std::size_t max_bytes) {
  drain_stderr();
  std::string s = stderr_file_.empty() ? stderr_ : child_file_tail(stderr_file_, max_bytes);
  if (s.size() > max_bytes) s = "..." + s.substr(s.size() - max_bytes);
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\r' || s.back() == '\t')) s.pop_back();
  return s;
}

}  // namespace kqual
