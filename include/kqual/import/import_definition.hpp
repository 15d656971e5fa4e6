#pragma once
// A flashinfer-bench / SOL-ExecBench Definition (JSON) as a declared contract folder:
// axes (const, var, expr), inputs and outputs (shape over axes, dtype; a null shape is a scalar),
// constraints (evaluated here, parsed only there), the PyTorch `run` reference (run in kqual's
// reference process), and from the workloads (JSONL) the benchmark shapes, the scalar values and
// SOL's per-workload tolerances. What kqual cannot express is refused by name.
// docs/declared-contracts.md, "Importing a Definition".
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace kqual::contract {

struct DefinitionImportOptions {
  std::filesystem::path definition;           // DEF.json
  std::filesystem::path workloads;            // optional W.jsonl
  std::filesystem::path out;                  // the contract folder to write (must not exist)
  // Tolerance when neither the Definition nor its workloads give one (flashinfer-bench states none in
  // the Definition): atol and rtol; negative (the default): kqual's default for each floating output,
  // from its dtype and the operation's reduction length (docs/declared-contracts.md).
  double atol = -1, rtol = -1;
  std::optional<double> cap;                  // SOL's max_error_cap when the workloads give a ratio without one
  // The value a scalar holds where the workloads give it several (NAME -> "true", "false" or a
  // number): the contract keeps the workloads that give it. Default: the value most workloads give.
  std::map<std::string, std::string> scalars;
};

struct DefinitionImport {
  std::string name;                           // the contract's name
  std::filesystem::path out;
  std::string contract_toml;                  // as written
  std::vector<std::string> notes;             // translations the user should know about
  int workloads = 0;                          // lines read
  std::vector<std::string> bench_shapes;
};

// Translates and writes out/contract.toml and out/reference.py (a new folder, written whole or not
// at all), then loads it back as a declared contract. Throws Error(input) naming the file, the key
// and the value of anything that cannot be translated.
DefinitionImport import_definition(const DefinitionImportOptions& o);

}  // namespace kqual::contract
