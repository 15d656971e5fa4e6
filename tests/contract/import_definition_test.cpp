// kqual import-definition (issue 24, item 1) on Definition fixtures written here in the public
// format: the translation (axes, scalars, dtype row, constraints evaluated, workloads as benchmark
// shapes, the strictest tolerance, flashinfer-bench's "fail only past both" as combine = "max"), and
// a refusal by name for each construct kqual cannot express. Nothing needs torch or a GPU: the
// reference is only written, not run.
#include <gtest/gtest.h>

#include <fstream>

#include "kqual/contract/declared.hpp"
#include "kqual/contract/import_definition.hpp"
#include "kqual/core/error.hpp"
#include "kqual/core/files.hpp"

namespace kqual::contract {
namespace {
namespace fs = std::filesystem;

const fs::path kFixtures = fs::path(KQUAL_SOURCE_DIR) / "tests/contract/fixtures/definitions";

TEST(ImportDefinition, TranslatesAxesScalarsConstraintsWorkloadsAndTolerance) {
  ScratchDir dir("kqual-import-def");
  DefinitionImportOptions o;
  o.definition = kFixtures / "fused_add_rmsnorm_h1024.json";
  o.workloads = kFixtures / "fused_add_rmsnorm_h1024.jsonl";
  o.out = dir.path() / "fused_add_rmsnorm_h1024";
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
  DefinitionImportOptions o;
  o.definition = kFixtures / "rope_pairs_d16.json";
  o.workloads = kFixtures / "rope_pairs_d16.jsonl";
  o.out = dir.path() / "rope";
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
}

std::string refusal(const std::string& def_json, const std::string& jsonl = "") {
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
    EXPECT_FALSE(fs::exists(o.out)) << "nothing half-written";
    return e.what();
  }
  return "";
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
  ASSERT_FALSE(r.notes.empty());
  EXPECT_NE(r.notes.back().find("'w' has 75497472 elements"), std::string::npos) << r.notes.back();
  const Contract& c = load_declared_contract(o.out);
  Supports s;
  s.dtypes = {DType::f32};
  s.max_n = kUnlimited;
  EXPECT_FALSE(c.correctness_cases(s, 1, false).empty());
}

TEST(ImportDefinition, RefusesByNameWhatCannotBeExpressed) {
  const std::string var = R"({"n": {"type": "var"}})";
  const std::string x = R"({"x": {"shape": ["n"], "dtype": "float32"}})";
  EXPECT_NE(refusal(def_with(var, R"({"x": {"shape": ["n"], "dtype": "float16"}})")).find("inputs.x.dtype: dtype \"float16\""),
            std::string::npos);
  EXPECT_NE(refusal(def_with(var, R"({"x": {"shape": ["n"], "dtype": "int32"}})")).find("integer input 'x'"), std::string::npos);
  EXPECT_NE(refusal(def_with(var, R"({"x": {"shape": ["m"], "dtype": "float32"}})")).find("unknown axis \"m\""), std::string::npos);
  EXPECT_NE(refusal(def_with(R"J({"n": {"type": "var"}, "h": {"type": "expr", "expression": "math.ceil(n / 2)"}})J", x))
                .find("axes.h.expression"),
            std::string::npos);
  EXPECT_NE(refusal(def_with(var, x, R"(, "constraints": ["n % 8 == 0 and q > 1"])")).find("constraints[0]"), std::string::npos);
  EXPECT_NE(refusal(def_with(var, R"({"x": {"shape": ["n"], "dtype": "float32"}, "eps": {"shape": null, "dtype": "float32"}})"))
                .find("inputs.eps: a scalar (null shape) needs its value"),
            std::string::npos);
  const std::string ratio = R"({"definition": "d", "workload": {"axes": {"n": 5}, "inputs": {}}, "tolerance": {"atol": 0.01, "rtol": 0.01, "required_matched_ratio": 0.99}})";
  EXPECT_NE(refusal(def_with(var, x), ratio).find("required_matched_ratio: 0.99 without max_error_cap"), std::string::npos);
  EXPECT_NE(refusal(def_with(R"({"n": {"type": "var"}, "h": {"type": "const", "value": 32768}, "i": {"type": "const", "value": 16384}})",
                             R"({"x": {"shape": ["n"], "dtype": "float32"}, "w": {"shape": ["i", "h"], "dtype": "float32"}})"))
                .find("inputs.w.shape: 536870912 elements at the base shape: past 2^28"),
            std::string::npos);
  EXPECT_NE(refusal(R"({"name": "d"})").find("axes: missing"), std::string::npos);
  EXPECT_NE(refusal("{not json").find("not JSON"), std::string::npos);
}

}  // namespace
}  // namespace kqual::contract
