#pragma once
// Test fixtures made from bundled files: a copy of a bundled folder, a declared contract under another
// name, a good candidate whose manifest names another contract (the trust-boundary tests of cli,
// compare and screen).
#include <filesystem>
#include <regex>
#include <string>

#include "kqual/core/files.hpp"
#include "test_util.hpp"

namespace kqual::test {

// A copy of the bundled folder `bundled` (relative to the repository root) at `to`; returns `to`.
inline std::filesystem::path copy_bundled(const std::string& bundled, const std::filesystem::path& to) {
  std::filesystem::copy(repo_root() / bundled, to, std::filesystem::copy_options::recursive);
  return to;
}

// The bundled residual_add_relu_declared contract renamed `name`, in `dir` (its reference beside it);
// returns the contract file's canonical path.
inline std::filesystem::path renamed_declared_contract(const std::filesystem::path& dir, const std::string& name) {
  namespace fs = std::filesystem;
  const fs::path from = repo_root() / "contracts/residual_add_relu_declared";
  fs::create_directories(dir);
  write_file_atomic(dir / "contract.toml", std::regex_replace(read_text_file(from / "contract.toml"),
                                                              std::regex("name = \"residual_add_relu_declared\""),
                                                              "name = \"" + name + "\""));
  fs::copy_file(from / "reference.py", dir / "reference.py", fs::copy_options::overwrite_existing);
  return fs::weakly_canonical(dir / "contract.toml");
}

// The bundled residual_add_relu good candidate in `dir`, its manifest's contract set to `value` (a
// name or a path).
inline void good_candidate_naming(const std::filesystem::path& dir, const std::string& value) {
  namespace fs = std::filesystem;
  const fs::path from = repo_root() / "candidates/residual_add_relu/good";
  fs::create_directories(dir);
  fs::copy(from, dir, fs::copy_options::recursive | fs::copy_options::overwrite_existing);
  write_file_atomic(dir / "kqual.toml", std::regex_replace(read_text_file(from / "kqual.toml"), std::regex("contract = \"residual_add_relu\""),
                                                           "contract = \"" + value + "\""));
}

}  // namespace kqual::test
