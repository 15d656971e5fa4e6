#pragma once
// Where this kqual is: its executable, and the project folders found from it.
#include <filesystem>
#include <optional>
#include <string>

namespace kqual {

// The running executable (/proc/self/exe), or nothing when it cannot be read.
std::optional<std::filesystem::path> self_executable();
// The same, or Error(io) naming what to give instead (`instead`, e.g. "give --kqual").
std::filesystem::path self_executable_or_throw(const std::string& instead = "");

// The word a command line written for the user starts with to run this kqual: "kqual" when the
// kqual on $PATH is this executable, else its absolute path (a reproducer's command must run as
// printed, and a build tree's binary is seldom on the PATH).
std::string self_command();

// A word for a POSIX shell: as it is when plain (letters, digits, -_./=,:+), else single-quoted.
std::string shell_word(const std::string& s);

// A project folder of this kqual (contracts, baselines, candidates, tools): $KQUAL_HOME/<name> when
// it exists, else the nearest <name> above `hint` (when given), else above the executable. Never the
// working directory: it may be a candidate's own tree.
std::optional<std::filesystem::path> find_project_folder(const std::string& name, const std::filesystem::path& hint = {});

}  // namespace kqual
