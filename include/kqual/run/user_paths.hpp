#pragma once
// The paths a user names on the command line, checked while it is parsed, before any command does
// work: an input that is not there, or an output kqual cannot write, is a usage error (exit 2) that
// names the option, the path and what to do, never an internal error (exit 4) raised half-way
// through a run with a file system's words. Every command declares its path options through these
// helpers, so one mechanism serves them all (tests/cli/user_paths_test.cpp runs each command).
#include <filesystem>
#include <string>

namespace CLI {
class App;
class Option;
}  // namespace CLI

namespace kqual::run {

enum class PathRole {
  file,            // a file (an input to read, or an output file to create or replace)
  folder,          // a folder (an input to list, or an output folder to create or fill)
  file_or_folder,  // an input that may be either (a candidate folder or its kqual.toml)
};

// "" when `p` exists as `role` says; otherwise what is wrong with it and what to do. `what` (optional)
// says what the path should be ("a Triton cache, e.g. ~/.triton/cache").
std::string input_path_problem(const std::filesystem::path& p, PathRole role, const std::string& what = {});

// "" when kqual can create `p` as `role` says (a folder: create it, or write into it when it
// exists; a file: create or replace it, creating its folder); otherwise what is wrong with it and
// what to do. Permission bits answer nothing for root, nor on read-only or virtual file systems
// (/proc), so the nearest existing folder is probed by creating a folder in it and removing it
// again: nothing is left behind either way.
std::string output_path_problem(const std::filesystem::path& p, PathRole role);

// `o` (an option or positional whose values are paths) refuses, while the command line is parsed,
// a value for which input_path_problem / output_path_problem says something.
CLI::Option* input_path(CLI::Option* o, PathRole role, const std::string& what = {});
CLI::Option* output_path(CLI::Option* o, PathRole role);
// CLI11 validates given values only; once every command is registered, this makes each output_path
// option with a default (qualify's --out kqual-out) check that default too, when its command runs.
void check_output_defaults(CLI::App& app);

}  // namespace kqual::run
