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

// A project folder of this kqual (contracts, baselines, candidates, tools): $KQUAL_HOME/<name> when
// it exists, else the nearest <name> above `hint` (when given), else above the executable. Never the
// working directory: it may be a candidate's own tree.
std::optional<std::filesystem::path> find_project_folder(const std::string& name, const std::filesystem::path& hint = {});

}  // namespace kqual
