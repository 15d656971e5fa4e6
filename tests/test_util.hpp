#pragma once
// Helpers shared by test suites: find the kqual binary and the repository relative to the test
// executable (CTest files hold absolute paths; on the GPU machine the tree sits elsewhere), and
// run a command capturing its output and exit code.
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <string>

namespace kqual::test {

inline std::filesystem::path self_exe() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::filesystem::path(std::string(buf, std::size_t(n))) : std::filesystem::path();
}

// The build folder: the nearest ancestor of the test binary that holds tools/kqual/kqual.
inline std::filesystem::path build_dir() {
  for (auto p = self_exe().parent_path(); !p.empty() && p != p.parent_path(); p = p.parent_path())
    if (std::filesystem::exists(p / "tools/kqual/kqual")) return p;
  return {};
}

inline std::filesystem::path kqual_exe() { return build_dir() / "tools/kqual/kqual"; }

// The repository root: the nearest ancestor of the test binary that holds candidates/ and CMakeLists.txt.
inline std::filesystem::path repo_root() {
  for (auto p = self_exe().parent_path(); !p.empty() && p != p.parent_path(); p = p.parent_path())
    if (std::filesystem::exists(p / "candidates") && std::filesystem::exists(p / "CMakeLists.txt")) return p;
  return KQUAL_SOURCE_DIR;
}

struct CommandResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};

inline CommandResult run(const std::string& cmd) {
  CommandResult r;
  FILE* f = popen((cmd + " 2>&1").c_str(), "r");
  if (!f) return r;
  std::array<char, 4096> buf;
  while (std::size_t n = fread(buf.data(), 1, buf.size(), f)) r.output.append(buf.data(), n);
  int st = pclose(f);
  r.exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  return r;
}

inline std::string quote(const std::filesystem::path& p) { return "'" + p.string() + "'"; }

// The kqual binary, quoted for a shell command line.
inline std::string kq() { return quote(kqual_exe()); }

inline bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// A private temporary directory, removed with everything in it.
struct TempDir {
  std::filesystem::path path;
  TempDir() {
    std::string t = (std::filesystem::temp_directory_path() / "kqual-test-XXXXXX").string();
    path = mkdtemp(t.data());
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
};

}  // namespace kqual::test
