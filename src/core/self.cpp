// Self-location (core/self.hpp).
#include "kqual/core/self.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <string_view>

#include "kqual/core/error.hpp"
#include "kqual/core/files.hpp"

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

std::string self_command() {
  const std::optional<fs::path> exe = self_executable();
  if (!exe) return "kqual";
  std::error_code ec;
  if (const char* path = std::getenv("PATH"))
    for (const std::string& dir : split_path_list(path)) {
      const fs::path p = fs::path(dir) / "kqual";
      if (fs::exists(p, ec)) return fs::equivalent(p, *exe, ec) ? std::string("kqual") : exe->string();
    }
  return exe->string();
}

std::string shell_word(const std::string& s) {
  bool plain = !s.empty();
  for (char ch : s)
    if (!(std::isalnum(static_cast<unsigned char>(ch)) || std::string_view("-_./=,:+").find(ch) != std::string_view::npos)) plain = false;
  if (plain) return s;
  std::string out = "'";
  for (char ch : s) out += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
  return out + "'";
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
      // An installed kqual (cmake --install): PREFIX/bin/kqual, its folders in PREFIX/share/kqual.
      if (fs::is_directory(p / "share" / "kqual" / name, ec)) return p / "share" / "kqual" / name;
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
