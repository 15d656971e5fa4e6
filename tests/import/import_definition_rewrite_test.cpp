// kqual import-definition on what SOL-ExecBench and flashinfer-bench Definitions say that kqual's
// declared contracts hold another way (src/import/import_definition_rewrite.cpp and
// import_definition_workloads.cpp), over fixtures written here in the public formats: literal sizes
// in shapes and 0-d tensors as a constant axis, boolean scalars, one scalar written at two float
// widths, an explicit required_matched_ratio without a cap, workloads with an empty tensor, an
// equality constraint that fixes an axis, a tensor's shape read in a constraint; and what stays
// refused by name. Nothing needs torch or a GPU: the references are written, not run (the adapter
// that reshapes 0-d tensors is run with plain python3 over a stub tensor).
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>

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
using kqual::test::contains;
using test_util::toml_table;

const fs::path kFixtures = fs::path(KQUAL_SOURCE_DIR) / "tests/import/fixtures/definitions";

// A fixture copied into `dir` under another name (a process registers each declared contract name
// once), with or without its workloads.
DefinitionImportOptions fixture_as(const fs::path& dir, const std::string& stem, const std::string& name, bool workloads) {
  DefinitionImportOptions o;
  o.definition = dir / (name + ".json");
  o.out = dir / name;
  if (workloads) o.workloads = dir / (name + ".jsonl");
  for (const auto& [from, to] : {std::pair{kFixtures / (stem + ".json"), o.definition}, {kFixtures / (stem + ".jsonl"), o.workloads}}) {
    if (to.empty()) continue;
    std::string text = read_text_file(from);
    for (std::size_t p; (p = text.find("\"" + stem + "\"")) != std::string::npos;) text.replace(p, stem.size() + 2, "\"" + name + "\"");
    write_file_atomic(to, text);
  }
  return o;
}

bool has_note(const DefinitionImport& r, const std::string& part) {
  return std::any_of(r.notes.begin(), r.notes.end(), [&](const std::string& n) { return contains(n, part); });
}

// What import_definition throws for `def` (and `jsonl`), "" when it imports.
std::string refusal_of(const json& def, const std::string& jsonl = "") { return test_util::definition_refusal(def.dump(), jsonl); }

// A small Definition: x[n] -> y[n], run(x) = x.
json small_definition(const std::string& name) {
  return json{{"name", name},
              {"axes", {{"n", {{"type", "var"}}}}},
              {"inputs", {{"x", {{"shape", json::array({"n"})}, {"dtype", "float32"}}}}},
              {"outputs", {{"y", {{"shape", json::array({"n"})}, {"dtype", "float32"}}}}},
              {"reference", "def run(x):\n    return x\n"}};
}

TEST(ImportDefinitionRewrite, LiteralSizesAndZeroDTensorsBecomeAConstantAxis) {
  ScratchDir dir("kqual-import-rewrite");
  const DefinitionImportOptions o = fixture_as(dir.path(), "sol_decode_literal_d128", "decode_literal_a", true);
  const DefinitionImport r = import_definition(o);
  EXPECT_EQ(toml_table(r.contract_toml, "[axes.c1]"), "[axes.c1]\nvalue = 1") << r.contract_toml;
  EXPECT_TRUE(contains(toml_table(r.contract_toml, "[tensors.q]"), "shape = [\"batch_size\", \"c1\", \"head_dim\"]")) << r.contract_toml;
  // 0-d tensors: one element along c1, the reference gets them 0-d through kqual_run.
  EXPECT_TRUE(contains(toml_table(r.contract_toml, "[tensors.logit_scale]"), "shape = [\"c1\"]")) << r.contract_toml;
  EXPECT_TRUE(contains(toml_table(r.contract_toml, "[tensors.max_logit]"), "shape = [\"c1\"]")) << r.contract_toml;
  EXPECT_TRUE(contains(r.contract_toml, "function = \"kqual_run\"")) << r.contract_toml;
  const std::string py = read_text_file(o.out / "reference.py");
  EXPECT_TRUE(contains(py, "_KQUAL_ZERO_D = [\"logit_scale\", \"max_logit\"]")) << py;
  EXPECT_TRUE(contains(py, "_KQUAL_ZERO_D_OUT = [\"max_logit\"]")) << py;
  EXPECT_TRUE(has_note(r, "a literal size 1 in a shape: the constant axis c1"));
  EXPECT_TRUE(has_note(r, "inputs.logit_scale.shape: [] (a 0-d tensor)"));
  const Contract& c = load_declared_contract(o.out);
  EXPECT_EQ(c.given_dims(), (std::vector<std::string>{"batch_size", "kv_len"}));
  EXPECT_EQ(c.complete_dims({{"batch_size", 3}, {"kv_len", 5}}).at("c1"), 1);
  Supports s = test_util::f32_only();
  s.max_n = kUnlimited;
  const auto cases = c.correctness_cases(s, 1, false);
  ASSERT_FALSE(cases.empty());
  for (const auto& cs : cases) EXPECT_EQ(cs.dims.at("c1"), 1) << cs.id;
}

TEST(ImportDefinitionRewrite, BooleanScalarIsAnI32AndScalarWidthsCompareByValue) {
  ScratchDir dir("kqual-import-rewrite");
  const DefinitionImportOptions o = fixture_as(dir.path(), "sol_decode_literal_d128", "decode_literal_b", true);
  const DefinitionImport r = import_definition(o);
  EXPECT_EQ(toml_table(r.contract_toml, "[scalars.causal]"), "[scalars.causal]\ndtype = \"i32\"\nvalue = 1") << r.contract_toml;
  EXPECT_TRUE(contains(read_text_file(o.out / "reference.py"), "_KQUAL_BOOL = [\"causal\"]"));
  // sm_scale is 1/sqrt(128) at float32 in one workload and at float64 in another: one float32 value.
  EXPECT_EQ(toml_table(r.contract_toml, "[scalars.sm_scale]"), "[scalars.sm_scale]\ndtype = \"f32\"\nvalue = 0.088388347648318447")
      << r.contract_toml;
  EXPECT_TRUE(has_note(r, "are one float32 value written at two widths"));
  const Contract& c = load_declared_contract(o.out);
  const auto sc = c.scalars();
  const auto causal = std::find_if(sc.begin(), sc.end(), [](const ScalarArg& a) { return a.name == "causal"; });
  ASSERT_NE(causal, sc.end());
  EXPECT_EQ(causal->dtype, DType::i32);
  EXPECT_EQ(causal->value, 1);
  // Values that differ at float32 are two values: one is held, the other's workload left out
  // (AScalarWithSeveralValuesKeepsOneAndItsWorkloads).
  json def = small_definition("two_scales");
  def["inputs"]["s"] = {{"shape", nullptr}, {"dtype", "float32"}};
  def["reference"] = "def run(x, s):\n    return x * s\n";
  const std::string two = R"({"uuid": "a", "axes": {"n": 4}, "inputs": {"s": {"type": "scalar", "value": 0.5}}}
{"uuid": "b", "axes": {"n": 8}, "inputs": {"s": {"type": "scalar", "value": 0.25}}}
)";
  EXPECT_EQ(refusal_of(def, two), "");
}

// kqual_run hands run() its 0-d tensors and Python bools and returns 0-d outputs as one element: run
// with python3 over a stub tensor class defined in the Definition's reference (no torch here).
TEST(ImportDefinitionRewrite, TheReferenceAdapterRestoresZeroDTensorsAndBools) {
  if (kqual::test::run("python3 -c pass").exit_code != 0) GTEST_SKIP() << "no python3";
  ScratchDir dir("kqual-import-rewrite");
  json def = small_definition("adapter_stub");
  def["inputs"]["s"] = {{"shape", json::array()}, {"dtype", "float32"}};
  def["inputs"]["flag"] = {{"shape", nullptr}, {"dtype", "bool"}};
  def["outputs"]["total"] = {{"shape", json::array()}, {"dtype", "float32"}};
  def["reference"] =
      "class T:\n"
      "    def __init__(self, shape):\n        self.shape = tuple(shape)\n"
      "    def reshape(self, *s):\n        return T(s[0] if len(s) == 1 and isinstance(s[0], tuple) else s)\n\n"
      "def run(x, s, flag):\n"
      "    assert s.shape == (), s.shape\n    assert flag is True, flag\n    return x, T(())\n";
  DefinitionImportOptions o;
  o.definition = dir.path() / "adapter_stub.json";
  std::ofstream(o.definition) << def.dump();
  o.workloads = dir.path() / "adapter_stub.jsonl";
  std::ofstream(o.workloads) << R"({"uuid": "a", "axes": {"n": 4}, "inputs": {"flag": {"type": "scalar", "value": true}}})" << "\n";
  o.out = dir.path() / "adapter_stub";
  (void)import_definition(o);
  const fs::path harness = dir.path() / "harness.py";
  std::ofstream(harness) << "import runpy, sys\nm = runpy.run_path(sys.argv[1])\nT = m['T']\n"
                            "y, total = m['kqual_run'](x=T((4,)), s=T((1,)), flag=1, n=4, c1=1)\n"
                            "assert y.shape == (4,) and total.shape == (1,), (y.shape, total.shape)\nprint('adapter ok')\n";
  const auto res = kqual::test::run("python3 " + kqual::test::quote(harness) + " " + kqual::test::quote(o.out / "reference.py"));
  EXPECT_EQ(res.exit_code, 0) << res.output;
  EXPECT_TRUE(contains(res.output, "adapter ok")) << res.output;
}

// The f32 correctness cases of an imported contract whose one free axis is batch_size (checked).
std::vector<CaseSpec> cases_over_batch_size(const std::filesystem::path& out) {
  const Contract& c = load_declared_contract(out);
  EXPECT_EQ(c.given_dims(), (std::vector<std::string>{"batch_size"}));
  Supports s = test_util::f32_only();
  s.max_n = kUnlimited;
  return c.correctness_cases(s, 1, false);
}

TEST(ImportDefinitionRewrite, ExplicitMatchedRatioWithoutCapIsTheDefaultAndEmptyWorkloadsAreLeftOut) {
  ScratchDir dir("kqual-import-rewrite");
  DefinitionImportOptions o = fixture_as(dir.path(), "sol_decode_literal_d128", "decode_literal_c", true);
  const DefinitionImport r = import_definition(o);
  // required_matched_ratio 0.99 without max_error_cap: every element within the bound, said in a note.
  EXPECT_TRUE(has_note(r, "required_matched_ratio 0.99 without max_error_cap: treated as SOL-ExecBench's default is"));
  EXPECT_FALSE(contains(r.contract_toml, "match_ratio")) << r.contract_toml;
  EXPECT_TRUE(contains(r.contract_toml, "atol = 0.001, rtol = 0.001, combine = \"sum\" }")) << r.contract_toml;
  // The workload with kv_len = 0 (an empty tensor) gives neither a hint nor a benchmark shape.
  EXPECT_EQ(r.bench_shapes, (std::vector<std::string>{"batch_size=2,kv_len=37", "batch_size=8,kv_len=1024"}));
  EXPECT_TRUE(contains(toml_table(r.contract_toml, "[axes.kv_len]"), "hints = [37, 1024]")) << r.contract_toml;
  EXPECT_TRUE(has_note(r, "decode_literal_c.jsonl:3: axes.kv_len = 0 (an empty tensor): left out"));
  // With a cap (--cap), the ratio applies.
  DefinitionImportOptions capped = fixture_as(dir.path(), "sol_decode_literal_d128", "decode_literal_d", true);
  capped.cap = 0.5;
  EXPECT_TRUE(contains(import_definition(capped).contract_toml, "match_ratio = 0.99, cap = 0.5"));
  // One workload's ratio without a cap is every element within the bound even where another
  // workload gives a ratio with a cap (the strictest reading); before, the other's cap applied to it.
  DefinitionImportOptions mixed = fixture_as(dir.path(), "sol_decode_literal_d128", "decode_literal_e", true);
  std::string lines = read_text_file(mixed.workloads);
  const std::string uncapped = "\"required_matched_ratio\": 0.99}";
  const auto first_end = lines.find(uncapped) + uncapped.size();
  for (std::size_t p = first_end; (p = lines.find(uncapped, p)) != std::string::npos;)
    lines.replace(p, uncapped.size(), "\"required_matched_ratio\": 0.95, \"max_error_cap\": 1.0}");
  write_file_atomic(mixed.workloads, lines);
  const DefinitionImport m = import_definition(mixed);
  EXPECT_FALSE(contains(m.contract_toml, "match_ratio")) << m.contract_toml;
  EXPECT_TRUE(has_note(m, "required_matched_ratio 0.99 without max_error_cap: treated as SOL-ExecBench's default is"));
  // With --cap the uncapped line takes it: the larger ratio, the smaller cap.
  DefinitionImportOptions mixed_capped = fixture_as(dir.path(), "sol_decode_literal_d128", "decode_literal_f", true);
  write_file_atomic(mixed_capped.workloads, lines);
  mixed_capped.cap = 2.0;
  EXPECT_TRUE(contains(import_definition(mixed_capped).contract_toml, "match_ratio = 0.99, cap = 1")) << lines;
}

TEST(ImportDefinitionRewrite, AnEqualityConstraintFixesAnAxisAndShapeReadsAreAxes) {
  ScratchDir dir("kqual-import-rewrite");
  const DefinitionImportOptions o = fixture_as(dir.path(), "segment_scale_i8", "segment_scale_a", true);
  const DefinitionImport r = import_definition(o);
  EXPECT_EQ(toml_table(r.contract_toml, "[axes.len_indptr]"), "[axes.len_indptr]\nexpr = \"batch_size + 1\"") << r.contract_toml;
  EXPECT_EQ(toml_table(r.contract_toml, "[axes.w_rows]"), "[axes.w_rows]\nexpr = \"2 * inter\"") << r.contract_toml;
  EXPECT_TRUE(contains(r.contract_toml, "expr = \"w_rows == 2 * inter\"")) << r.contract_toml;
  EXPECT_TRUE(has_note(r, "constraint \"w.shape[0] == 2 * inter\" reads tensor shapes"));
  // The workload whose len_indptr breaks the constraint is no benchmark shape.
  EXPECT_EQ(r.bench_shapes, (std::vector<std::string>{"batch_size=3", "batch_size=17"}));
  EXPECT_TRUE(has_note(r, "it gives len_indptr = 9, the constraint fixes len_indptr = 6"));
  // Every case satisfies the constraints, not only the base: the contract varies batch_size alone.
  const auto cases = cases_over_batch_size(o.out);
  ASSERT_GT(cases.size(), 5u);
  for (const auto& cs : cases) {
    EXPECT_EQ(cs.dims.at("len_indptr"), cs.dims.at("batch_size") + 1) << cs.id;
    EXPECT_EQ(cs.dims.at("w_rows"), 16) << cs.id;
  }
  // indptr's size follows batch_size through a derived axis: no [index_cases] on batch_size (a window
  // of it would cut x but not indptr).
  EXPECT_FALSE(contains(r.contract_toml, "[index_cases]")) << r.contract_toml;
  // Without workloads the bases satisfy the constraint too (batch_size 64, len_indptr 65).
  const DefinitionImportOptions bare = fixture_as(dir.path(), "segment_scale_i8", "segment_scale_b", false);
  (void)import_definition(bare);
  EXPECT_EQ(load_declared_contract(bare.out).complete_dims({{"batch_size", 64}}).at("len_indptr"), 65);
}

// Equalities that chain (len_indptr == batch_size + 1, num_slots == 2 * len_indptr), written in either
// order: every axis they fix follows the one free axis, so every case satisfies both. Before, the
// second axis stayed a var axis chosen apart from batch_size, and each case that varied one of them
// broke a constraint and was dropped (6 cases were left).
TEST(ImportDefinitionRewrite, ChainedEqualitiesMakeEveryFixedAxisFollowTheFreeOne) {
  ScratchDir dir("kqual-import-rewrite");
  for (const bool reversed : {false, true}) {
    const DefinitionImportOptions o = fixture_as(dir.path(), "chained_segments_d4", reversed ? "chained_segments_b" : "chained_segments_a", true);
    if (reversed) {
      json def = json::parse(read_text_file(o.definition));
      def["constraints"] = json::array({"num_slots == 2 * len_indptr", "len_indptr == batch_size + 1"});
      write_file_atomic(o.definition, def.dump());
    }
    const DefinitionImport r = import_definition(o);
    EXPECT_EQ(toml_table(r.contract_toml, "[axes.len_indptr]"), "[axes.len_indptr]\nexpr = \"batch_size + 1\"") << r.contract_toml;
    EXPECT_EQ(toml_table(r.contract_toml, "[axes.num_slots]"), "[axes.num_slots]\nexpr = \"2 * (batch_size + 1)\"") << r.contract_toml;
    // The third workload's num_slots (10) breaks the chain (2 * 6): no benchmark shape.
    EXPECT_EQ(r.bench_shapes, (std::vector<std::string>{"batch_size=3", "batch_size=17"}));
    EXPECT_TRUE(has_note(r, "it gives num_slots = 10, the constraint fixes num_slots = 12"));
    if (reversed) {
      EXPECT_TRUE(has_note(r, "axis num_slots: expr = \"2 * (batch_size + 1)\" (axis len_indptr is derived too)"));
    }
    const auto cases = cases_over_batch_size(o.out);
    ASSERT_GT(cases.size(), 20u);
    for (const auto& cs : cases) {
      EXPECT_EQ(cs.dims.at("len_indptr"), cs.dims.at("batch_size") + 1) << cs.id;
      EXPECT_EQ(cs.dims.at("num_slots"), 2 * cs.dims.at("len_indptr")) << cs.id;
    }
  }
  // Two equalities that are one relation (a == b + 1, b == a - 1) fix one axis: no cycle.
  json cycle = small_definition("equality_cycle");
  cycle["axes"] = {{"a", {{"type", "var"}}}, {"b", {{"type", "var"}}}};
  cycle["inputs"] = {{"x", {{"shape", json::array({"a"})}, {"dtype", "float32"}}}, {"z", {{"shape", json::array({"b"})}, {"dtype", "float32"}}}};
  cycle["outputs"] = {{"y", {{"shape", json::array({"b"})}, {"dtype", "float32"}}}};
  cycle["constraints"] = json::array({"a == b + 1", "b == a - 1"});
  cycle["reference"] = "def run(x, z):\n    return z + x[1:]\n";
  EXPECT_EQ(refusal_of(cycle), "");
}

// The imported contract at `o.out` as a NumPy copy named `name` whose run() is `run_py` (no PyTorch
// here); kqual_run, the adapter the import wrote after run(), is kept.
fs::path numpy_copy(const DefinitionImportOptions& o, const std::string& from_name, const std::string& name, const std::string& run_py) {
  std::string toml = read_text_file(o.out / "contract.toml");
  for (const auto& [from, to] : {std::pair<std::string, std::string>{"kind = \"torch\"", "kind = \"numpy\""},
                                 {"name = \"" + from_name + "\"", "name = \"" + name + "\""}})
    toml.replace(toml.find(from), from.size(), to);
  const std::string py = read_text_file(o.out / "reference.py");
  const fs::path dir = o.out.parent_path() / name;
  fs::create_directories(dir);
  write_file_atomic(dir / "contract.toml", toml);
  write_file_atomic(dir / "reference.py", "import numpy as np\n\n" + run_py + py.substr(py.find("\n\n# ---- added by")));
  return dir;
}

// A 0-d output (a loss) is one element along c1: it cannot vary across its elements, so the
// non-triviality check redraws every input and requires it to change; a reference (or kernel) that
// writes a constant is refused for it.
TEST(ImportDefinitionRewrite, AZeroDOutputIsJudgedByRedrawingTheInputs) {
  KQUAL_NEED_NUMPY();
  ScratchDir dir("kqual-import-rewrite");
  const DefinitionImportOptions o = fixture_as(dir.path(), "mse_loss_h64", "mse_loss_a", true);
  const DefinitionImport r = import_definition(o);
  EXPECT_TRUE(contains(toml_table(r.contract_toml, "[tensors.loss]"), "shape = [\"c1\"]")) << r.contract_toml;
  Supports s = test_util::f32_only();
  const Contract& good = load_declared_contract(
      numpy_copy(o, "mse_loss_a", "mse_loss_a_numpy", "def run(predictions, targets):\n    return np.mean((predictions - targets) ** 2)\n"));
  const auto cases = good.correctness_cases(s, 1, false);
  ASSERT_FALSE(cases.empty());
  for (const auto& cs : std::vector<CaseSpec>(cases.begin(), cases.begin() + std::min<std::ptrdiff_t>(std::ssize(cases), 4)))
    EXPECT_EQ(good.reference(good.make_case(cs), test_util::run_host()).at(0).elements, 1) << cs.id;
  const Contract& constant =
      load_declared_contract(numpy_copy(o, "mse_loss_a", "mse_loss_a_const", "def run(predictions, targets):\n    return np.float64(0.5)\n"));
  std::string e;
  try {
    (void)constant.reference(constant.make_case(constant.correctness_cases(s, 1, false).front()), test_util::run_host());
  } catch (const Error& x) {
    e = x.what();
  }
  EXPECT_TRUE(contains(e, "gives the one-element output 'loss' the same value when every input is redrawn")) << e;
}

TEST(ImportDefinitionRewrite, RefusesByNameWhatStaysInexpressible) {
  // A literal 0 in a shape: an empty tensor the declared-contract engine does not run.
  json zero = small_definition("zero_dim");
  zero["inputs"]["x"]["shape"] = json::array({"n", "0"});
  EXPECT_TRUE(contains(refusal_of(zero), "inputs.x.shape[1]: \"0\": a zero-sized dim")) << refusal_of(zero);
  // A const axis of 0: the same empty tensor, named as such.
  json zero_axis = small_definition("zero_const_axis");
  zero_axis["axes"]["m"] = {{"type", "const"}, {"value", 0}};
  zero_axis["inputs"]["x"]["shape"] = json::array({"n", "m"});
  EXPECT_TRUE(contains(refusal_of(zero_axis), "axes.m.value: 0: a zero-sized axis")) << refusal_of(zero_axis);
  // Inputs that are all scalars: the engine generates at least one input tensor.
  json scalars = small_definition("scalars_only");
  scalars["inputs"] = {{"base", {{"shape", nullptr}, {"dtype", "float32"}}}, {"dim", {{"shape", nullptr}, {"dtype", "int32"}}}};
  EXPECT_TRUE(contains(refusal_of(scalars), "inputs: every input is a scalar (base, dim)")) << refusal_of(scalars);
  // A constraint on a tensor's values names the tensor.
  json values = small_definition("values_read");
  values["axes"]["total"] = {{"type", "var"}};
  values["inputs"]["indptr"] = {{"shape", json::array({"n"})}, {"dtype", "float32"}};
  values["constraints"] = json::array({"total == indptr[-1].item()"});
  EXPECT_TRUE(contains(refusal_of(values), "reads the values of tensor 'indptr'")) << refusal_of(values);
  // An integer scalar whose workload gives a fraction.
  json frac = small_definition("int_scalar_frac");
  frac["inputs"]["k"] = {{"shape", nullptr}, {"dtype", "int32"}};
  const std::string frac_why = refusal_of(frac, R"({"uuid": "a", "axes": {"n": 4}, "inputs": {"k": {"type": "scalar", "value": 2.5}}})" "\n");
  EXPECT_TRUE(contains(frac_why, "inputs.k.value: 2.5 is not a value an i32 scalar holds")) << frac_why;
  // A boolean scalar no workload sets: the peers draw it per run, kqual's scalars are fixed per
  // contract; refused as a boolean, not an integer.
  json flag = small_definition("bool_scalar_unset");
  flag["inputs"]["causal"] = {{"shape", nullptr}, {"dtype", "bool"}};
  const std::string unset_why = refusal_of(flag, R"({"uuid": "a", "axes": {"n": 4}, "inputs": {}})" "\n");
  EXPECT_TRUE(contains(unset_why, "inputs.causal: a boolean scalar (null shape) needs its value")) << unset_why;
  EXPECT_FALSE(contains(unset_why, "integer")) << unset_why;
  // A description with control characters (\r, \f) is escaped into contract.toml, which loads.
  json ctrl = small_definition("control_chars");
  ctrl["description"] = "one\r\ntwo\f\tthree";
  EXPECT_EQ(refusal_of(ctrl), "");
  // A bool tensor is a mask now (import_dtypes_test.cpp); fp4 has no storage type.
  json mask = small_definition("bool_tensor");
  mask["inputs"]["m"] = {{"shape", json::array({"n"})}, {"dtype", "bool"}};
  EXPECT_EQ(refusal_of(mask), "");
  json fp4 = small_definition("fp4_tensor");
  fp4["inputs"]["m"] = {{"shape", json::array({"n"})}, {"dtype", "float4_e2m1"}};
  EXPECT_TRUE(contains(refusal_of(fp4), "inputs.m.dtype: dtype \"float4_e2m1\"")) << refusal_of(fp4);
  // PyTorch's packed fp4 output has no error model here: refused by name (the input form imports:
  // PackedFp4InputsAreTheirBytes).
  json fp4_out = small_definition("fp4_output");
  fp4_out["outputs"]["y"]["dtype"] = "float4_e2m1fn_x2";
  EXPECT_TRUE(contains(refusal_of(fp4_out), "outputs.y.dtype: dtype \"float4_e2m1fn_x2\"")) << refusal_of(fp4_out);
}

// PyTorch's float4_e2m1fn_x2 input (SOL-ExecBench's nvfp4 problems: packed weights): every byte is a
// valid pair of e2m1 values, so kqual holds it as u8 bytes over all 256 patterns, and kqual_run hands
// run() the view it was written for.
TEST(ImportDefinitionRewrite, PackedFp4InputsAreTheirBytes) {
  json def = small_definition("fp4_weights");
  def["axes"]["half"] = {{"type", "const"}, {"value", 8}};
  def["inputs"]["w"] = {{"shape", json::array({"n", "half"})}, {"dtype", "float4_e2m1fn_x2"}};
  def["reference"] = "def run(x, w):\n    return x\n";
  ScratchDir dir("kqual-import-fp4");
  DefinitionImportOptions o;
  o.definition = dir.path() / "def.json";
  o.out = dir.path() / "out";
  write_file_atomic(o.definition, def.dump());
  const DefinitionImport r = import_definition(o);
  EXPECT_TRUE(has_note(r, "inputs.w: float4_e2m1fn_x2 (two e2m1 values per byte, every byte a valid pair): held as u8 bytes drawn over "
                          "all 256 patterns"));
  EXPECT_TRUE(contains(test_util::toml_table(r.contract_toml, "[tensors.w]"), "values = { dist = \"int\", lo = 0, hi = 255 }"))
      << r.contract_toml;
  EXPECT_TRUE(contains(r.contract_toml, "w = \"u8\"")) << r.contract_toml;
  EXPECT_TRUE(contains(r.contract_toml, "function = \"kqual_run\"")) << r.contract_toml;
  const std::string py = read_text_file(o.out / "reference.py");
  EXPECT_TRUE(contains(py, "_KQUAL_FP4 = [\"w\"]")) << py;
  EXPECT_TRUE(contains(py, "kw[n] = kw[n].to(_kqual_torch.uint8).view(_kqual_torch.float4_e2m1fn_x2)")) << py;
}

// A scalar the workloads give several values (SOL-ExecBench: a flag true in some workloads and false in
// others, an eps per model): kqual's scalars are fixed per contract, so the contract holds the value
// most workloads give — or the one --scalar chooses — and keeps their workloads; the rest are named.
TEST(ImportDefinitionRewrite, AScalarWithSeveralValuesKeepsOneAndItsWorkloads) {
  json def = small_definition("several_values");
  def["inputs"]["causal"] = {{"shape", nullptr}, {"dtype", "bool"}};
  def["inputs"]["eps"] = {{"shape", nullptr}, {"dtype", "float32"}};
  def["reference"] = "def run(x, causal, eps):\n    return x + eps if causal else x\n";
  const std::string jsonl =
      R"({"uuid": "a", "axes": {"n": 4}, "inputs": {"causal": {"type": "scalar", "value": false}, "eps": {"type": "scalar", "value": 1e-5}}})" "\n"
      R"({"uuid": "b", "axes": {"n": 8}, "inputs": {"causal": {"type": "scalar", "value": 1}, "eps": {"type": "scalar", "value": 1e-5}}})" "\n"
      R"({"uuid": "c", "axes": {"n": 16}, "inputs": {"causal": {"type": "scalar", "value": true}, "eps": {"type": "scalar", "value": 1e-6}}})" "\n"
      R"({"uuid": "d", "axes": {"n": 32}, "inputs": {"causal": {"type": "scalar", "value": true}, "eps": {"type": "scalar", "value": 1e-5}}})" "\n";
  ScratchDir dir("kqual-import-several");
  write_file_atomic(dir.path() / "def.json", def.dump());
  write_file_atomic(dir.path() / "w.jsonl", jsonl);
  auto import_with = [&](const std::string& out, std::map<std::string, std::string> chosen) {
    DefinitionImportOptions o;
    o.definition = dir.path() / "def.json";
    o.workloads = dir.path() / "w.jsonl";
    o.out = dir.path() / out;
    o.scalars = std::move(chosen);
    return import_definition(o);
  };
  // causal: true in 3 workloads (b, c, d), false in 1 (a); then eps over those three: 1e-5 in b and d, 1e-6 in c.
  const DefinitionImport r = import_with("default", {});
  EXPECT_TRUE(has_note(r, "inputs.causal: the workloads give it 2 values; kqual's scalars are fixed per contract, so this contract holds "
                          "causal = true (the value most workloads give) and keeps the 3 workload(s) that give it. Not judged here: "
                          "causal = false (1 workload) — import again with --scalar causal=VALUE for each"))
      << fmt::format("{}", fmt::join(r.notes, "\n"));
  EXPECT_TRUE(has_note(r, "so this contract holds eps = 1e-05 (the value most workloads give) and keeps the 2 workload(s)"));
  EXPECT_TRUE(contains(r.contract_toml, "[scalars.causal]\ndtype = \"i32\"\nvalue = 1\n")) << r.contract_toml;
  EXPECT_EQ(r.bench_shapes, (std::vector<std::string>{"n=8", "n=32"}));
  EXPECT_EQ(r.name, "several_values");
  // --scalar picks another value, under a name of its own (the imports load side by side).
  const DefinitionImport f = import_with("false", {{"causal", "false"}});
  EXPECT_TRUE(contains(f.contract_toml, "[scalars.causal]\ndtype = \"i32\"\nvalue = 0\n")) << f.contract_toml;
  EXPECT_EQ(f.bench_shapes, (std::vector<std::string>{"n=4"}));
  EXPECT_EQ(f.name, "several_values_causal_false");
  const DefinitionImport e = import_with("eps", {{"eps", "1e-6"}});
  EXPECT_EQ(e.bench_shapes, (std::vector<std::string>{"n=16"}));
  EXPECT_EQ(e.name, "several_values_eps_1e_6");
  EXPECT_TRUE(has_note(e, "holds eps = 1e-06 (chosen with --scalar) and keeps the 1 workload(s)")) << fmt::format("{}", fmt::join(e.notes, "\n"));
  // A scalar no workload sets takes the value --scalar gives (refused without it, naming --scalar).
  json unset = def;
  unset["name"] = "unset_flag";
  unset["inputs"]["gated"] = {{"shape", nullptr}, {"dtype", "bool"}};
  unset["reference"] = "def run(x, causal, eps, gated):\n    return x\n";
  write_file_atomic(dir.path() / "def.json", unset.dump());
  std::string unset_why;
  try {
    (void)import_with("unset_refused", {});
  } catch (const Error& err) {
    unset_why = err.what();
  }
  EXPECT_TRUE(contains(unset_why, "inputs.gated: a boolean scalar (null shape) needs its value: give the workloads (--workloads) that set "
                                  "it, or --scalar gated=true|false with them"))
      << unset_why;
  const DefinitionImport g = import_with("unset_given", {{"gated", "true"}});
  EXPECT_TRUE(contains(g.contract_toml, "[scalars.gated]\ndtype = \"i32\"\nvalue = 1\n")) << g.contract_toml;
  EXPECT_TRUE(has_note(g, "inputs.gated: no workload gives its value: gated = true (chosen with --scalar)"));
  write_file_atomic(dir.path() / "def.json", def.dump());
  // A value no workload gives, or a name the Definition lacks: refused by name, nothing written.
  for (const auto& [name, value, why] : {std::tuple{"causal", "2", "--scalar causal=2: no workload of"},
                                         {"nosuch", "1", "--scalar nosuch=1: "}}) {
    std::string got;
    try {
      (void)import_with(std::string("bad_") + name, {{name, value}});
    } catch (const Error& err) {
      got = err.what();
    }
    EXPECT_TRUE(contains(got, why)) << got;
    EXPECT_FALSE(fs::exists(dir.path() / (std::string("bad_") + name)));
  }
}

}  // namespace
}  // namespace kqual::contract
