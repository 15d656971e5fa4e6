#pragma once
// Internal to src/contract/: what the importers (import_definition.cpp, import_kernelbench*.cpp)
// share. Not a public header.
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace kqual::contract::detail {

// A TOML basic string: quotes, backslashes and newlines escaped.
std::string toml_quoted(const std::string& s);

// Writes a contract folder whole or not at all: every file into `out`.kqual-tmp, renamed to `out`,
// then loaded back as a declared contract; a folder that does not load is removed and reported as
// the importer's bug. `out` must not exist.
void write_imported_contract(const std::filesystem::path& out, const std::map<std::string, std::string>& files);

// The [contract] lines that state the run-to-run rule of an imported contract, with a comment saying
// why: `source` is the benchmark the file came from ("flashinfer-bench", "KernelBench"). Floating
// outputs under the source's tolerance: not required (the source judges each run against its
// reference and never compares runs, so split-K and atomics are normal there; kqual still holds each
// run and the difference between two runs to the bound). Integer outputs only: required (exact).
std::string determinism_toml(bool any_float_output, const std::string& source);

// ---- value families for imported contracts (import_families.cpp) ----

// An input the families may redraw: a floating tensor drawn from "normal" or "uniform" (integer
// inputs, indices, offsets, masks, constants and scalars are never offered), with its axes.
struct FamilyInput {
  std::string name, dist;           // dist: "normal" or "uniform"
  std::vector<std::string> shape;   // axis names, outermost first
};

struct FamilyText {
  std::string tool;                 // "kqual import-definition": who wrote them, for the comment
  double atol = 0;                  // the largest absolute tolerance over the floating outputs
  bool any_small_case = true;       // some case has every tensor within 2^16 elements (small_only)
  std::vector<std::string> kept;    // inputs that keep their values (weights, tables), for the comment
};

// The data inputs of an operation, which the families redraw: the offered inputs with an output's
// shape (the tensors an output is computed element for element from); where none has one, the first
// offered input (a GEMM's A). The others keep their values: scaling every factor of a product by
// 1e-3 would move the output by 1e-6, where any tolerance swallows it.
std::vector<FamilyInput> data_inputs(const std::vector<FamilyInput>& offered, const std::vector<std::vector<std::string>>& output_shapes);

// `[families.small_scale]`, `[families.large_scale]` and `[families.nonzero_mean]` over `data`, with
// comments saying why each exists and what the imported tolerance leaves of it; "" when data is empty.
std::string value_families_toml(const std::vector<FamilyInput>& data, const FamilyText& how);

}  // namespace kqual::contract::detail
