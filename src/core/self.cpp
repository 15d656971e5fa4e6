// Self-location (core/self.hpp).
#include "kqual/core/self.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>

#include "kqual/core/error.hpp"

namespace kqual {
namespace fs = std::filesystem;

std::optional<fs::path> self_executable() {
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return std::nullopt;
  return fs::path(std::string(buf, std::size_t(n)));
}

fs::path self_executable_or_throw(const std::string& instead) {
  if (auto p = self_executable()) return *p;
  throw_error(ErrorKind::io, fmt::format("cannot find the kqual executable (/proc/self/exe){}", instead.empty() ? "" : "; " + instead));
}

std::optional<fs::path> find_project_folder(const std::string& name, const fs::path& hint) {
  std::error_code ec;
  if (const char* home = std::getenv("KQUAL_HOME"); home && *home) {
    const fs::path p = fs::path(home) / name;
    if (fs::is_directory(p, ec)) return fs::weakly_canonical(fs::absolute(p, ec), ec);
  }
  auto walk = [&](const fs::path& from) -> std::optional<fs::path> {
    const fs::path start = fs::weakly_canonical(fs::absolute(from, ec), ec);
    for (fs::path p = start; !p.empty(); p = p.parent_path()) {
      if (fs::is_directory(p / name, ec)) return p / name;
      if (p == p.parent_path()) break;
    }
    return std::nullopt;
  };
  if (!hint.empty())
    if (auto p = walk(hint)) return p;
  if (auto exe = self_executable())
    if (auto p = walk(exe->parent_path())) return p;
  return std::nullopt;
}

}  // namespace kqual
