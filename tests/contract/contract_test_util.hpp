#pragma once
// Helpers shared by the contract tests: the declared contracts and the importers, and the built-in
// contracts' CPU tests (tests/contract/builtin/*/, residual_add_relu_test.cpp).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "kqual/contract/contract.hpp"
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

// A part of a contract.toml (one or more lines) ended by a newline; an empty one left out.
inline std::string toml_lines(const std::string& part) { return part.empty() || part.back() == '\n' ? part : part + "\n"; }

// The tables that end these tests' contract.toml files: `flops` as the cost, the reference function f
// in reference.py; with f32_reference_tables, after the dtypes f32 only.
inline std::string cost_and_reference_tables(const std::string& flops) {
  return "[cost]\nflops = \"" + flops + "\"\n[reference]\npython = \"reference.py\"\nfunction = \"f\"\n";
}
inline std::string f32_reference_tables(const std::string& flops) {
  return "[dtypes]\nall = [\"f32\"]\n" + cost_and_reference_tables(flops);
}

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
  return "[contract]\nname = \"" + name + "\"\nsummary = \"" + o.summary + "\"\n" + toml_lines(o.contract_keys) +
         "[axes.n]\n" + toml_lines(o.axis) +
         "[tensors.x]\nrole = \"input\"\nshape = [\"n\"]\n" + toml_lines(o.x_keys) +
         "[tensors.y]\nrole = \"output\"\nshape = [\"n\"]\nerror = { model = \"ulps\", ulps = 1 }\n" +
         f32_reference_tables("n") + toml_lines(o.extra);
}

// A rows x cols contract.toml: y = f(x), both rows x cols, f32, rows * cols flops, its reference
// function f in reference.py. What tests vary: the summary, the [axes.rows] and [axes.cols] tables,
// more keys of tensors x and y, y's error model, and tables after [reference].
struct RowsCols {
  std::string summary = "y = 2 x, rows x cols";
  std::string axes;
  std::string x_keys;
  std::string y_keys;
  std::string error = "{ model = \"ulps\", ulps = 1 }";
  std::string extra;
};
inline std::string rows_cols_contract(const std::string& name, const RowsCols& o) {
  return "[contract]\nname = \"" + name + "\"\nsummary = \"" + o.summary + "\"\n" + toml_lines(o.axes) +
         "[tensors.x]\nrole = \"input\"\nshape = [\"rows\", \"cols\"]\n" + toml_lines(o.x_keys) +
         "[tensors.y]\nrole = \"output\"\nshape = [\"rows\", \"cols\"]\nerror = " + o.error + "\n" + toml_lines(o.y_keys) +
         f32_reference_tables("rows * cols") + toml_lines(o.extra);
}

// The import of the Definition <dir>/<stem>.json, its workloads <stem>.jsonl beside it, into `out`.
inline DefinitionImportOptions definition_files(const std::filesystem::path& dir, const std::string& stem,
                                                const std::filesystem::path& out) {
  DefinitionImportOptions o;
  o.definition = dir / (stem + ".json");
  o.workloads = dir / (stem + ".jsonl");
  o.out = out;
  return o;
}

// A Definition fixture <fixtures>/<stem> and its workloads copied into `dir` as `name` (every "<stem>" in
// them renamed), and their import into <dir>/<name>: a process registers each declared contract name
// once, and another test imports the fixture under its own.
inline DefinitionImportOptions renamed_definition(const std::filesystem::path& fixtures, const std::filesystem::path& dir,
                                                  const std::string& stem, const std::string& name) {
  const DefinitionImportOptions o = definition_files(dir, name, dir / name);
  for (const auto& [from, to] : {std::pair{fixtures / (stem + ".json"), o.definition}, {fixtures / (stem + ".jsonl"), o.workloads}}) {
    std::string text = read_text_file(from);
    for (std::size_t p; (p = text.find("\"" + stem + "\"")) != std::string::npos;) text.replace(p, stem.size() + 2, "\"" + name + "\"");
    write_file_atomic(to, text);
  }
  return o;
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

// ---- The built-in contracts' CPU tests ---------------------------------------------------------

// A candidate claiming f32 only, at the default alignment: the usual claims of the declared contracts' tests.
inline Supports f32_only() { Supports s; s.dtypes = {DType::f32}; return s; }

// A candidate's claims: the dtypes `dtypes`, its pointers aligned to `align` bytes.
inline Supports claims_of(std::vector<DType> dtypes, std::int64_t align) {
  Supports s;
  s.dtypes = std::move(dtypes);
  s.min_alignment_bytes = align;
  return s;
}

// A request for a rows x cols input x and an output y of `y_elements` elements.
inline Request rows_cols_request(DType t, std::int64_t rows, std::int64_t cols, std::int64_t y_elements) {
  Request r;
  r.dtype = t;
  r.dims = {{"rows", rows}, {"cols", cols}};
  r.lengths = {{"x", rows * cols}, {"y", y_elements}};
  return r;
}

// The code `c` refuses `r` with under the claims `s`; "accepted" where it takes the request.
inline std::string refusal_code(const Contract& c, const Request& r, const Supports& s) {
  auto x = c.validate(r, s);
  return x ? x->code : std::string("accepted");
}

// One fault or claim edited into a request or into claims, for the refusal tests: each returns its
// argument changed in that one way.
inline Supports only_dtypes(Supports s, std::vector<DType> dtypes) { s.dtypes = std::move(dtypes); return s; }
inline Supports at_most(Supports s, std::int64_t max_n) { s.max_n = max_n; return s; }
inline Supports in_place_claimed(Supports s) { s.in_place = true; return s; }
inline Request offset_by(Request r, std::int64_t elements) { r.offset_elements = elements; return r; }
inline Request in_place(Request r) { r.in_place = true; return r; }
inline Request without_tensor(Request r, const std::string& tensor) { r.lengths.erase(tensor); return r; }
inline Request without_dim(Request r, const std::string& dim) { r.dims.erase(dim); return r; }
inline Request with_length(Request r, const std::string& tensor, std::int64_t elements) { r.lengths[tensor] = elements; return r; }
inline Request with_stride(Request r, const std::string& tensor, std::int64_t stride) { r.strides[tensor] = stride; return r; }

// Every one of c's unsupported_examples() refused under each of `claims` with its stated code and a
// reason, and every code of `required` among those examples.
inline void expect_examples_refused(const Contract& c, const std::vector<Supports>& claims,
                                    const std::vector<std::string>& required) {
  std::set<std::string> codes;
  for (const auto& [r, code] : c.unsupported_examples()) {
    for (const Supports& s : claims) {
      auto got = c.validate(r, s);
      ASSERT_TRUE(got.has_value()) << code;
      EXPECT_EQ(got->code, code) << got->reason;
      EXPECT_FALSE(got->reason.empty()) << code;
    }
    codes.insert(code);
  }
  for (const auto& code : required) EXPECT_TRUE(codes.count(code)) << code;
}

// The correctness case at `index` under the claims `s`: the same inputs from the same seed (5), other
// inputs from another (6).
inline void expect_deterministic_by_seed(const Contract& c, const Supports& s, std::size_t index) {
  CaseSpec spec = c.correctness_cases(s, 5, false).at(index);
  EXPECT_EQ(c.make_case(spec).inputs[0].bytes, c.make_case(spec).inputs[0].bytes);
  auto a = c.correctness_cases(s, 5, false), b = c.correctness_cases(s, 6, false);
  EXPECT_NE(c.make_case(a.at(index)).inputs[0].bytes, c.make_case(b.at(index)).inputs[0].bytes);
}

// A generated correctness case with its reference output.
struct Generated {
  CaseSpec spec;
  CaseData data;
  Tensor expected;
};

// Every correctness case (the large ones left out) of `c` under the claims `s` from `seed`, each with
// its reference output: a suite computes them once and replays its simulations against them.
inline std::vector<Generated> generated_cases(const Contract& c, const Supports& s, std::uint64_t seed) {
  std::vector<Generated> v;
  for (const auto& spec : c.correctness_cases(s, seed, false)) {
    CaseData d = c.make_case(spec);
    Tensor e = c.reference(d).at(0);
    v.push_back({spec, std::move(d), std::move(e)});
  }
  return v;
}

// v rounded to p significant bits, nearest even (bf16 is p = 8, f16 p = 11; the exponent range
// ignored): a narrow accumulator simulated in float. On the bits of a normal float (the error-model
// tests round ~10^9 sums: libm's frexp/ldexp took half their time); a subnormal, rounded relative to
// its own leading bit, through frexp. Equal to the frexp form on 8e8 random floats for p = 5, 8, 11, 23.
inline float round_bits(float v, int p) {
  std::uint32_t u;
  std::memcpy(&u, &v, sizeof u);
  const std::uint32_t exponent = (u >> 23) & 0xFFu;
  if (exponent == 0xFFu || p >= 24 || v == 0) return v;
  if (exponent == 0) {
    int e;
    const double m = std::frexp(double(v), &e);
    return float(std::ldexp(std::nearbyint(std::ldexp(m, p)), e - p));
  }
  const int drop = 24 - p;  // low significand bits dropped; a carry into the exponent is the right value
  const std::uint32_t magnitude = u & 0x7FFFFFFFu;
  const std::uint32_t rounded = (magnitude + ((1u << (drop - 1)) - 1) + ((magnitude >> drop) & 1u)) & ~((1u << drop) - 1);
  u = (u & 0x80000000u) | rounded;
  float out;
  std::memcpy(&out, &u, sizeof out);
  return out;
}

}  // namespace kqual::contract::test_util
