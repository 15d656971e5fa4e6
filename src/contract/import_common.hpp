#pragma once
// Internal to src/contract/: what the importers (import_definition.cpp, import_kernelbench*.cpp)
// share. Not a public header.
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "kqual/core/json.hpp"

namespace kqual::contract::detail {

// Checked reads of an untrusted JSON file (a Definition, its workloads, a KernelBench capture): a
// missing key or a value of another type is an input error naming the file and the key
// ("def.json: inputs.x.shape[1]: expected a string (an axis name), got the number 3"), never a json
// exception, which the command line would report as kqual's own internal error (exit 4).
class JsonIn {
 public:
  explicit JsonIn(std::string file) : file_(std::move(file)) {}
  const std::string& file() const { return file_; }
  [[noreturn]] void fail(const std::string& key, const std::string& why) const;
  // `v` itself, of the named type; `what` says what it is for ("an axis name").
  const json& object(const json& v, const std::string& key) const;
  const json& array(const json& v, const std::string& key) const;
  std::string string(const json& v, const std::string& key, const char* what = "a string") const;
  std::int64_t integer(const json& v, const std::string& key) const;
  double number(const json& v, const std::string& key) const;
  bool boolean(const json& v, const std::string& key) const;
  // The member `name` of the object `obj` (found at `key`; "" at the top level): required, or
  // nullptr when absent. A member that is present, null included, must have the expected type.
  const json* member(const json& obj, const std::string& key, const std::string& name, bool required) const;
  std::string string_or(const json& obj, const std::string& key, const std::string& name, const std::string& dflt) const;
  bool boolean_or(const json& obj, const std::string& key, const std::string& name, bool dflt) const;
  // "inputs" + "x" -> "inputs.x"; "" + "x" -> "x".
  static std::string at(const std::string& key, const std::string& name) { return key.empty() ? name : key + "." + name; }

 private:
  std::string file_;
};

// How a JSON value reads in an error: null, true, the number 3, the string "x", an array, an object.
std::string json_kind(const json& v);

// A name the written contract uses as a TOML key ([tensors.<name>]), an expression variable and a
// Python keyword argument of the reference: letters, digits and _, not starting with a digit.
bool is_plain_name(const std::string& s);

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

// ---- the KernelBench capture (import_kernelbench_capture.cpp) ----

// Checks every field of a capture that translate_kernelbench reads for the type the capture script
// writes: an input error naming `capture_file` (or "<problem> (its capture)") and the key otherwise.
// Refuses, naming `problem`: a failed capture (its code and error), a random forward, a 0-d input
// or parameter, a dim of size 0. Returns notes (random_forward null: forward was not run).
std::vector<std::string> check_capture(const json& cap, const std::string& problem, const std::string& capture_file);

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
