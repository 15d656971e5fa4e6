#pragma once
// Helpers shared by the contract tests (declared contracts and the importers).
#include <filesystem>
#include <fstream>
#include <string>

#include "kqual/contract/declared/declared.hpp"
#include "kqual/contract/reference_host.hpp"
#include "kqual/core/error.hpp"
#include "kqual/core/files.hpp"

namespace kqual::contract::test_util {

// Whether the reference interpreter (Python 3 with NumPy) is here: declared references need it.
inline bool have_numpy() {
  try {
    (void)reference_python();
    return true;
  } catch (const Error&) {
    return false;
  }
}

// The reference processes of this test binary, which is the run here: each declared contract's
// Python process starts once, however many cases its tests evaluate.
inline ReferenceHost& run_host() {
  static ReferenceHost host;
  return host;
}

// A contract folder written by a test: <scratch>/<name>/contract.toml + reference.py.
struct ContractFolder {
  ScratchDir dir{"kqual-contract-test"};
  std::filesystem::path file;
  ContractFolder(const std::string& toml, const std::string& py, const std::string& name = "c") {
    std::filesystem::create_directories(dir.path() / name);
    file = dir.path() / name / "contract.toml";
    std::ofstream(file) << toml;
    std::ofstream(dir.path() / name / "reference.py") << py;
  }
};

// The text of one TOML table of a written contract, from its header up to the next table.
inline std::string toml_table(const std::string& toml, const std::string& header) {
  const std::size_t at = toml.find(header + "\n");
  if (at == std::string::npos) return "";
  const std::size_t end = toml.find("\n[", at + header.size());
  std::string t = toml.substr(at, end == std::string::npos ? std::string::npos : end - at);
  while (!t.empty() && t.back() == '\n') t.pop_back();
  return t;
}

}  // namespace kqual::contract::test_util
