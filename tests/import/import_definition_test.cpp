// kqual import-definition (issue 24, item 1) on Definition fixtures written here in the public
// format: the translation (axes, scalars, dtype row, constraints evaluated, workloads as benchmark
// shapes, the strictest tolerance, flashinfer-bench's "fail only past both" as combine = "max"), and
// a refusal by name for each construct kqual cannot express. Nothing needs torch or a GPU: the
// reference is only written, not run.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <optional>

#include <fmt/format.h>

#include "kqual/contract/compare.hpp"
#include "kqual/contract/declared/declared.hpp"
#include "kqual/import/import_definition.hpp"
#include "kqual/core/error.hpp"
#include "kqual/core/files.hpp"
#include "kqual/core/json.hpp"
#include "contract/contract_test_util.hpp"
#include "test_util.hpp"

namespace kqual::contract {
namespace {
namespace fs = std::filesystem;

const fs::path kDefinitionFixtures = fs::path(KQUAL_SOURCE_DIR) / "tests/import/fixtures/definitions";

// The text of one TOML table of the written contract, up to the next table.
using test_util::definition_refusal;
using test_util::toml_table;

// A fixture's Definition and workloads copied into `dir` under another name (test_util::renamed_definition).
DefinitionImportOptions renamed_fixture(const fs::path& dir, const std::string& stem, const std::string& name) {
  return test_util::renamed_definition(kDefinitionFixtures, dir, stem, name);
}

TEST(ImportDefinition, TranslatesAxesScalarsConstraintsWorkloadsAndTolerance) {
  ScratchDir dir("kqual-import-def");
  DefinitionImportOptions o = test_util::definition_files(kDefinitionFixtures, "fused_add_rmsnorm_h1024", dir.path() / "fused_add_rmsnorm_h1024");
  const DefinitionImport r = import_definition(o);
  EXPECT_EQ(r.workloads, 3);  // the line of another definition is skipped
  EXPECT_EQ(r.bench_shapes, (std::vector<std::string>{"batch_size=1", "batch_size=7", "batch_size=512"}));
  EXPECT_TRUE(fs::exists(o.out / "reference.py"));
  const Contract& c = load_declared_contract(o.out);
  EXPECT_EQ(c.name(), "fused_add_rmsnorm_h1024");
  EXPECT_EQ(c.given_dims(), (std::vector<std::string>{"batch_size"}));
  EXPECT_EQ(c.complete_dims({{"batch_size", 3}}).at("hidden_size"), 1024);
  ASSERT_EQ(c.scalars().size(), 1u);
  EXPECT_EQ(c.scalars()[0].name, "eps");
  EXPECT_DOUBLE_EQ(c.scalars()[0].value, 1e-6);
  EXPECT_EQ(c.dtypes(), (std::vector<DType>{DType::bf16}));
  // The constraint is evaluated: a request outside it is refused before launch.
  Supports s;
  s.dtypes = {DType::bf16};
  s.max_n = kUnlimited;
  auto refused = c.validate(c.request(DType::bf16, c.complete_dims({{"batch_size", 70000}})), s);
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->code, "constraint");
  EXPECT_FALSE(c.validate(c.request(DType::bf16, c.complete_dims({{"batch_size", 512}})), s));
  // The strictest tolerance across workloads, judged as flashinfer-bench does (max, not sum), with
  // SOL's matched ratio and its cap; the workloads' sizes become boundary hints.
  EXPECT_NE(r.contract_toml.find("atol = 0.008, rtol = 0.01, combine = \"max\", match_ratio = 0.999, cap = 0.5"), std::string::npos)
      << r.contract_toml;
  EXPECT_NE(r.contract_toml.find("hints = [1, 7, 512]"), std::string::npos) << r.contract_toml;
  EXPECT_NE(r.contract_toml.find("as flashinfer-bench judges"), std::string::npos);
  // The run-to-run rule is written explicitly, with why: flashinfer-bench never compares two runs.
  EXPECT_NE(r.contract_toml.find("# flashinfer-bench judges each run against its reference"), std::string::npos) << r.contract_toml;
  EXPECT_NE(r.contract_toml.find("\ndeterministic = false\n"), std::string::npos) << r.contract_toml;
  EXPECT_FALSE(c.reproducibility(DType::bf16).required);
  EXPECT_NE(c.reproducibility(DType::bf16).reason.find("flashinfer-bench"), std::string::npos);
  // The base is the smallest workload value above 1 (one row is degenerate: a transposed 1 x n
  // matrix is the same bytes), not the first line's 1.
  EXPECT_NE(r.contract_toml.find("base = 7\n"), std::string::npos) << r.contract_toml;
  bool has_512 = false;
  for (const auto& cs : c.correctness_cases(s, 1, false)) has_512 |= cs.dims.at("batch_size") == 513;
  EXPECT_TRUE(has_512);
  // Written once: the folder now exists.
  EXPECT_THROW(import_definition(o), Error);
}

// SOL-ExecBench writes derived axes in Python ("attention_head_dim // 2", its flux_rope): the
// expression is written in kqual's operators, and the derived axis is usable in shapes.
TEST(ImportDefinition, TranslatesPythonFloorDivisionInAxisExpressions) {
  ScratchDir dir("kqual-import-def");
  DefinitionImportOptions o = test_util::definition_files(kDefinitionFixtures, "rope_pairs_d16", dir.path() / "rope");
  const DefinitionImport r = import_definition(o);
  EXPECT_NE(r.contract_toml.find("expr = \"head_dim / 2\""), std::string::npos) << r.contract_toml;
  EXPECT_EQ(r.contract_toml.find("max_case_elements"), std::string::npos) << "small tensors keep the default cap";
  const Contract& c = load_declared_contract(o.out);
  const auto dims = c.complete_dims({{"batch_size", 2}, {"seq_len", 5}});
  EXPECT_EQ(dims.at("half_dim"), 8);
  EXPECT_EQ(c.tensor_elements("cos", dims), 5 * 8);
  EXPECT_EQ(r.bench_shapes, (std::vector<std::string>{"batch_size=2,seq_len=5", "batch_size=1,seq_len=17"}));
  // SOL-ExecBench's lines (unwrapped, max_atol / max_rtol): its judge is atol + rtol |ref| (the sum),
  // not flashinfer-bench's "past both"; SOL's default matched ratio 0.99 is not taken over.
  EXPECT_NE(r.contract_toml.find("atol = 0.005, rtol = 0.02, combine = \"sum\" }"), std::string::npos) << r.contract_toml;
  EXPECT_NE(r.contract_toml.find("as SOL-ExecBench judges"), std::string::npos);
  EXPECT_NE(r.contract_toml.find("# SOL-ExecBench judges each run against its reference"), std::string::npos) << r.contract_toml;
}

// A Definition says nothing about values: every input was N(0, 1), where an RMSNorm that drops eps
// (1e-6 against a mean square near 1) passes. The import writes value-scale families over the data
// inputs (those with an output's shape: x and residual), keeps the weight's values (scaling every
// factor would move the output by the factor's power, under the tolerance) and the scalar eps, and
// says in comments why each family exists and what the imported atol leaves of it.
TEST(ImportDefinition, WritesValueScaleFamiliesForTheDataInputs) {
  ScratchDir dir("kqual-import-def");
  const DefinitionImportOptions o = renamed_fixture(dir.path(), "fused_add_rmsnorm_h1024", "fused_families");
  const DefinitionImport r = import_definition(o);
  const std::string& t = r.contract_toml;
  const std::string small = toml_table(t, "[families.small_scale]"), large = toml_table(t, "[families.large_scale]"),
                    shifted = toml_table(t, "[families.nonzero_mean]");
  EXPECT_TRUE(kqual::test::contains(small, "\nx = { scale = 0.001 }") && kqual::test::contains(small, "\nresidual = { scale = 0.001 }")) << t;
  EXPECT_TRUE(kqual::test::contains(large, "\nx = { scale = 1000 }") && kqual::test::contains(large, "\nresidual = { scale = 1000 }")) << t;
  EXPECT_TRUE(kqual::test::contains(shifted, "\nx = { mean = 4, std = 0.5 }") && kqual::test::contains(shifted, "\nresidual = { mean = 4, std = 0.5 }")) << t;
  for (const std::string& f : {small, large, shifted}) {
    EXPECT_FALSE(kqual::test::contains(f, "\nweight =")) << "the weight keeps its values: " << f;
    EXPECT_FALSE(kqual::test::contains(f, "\neps =")) << "a scalar is not drawn: " << f;
  }
  // Why each family exists, and what the imported atol (0.008 here) leaves of small_scale.
  EXPECT_TRUE(kqual::test::contains(t, "# small_scale:") && kqual::test::contains(t, "eps")) << t;
  EXPECT_TRUE(kqual::test::contains(t, "the imported atol = 0.008")) << t;
  EXPECT_TRUE(kqual::test::contains(t, "# large_scale:") && kqual::test::contains(t, "# nonzero_mean:")) << t;
  // The families parse and run on the small cases, in the contract's dtype row.
  const Contract& c = load_declared_contract(o.out);
  Supports s;
  s.dtypes = {DType::bf16};
  s.max_n = kUnlimited;
  std::map<std::string, int> per_family;
  for (const auto& cs : c.correctness_cases(s, 1, false)) ++per_family[cs.family];
  for (const char* f : {"small_scale", "large_scale", "nonzero_mean"}) EXPECT_GT(per_family[f], 0) << f;
  // small_scale's x is 1000 times smaller, the weight as in the base family.
  for (const auto& cs : c.correctness_cases(s, 1, false)) {
    if (cs.family != "small_scale") continue;
    const CaseData d = c.make_case(cs);
    for (const auto& in : d.inputs) {
      double most = 0;
      for (std::int64_t i = 0; i < in.elements; ++i) most = std::max(most, std::fabs(element_as_double(in.dtype, in.bytes.data(), std::size_t(i))));
      if (in.name == "weight") EXPECT_GT(most, 1) << "weight is N(0, 1) as in the base family";
      else EXPECT_LT(most, 0.01) << in.name;
    }
    break;
  }
}

using test_util::have_numpy;

// The defect the families exist for, end to end on the CPU: an RMSNorm Definition (eps 1e-6 as a
// scalar input) imported from a fixture, its torch reference swapped for the same formula in NumPy
// (no PyTorch here; the families are the importer's, untouched), and two CPU emulations of a kernel,
// one right and one that drops eps. Under N(0, 1) rows the eps-dropping one passes every base case
// (mean square ~1 against eps 1e-6); under small_scale (mean square ~1e-6) it is off by ~30 %.
TEST(ImportDefinition, SmallScaleFamilyRejectsAnRmsnormThatDropsEps) {
  if (!have_numpy()) GTEST_SKIP() << "no Python 3 with NumPy (install python3-numpy)";
  ScratchDir dir("kqual-import-def");
  DefinitionImportOptions o = test_util::definition_files(kDefinitionFixtures, "rmsnorm_h512", dir.path() / "rmsnorm_h512");
  (void)import_definition(o);
  // The imported contract, registered under its name, is kept; the NumPy copy gets its own name.
  std::string toml = read_text_file(o.out / "contract.toml");
  for (const auto& [from, to] : {std::pair<std::string, std::string>{"kind = \"torch\"", "kind = \"numpy\""},
                                 {"name = \"rmsnorm_h512\"", "name = \"rmsnorm_h512_numpy\""}}) {
    ASSERT_TRUE(kqual::test::contains(toml, from)) << toml;
    toml.replace(toml.find(from), from.size(), to);
  }
  const fs::path numpy_copy = dir.path() / "rmsnorm_h512_numpy";
  fs::create_directories(numpy_copy);
  write_file_atomic(numpy_copy / "contract.toml", toml);
  write_file_atomic(numpy_copy / "reference.py",
                    "import numpy as np\n\ndef run(x, weight, eps):\n"
                    "    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * weight[None, :]\n");
  const Contract& c = load_declared_contract(numpy_copy);
  auto rmsnorm = [](const CaseData& d, const Tensor& y, double eps) {
    std::vector<std::uint8_t> out(y.bytes.size(), 0xA5);
    const Tensor *x = nullptr, *w = nullptr;
    for (const auto& in : d.inputs) (in.name == "x" ? x : w) = &in;
    const std::int64_t rows = d.dims.at("batch_size"), cols = d.dims.at("hidden_size");
    auto at = [](const Tensor* t, std::int64_t i) { return element_as_double(t->dtype, t->bytes.data(), std::size_t(i)); };
    for (std::int64_t r = 0; r < rows; ++r) {
      double ms = 0;
      for (std::int64_t j = 0; j < cols; ++j) ms += at(x, r * cols + j) * at(x, r * cols + j);
      const double inv = 1 / std::sqrt(ms / double(cols) + eps);
      for (std::int64_t j = 0; j < cols; ++j) store_element(y.dtype, out.data(), std::size_t(r * cols + j), at(x, r * cols + j) * inv * at(w, j));
    }
    return out;
  };
  Supports s = test_util::f32_only();
  s.max_n = kUnlimited;
  std::map<std::string, int> cases, good_failed, no_eps_failed;
  std::string code;
  for (const auto& cs : c.correctness_cases(s, 5, false)) {
    const CaseData d = c.make_case(cs);
    const std::vector<Tensor> want = c.reference(d, test_util::run_host());
    ++cases[cs.family];
    if (!c.compare(want.at(0), rmsnorm(d, want.at(0), 1e-6).data(), 0xA5).ok) ++good_failed[cs.family];
    const Comparison cmp = c.compare(want.at(0), rmsnorm(d, want.at(0), 0).data(), 0xA5);
    if (!cmp.ok) ++no_eps_failed[cs.family], code = cmp.code;
  }
  ASSERT_GT(cases["small_scale"], 0);
  for (const auto& [f, n] : cases) EXPECT_EQ(good_failed[f], 0) << "the right kernel fails " << good_failed[f] << " of " << n << " " << f << " cases";
  EXPECT_EQ(no_eps_failed["base"], 0) << "N(0, 1) rows cannot tell eps from none: why the family exists";
  EXPECT_EQ(no_eps_failed["small_scale"], cases["small_scale"]) << "every small_scale case rejects the kernel without eps";
  EXPECT_EQ(code, "wrong_result");
}

std::string def_with(const std::string& axes, const std::string& inputs, const std::string& extra = "") {
  return R"({"name": "d", "axes": )" + axes + R"(, "inputs": )" + inputs +
         R"(, "outputs": {"y": {"shape": ["n"], "dtype": "float32"}}, "reference": "def run(x):\n    return x\n")" + extra + "}";
}

// Constant axes can make every case larger than the CPU reference's default 2^24 elements (SOL's
// gemma3_swiglu: two 24576 x 3072 projections): the cap is raised to the base shape's largest
// tensor, else every case would be left out and the contract would check nothing; past 2^28, refused.
TEST(ImportDefinition, RaisesTheCaseCapToLargeConstantTensors) {
  ScratchDir dir("kqual-import-def");
  DefinitionImportOptions o;
  o.definition = dir.path() / "proj.json";
  std::ofstream(o.definition) << R"({"name": "proj", "axes": {"t": {"type": "var"}, "h": {"type": "const", "value": 3072},
    "i": {"type": "const", "value": 24576}}, "inputs": {"x": {"shape": ["t", "h"], "dtype": "float32"},
    "w": {"shape": ["i", "h"], "dtype": "float32"}}, "outputs": {"y": {"shape": ["t", "i"], "dtype": "float32"}},
    "reference": "def run(x, w):\n    return x @ w.T\n"})";
  o.out = dir.path() / "proj";
  const DefinitionImport r = import_definition(o);
  EXPECT_NE(r.contract_toml.find("max_case_elements = 75497472"), std::string::npos) << r.contract_toml;
  EXPECT_TRUE(std::any_of(r.notes.begin(), r.notes.end(), [](const std::string& n) { return kqual::test::contains(n, "'w' has 75497472 elements"); }));
  // Every case has a 75 M-element weight: no case is small enough for the value families, and the
  // contract says so instead of pretending they run.
  EXPECT_TRUE(kqual::test::contains(r.contract_toml, "these families run on no case")) << r.contract_toml;
  const Contract& c = load_declared_contract(o.out);
  Supports s = test_util::f32_only();
  s.max_n = kUnlimited;
  EXPECT_FALSE(c.correctness_cases(s, 1, false).empty());
}

// A backward pass given the saved activation takes the forward's bias and never reads it: declared
// unread (the non-triviality check then asks that it move no output), where a comment, a docstring
// or a message names it; a parameter read anywhere in the body, or reached dynamically, is not.
TEST(ImportDefinition, AnInputRunNeverReadsIsDeclaredUnread) {
  ScratchDir dir("kqual-import-def");
  DefinitionImportOptions o;
  o.definition = dir.path() / "bwd.json";
  std::ofstream(o.definition) << R"({"name": "bwd", "axes": {"n": {"type": "var"}}, "inputs": {"g": {"shape": ["n"], "dtype": "float32"},
    "act": {"shape": ["n"], "dtype": "float32"}, "bias": {"shape": ["n"], "dtype": "float32"}, "scale": {"shape": ["n"], "dtype": "float32"}},
    "outputs": {"y": {"shape": ["n"], "dtype": "float32"}},
    "reference": "def run(\n    g,\n    act,\n    bias,\n    scale,\n):\n    \"\"\"The forward was act = x + bias.\"\"\"\n    # bias is not needed here\n    assert g.shape == act.shape, 'bias'\n    return g * (act > 0) * scale ** 2\n"})";
  o.out = dir.path() / "bwd";
  const DefinitionImport r = import_definition(o);
  EXPECT_TRUE(kqual::test::contains(r.contract_toml, "[tensors.bias]\nrole = \"input\"\nshape = [\"n\"]\nunread = ")) << r.contract_toml;
  for (const char* read : {"g", "act", "scale"})
    EXPECT_FALSE(kqual::test::contains(r.contract_toml, std::string("[tensors.") + read + "]\nrole = \"input\"\nshape = [\"n\"]\nunread"))
        << read << ": " << r.contract_toml;
  EXPECT_TRUE(std::any_of(r.notes.begin(), r.notes.end(), [](const std::string& n) { return kqual::test::contains(n, "input 'bias': run() never names it"); }));
  (void)load_declared_contract(o.out);  // the key is part of the format
  // A body that passes its arguments on through locals() reads what no static read sees: nothing is said unread.
  o.definition = dir.path() / "dyn.json";
  std::ofstream(o.definition) << R"({"name": "dyn", "axes": {"n": {"type": "var"}}, "inputs": {"x": {"shape": ["n"], "dtype": "float32"},
    "w": {"shape": ["n"], "dtype": "float32"}}, "outputs": {"y": {"shape": ["n"], "dtype": "float32"}},
    "reference": "def helper(x, w):\n    return x * w\n\ndef run(x, w):\n    return helper(**locals())\n"})";
  o.out = dir.path() / "dyn";
  EXPECT_FALSE(kqual::test::contains(import_definition(o).contract_toml, "unread ="));
}

TEST(ImportDefinition, RefusesByNameWhatCannotBeExpressed) {
  const std::string var = R"({"n": {"type": "var"}})";
  const std::string x = R"({"x": {"shape": ["n"], "dtype": "float32"}})";
  EXPECT_NE(definition_refusal(def_with(var, R"({"x": {"shape": ["n"], "dtype": "float4_e2m1"}})")).find("inputs.x.dtype: dtype \"float4_e2m1\""),
            std::string::npos);
  EXPECT_NE(definition_refusal(def_with(var, R"({"x": {"shape": ["n"], "dtype": "int32"}})")).find("integer input 'x'"), std::string::npos);
  EXPECT_NE(definition_refusal(def_with(var, R"({"x": {"shape": ["m"], "dtype": "float32"}})")).find("unknown axis \"m\""), std::string::npos);
  EXPECT_NE(definition_refusal(def_with(R"J({"n": {"type": "var"}, "h": {"type": "expr", "expression": "math.ceil(n / 2)"}})J", x))
                .find("axes.h.expression"),
            std::string::npos);
  EXPECT_NE(definition_refusal(def_with(var, x, R"(, "constraints": ["n % 8 == 0 and q > 1"])")).find("constraints[0]"), std::string::npos);
  // An integer scalar no workload sets: the peers draw it from [-1024, 1024), which says nothing of
  // what it counts (a float one is drawn: import_integer_inputs_test.cpp).
  EXPECT_NE(definition_refusal(def_with(var, R"({"x": {"shape": ["n"], "dtype": "float32"}, "k": {"shape": null, "dtype": "int32"}})"))
                .find("inputs.k: a scalar (null shape) needs its value"),
            std::string::npos);
  const std::string ratio = R"({"definition": "d", "workload": {"axes": {"n": 5}, "inputs": {}}, "tolerance": {"atol": 0.01, "rtol": 0.01, "required_matched_ratio": 0.99}})";
  // A matched ratio without max_error_cap imports as SOL's default does, every element within the bound
  // (import_definition_rewrite_test.cpp).
  EXPECT_EQ(definition_refusal(def_with(var, x), ratio), "");
  EXPECT_NE(definition_refusal(def_with(R"({"n": {"type": "var"}, "h": {"type": "const", "value": 32768}, "i": {"type": "const", "value": 16384}})",
                             R"({"x": {"shape": ["n"], "dtype": "float32"}, "w": {"shape": ["i", "h"], "dtype": "float32"}})"))
                .find("inputs.w.shape: 536870912 elements at the base shape: past 2^28"),
            std::string::npos);
  EXPECT_NE(definition_refusal(R"({"name": "d"})").find("axes: missing"), std::string::npos);
  EXPECT_NE(definition_refusal("{not json").find("not JSON"), std::string::npos);
}


// ---- The narrow, one-byte and bool dtypes (fixtures written here in flashinfer-bench's format) ----
// Definitions carry PyTorch references, which cannot run on this machine: each imported contract is
// loaded, its cases generated, and the written error models, values and families checked.

DefinitionImport import_fixture(const fs::path& dir, const std::string& stem) {
  return import_definition(test_util::definition_files(kDefinitionFixtures, stem, dir / stem));
}

// The inputs of the largest case of `family` (the most elements: a 1 % share shows there), made by
// the loaded contract.
CaseData largest_case_of(const Contract& c, const std::string& family) {
  Supports s;
  s.dtypes = c.dtypes();
  s.max_n = kUnlimited;
  std::optional<CaseData> best;
  std::int64_t most = -1;
  for (const auto& cs : c.correctness_cases(s, 1, false)) {
    if (cs.family != family) continue;
    CaseData d = c.make_case(cs);
    std::int64_t n = 0;
    for (const auto& in : d.inputs) n += in.elements;
    if (n > most) most = n, best = std::move(d);
  }
  if (!best) ADD_FAILURE() << "no case of family " << family;
  return best ? std::move(*best) : CaseData{};
}

double largest_magnitude(const Tensor& t) {
  double most = 0;
  for (std::int64_t i = 0; i < t.elements; ++i) {
    const double v = element_as_double(t.dtype, t.bytes.data(), std::size_t(i));
    if (std::isfinite(v)) most = std::max(most, std::fabs(v));
  }
  return most;
}

TEST(ImportDefinitionDtypes, Float16TakesItsOwnToleranceAndExtremes) {
  ScratchDir dir("kqual-import-dtypes");
  const DefinitionImport r = import_fixture(dir.path(), "silu_mul_f16_h256");
  const std::string& t = r.contract_toml;
  EXPECT_TRUE(kqual::test::contains(t, "rows = [{ gate = \"f16\", out = \"f16\", up = \"f16\" }]")) << t;
  // kqual's default for an f16 output: the f32 terms, + 2^-11 (one more half ulp), atol at least 2^-10.
  const std::string out = toml_table(t, "[tensors.out]");
  const auto num_after = [&](const std::string& key) { return std::stod(out.substr(out.find(key) + key.size())); };
  EXPECT_NEAR(num_after("rtol = "), 2 * std::ldexp(1.0, -24) * 16 * 16 + std::ldexp(1.0, -11), 1e-8) << "K = 256: " << out;
  EXPECT_NEAR(num_after("atol = "), std::ldexp(1.0, -10), 1e-8) << out;
  EXPECT_TRUE(std::any_of(r.notes.begin(), r.notes.end(), [](const std::string& n) {
    return kqual::test::contains(n, "+ 2^-11 (f16: one more half ulp") && kqual::test::contains(n, "at least 2^-10 (one f16 ulp at 1)");
  }));
  // extreme_scale at f16's own largest values, not 2^50 (Inf in f16); denormals are f16's.
  EXPECT_EQ(toml_table(t, "[families.extreme_scale]"), "[families.extreme_scale]\nmax_elements = 1048576\ngate = { extremes = 0.01 }\nup = { extremes = 0.01 }")
      << t;
  EXPECT_TRUE(kqual::test::contains(t, "[families.large_scale]")) << "1e3 x N(0, 1) fits f16: " << t;
  // The precision note: float32 where run() casts, rounded to float16 by .half().
  EXPECT_TRUE(kqual::test::contains(t, "float32 where run() casts to it (.float())")) << t;
  EXPECT_TRUE(kqual::test::contains(t, "rounded to bfloat16/float16 where it casts so (.half()")) << t;
  const Contract& c = load_declared_contract(r.out);
  const CaseData d = largest_case_of(c, "extreme_scale");
  for (const auto& in : d.inputs) {
    EXPECT_EQ(in.dtype, DType::f16);
    EXPECT_GT(largest_magnitude(in), 32752) << in.name << ": near 65504";
    EXPECT_LE(largest_magnitude(in), 65504) << in.name;
  }
}

TEST(ImportDefinitionDtypes, AnFp8QuantizerGetsAtLeastOneUlpAndE4m3InputsStayInRange) {
  ScratchDir dir("kqual-import-dtypes");
  const DefinitionImport r = import_fixture(dir.path(), "quant_fp8_rows_h128");
  const std::string& t = r.contract_toml;
  // The workload's 1e-2 is below one e4m3 ulp (2^-3 relative): raised, and said; scale keeps 1e-2.
  EXPECT_TRUE(kqual::test::contains(toml_table(t, "[tensors.q]"), "error = { model = \"allclose\", atol = 0.01, rtol = 0.125, combine = \"max\" }"))
      << t;
  EXPECT_TRUE(kqual::test::contains(toml_table(t, "[tensors.scale]"), "error = { model = \"allclose\", atol = 0.01, rtol = 0.01, combine = \"max\" }"))
      << t;
  EXPECT_TRUE(std::any_of(r.notes.begin(), r.notes.end(),
                          [](const std::string& n) { return kqual::test::contains(n, "output 'q' (e4m3): the tolerance raised to at least one e4m3 ulp"); }));
  EXPECT_TRUE(kqual::test::contains(t, "rounded to float8 where it casts so (torch.float8_e4m3fn")) << t;
  EXPECT_TRUE(kqual::test::contains(t, "rows = [{ q = \"e4m3\", scale = \"f32\", x = \"bf16\" }]")) << t;
  (void)load_declared_contract(r.out);
}

// A Definition y = f(a, b) over one var axis with the given input dtypes and reference source, as JSON text.
std::string two_input_definition(const std::string& name, const std::string& da, const std::string& db, const std::string& reference) {
  json def{{"name", name},
           {"axes", {{"n", {{"type", "var"}}}}},
           {"inputs", {{"a", {{"shape", json::array({"n"})}, {"dtype", da}}}, {"b", {{"shape", json::array({"n"})}, {"dtype", db}}}}},
           {"outputs", {{"y", {{"shape", json::array({"n"})}, {"dtype", "float32"}}}}},
           {"reference", reference}};
  return def.dump();
}

TEST(ImportDefinitionDtypes, Fp8InputsGetFamiliesWithinTheirRange) {
  ScratchDir dir("kqual-import-dtypes");
  DefinitionImportOptions o;
  o.definition = dir.path() / "fp8_add.json";
  write_file_atomic(o.definition, two_input_definition("fp8_add", "float8_e4m3fn", "float8_e5m2", "def run(a, b):\n    return a + b\n"));
  o.out = dir.path() / "fp8_add";
  const std::string t = import_definition(o).contract_toml;
  // e4m3 (normal values in [2^-6, 448]): no small_scale or large_scale; e5m2 takes both.
  EXPECT_EQ(toml_table(t, "[families.small_scale]"), "[families.small_scale]\nmax_elements = 1048576\nb = { scale = 0.001 }") << t;
  EXPECT_EQ(toml_table(t, "[families.large_scale]"), "[families.large_scale]\nmax_elements = 1048576\nb = { scale = 1000 }") << t;
  EXPECT_TRUE(kqual::test::contains(t, "# a (e4m3: normal values in [2^-6, 448]) get no small_scale or large_scale")) << t;
  EXPECT_EQ(toml_table(t, "[families.extreme_scale]"), "[families.extreme_scale]\nmax_elements = 1048576\na = { extremes = 0.01 }\nb = { extremes = 0.01 }")
      << t;
  const Contract& c = load_declared_contract(o.out);
  const CaseData d = largest_case_of(c, "extreme_scale");
  for (const auto& in : d.inputs) EXPECT_GT(largest_magnitude(in), in.dtype == DType::e4m3 ? 224 : 28672) << in.name;
}

TEST(ImportDefinitionDtypes, Int8DataImportsOverItsRangeAndAnIntegerOutputIsExact) {
  ScratchDir dir("kqual-import-dtypes");
  const DefinitionImport r = import_fixture(dir.path(), "gemm_w8a8_i8");
  const std::string& t = r.contract_toml;
  EXPECT_TRUE(kqual::test::contains(toml_table(t, "[tensors.a]"), "values = { dist = \"int\", lo = -128, hi = 127 }")) << t;
  EXPECT_TRUE(kqual::test::contains(toml_table(t, "[tensors.c]"), "error = { model = \"exact\" }")) << t;
  EXPECT_FALSE(kqual::test::contains(t, "[families.")) << "no float family over integer inputs: " << t;
  EXPECT_TRUE(kqual::test::contains(t, "\ndeterministic = true")) << "an integer-only operation is exact run to run: " << t;
  const Contract& c = load_declared_contract(r.out);
  const CaseData d = largest_case_of(c, "base");
  for (const auto& in : d.inputs) {
    EXPECT_EQ(in.dtype, DType::i8);
    double lo = 0, hi = 0;
    for (std::int64_t i = 0; i < in.elements; ++i) {
      lo = std::min(lo, element_as_double(in.dtype, in.bytes.data(), std::size_t(i)));
      hi = std::max(hi, element_as_double(in.dtype, in.bytes.data(), std::size_t(i)));
    }
    EXPECT_LT(lo, -100) << in.name;
    EXPECT_GT(hi, 100) << in.name;
  }
  // A wider integer input still says what it lacks.
  EXPECT_NE(definition_refusal(def_with(R"({"n": {"type": "var"}})", R"({"x": {"shape": ["n"], "dtype": "uint32"}})")).find("integer input 'x'"),
            std::string::npos);
}

TEST(ImportDefinitionDtypes, ABoolMaskImportsAndABoolOutputIsExact) {
  ScratchDir dir("kqual-import-dtypes");
  const DefinitionImport r = import_fixture(dir.path(), "masked_relu_bool");
  const std::string& t = r.contract_toml;
  EXPECT_TRUE(kqual::test::contains(toml_table(t, "[tensors.keep]"), "values = { dist = \"mask\", p = 0.5 }")) << t;
  EXPECT_TRUE(kqual::test::contains(toml_table(t, "[tensors.positive]"), "error = { model = \"exact\" }")) << t;
  // Only x is redrawn by the families; the mask never gets NaN or extreme values.
  EXPECT_EQ(toml_table(t, "[families.specials]"), "[families.specials]\nmax_elements = 1048576\nx = { specials = 0.01 }") << t;
  const Contract& c = load_declared_contract(r.out);
  const CaseData d = largest_case_of(c, "base");
  bool saw_mask = false;
  for (const auto& in : d.inputs) {
    if (in.name != "keep") continue;
    saw_mask = true;
    EXPECT_EQ(in.dtype, DType::boolean);
    std::int64_t ones = 0;
    for (std::int64_t i = 0; i < in.elements; ++i) {
      const double v = element_as_double(in.dtype, in.bytes.data(), std::size_t(i));
      EXPECT_TRUE(v == 0 || v == 1);
      ones += v == 1;
    }
    EXPECT_GT(ones, 0);
    EXPECT_LT(ones, in.elements);
  }
  EXPECT_TRUE(saw_mask);
}

TEST(ImportDefinitionDtypes, ASamplingReferenceIsRefusedAtImportByName) {
  ScratchDir dir("kqual-import-dtypes");
  std::string why;
  try {
    (void)import_fixture(dir.path(), "top_p_sampling_v64");
  } catch (const Error& e) {
    why = e.what();
  }
  // The docstring and the comment that name torch.rand are not code; line 11 of run's source is.
  EXPECT_TRUE(kqual::test::contains(why, "top_p_sampling_v64.json: reference: statistical operation: the reference samples "
                                         "(torch.multinomial at line 11); no statistical judge is declared"))
      << why;
  EXPECT_FALSE(fs::exists(dir.path() / "top_p_sampling_v64"));
  // The other samplers, by a static read of the source.
  int k = 0;
  auto with_reference = [&](const std::string& src) { return definition_refusal(two_input_definition(fmt::format("s{}", k++), "float32", "float32", src)); };
  const std::pair<const char*, const char*> samplers[] = {
      {"def run(a, b):\n    return a + torch.randn_like(b)\n", "(torch.randn_like at line 2)"},
      {"import numpy as np\ndef run(a, b):\n    return a * np.random.rand(*b.shape)\n", "(np.random.rand at line 3)"},
      {"import random\ndef run(a, b):\n    return a * random.random()\n", "(random.random at line 3)"},
      {"def run(a, b):\n    return torch.bernoulli(a)\n", "(torch.bernoulli at line 2)"},
      {"def run(a, b):\n    return torch.randint(0, 4, a.shape) + b\n", "(torch.randint at line 2)"},
      {"def run(a, b):\n    return F.dropout(a, 0.1) + b\n", "(F.dropout in training mode at line 2)"},
      {"def run(a, b):\n    return a.uniform_() + b\n", "(.uniform_() at line 2)"}};
  for (const auto& [src, where] : samplers) {
    const std::string got = with_reference(src);
    EXPECT_TRUE(kqual::test::contains(got, "reference: statistical operation: the reference samples " + std::string(where))) << src << "\n" << got;
  }
  // Not sampling: dropout outside training, a fixed generator, a comment, a dropout of p = 0.
  for (const char* quiet : {"def run(a, b):\n    return F.dropout(a, 0.1, training=False) + b\n",
                            "def run(a, b):\n    return a + torch.rand(b.shape, generator=torch.Generator().manual_seed(0))\n",
                            "def run(a, b):\n    # torch.rand(3)\n    return a + b\n", "def run(a, b):\n    return torch.nn.Dropout(p=0.0)(a) + b\n"})
    EXPECT_EQ(with_reference(quiet), "") << quiet;
  // SOL-ExecBench's custom_inputs_entrypoint draws the inputs: its body is not the reference.
  json custom = json::parse(two_input_definition("custom_inputs", "float32", "float32",
                                                 "import torch\ndef make(axes, device):\n    n = axes['n']\n    return {'a': torch.randn(n), 'b': "
                                                 "torch.randn(n)}\n\ndef run(a, b):\n    return a + b\n"));
  custom["custom_inputs_entrypoint"] = "make";
  EXPECT_EQ(definition_refusal(custom.dump()), "");
  // The reference is what run() reaches: a generator nothing names is not read (SOL-ExecBench's dataset
  // ships get_inputs() without declaring it), and a signature over several lines is part of its def.
  custom["name"] = "custom_inputs_2";
  custom["custom_inputs_entrypoint"] = "other";
  EXPECT_EQ(definition_refusal(custom.dump()), "");
  json multiline = json::parse(two_input_definition(
      "custom_inputs_3", "float32", "float32",
      "import torch\ndef get_inputs(\n    axes: dict, device\n) -> dict:\n    return {'a': torch.randn(4)}\n\ndef run(a, b):\n    return a + b\n"));
  multiline["custom_inputs_entrypoint"] = "get_inputs";
  EXPECT_EQ(definition_refusal(multiline.dump()), "");
  // A helper run() calls, directly or through another, is the reference; so is module-level code.
  const std::pair<const char*, const char*> reached[] = {
      {"import torch\ndef noise(x):\n    return torch.rand_like(x)\ndef mix(a):\n    return a + noise(a)\ndef run(a, b):\n    return mix(a) + b\n",
       "(torch.rand_like at line 3)"},
      {"import torch\nTABLE = torch.randn(16)\ndef run(a, b):\n    return a + b\n", "(torch.randn at line 2)"},
      {"import torch\ndef make(axes, device):\n    return {'a': torch.randn(4)}\ndef run(a, b):\n    return make(None, None)['a'] + b\n",
       "(torch.randn at line 3)"}};
  for (const auto& [src, where] : reached) {
    json d = json::parse(two_input_definition(fmt::format("reached{}", k++), "float32", "float32", src));
    EXPECT_TRUE(kqual::test::contains(definition_refusal(d.dump()), where)) << src;
  }
}

}  // namespace
}  // namespace kqual::contract
