// kqual import-kernelbench (issue 24, item 2) on the CPU: the translation of captures (written by hand
// in the format tools/torch/kernelbench_capture.py prints; fixtures/kernelbench/README.md) into
// declared contracts — axes from the module's size constants, the benchmark shape scaled to
// --max-elements, parameters as inputs, integer inputs and outputs kept integers, a scalar argument,
// value distributions — and a refusal by name for each construct kqual cannot express. Without
// PyTorch (this machine), the capture itself must fail saying so.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>

#include "kqual/contract/compare.hpp"
#include "kqual/contract/declared/declared.hpp"
#include "kqual/import/import_kernelbench.hpp"
#include "kqual/core/error.hpp"
#include "kqual/core/files.hpp"
#include "kqual/core/process.hpp"
#include "contract/contract_test_util.hpp"
#include "test_util.hpp"

namespace kqual::contract {
namespace {
namespace fs = std::filesystem;

const fs::path kKernelBenchFixtures = fs::path(KQUAL_SOURCE_DIR) / "tests/import/fixtures/kernelbench";

json capture(const std::string& name) { return json::parse(read_text_file(kKernelBenchFixtures / (name + ".capture.json"))); }

KernelBenchImportOptions options(const std::string& name, const fs::path& out) {
  KernelBenchImportOptions o;
  o.problem = kKernelBenchFixtures / (name + ".py");
  o.capture = kKernelBenchFixtures / (name + ".capture.json");
  o.out = out;
  return o;
}


TEST(ImportKernelBench, ElementwiseProblemScaledToTheCapWithConstantsAsAxes) {
  ScratchDir dir("kqual-import-kb");
  const KernelBenchImport r = import_kernelbench(options("leaky_relu_rows", dir.path() / "c"));
  EXPECT_EQ(r.name, "kb_leaky_relu_rows");
  // 4096 x 393216 is 1.6e9 elements: dim halved until the tensor fits 2^26, batch_size kept.
  EXPECT_EQ(r.bench_shape, "batch_size=4096,dim=12288");
  for (const char* f : {"contract.toml", "reference.py", "problem.py", "capture.json"}) EXPECT_TRUE(fs::exists(dir.path() / "c" / f)) << f;
  const Contract& c = load_declared_contract(dir.path() / "c");
  EXPECT_EQ(c.given_dims(), (std::vector<std::string>{"batch_size", "dim"}));
  ASSERT_EQ(c.benchmark_shapes().size(), 1u);
  EXPECT_EQ(c.benchmark_shapes()[0].at("dim"), 12288);
  EXPECT_EQ(c.dtypes(), (std::vector<DType>{DType::f32}));
  // torch.rand: uniform [0, 1) as KernelBench draws it, plus a signed family; KernelBench's tolerance.
  EXPECT_TRUE(kqual::test::contains(r.contract_toml, "values = { dist = \"uniform\", lo = 0, hi = 1 }")) << r.contract_toml;
  EXPECT_TRUE(kqual::test::contains(r.contract_toml, "[families.signed]\nx = { lo = -1 }")) << r.contract_toml;
  EXPECT_TRUE(kqual::test::contains(r.contract_toml, "error = { model = \"allclose\", atol = 0.0001, rtol = 0.0001 }")) << r.contract_toml;
  EXPECT_TRUE(kqual::test::contains(r.contract_toml, "max_case_elements = 50331648")) << r.contract_toml;
  // Written explicitly, with why: KernelBench compares each run with torch.allclose, never two runs.
  EXPECT_TRUE(kqual::test::contains(r.contract_toml, "# KernelBench judges each run against its reference")) << r.contract_toml;
  EXPECT_TRUE(kqual::test::contains(r.contract_toml, "\ndeterministic = false\n")) << r.contract_toml;
  EXPECT_FALSE(c.reproducibility(DType::f32).required);
  // Boundary cases along both axes: a warp and a block's t-1, t, t+1 with the other axis at its base.
  Supports s = test_util::f32_only();
  s.max_n = kUnlimited;
  bool dim_257 = false, batch_33 = false, large = false;
  for (const auto& cs : c.correctness_cases(s, 1, true)) {
    dim_257 |= cs.dims.at("dim") == 257;
    batch_33 |= cs.dims.at("batch_size") == 33;
    large |= cs.dims.at("dim") == 12288 && cs.dims.at("batch_size") == 4096;
  }
  EXPECT_TRUE(dim_257);
  EXPECT_TRUE(batch_33);
  EXPECT_TRUE(large) << "the benchmark shape is checked too";
  // The reference maps the contract's names to the module's.
  EXPECT_TRUE(kqual::test::contains(r.reference_py, R"("axes":{"batch_size":"batch_size","dim":"dim"})")) << r.reference_py;
  EXPECT_TRUE(kqual::test::contains(r.reference_py, "def forward(**kw):"));
  EXPECT_THROW(import_kernelbench(options("leaky_relu_rows", dir.path() / "c")), Error) << "the folder exists";
}

TEST(ImportKernelBench, ParametersBecomeInputsAndBuffersStayModelState) {
  const KernelBenchImport lin = translate_kernelbench(capture("linear_gelu"), options("linear_gelu", "unused"));
  EXPECT_TRUE(kqual::test::contains(lin.contract_toml, "[tensors.linear_weight]\ndescription = \"Model parameter linear.weight\"\nrole = \"input\"\n"
                                     "shape = [\"out_features\", \"in_features\"]")) << lin.contract_toml;
  EXPECT_TRUE(kqual::test::contains(lin.reference_py, R"("parameters":{"linear_weight":"linear.weight","linear_bias":"linear.bias"})")) << lin.reference_py;
  EXPECT_EQ(lin.bench_shape, "batch_size=128,in_features=1024,out_features=512");  // within the cap: KernelBench's own shape
  // Weights initialised to a constant are drawn around it (a kernel ignoring them must fail); the
  // running statistics are buffers, restored before every call, never inputs.
  const KernelBenchImport bn = translate_kernelbench(capture("batch_norm_1d"), options("batch_norm_1d", "unused"));
  EXPECT_TRUE(kqual::test::contains(bn.contract_toml, "[tensors.bn_weight]")) << bn.contract_toml;
  EXPECT_TRUE(kqual::test::contains(bn.contract_toml, "values = { dist = \"uniform\", lo = 0.5, hi = 1.5 }")) << bn.contract_toml;
  EXPECT_TRUE(kqual::test::contains(bn.contract_toml, "values = { dist = \"uniform\", lo = -0.5, hi = 0.5 }")) << bn.contract_toml;
  EXPECT_FALSE(kqual::test::contains(bn.contract_toml, "running_mean")) << bn.contract_toml;
  bool said = false;
  for (const auto& n : bn.notes) said |= kqual::test::contains(n, "buffer 'bn.running_mean'") && kqual::test::contains(n, "restored before every call");
  EXPECT_TRUE(said);
  EXPECT_TRUE(kqual::test::contains(bn.contract_toml, "range = [2, 2147483647]")) << "batch statistics need two rows: the capture's minimum";
}

// A 0-d parameter (nn.Parameter(torch.tensor(2.0))) and a 0-d input (torch.tensor(0.25) from
// get_inputs()): one element along the constant axis c1, drawn around their one value, and given back
// to the model 0-d by the reference.
TEST(ImportKernelBench, ZeroDInputsAndParametersAreOneElementAlongC1) {
  ScratchDir dir("kqual-import-kb");
  const KernelBenchImport r = import_kernelbench(options("scale_shift_0d", dir.path() / "c"));
  EXPECT_TRUE(kqual::test::contains(r.contract_toml, "[axes.c1]\nvalue = 1")) << r.contract_toml;
  EXPECT_TRUE(kqual::test::contains(r.contract_toml, "[tensors.shift]\nrole = \"input\"\nshape = [\"c1\"]\nvalues = { dist = \"uniform\", lo = 0.125, hi = 0.375 }"))
      << r.contract_toml;
  EXPECT_TRUE(kqual::test::contains(r.contract_toml, "[tensors.scale]\ndescription = \"Model parameter scale\"\nrole = \"input\"\nshape = [\"c1\"]\n"
                                     "values = { dist = \"uniform\", lo = 1, hi = 3 }")) << r.contract_toml;
  EXPECT_TRUE(kqual::test::contains(r.reference_py, R"("zero_d":["shift","scale"])")) << r.reference_py;
  EXPECT_TRUE(kqual::test::contains(r.reference_py, "kw[name] = kw[name].reshape(())")) << r.reference_py;
  bool said = false;
  for (const auto& n : r.notes) said |= kqual::test::contains(n, "forward input 1 (shift) is 0-d: held as one element along the constant axis c1");
  EXPECT_TRUE(said);
  const Contract& c = load_declared_contract(dir.path() / "c");
  EXPECT_EQ(c.given_dims(), (std::vector<std::string>{"batch_size", "dim"}));
  EXPECT_EQ(c.complete_dims({{"batch_size", 3}, {"dim", 5}}).at("c1"), 1);
}

// A loss: one output element, one along c1; the declared engine's non-triviality check judges it by
// redrawing the inputs (declared_generated_test.cpp, OneElementOutputs...).
TEST(ImportKernelBench, AOneElementOutputImportsAndIsJudgedByRedrawingTheInputs) {
  ScratchDir dir("kqual-import-kb");
  const KernelBenchImport r = import_kernelbench(options("mse_loss", dir.path() / "loss"));
  EXPECT_TRUE(kqual::test::contains(r.contract_toml, "[tensors.out]\nrole = \"output\"\nshape = [\"c1\"]")) << r.contract_toml;
  bool said = false;
  for (const auto& n : r.notes) said |= kqual::test::contains(n, "output 0 has one element (a loss");
  EXPECT_TRUE(said);
  const Contract& c = load_declared_contract(dir.path() / "loss");
  EXPECT_EQ(c.tensor_elements("out", c.complete_dims({{"batch_size", 7}})), 1);
}

// Inputs sampled as probabilities (rows along the last dim summing to 1: KLDivLoss's get_inputs takes
// a softmax) are drawn as softmax rows, not as uniform values a log would turn into NaN.
TEST(ImportKernelBench, ProbabilityRowsAreDrawnAsSoftmaxRows) {
  json cap = capture("mse_loss");
  for (auto& t : cap["tensors"])
    if (t["group"] == "input") {
      t["values"] = {{"n", 65536}, {"nonfinite", 0}, {"min", 1.1e-5}, {"max", 4.9e-4}, {"mean", 2.44e-4}, {"std", 1.4e-4},
                     {"integral", false}, {"rows_sum_to_one", t["name"] == "0"}};
    }
  const KernelBenchImport r = translate_kernelbench(cap, options("mse_loss", "unused"));
  EXPECT_TRUE(kqual::test::contains(r.contract_toml, "values = { dist = \"softmax_rows\" }   # sampled 65536 values")) << r.contract_toml;
  EXPECT_TRUE(kqual::test::contains(r.contract_toml, "every row (last dim) sums to 1: probabilities")) << r.contract_toml;
  // The other input's rows do not sum to 1: it keeps a value distribution of its own.
  EXPECT_EQ(r.contract_toml.find("softmax_rows"), r.contract_toml.rfind("softmax_rows")) << r.contract_toml;
  // The contract loads, and its cases hand the kernel rows that sum to 1.
  ScratchDir dir("kqual-import-kb-probs");
  std::ofstream(dir.path() / "cap.json") << cap.dump();
  KernelBenchImportOptions o = options("mse_loss", dir.path() / "probs");
  o.capture = dir.path() / "cap.json";
  o.name = "kb_mse_loss_probabilities";
  (void)import_kernelbench(o);
  const Contract& c = load_declared_contract(dir.path() / "probs");
  Supports s = test_util::f32_only();
  const auto cases = c.correctness_cases(s, 1, false);
  ASSERT_FALSE(cases.empty());
  const CaseData d = c.make_case(cases.front());
  int seen = 0;
  for (const auto& in : d.inputs) {
    if (in.name != "predictions") continue;
    ++seen;
    const std::int64_t cols = 4096, rows = in.elements / cols;
    ASSERT_EQ(rows * cols, in.elements);
    for (std::int64_t row = 0; row < rows; ++row) {
      double sum = 0;
      for (std::int64_t i = 0; i < cols; ++i) sum += element_as_double(in.dtype, in.bytes.data(), std::size_t(row * cols + i));
      EXPECT_NEAR(sum, 1.0, 1e-4) << "row " << row;
    }
  }
  EXPECT_EQ(seen, 1);
}

TEST(ImportKernelBench, IntegersStayIntegersAndNumbersBecomeScalars) {
  const KernelBenchImport g = translate_kernelbench(capture("gather_rows"), options("gather_rows", "unused"));
  // torch.randint(0, num_classes): indices into that axis, an int64 tensor, never cast.
  EXPECT_TRUE(kqual::test::contains(g.contract_toml, "values = { dist = \"indices\", axis = \"num_classes\" }")) << g.contract_toml;
  EXPECT_TRUE(kqual::test::contains(g.contract_toml, "idx = \"i64\"")) << g.contract_toml;
  const KernelBenchImport a = translate_kernelbench(capture("argmax_dim"), options("argmax_dim", "unused"));
  EXPECT_TRUE(kqual::test::contains(a.contract_toml, "[tensors.out]\nrole = \"output\"\nshape = [\"batch_size\", \"dim2\"]\nerror = { model = \"exact\" }"))
      << a.contract_toml;
  // Only integer outputs, compared exactly: a run-to-run difference is already a wrong element.
  EXPECT_TRUE(kqual::test::contains(a.contract_toml, "\ndeterministic = true\n")) << a.contract_toml;
  EXPECT_TRUE(kqual::test::contains(g.contract_toml, "\ndeterministic = false\n")) << g.contract_toml;
  bool said = false;
  for (const auto& n : a.notes) said |= kqual::test::contains(n, "constant reduce_dim is not an axis");
  EXPECT_TRUE(said);
  const KernelBenchImport sc = translate_kernelbench(capture("scale_by_scalar"), options("scale_by_scalar", "unused"));
  EXPECT_TRUE(kqual::test::contains(sc.contract_toml, "[scalars.s]   # a number forward takes\ndtype = \"f64\"\nvalue = 3.5")) << sc.contract_toml;
  EXPECT_TRUE(kqual::test::contains(sc.reference_py, R"("args":["A","s"])")) << sc.reference_py;
  ScratchDir dir("kqual-import-kb");
  EXPECT_NO_THROW(import_kernelbench(options("scale_by_scalar", dir.path() / "s")));
  EXPECT_NO_THROW(import_kernelbench(options("gather_rows", dir.path() / "g")));
  EXPECT_NO_THROW(import_kernelbench(options("argmax_dim", dir.path() / "a")));
}

// The text of one TOML table of the written contract, up to the next table.
using test_util::toml_table;

// KernelBench draws every input from one distribution (torch.rand or torch.randn). The import writes
// value-scale families over the data inputs (forward's float inputs with an output's shape, else its
// first one): torch.rand's [0, 1) scaled, never made negative; torch.randn's N(0, 1) scaled or shifted;
// integer inputs (indices), parameters (weights) and scalars untouched.
TEST(ImportKernelBench, WritesValueScaleFamiliesForTheDataInputs) {
  // torch.rand: [0, 1) scaled (its sign kept), shifted to [3, 5]; the signed family stays.
  const KernelBenchImport relu = translate_kernelbench(capture("leaky_relu_rows"), options("leaky_relu_rows", "unused"));
  EXPECT_EQ(toml_table(relu.contract_toml, "[families.small_scale]"), "[families.small_scale]\nmax_elements = 1048576\nx = { scale = 0.001 }") << relu.contract_toml;
  EXPECT_EQ(toml_table(relu.contract_toml, "[families.large_scale]"), "[families.large_scale]\nmax_elements = 1048576\nx = { scale = 1000 }") << relu.contract_toml;
  EXPECT_TRUE(toml_table(relu.contract_toml, "[families.nonzero_mean]").starts_with("[families.nonzero_mean]\nmax_elements = 1048576\nx = { lo = 3, hi = 5 }\n")) << relu.contract_toml;
  EXPECT_TRUE(kqual::test::contains(relu.contract_toml, "[families.signed]\nx = { lo = -1 }")) << relu.contract_toml;
  EXPECT_TRUE(kqual::test::contains(relu.contract_toml, "the imported atol = 0.0001")) << relu.contract_toml;
  // torch.randn: shifted by its mean; the parameters (nn.Linear's weight and bias) keep their values.
  const KernelBenchImport lin = translate_kernelbench(capture("linear_gelu"), options("linear_gelu", "unused"));
  EXPECT_TRUE(toml_table(lin.contract_toml, "[families.nonzero_mean]").starts_with("[families.nonzero_mean]\nmax_elements = 1048576\nx = { mean = 4, std = 0.5 }\n")) << lin.contract_toml;
  for (const char* f : {"[families.small_scale]", "[families.large_scale]", "[families.nonzero_mean]"})
    EXPECT_FALSE(kqual::test::contains(toml_table(lin.contract_toml, f), "linear_")) << f;
  // An index input is never in a family; its values stay indices into the axis.
  ScratchDir dir("kqual-import-kb");
  KernelBenchImportOptions go = options("gather_rows", dir.path() / "g");
  go.name = "kb_gather_rows_families";  // another test registers kb_gather_rows in this process
  const KernelBenchImport g = import_kernelbench(go);
  for (const char* f : {"[families.small_scale]", "[families.large_scale]", "[families.nonzero_mean]"}) {
    EXPECT_TRUE(kqual::test::contains(toml_table(g.contract_toml, f), "\nx = {")) << f << "\n" << g.contract_toml;
    EXPECT_FALSE(kqual::test::contains(toml_table(g.contract_toml, f), "idx")) << f;
  }
  const Contract& c = load_declared_contract(dir.path() / "g");
  Supports s = test_util::f32_only();
  s.max_n = kUnlimited;
  std::map<std::string, int> seen;
  for (const auto& cs : c.correctness_cases(s, 1, false)) {
    if (cs.family == "base" || seen[cs.family]++) continue;
    const CaseData d = c.make_case(cs);
    for (const auto& in : d.inputs) {
      double lo = INFINITY, hi = -INFINITY;
      bool integral = true;
      for (std::int64_t i = 0; i < in.elements; ++i) {
        const double v = element_as_double(in.dtype, in.bytes.data(), std::size_t(i));
        lo = std::min(lo, v), hi = std::max(hi, v), integral &= v == std::floor(v);
      }
      if (in.name == "idx") {
        EXPECT_EQ(in.dtype, DType::i64);
        EXPECT_TRUE(integral && lo >= 0 && hi < double(d.dims.at("num_classes"))) << cs.id << ": idx in [" << lo << ", " << hi << "]";
      } else if (cs.family == "small_scale") {
        EXPECT_LT(std::max(-lo, hi), 0.01) << cs.id;
      } else if (cs.family == "large_scale") {
        EXPECT_GT(std::max(-lo, hi), 1000) << cs.id;
      } else if (cs.family == "nonzero_mean") {
        EXPECT_GT(lo, 0) << cs.id;
      }
    }
  }
  for (const char* f : {"small_scale", "large_scale", "nonzero_mean"}) EXPECT_GT(seen[f], 0) << f;
}

std::string refusal(const json& cap, KernelBenchImportOptions o) {
  ScratchDir dir("kqual-import-kb-bad");
  o.out = dir.path() / "out";
  o.capture = dir.path() / "cap.json";
  std::ofstream(o.capture) << cap.dump();
  try {
    (void)import_kernelbench(o);
  } catch (const Error& e) {
    EXPECT_FALSE(fs::exists(o.out)) << "nothing half-written";
    EXPECT_FALSE(fs::exists(o.out.string() + ".kqual-tmp"));
    return e.what();
  }
  return "";
}

// float16, int8 and bool tensors import: f16 outputs under KernelBench's half-precision tolerance
// (1e-2), f16 data with f16's own extremes, an int8 input over its range, a bool input a mask with the
// sampled share, a bool output exact. get_inputs()'s torch.rand is not the reference sampling.
TEST(ImportKernelBench, HalfInt8AndBoolTensorsImport) {
  ScratchDir dir("kqual-import-kb-dtypes");
  const KernelBenchImport r = import_kernelbench(options("half_input", dir.path() / "half"));
  const std::string& t = r.contract_toml;
  EXPECT_TRUE(kqual::test::contains(t, "rows = [{ x = \"f16\", out = \"f16\" }]")) << t;
  // get_inputs() makes float16 tensors; forward casts nothing: the reference computes in float64.
  EXPECT_TRUE(kqual::test::contains(t, "float64: kqual hands forward() float64 tensors and its source casts to no other dtype")) << t;
  EXPECT_TRUE(kqual::test::contains(t, "error = { model = \"allclose\", atol = 0.01, rtol = 0.01 }")) << t;
  EXPECT_TRUE(kqual::test::contains(t, "[families.extreme_scale]\nmax_elements = 1048576\nx = { extremes = 0.01 }")) << t;
  const Contract& c = load_declared_contract(dir.path() / "half");
  EXPECT_EQ(c.dtypes(), (std::vector<DType>{DType::f16}));
  // The same capture with the input as int8 and bool, the output as fp8 and bool.
  json i8 = capture("half_input");
  i8["tensors"][0]["dtype"] = "int8";
  i8["tensors"][1]["dtype"] = "float8_e4m3fn";
  const std::string ti8 = translate_kernelbench(i8, options("half_input", "unused")).contract_toml;
  EXPECT_TRUE(kqual::test::contains(ti8, "values = { dist = \"int\", lo = -128, hi = 127 }")) << ti8;
  EXPECT_TRUE(kqual::test::contains(ti8, "error = { model = \"allclose\", atol = 0.01, rtol = 0.125 }")) << "one e4m3 ulp: " << ti8;
  EXPECT_FALSE(kqual::test::contains(ti8, "[families.")) << ti8;
  json mask = capture("half_input");
  mask["tensors"][0]["dtype"] = "bool";
  mask["tensors"][0]["values"]["mean"] = 0.25;
  mask["tensors"][1]["dtype"] = "bool";
  const std::string tb = translate_kernelbench(mask, options("half_input", "unused")).contract_toml;
  EXPECT_TRUE(kqual::test::contains(tb, "values = { dist = \"mask\", p = 0.25 }")) << tb;
  EXPECT_TRUE(kqual::test::contains(tb, "error = { model = \"exact\" }")) << tb;
  EXPECT_TRUE(kqual::test::contains(tb, "\ndeterministic = true")) << tb;
}

TEST(ImportKernelBench, AnAxisNeverEmptiesADimDerivedFromIt) {
  // A 5 x 9 kernel without padding: the output is (height - 4) x (width - 8). The capture's minimum
  // width is 8 (the meta device builds an empty output); the contract's range starts where every
  // derived dim has at least one element, and its base and every case stay there.
  ScratchDir dir("kqual-import-kb");
  const KernelBenchImport r = import_kernelbench(options("conv_wide_kernel", dir.path() / "c"));
  EXPECT_TRUE(kqual::test::contains(r.contract_toml, "[axes.width]\nrange = [9, 2147483647]")) << r.contract_toml;
  EXPECT_TRUE(kqual::test::contains(r.contract_toml, "[axes.height]\nrange = [8, 2147483647]")) << r.contract_toml;
  const Contract& c = load_declared_contract(dir.path() / "c");
  Supports s = test_util::f32_only();
  s.max_n = kUnlimited;
  const auto cases = c.correctness_cases(s, 1, true);
  ASSERT_FALSE(cases.empty());
  for (const auto& cs : cases) {
    EXPECT_GE(cs.dims.at("width"), 9) << cs.id;
    EXPECT_GE(cs.dims.at("height"), 5) << cs.id;
  }
}

TEST(ImportKernelBench, ConstantsThatMoveADimTogetherAreHeld) {
  // height - kernel_size + 1: neither constant is an axis (the capture holds both, and width), so the
  // output's spatial dims stay the module's at every case; batch and channels vary.
  ScratchDir dir("kqual-import-kb");
  const KernelBenchImport r = import_kernelbench(options("conv_square_kernel", dir.path() / "c"));
  const Contract& c = load_declared_contract(dir.path() / "c");
  EXPECT_EQ(c.given_dims(), (std::vector<std::string>{"batch_size", "in_channels", "out_channels"})) << r.contract_toml;
  EXPECT_EQ(c.tensor_elements("out", c.complete_dims({{"batch_size", 1}, {"in_channels", 1}, {"out_channels", 1}})), 30 * 30);
}

TEST(ImportKernelBench, AFixedWeightPastTheCapIsHeldAndTheRestCutToIt) {
  // VGG's classifier, an MLP's hidden layers: literal sizes no constant moves. Past --max-elements
  // but within the reference's 2^28, every case holds the weight and the other tensors are cut to it.
  json cap = capture("linear_gelu");
  cap["axis_constants"].erase("in_features");
  cap["axis_constants"].erase("out_features");
  KernelBenchImportOptions o = options("linear_gelu", "unused");
  o.max_elements = 100000;
  const KernelBenchImport r = translate_kernelbench(cap, o);
  EXPECT_EQ(r.bench_shape, "batch_size=128");  // x is 128 x 1024, within the weight's 524288
  bool said = false;
  for (const auto& n : r.notes)
    said |= kqual::test::contains(n, "tensor 'linear_weight' has 524288 elements at every shape") &&
            kqual::test::contains(n, "over --max-elements 100000");
  EXPECT_TRUE(said) << fmt::format("{}", fmt::join(r.notes, "\n"));
  // Past 2^24 the contract's case cap is raised to hold it (the default would leave every case out).
  cap["tensors"][1]["shape"] = {8192, 4096};
  cap["tensors"][1]["dims"][0]["value"] = 8192;
  cap["tensors"][1]["dims"][1]["value"] = 4096;
  const KernelBenchImport big = translate_kernelbench(cap, o);
  EXPECT_TRUE(kqual::test::contains(big.contract_toml, "max_case_elements = 33554432")) << big.contract_toml;
}

TEST(ImportKernelBench, RefusesByNameWhatCannotBeExpressed) {
  // nn.Dropout(0.5) is read in the source; with its p from a variable, the capture's two seeded runs differ.
  EXPECT_TRUE(kqual::test::contains(refusal(capture("dropout_random"), options("dropout_random", "")),
                                    "dropout_random.py: forward: statistical operation: the reference samples (nn.Dropout(0.5) in training "
                                    "mode at line 10); no statistical judge is declared"));
  KernelBenchImportOptions unread = options("dropout_random", "");
  unread.problem.clear();
  std::string dynamic;
  try {
    (void)translate_kernelbench(capture("dropout_random"), unread);
  } catch (const Error& e) {
    dynamic = e.what();
  }
  EXPECT_TRUE(kqual::test::contains(dynamic, "forward: is random")) << dynamic;
  // A dropout whose p comes from get_init_inputs() is not refused by the static read: it reaches the capture
  // (without PyTorch here, the error says PyTorch is missing; on the GPU machine the capture refuses it as random).
  const auto variable_p = kqual::test::run(kqual::test::kq() + " import-kernelbench " +
                                           kqual::test::quote(kKernelBenchFixtures / "dropout_variable_p.py") + " --out " +
                                           kqual::test::quote(fs::temp_directory_path() / "kqual-kb-variable-p-unwritten"));
  EXPECT_EQ(variable_p.exit_code, 2) << variable_p.output;
  EXPECT_FALSE(kqual::test::contains(variable_p.output, "statistical operation")) << variable_p.output;
  EXPECT_TRUE(kqual::test::contains(variable_p.output, "dropout_variable_p.py: ")) << variable_p.output;
  json fp4 = capture("half_input");
  fp4["tensors"][0]["dtype"] = "float4_e2m1fn_x2";
  EXPECT_TRUE(kqual::test::contains(refusal(fp4, options("half_input", "")), "forward input 0 (x): has dtype float4_e2m1fn_x2"));
  // A list argument; a shape whose dims no constant moves, over the cap.
  json list = capture("scale_by_scalar");
  list["tensors"][1]["dtype"] = "unsupported:list";
  EXPECT_TRUE(kqual::test::contains(refusal(list, options("scale_by_scalar", "")), "forward input 1 (s): is a Python list"));
  json fixed = capture("scale_by_scalar");
  fixed["axis_constants"] = json::object();
  for (auto& t : fixed["tensors"])
    if (!t["dims"].empty()) {  // M = 2^19: 2^30 elements
      t["shape"][0] = std::int64_t(1) << 19;
      t["dims"][0]["value"] = std::int64_t(1) << 19;
    }
  EXPECT_TRUE(kqual::test::contains(refusal(fixed, options("scale_by_scalar", "")),
                                    "tensor 'A': has 1073741824 elements at the smallest shape kqual can reach, over 2^28"));
  // The capture's own failure is passed on with its code.
  EXPECT_TRUE(kqual::test::contains(refusal(json{{"ok", false}, {"code", "meta_failed"}, {"error", "forward on meta: boom"}}, options("half_input", "")),
                  "capture failed (meta_failed): forward on meta: boom"));
}

TEST(ImportKernelBench, WithoutPyTorchTheCaptureSaysSo) {
  // The capture runs with the reference interpreter; this machine's has NumPy and no PyTorch.
  ProcessResult pr = run_process(reference_python(), {"-c", "import torch"}, {}, {}, 60);
  if (pr.exited && pr.exit_code == 0) GTEST_SKIP() << "PyTorch is importable here: the no-torch error cannot be shown";
  try {
    (void)capture_kernelbench(kKernelBenchFixtures / "leaky_relu_rows.py");
    FAIL() << "the capture succeeded without PyTorch";
  } catch (const Error& e) {
    EXPECT_TRUE(kqual::test::contains(e.what(), "PyTorch is not importable")) << e.what();
    EXPECT_TRUE(kqual::test::contains(e.what(), "--capture")) << e.what();
  }
  ScratchDir dir("kqual-import-kb");
  KernelBenchImportOptions o = options("leaky_relu_rows", dir.path() / "c");
  o.capture.clear();
  EXPECT_THROW(import_kernelbench(o), Error);
  EXPECT_FALSE(fs::exists(o.out));
}

}  // namespace
}  // namespace kqual::contract
