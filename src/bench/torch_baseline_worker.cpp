// The PyTorch timing worker process (torch_baseline_worker.hpp).
#include "torch_baseline_worker.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "kqual/core/error.hpp"
#include "kqual/core/self.hpp"
#include "kqual/core/files.hpp"

namespace kqual::bench {
namespace fs = std::filesystem;

TorchWorker::TorchWorker(const std::string& python, const fs::path& script, const json& cfg, const fs::path& err_file)
    : err_file_(err_file) {
  int in_pipe[2], out_pipe[2];
  if (pipe2(in_pipe, O_CLOEXEC) != 0 || pipe2(out_pipe, O_CLOEXEC) != 0)
    throw_error(ErrorKind::io, std::string("pipe: ") + std::strerror(errno));
  ignore_sigpipe();
  std::vector<std::string> args = {python, script.string(), cfg.dump()};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_ = fork();
  if (pid_ < 0) throw_error(ErrorKind::io, std::string("fork: ") + std::strerror(errno));
  if (pid_ == 0) {
    dup2(in_pipe[0], STDIN_FILENO);
    dup2(out_pipe[1], STDOUT_FILENO);
    const int ef = open(err_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (ef >= 0) dup2(ef, STDERR_FILENO);
    execv(argv[0], argv.data());
    _exit(127);
  }
  close(in_pipe[0]);
  close(out_pipe[1]);
  to_ = in_pipe[1];
  from_ = out_pipe[0];
}

TorchWorker::~TorchWorker() {
  if (to_ >= 0) close(to_);
  if (from_ >= 0) close(from_);
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    int st = 0;
    waitpid(pid_, &st, 0);
  }
}

json TorchWorker::call(const json* request, double timeout_s) {
  if (request) {
    const std::string l = request->dump() + "\n";
    for (std::size_t off = 0; off < l.size();) {
      const ssize_t w = write(to_, l.data() + off, l.size() - off);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) return died();
      off += std::size_t(w);
    }
  }
  for (;;) {
    if (auto nl = pending_.find('\n'); nl != std::string::npos) {
      const std::string line = pending_.substr(0, nl);
      pending_.erase(0, nl + 1);
      json j = json::parse(line, nullptr, false);
      if (j.is_discarded()) return json{{"ok", false}, {"code", "protocol"}, {"error", "unreadable reply: " + line.substr(0, 300)}};
      return j;
    }
    pollfd p{from_, POLLIN, 0};
    const int r = poll(&p, 1, int(timeout_s * 1000));
    if (r == 0) return json{{"ok", false}, {"code", "timeout"}, {"error", fmt::format("no reply in {:.0f} s", timeout_s)}};
    if (r < 0 && errno == EINTR) continue;
    char buf[65536];
    const ssize_t n = read(from_, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return died();
    pending_.append(buf, std::size_t(n));
  }
}

json TorchWorker::died() {
  std::string err;
  try {
    err = read_text_file(err_file_);
  } catch (const Error&) {
  }
  if (err.size() > 1500) err = "..." + err.substr(err.size() - 1500);
  return json{{"ok", false}, {"code", "worker_died"}, {"error", "the PyTorch timing worker exited" + (err.empty() ? "" : ": " + err)}};
}

}  // namespace kqual::bench
