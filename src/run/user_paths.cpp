#include "kqual/run/user_paths.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

namespace kqual::run {
namespace fs = std::filesystem;
namespace {

const char* noun(PathRole role) {
  switch (role) {
    case PathRole::file: return "file";
    case PathRole::folder: return "folder";
    case PathRole::file_or_folder: return "file or folder";
  }
  return "path";
}

// " (relative to the working directory /x/y)" for a relative path: where kqual looked is then
// plain even when the command ran from a script.
std::string where_relative(const fs::path& p) {
  std::error_code ec;
  if (p.is_absolute()) return {};
  const fs::path cwd = fs::current_path(ec);
  return ec ? std::string() : fmt::format(" (relative to the working directory {})", cwd.string());
}

// The folder an output `p` is first written into that exists now: `p` itself for an existing
// folder, else its nearest existing ancestor. Empty with *problem set when that ancestor is a file.
fs::path existing_folder_for(const fs::path& p, bool p_is_folder, std::string* problem) {
  std::error_code ec;
  fs::path abs = fs::absolute(p, ec).lexically_normal();
  if (ec) abs = p;
  if (p_is_folder && fs::is_directory(abs, ec)) return abs;
  fs::path a = abs.parent_path();
  while (!a.empty() && !fs::exists(a, ec) && a != a.parent_path()) a = a.parent_path();
  if (a.empty()) a = ".";
  if (!fs::is_directory(a, ec)) {
    *problem = fmt::format("{} cannot be created: {} is a file, not a folder; name a path under a folder", p.string(),
                           a.string());
    return {};
  }
  return a;
}

// "" when a folder can be created in `dir` (and removed again); otherwise why not.
std::string probe_writable(const fs::path& dir) {
  static std::atomic<unsigned> serial{0};
  const fs::path probe = dir / fmt::format(".kqual-write-probe-{}-{}", ::getpid(), serial++);
  if (::mkdir(probe.c_str(), 0700) == 0) {
    ::rmdir(probe.c_str());
    return {};
  }
  const int e = errno;
  if (e == EEXIST) return {};  // another kqual's probe of the same name: the folder takes new entries
  // ENOENT from mkdir in an existing folder: a virtual file system (/proc) that takes no new entries.
  const std::string why = e == ENOENT ? "its file system takes no new files" : std::strerror(e);
  return fmt::format("cannot write in {} ({})", dir.string(), why);
}

}  // namespace

std::string input_path_problem(const fs::path& p, PathRole role, const std::string& what) {
  const std::string expected = what.empty() ? fmt::format("name an existing {}", noun(role)) : "expected " + what;
  if (p.empty()) return fmt::format("an empty path; {}", expected);
  std::error_code ec;
  const fs::file_status st = fs::status(p, ec);
  if (!fs::exists(st)) return fmt::format("{}: no such {}{}; {}", p.string(), noun(role), where_relative(p), expected);
  if (role == PathRole::file && fs::is_directory(st)) return fmt::format("{} is a folder, not a file; {}", p.string(), expected);
  if (role == PathRole::folder && !fs::is_directory(st))
    return fmt::format("{} is a file, not a folder; {}", p.string(), expected);
  if (::access(p.c_str(), R_OK) != 0)
    return fmt::format("{}: cannot read it ({})", p.string(), std::strerror(errno));
  return {};
}

std::string output_path_problem(const fs::path& p, PathRole role) {
  if (p.empty()) return fmt::format("an empty path: name the {} to write", noun(role));
  std::error_code ec;
  const fs::file_status st = fs::status(p, ec);
  const bool want_folder = role == PathRole::folder;
  if (fs::exists(st) && want_folder && !fs::is_directory(st))
    return fmt::format("{} exists and is a file, not a folder; name a new folder (or an existing one)", p.string());
  if (fs::exists(st) && !want_folder && fs::is_directory(st))
    return fmt::format("{} is a folder; name the file to write", p.string());
  std::string problem;
  const fs::path dir = existing_folder_for(p, want_folder, &problem);
  if (!problem.empty()) return problem;
  const std::string why = probe_writable(dir);
  if (!why.empty()) return fmt::format("{} cannot be written: {}; name a {} you can write", p.string(), why, noun(role));
  return {};
}

CLI::Option* input_path(CLI::Option* o, PathRole role, const std::string& what) {
  return o->check(CLI::Validator(
      [role, what](std::string& value) { return input_path_problem(value, role, what); },
      ""));
}

namespace {
constexpr const char* kOutputFolder = "kqual-output-folder";  // the validators' names, found again below
constexpr const char* kOutputFile = "kqual-output-file";
}  // namespace

CLI::Option* output_path(CLI::Option* o, PathRole role) {
  return o->check(CLI::Validator([role](std::string& value) { return output_path_problem(value, role); }, "",
                                 role == PathRole::folder ? kOutputFolder : kOutputFile));
}

void check_output_defaults(CLI::App& app) {
  for (CLI::App* cmd : app.get_subcommands([](CLI::App*) { return true; })) {
    for (CLI::Option* o : cmd->get_options()) {
      if (o->get_default_str().empty()) continue;
      for (const char* name : {kOutputFolder, kOutputFile}) {
        CLI::Validator* v = nullptr;
        try {
          v = o->get_validator(name);
        } catch (const CLI::OptionNotFound&) {
          continue;
        }
        const PathRole role = name == kOutputFolder ? PathRole::folder : PathRole::file;
        // CLI11 runs a forced option's callback, validators included, under every command, parsed
        // or not: only the command that runs checks its default (screen's, not under `screen merge`).
        v->operation([cmd, role](std::string& value) {
          const bool runs = cmd->parsed() && cmd->get_subcommands([](const CLI::App* s) { return s->parsed(); }).empty();
          return runs ? output_path_problem(value, role) : std::string();
        });
        o->force_callback();
      }
    }
    check_output_defaults(*cmd);
  }
}

}  // namespace kqual::run
