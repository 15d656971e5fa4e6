// Imported contracts as strict as their source allows, and honest about the rest: special-value
// families on the floating data inputs only, kqual's dtype-aware default tolerance where the source
// states none (an erf-GELU kernel no longer passes a tanh-GELU Definition), the reference's real
// precision in the policy, and every shape of the case plan that no case checks listed. CPU only: the
// references that run are NumPy copies of the imported formula (no PyTorch here).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <vector>

#include "kqual/contract/compare.hpp"
#include "kqual/contract/declared/declared.hpp"
#include "kqual/contract/generated.hpp"
#include "kqual/import/import_definition.hpp"
#include "kqual/import/import_kernelbench.hpp"
#include "kqual/core/error.hpp"
#include "kqual/core/files.hpp"
#include "kqual/core/json.hpp"
#include "contract/contract_test_util.hpp"
#include "test_util.hpp"

namespace kqual::contract {
namespace {
namespace fs = std::filesystem;

const fs::path kDefs = fs::path(KQUAL_SOURCE_DIR) / "tests/import/fixtures/definitions";
const fs::path kKernelBench = fs::path(KQUAL_SOURCE_DIR) / "tests/import/fixtures/kernelbench";
using test_util::toml_table;
using kqual::test::contains;

// A fixture's Definition and workloads copied into `dir` as `name` (default: a name of its own per
// call): a process registers each declared contract name once.
DefinitionImportOptions fixture(const fs::path& dir, const std::string& stem, std::string name = "") {
  static int k = 0;
  if (name.empty()) name = stem + "_" + std::to_string(k++);
  return test_util::renamed_definition(kDefs, dir, stem, name);
}

// The atol and rtol written for output `out` ("y = ...error = { model = "allclose", atol = A, rtol = R").
std::pair<double, double> tolerance_of(const std::string& toml, const std::string& out) {
  const std::string table = toml_table(toml, "[tensors." + out + "]");
  const auto a = table.find("atol = "), r = table.find("rtol = ");
  if (a == std::string::npos || r == std::string::npos) return {-1, -1};
  return {std::stod(table.substr(a + 7)), std::stod(table.substr(r + 7))};
}

Supports claims(DType t) {
  Supports s;
  s.dtypes = {t};
  s.max_n = kUnlimited;
  return s;
}

// A written contract copied under another name with its torch reference replaced by NumPy source.
const Contract& numpy_copy(const fs::path& imported, const fs::path& to, const std::string& name, const std::string& reference_py) {
  std::string toml = read_text_file(imported / "contract.toml");
  for (const auto& [from, into] : {std::pair<std::string, std::string>{"kind = \"torch\"", "kind = \"numpy\""}}) {
    EXPECT_TRUE(contains(toml, from)) << toml;
    toml.replace(toml.find(from), from.size(), into);
  }
  const std::string at = "\nname = \"";
  const auto p = toml.find(at) + at.size();
  toml.replace(p, toml.find('"', p) - p, name);
  fs::create_directories(to);
  write_file_atomic(to / "contract.toml", toml);
  write_file_atomic(to / "reference.py", reference_py);
  return load_declared_contract(to);
}

// A kernel's output on the CPU: f(x) in float32 arithmetic, element by element.
template <class F>
std::vector<std::uint8_t> elementwise_f32(const CaseData& d, const Tensor& y, F f) {
  std::vector<std::uint8_t> out(y.bytes.size(), 0xA5);
  const Tensor& x = d.inputs.at(0);
  for (std::int64_t i = 0; i < x.elements; ++i)
    store_element(y.dtype, out.data(), std::size_t(i), double(f(float(element_as_double(x.dtype, x.bytes.data(), std::size_t(i))))));
  return out;
}

float gelu_tanh_f32(float x) { return 0.5f * x * (1.0f + std::tanh(0.7978845608f * (x + 0.044715f * x * x * x))); }
float gelu_erf_f32(float x) { return 0.5f * x * (1.0f + std::erf(x * 0.70710678f)); }

// The issue's example, on the CPU: a tanh-GELU Definition with no tolerance. With the old default
// (flashinfer-bench's atol = rtol = 1e-2, "fail only past both") an erf-GELU kernel passed every case
// (the two differ by at most 4.7e-4); with kqual's default for an f32 output it fails, while a
// tanh-GELU kernel in f32 arithmetic passes every case of every family, special values included.
TEST(ImportStrictness, DefaultToleranceTellsErfGeluFromTanhGelu) {
  if (!test_util::have_numpy()) GTEST_SKIP() << "no Python 3 with NumPy (install python3-numpy)";
  ScratchDir dir("kqual-import-strict");
  const DefinitionImport r = import_definition(fixture(dir.path(), "gelu_tanh_h1024"));
  const auto [atol, rtol] = tolerance_of(r.contract_toml, "y");
  EXPECT_GT(atol, 0);
  EXPECT_LT(atol, 1e-4) << r.contract_toml;
  EXPECT_LT(rtol, 1e-3) << r.contract_toml;
  EXPECT_TRUE(contains(r.contract_toml, "not flashinfer-bench's 1e-2")) << r.contract_toml;
  EXPECT_TRUE(std::any_of(r.notes.begin(), r.notes.end(), [](const std::string& n) { return contains(n, "no tolerance in the source"); }));
  const Contract& c = numpy_copy(r.out, dir.path() / "gelu_numpy", "gelu_tanh_h1024_numpy",
                                 "import numpy as np\n\ndef run(x):\n"
                                 "    with np.errstate(all='ignore'):\n"
                                 "        return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))\n");
  std::map<std::string, int> cases, tanh_failed, erf_failed, erf_failed_old;
  for (const auto& cs : c.correctness_cases(claims(DType::f32), 3, false)) {
    const CaseData d = c.make_case(cs);
    const std::vector<Tensor> want = c.reference(d, test_util::run_host());
    const Tensor& y = want.at(0);
    ++cases[cs.family];
    const Comparison good = c.compare(y, elementwise_f32(d, y, gelu_tanh_f32).data(), 0xA5);
    if (!good.ok) ++tanh_failed[cs.family], ADD_FAILURE() << cs.id << ": " << good.code << " " << good.detail;
    const std::vector<std::uint8_t> erf = elementwise_f32(d, y, gelu_erf_f32);
    if (!c.compare(y, erf.data(), 0xA5).ok) ++erf_failed[cs.family];
    // The old default, judged as flashinfer-bench does: max(1e-2, 1e-2 |ref|) plus the output's rounding.
    bool old_ok = true;
    for (std::int64_t i = 0; i < y.elements && cs.family == "base"; ++i) {
      const double ref = y.ref.empty() ? element_as_double(y.dtype, y.bytes.data(), std::size_t(i)) : y.ref[std::size_t(i)];
      const double got = element_as_double(y.dtype, erf.data(), std::size_t(i));
      old_ok &= std::fabs(got - ref) <= std::max(1e-2, 1e-2 * std::fabs(ref)) + std::ldexp(std::fabs(ref), -24);
    }
    if (!old_ok) ++erf_failed_old[cs.family];
  }
  for (const char* f : {"base", "specials", "denormals", "extreme_scale", "small_scale", "large_scale", "nonzero_mean"})
    EXPECT_GT(cases[f], 0) << f;
  EXPECT_EQ(erf_failed_old["base"], 0) << "under atol = rtol = 1e-2 the erf-GELU kernel passes: why the default changed";
  EXPECT_EQ(erf_failed["base"], cases["base"]) << "every base case rejects the erf-GELU kernel under kqual's default";
}

// The default follows the output dtype and the reduction length: an f32 output far below 1e-2, a
// bf16 one at least one bf16 ulp at 1, a contraction's absolute term growing with its length.
TEST(ImportStrictness, DefaultToleranceFollowsDtypeAndReductionLength) {
  auto imported = [](const std::string& name, const std::string& axes, const std::string& ins, const std::string& outs) {
    ScratchDir dir("kqual-import-strict");
    DefinitionImportOptions o;
    o.definition = dir.path() / "d.json";
    std::ofstream(o.definition) << R"({"name": ")" + name + R"(", "axes": )" + axes + R"(, "inputs": )" + ins + R"(, "outputs": )" + outs +
                                       R"(, "reference": "def run(**kw):\n    pass\n"})";
    o.out = dir.path() / name;
    return import_definition(o).contract_toml;
  };
  const std::string var = R"({"m": {"type": "var"}, "k": {"type": "const", "value": 4096}, "n": {"type": "const", "value": 64}})";
  const std::string f32 = imported("tol_f32", var, R"({"a": {"shape": ["m", "n"], "dtype": "float32"}})",
                                   R"({"y": {"shape": ["m", "n"], "dtype": "float32"}})");
  const std::string bf16 = imported("tol_bf16", var, R"({"a": {"shape": ["m", "n"], "dtype": "bfloat16"}})",
                                    R"({"y": {"shape": ["m", "n"], "dtype": "bfloat16"}})");
  const std::string gemm = imported("tol_gemm", var, R"({"a": {"shape": ["m", "k"], "dtype": "float32"}, "b": {"shape": ["k", "n"], "dtype": "float32"}})",
                                    R"({"c": {"shape": ["m", "n"], "dtype": "float32"}})");
  const auto [fa, fr] = tolerance_of(f32, "y");
  const auto [ba, br] = tolerance_of(bf16, "y");
  const auto [ga, gr] = tolerance_of(gemm, "c");
  EXPECT_NEAR(fa, 64 * std::ldexp(1.0, -23), 1e-10) << f32;
  EXPECT_NEAR(fr, 128 * std::ldexp(1.0, -23), 1e-10) << "16 sqrt(64) eps for a row of 64: " << f32;
  EXPECT_GE(ba, std::ldexp(1.0, -7)) << bf16;
  EXPECT_GT(br, std::ldexp(1.0, -8)) << bf16;
  EXPECT_NEAR(ga, 8 * 4096 * std::ldexp(1.0, -23), 1e-8) << "8 K eps over the contraction k = 4096: " << gemm;
  EXPECT_LT(ga, 1e-2);
  // A contraction under kqual's default does not scale its data up (the absolute term is sized for
  // data of order 1), and says so; the others do.
  EXPECT_FALSE(contains(gemm, "[families.large_scale]")) << gemm;
  EXPECT_FALSE(contains(gemm, "[families.extreme_scale]")) << gemm;
  EXPECT_TRUE(contains(gemm, "large_scale is not written")) << gemm;
  EXPECT_TRUE(contains(f32, "[families.extreme_scale]\nmax_elements = 1048576\na = { scale = 1125899906842624 }")) << f32;
  // A tolerance in the source is kept as it is.
  ScratchDir dir("kqual-import-strict");
  DefinitionImportOptions o = fixture(dir.path(), "rmsnorm_h512");
  o.atol = 1e-3;  // --atol: the source gives none, the user one term
  const DefinitionImport given = import_definition(o);
  EXPECT_NEAR(tolerance_of(given.contract_toml, "out").first, 1e-3, 1e-12) << given.contract_toml;
  EXPECT_LT(tolerance_of(given.contract_toml, "out").second, 1e-3) << "rtol still kqual's default: " << given.contract_toml;
}

// Special values only where they mean something: the data inputs of a Definition (not its weight, not
// the scalar eps), a KernelBench problem's float data (never its index input), and the policy says
// which inputs never get them and how NaN and Inf are matched.
TEST(ImportStrictness, SpecialFamiliesOnlyOnFloatingDataInputs) {
  ScratchDir dir("kqual-import-strict");
  const DefinitionImportOptions o = fixture(dir.path(), "rmsnorm_h512");
  const DefinitionImport r = import_definition(o);
  for (const char* f : {"[families.specials]", "[families.denormals]", "[families.extreme_scale]"}) {
    const std::string t = toml_table(r.contract_toml, f);
    EXPECT_TRUE(contains(t, "\nx = {")) << f << "\n" << r.contract_toml;
    EXPECT_FALSE(contains(t, "\nweight =")) << f;
    EXPECT_FALSE(contains(t, "\neps =")) << f;
  }
  const Contract& c = load_declared_contract(o.out);
  const std::string policy = c.numerical_policy();
  EXPECT_TRUE(contains(policy, "NaN must be NaN exactly where the reference gives NaN")) << policy;
  EXPECT_TRUE(contains(policy, "weight never get NaN, Inf, subnormal or extreme values")) << policy;
  bool saw_nan = false, saw_sub = false;
  for (const auto& cs : c.correctness_cases(claims(DType::f32), 1, false)) {
    if (cs.family != "specials" && cs.family != "denormals") continue;
    for (const auto& in : c.make_case(cs).inputs)
      for (std::int64_t i = 0; i < in.elements; ++i) {
        const double v = element_as_double(in.dtype, in.bytes.data(), std::size_t(i));
        if (in.name == "weight") {
          ASSERT_TRUE(std::isnormal(v) || v == 0) << cs.id;
        }
        saw_nan |= std::isnan(v);
        saw_sub |= std::fpclassify(float(v)) == FP_SUBNORMAL;
      }
  }
  EXPECT_TRUE(saw_nan && saw_sub);
  // KernelBench: the index input is never in a special family; x is.
  KernelBenchImportOptions ko;
  ko.problem = kKernelBench / "gather_rows.py";
  ko.capture = kKernelBench / "gather_rows.capture.json";
  ko.out = dir.path() / "g";
  ko.name = "kb_gather_rows_specials";
  const KernelBenchImport g = import_kernelbench(ko);
  EXPECT_TRUE(contains(toml_table(g.contract_toml, "[families.specials]"), "\nx = { specials = 0.01 }")) << g.contract_toml;
  EXPECT_FALSE(contains(toml_table(g.contract_toml, "[families.specials]"), "idx")) << g.contract_toml;
  EXPECT_TRUE(contains(g.contract_toml, "idx never get NaN")) << g.contract_toml;
}

// The reference's precision is what its source computes in, not always float64.
TEST(ImportStrictness, PolicyNamesTheReferencesRealPrecision) {
  ScratchDir dir("kqual-import-strict");
  const DefinitionImport r = import_definition(fixture(dir.path(), "rows_scale_h4096"));
  const std::string policy = load_declared_contract(r.out).numerical_policy();
  EXPECT_TRUE(contains(policy, "float32 where run() casts to it (.float())")) << policy;
  EXPECT_TRUE(contains(policy, "rounded to bfloat16/float16 where it casts so (torch.bfloat16")) << policy;
  EXPECT_TRUE(contains(policy, "a cast back to an input's dtype")) << policy;
  EXPECT_FALSE(contains(policy, "(torch, float64)")) << policy;
  ScratchDir other("kqual-import-strict");
  const DefinitionImport g = import_definition(fixture(other.path(), "gelu_tanh_h1024"));
  const std::string plain = load_declared_contract(g.out).numerical_policy();
  EXPECT_TRUE(contains(plain, "(torch, float64: kqual hands run() float64 tensors and its source casts to no other dtype)")) << plain;
}

// Workload sizes over the CPU reference's cap: generated on the device (at most four shapes) where
// [index_cases] allows, the rest listed; without an independent axis every one of them is listed,
// and so is the absence of cases past 2^31.
TEST(ImportStrictness, CasesNotRunAreListed) {
  ScratchDir dir("kqual-import-strict");
  const DefinitionImport r = import_definition(fixture(dir.path(), "rows_scale_h4096"));
  EXPECT_TRUE(contains(r.contract_toml, "[index_cases]\naxis = \"batch_size\"")) << r.contract_toml;
  EXPECT_TRUE(contains(r.contract_toml, "hints = [2, 5, 64, 1024, 3000, 4100, 12288]")) << r.contract_toml;
  const Contract& c = load_declared_contract(r.out);
  std::vector<std::string> generated;
  for (const auto& cs : c.correctness_cases(claims(DType::f32), 1, true))
    if (cs.family == kGeneratedFamily) generated.push_back(cs.id);
  ASSERT_EQ(generated.size(), 4u);
  EXPECT_TRUE(std::any_of(generated.begin(), generated.end(), [](const std::string& id) { return contains(id, "batch_size=24577"); }))
      << "the largest workload's shapes are among them";
  for (const auto& cs : c.correctness_cases(claims(DType::f32), 1, false)) EXPECT_NE(cs.family, kGeneratedFamily) << cs.id;
  const std::string policy = c.numerical_policy();
  EXPECT_TRUE(contains(policy, "Cases not run: ")) << policy;
  EXPECT_TRUE(contains(policy, "4 such shapes run on the device, spread over their sizes, these not)")) << policy;
  EXPECT_FALSE(contains(policy, "no [index_cases] axis")) << policy;
  EXPECT_TRUE(std::any_of(r.notes.begin(), r.notes.end(), [](const std::string& n) { return contains(n, "Cases not run: "); }));
  // The same Definition with the var axis inside: no [index_cases], every shape over the cap listed.
  ScratchDir other("kqual-import-strict");
  json def = json::parse(read_text_file(kDefs / "rows_scale_h4096.json"));
  def["name"] = "cols_scale_h4096";
  def["inputs"]["x"]["shape"] = json::array({"hidden_size", "batch_size"});
  def["inputs"]["w"]["shape"] = json::array({"hidden_size"});
  def["outputs"]["y"]["shape"] = json::array({"hidden_size", "batch_size"});
  const DefinitionImportOptions o = test_util::definition_files(other.path(), "cols", other.path() / "cols");
  write_file_atomic(o.definition, def.dump());
  std::string lines = read_text_file(kDefs / "rows_scale_h4096.jsonl");  // lines of another name are skipped
  for (std::size_t p; (p = lines.find("rows_scale_h4096")) != std::string::npos;) lines.replace(p, 16, "cols_scale_h4096");
  write_file_atomic(o.workloads, lines);
  const DefinitionImport cols = import_definition(o);
  EXPECT_FALSE(contains(cols.contract_toml, "[index_cases]")) << cols.contract_toml;
  const Contract& cc = load_declared_contract(o.out);
  for (const auto& cs : cc.correctness_cases(claims(DType::f32), 1, true)) EXPECT_NE(cs.family, kGeneratedFamily) << cs.id;
  const std::string listed = cc.numerical_policy();
  EXPECT_TRUE(contains(listed, "Cases not run: every shape past 2^31 elements: no [index_cases] axis")) << listed;
  EXPECT_TRUE(contains(listed, "batch_size=4099,hidden_size=4096 (16789504 elements), ")) << listed;
  EXPECT_TRUE(contains(listed, " and 3 more (over the CPU reference's cap of 16777216 elements (contract.max_case_elements), and the "
                               "contract declares no [index_cases] axis to check them in windows)"))
      << listed;
}


// Issue 51 item 3: an imported KernelBench output's bound follows the magnitude of its summed terms where
// forward's operators (the capture's "ops") sum and keep the reference on |inputs| a bound on them.
TEST(ImportStrictness, KernelBenchBoundsFollowTheSummedTermsWhereTheOperatorsAllowIt) {
  KernelBenchImportOptions o;
  o.problem = kKernelBench / "linear_gelu.py";
  o.out = "unused";
  json cap = json::parse(read_text_file(kKernelBench / "linear_gelu.capture.json"));
  cap["ops"] = {"addmm", "gelu", "t", "view"};
  const KernelBenchImport summed = translate_kernelbench(cap, o);
  EXPECT_TRUE(contains(summed.contract_toml, "rtol = 0.0001, magnitude = \"abs_inputs\" }")) << summed.contract_toml;
  EXPECT_TRUE(contains(summed.contract_toml, "forward sums (addmm)")) << summed.contract_toml;
  // An exp after the sum: the reference on |inputs| is no bound (exp(|z|) against exp(z)).
  cap["ops"] = {"addmm", "exp", "t"};
  const KernelBenchImport grows = translate_kernelbench(cap, o);
  EXPECT_FALSE(contains(grows.contract_toml, "magnitude = ")) << grows.contract_toml;
  EXPECT_TRUE(contains(grows.contract_toml, "but also runs exp")) << grows.contract_toml;
  // Nothing summed (an elementwise problem), or no operator list (an older capture): relative to |ref|.
  cap["ops"] = {"gelu"};
  EXPECT_TRUE(contains(translate_kernelbench(cap, o).contract_toml, "forward sums nothing"));
  cap.erase("ops");
  EXPECT_TRUE(contains(translate_kernelbench(cap, o).contract_toml, "lists no operators"));
  cap["ops"] = {1};
  EXPECT_THROW(translate_kernelbench(cap, o), Error) << "an operator that is not a name";
}

// The allclose model with magnitude = "abs_inputs": rtol times the larger of |ref| and the reference on
// the inputs' absolute values (a batched matmul whose sums cancel), against the same bound on |ref|.
TEST(ImportStrictness, AnAllcloseBoundOnTheSummedTermsAdmitsCancellationAndNothingMore) {
  KQUAL_NEED_NUMPY();
  ScratchDir dir("kqual-allclose-magnitude");
  auto contract_with = [&](const std::string& name, const std::string& magnitude) {
    const fs::path d = dir.path() / name;
    fs::create_directories(d);
    fs::copy_file(fs::path(KQUAL_SOURCE_DIR) / "contracts/bmm/reference.py", d / "reference.py");
    std::string toml = read_text_file(fs::path(KQUAL_SOURCE_DIR) / "contracts/bmm/contract.toml");
    toml.replace(toml.find("name = \"bmm\""), 12, "name = \"" + name + "\"");
    const std::string old = "error = { model = \"reduction\", c = 2, axis = \"k\", magnitude = \"abs_inputs\", eps = \"f32\", nan = \"propagate\" }";
    const std::size_t at = toml.find(old);
    EXPECT_NE(at, std::string::npos) << "contracts/bmm's error line changed";
    toml.replace(at, old.size(), "error = { model = \"allclose\", atol = 0, rtol = 1e-6" + magnitude + " }");
    write_file_atomic(d / "contract.toml", toml);
    return &load_declared_contract(d);
  };
  const Contract& terms = *contract_with("bmm_terms", ", magnitude = \"abs_inputs\"");
  const Contract& result = *contract_with("bmm_result", "");
  EXPECT_NE(terms.numerical_policy().find("max(|ref|, ref(|inputs|))"), std::string::npos) << terms.numerical_policy();
  CaseSpec cs;
  cs.id = "cancel";
  cs.family = "base";
  cs.dtype = DType::f32;
  cs.seed = 7;
  cs.dims = {{"batch", 2}, {"m", 8}, {"n", 8}, {"k", 64}};
  const CaseData d = terms.make_case(cs);
  const Tensor t = terms.reference(d, test_util::run_host()).at(0);
  const Tensor r = result.reference(d, test_util::run_host()).at(0);
  // |a| @ |b| at each element, computed here: the bound is rtol times the larger of it and |ref|.
  auto at = [&](const Tensor& x, std::size_t i) { return element_as_double(x.dtype, x.bytes.data(), i); };
  std::size_t most = 0;  // the element whose terms cancel most
  double ratio = 0;
  for (std::size_t bi = 0; bi < 2; ++bi)
    for (std::size_t i = 0; i < 8; ++i)
      for (std::size_t j = 0; j < 8; ++j) {
        double mag = 0;
        for (std::size_t k = 0; k < 64; ++k) mag += std::fabs(at(d.inputs[0], (bi * 8 + i) * 64 + k) * at(d.inputs[1], (bi * 64 + k) * 8 + j));
        const std::size_t e = (bi * 8 + i) * 8 + j;
        EXPECT_NEAR(t.bound[e], 1e-6 * std::max(mag, std::fabs(t.ref[e])), 1e-6 * mag * 1e-6 + 1e-7 * std::fabs(t.ref[e])) << e;
        EXPECT_LE(r.bound[e], t.bound[e] * (1 + 1e-12)) << e;
        if (mag / std::max(std::fabs(t.ref[e]), 1e-30) > ratio) {
          ratio = mag / std::max(std::fabs(t.ref[e]), 1e-30);
          most = e;
        }
      }
  ASSERT_GT(ratio, 4) << "a normal 64-term sum cancels by more than 4x somewhere";
  // An output off by half the terms' bound there: accepted on the summed terms, rejected on |ref|;
  // off by twice it: rejected by both.
  auto off_by = [&](double err) {
    std::vector<std::uint8_t> y = t.bytes;
    const float v = float(t.ref[most] + err);
    std::memcpy(y.data() + 4 * most, &v, 4);
    return y;
  };
  const auto near = off_by(0.5 * t.bound[most]);
  EXPECT_TRUE(terms.compare(t, near.data(), 0xFF).ok) << terms.compare(t, near.data(), 0xFF).detail;
  EXPECT_FALSE(result.compare(r, near.data(), 0xFF).ok);
  const auto far = off_by(2.5 * t.bound[most]);
  EXPECT_FALSE(terms.compare(t, far.data(), 0xFF).ok);
}

}  // namespace
}  // namespace kqual::contract
