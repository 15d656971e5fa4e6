#pragma once
// Helpers shared by the contract tests (declared contracts and the importers).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include "kqual/contract/declared/declared.hpp"
#include "kqual/import/import_definition.hpp"
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

// In a TEST: skipped, visibly, where that interpreter is missing.
#define KQUAL_NEED_NUMPY() \
  if (!::kqual::contract::test_util::have_numpy()) GTEST_SKIP() << "no Python 3 with NumPy (install python3-numpy)"

// The message of the Error f throws ("" when it throws none).
inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// A contract.toml written with the placeholder NAME: its first NAME replaced by `name`.
inline std::string named(std::string toml, const std::string& name) {
  toml.replace(toml.find("NAME"), 4, name);
  return toml;
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

// A one-axis contract.toml: y = f(x) over n elements, f32, within 1 ulp, its reference function f in
// reference.py. What tests vary: the summary, more [contract] keys, [axes.n]'s keys, more keys of
// tensor x, and tables after [reference] (each part one or more lines; an empty one left out).
struct OneAxis {
  std::string summary = "y = 2 x";
  std::string contract_keys;
  std::string axis = "range = [1, 1000000]\nhints = [32]\nbase = 40";
  std::string x_keys;
  std::string extra;
};
inline std::string one_axis_contract(const std::string& name, const OneAxis& o = {}) {
  auto lines = [](const std::string& part) { return part.empty() || part.back() == '\n' ? part : part + "\n"; };
  return "[contract]\nname = \"" + name + "\"\nsummary = \"" + o.summary + "\"\n" + lines(o.contract_keys) +
         "[axes.n]\n" + lines(o.axis) +
         "[tensors.x]\nrole = \"input\"\nshape = [\"n\"]\n" + lines(o.x_keys) +
         "[tensors.y]\nrole = \"output\"\nshape = [\"n\"]\nerror = { model = \"ulps\", ulps = 1 }\n"
         "[dtypes]\nall = [\"f32\"]\n[cost]\nflops = \"n\"\n"
         "[reference]\npython = \"reference.py\"\nfunction = \"f\"\n" +
         lines(o.extra);
}

// What import_definition throws for the Definition `def_json` (with the workloads `jsonl`), "" when
// it imports; a refused import leaves no output folder behind.
inline std::string definition_refusal(const std::string& def_json, const std::string& jsonl = "") {
  static int k = 0;
  ScratchDir dir("kqual-import-bad");
  DefinitionImportOptions o;
  o.definition = dir.path() / "def.json";
  std::ofstream(o.definition) << def_json;
  if (!jsonl.empty()) {
    o.workloads = dir.path() / "w.jsonl";
    std::ofstream(o.workloads) << jsonl;
  }
  o.out = dir.path() / ("out" + std::to_string(k++));
  try {
    (void)import_definition(o);
  } catch (const Error& e) {
    EXPECT_FALSE(std::filesystem::exists(o.out)) << "nothing half-written";
    return e.what();
  }
  return "";
}

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
