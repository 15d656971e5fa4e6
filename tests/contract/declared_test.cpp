// Declared contracts: the format's errors (the reference's own errors and the non-triviality check
// in declared_nontrivial_test.cpp), case generation and refusals, and the cross-check that the
// declared residual_add_relu and softmax judge like the built-in ones — every emulated defect gets
// the same verdict and the same failure class from both (CPU emulations of the bundled kernels'
// arithmetic; the GPU test runs the bundled kernels themselves).
#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>

#include "kqual/contract/compare.hpp"
#include "kqual/contract/declared/declared.hpp"
#include "kqual/contract/generated.hpp"
#include "kqual/core/error.hpp"
#include "kqual/core/files.hpp"
#include "contract_test_util.hpp"

namespace kqual::contract {
namespace {
namespace fs = std::filesystem;

const fs::path kRepo = KQUAL_SOURCE_DIR;

using test_util::error_of;
using Written = test_util::ContractFolder;

// y = 2 x over n (test_util::one_axis_contract), `extra` tables after [reference].
std::string minimal(const std::string& name, const std::string& extra = "") {
  test_util::OneAxis keys;
  keys.extra = extra;
  return test_util::one_axis_contract(name, keys);
}

TEST(DeclaredContract, BadFilesNameFileKeyAndValue) {
  auto load_err = [](const std::string& toml, const std::string& py = "def f(x):\n    return 2 * x\n") {
    static int k = 0;
    Written w(toml, py, "bad" + std::to_string(k++));
    std::string e = error_of([&] { (void)load_declared_contract(w.file); });
    EXPECT_NE(e.find(w.file.string()), std::string::npos) << e;
    return e;
  };
  std::string e = load_err(minimal("bad_key", "[tensors.x.values]\ndist = \"normal\"\nsigma = 2\n"));
  EXPECT_NE(e.find("tensors.x.values.sigma: unknown key"), std::string::npos) << e;
  e = load_err(minimal("bad_expr", "[[constraints]]\nexpr = \"n % == 2\"\n"));
  EXPECT_NE(e.find("constraints[0].expr"), std::string::npos) << e;
  e = load_err(minimal("bad_axis", "[[constraints]]\nexpr = \"m > 2\"\n"));
  EXPECT_NE(e.find("unknown name 'm'"), std::string::npos) << e;
  e = load_err(R"([contract]
name = "bad_row"
summary = "s"
[axes.n]
range = [1, 10]
[tensors.x]
role = "input"
shape = ["n"]
[tensors.y]
role = "output"
shape = ["n"]
error = { model = "exact" }
[dtypes]
rows = [{ x = "f32", y = "f32", z = "f32" }]
[cost]
flops = "n"
[reference]
python = "reference.py"
function = "f"
)");
  EXPECT_NE(e.find("dtypes.rows[0].z: unknown tensor \"z\""), std::string::npos) << e;
  e = load_err(minimal("bad_shape").replace(minimal("bad_shape").find("shape = [\"n\"]"), 13, "shape = [\"q\"]"));
  EXPECT_NE(e.find("tensors.x.shape[0]: unknown axis \"q\""), std::string::npos) << e;
  e = load_err(minimal("bad_ratio").replace(minimal("bad_ratio").find("{ model = \"ulps\", ulps = 1 }"), 28,
                                            "{ model = \"allclose\", atol = 1e-6, match_ratio = 0.99 }"));
  EXPECT_NE(e.find("tensors.y.error.cap"), std::string::npos) << e;  // a share may not be arbitrarily wrong
  e = load_err(minimal("missing_ref").replace(minimal("missing_ref").find("reference.py"), 12, "nowhere.py"));
  EXPECT_NE(e.find("reference.python: \"nowhere.py\": no such file"), std::string::npos) << e;
  e = load_err(minimal("bad_cuda_arg", "[reference.cuda]\nsource = \"reference.py\"\n[[reference.cuda.launch]]\nkernel = \"k\"\n"
                                       "grid = \"n\"\nblock = 256\nargs = [\"x\", \"z\"]\n"));
  EXPECT_NE(e.find("reference.cuda.launch[0].args[1]: \"z\" is neither an input"), std::string::npos) << e;
  e = load_err(minimal("bad_cuda_grid", "[reference.cuda]\nsource = \"reference.py\"\n[[reference.cuda.launch]]\nkernel = \"k\"\n"
                                        "grid = \"sms * 4\"\nblock = 256\nargs = [\"x\", \"y\"]\n"));
  EXPECT_NE(e.find("reference.cuda.launch[0].grid"), std::string::npos) << e;
  e = load_err(minimal("residual_add_relu"));
  EXPECT_NE(e.find("is a built-in contract"), std::string::npos) << e;
  e = load_err(minimal("self_alternative", "alternative = \"f\""));
  EXPECT_NE(e.find("reference.alternative: \"f\" is the reference function itself"), std::string::npos) << e;
}

// [reference] alternative names a function the file lacks: a contract error naming it, on the first case.
TEST(DeclaredContract, AnAlternativeTheFileLacksIsAContractError) {
  KQUAL_NEED_NUMPY();
  Written w(minimal("lacks_alternative", "alternative = \"g\""), "def f(x):\n    return 2 * x\n", "lacks_alternative");
  const Contract& c = load_declared_contract(w.file);
  Supports s = test_util::f32_only();
  const CaseData d = c.make_case(c.correctness_cases(s, 1, false).at(0));
  const std::string e = error_of([&] { (void)c.reference(d, test_util::run_host()); });
  EXPECT_NE(e.find("defines no function 'g'"), std::string::npos) << e;
}

TEST(DeclaredContract, ConstraintsAreEvaluatedAndRefused) {
  std::string toml = minimal("constrained", "[[constraints]]\nexpr = \"n % 2 == 0\"\nreason = \"n counts pairs\"\n");
  toml.replace(toml.find("hints = [32]"), 12, "hints = [32]\nlarge = 4096");
  Written w(toml, "def f(x):\n    return 2 * x\n", "constrained");
  const Contract& c = load_declared_contract(w.file);
  Supports s = test_util::f32_only();
  for (const auto& cs : c.correctness_cases(s, 7, true)) EXPECT_EQ(cs.dims.at("n") % 2, 0) << cs.id;
  auto r = c.validate(c.request(DType::f32, {{"n", 33}}), s);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->code, "constraint");
  EXPECT_NE(r->reason.find("n counts pairs"), std::string::npos) << r->reason;
  EXPECT_FALSE(c.validate(c.request(DType::f32, {{"n", 34}}), s));
  bool has_example = false;
  for (const auto& ex : c.refusal_examples()) {
    auto got = c.validate(ex.request, ex.claims ? *ex.claims : Supports{c.dtypes(), 1, kUnlimited, true, std::nullopt});
    ASSERT_TRUE(got) << ex.code;
    EXPECT_EQ(got->code, ex.code);
    has_example |= ex.code == "constraint";
  }
  EXPECT_TRUE(has_example);
}

// ---- the cross-check: built-in vs declared, on emulated kernels --------------------------------

using Kernel = std::function<std::vector<std::uint8_t>(const Contract&, const CaseData&, const Tensor& expected_y)>;

// The first failing case's class over the contract's ordered cases ("" = accepted).
std::string verdict(const Contract& c, const Kernel& k, const Supports& s) {
  for (const auto& cs : c.correctness_cases(s, 11, false)) {
    CaseData d = c.make_case(cs);
    auto want = c.reference(d, test_util::run_host());
    auto got = k(c, d, want.at(0));
    Comparison cmp = c.compare(want.at(0), got.data(), 0xA5);
    if (!cmp.ok) return cmp.code;
  }
  return "";
}

float f32_of(const Tensor& t, std::size_t i) { return float(element_as_double(t.dtype, t.bytes.data(), i)); }

TEST(DeclaredContract, ResidualAddReluJudgesLikeTheBuiltIn) {
  KQUAL_NEED_NUMPY();
  const Contract& builtin = find_contract("residual_add_relu");
  const Contract& declared = load_declared_contract(kRepo / "contracts/residual_add_relu_declared");
  auto elementwise = [](std::function<float(float, float)> op, bool tail = true) -> Kernel {
    return [op, tail](const Contract&, const CaseData& d, const Tensor& y) {
      std::vector<std::uint8_t> out(y.bytes.size(), 0xA5);
      const std::size_t n = std::size_t(y.elements), m = tail ? n : n - n % 4;
      for (std::size_t i = 0; i < m; ++i) store_element(y.dtype, out.data(), i, op(f32_of(d.inputs[0], i), f32_of(d.inputs[1], i)));
      return out;
    };
  };
  auto relu = [](float s) { return std::isnan(s) ? s : s > 0 ? s : 0.0f; };
  auto ftz = [](float v) { return std::fpclassify(v) == FP_SUBNORMAL ? 0.0f : v; };
  const std::map<std::string, Kernel> kernels = {
      {"good", elementwise([&](float x, float r) { return relu(x + r); })},
      {"nan_swallowed", elementwise([](float x, float r) { return std::fmax(x + r, 0.0f); })},
      {"denormals_flushed", elementwise([&](float x, float r) { return relu(ftz(ftz(x) + ftz(r))); })},
      {"missing_tail", elementwise([&](float x, float r) { return relu(x + r); }, false)},
      {"bf16_math", elementwise([&](float x, float r) { return relu(bf16_to_f32(f32_to_bf16_rne(x + r)) + 0.0f * r); })},
      {"negative_zero_kept", elementwise([](float x, float r) { const float v = x + r; return v > 0 || std::isnan(v) || v == 0 ? v : 0.0f; })},
  };
  for (DType t : {DType::f32, DType::bf16}) {
    Supports s;
    s.dtypes = {t};
    s.min_alignment_bytes = 4;
    for (const auto& [name, k] : kernels) {
      if (t == DType::bf16 && name == "bf16_math") continue;  // that is the bf16 contract itself
      const std::string a = verdict(builtin, k, s), b = verdict(declared, k, s);
      EXPECT_EQ(a, b) << name << " " << to_string(t) << ": built-in '" << a << "', declared '" << b << "'";
      if (name == "good") {
        EXPECT_EQ(a, "") << to_string(t);
      } else if (t == DType::f32) {
        EXPECT_NE(a, "") << name << " must be rejected";
      }
    }
  }
}

TEST(DeclaredContract, SoftmaxJudgesLikeTheBuiltIn) {
  KQUAL_NEED_NUMPY();
  const Contract& builtin = find_contract("softmax");
  const Contract& declared = load_declared_contract(kRepo / "contracts/softmax_declared");
  enum Defect { none, no_max, tail, sum_bf16, row_max_first_half };
  auto kernel = [](Defect defect) -> Kernel {
    return [defect](const Contract&, const CaseData& d, const Tensor& y) {
      std::vector<std::uint8_t> out(y.bytes.size(), 0xA5);
      const std::int64_t rows = d.dims.at("rows"), cols = d.dims.at("cols");
      for (std::int64_t r = 0; r < rows; ++r) {
        float m = -INFINITY;
        const std::int64_t mcols = defect == row_max_first_half ? std::max<std::int64_t>(1, cols / 2) : cols;
        bool nan = false;
        for (std::int64_t j = 0; j < mcols; ++j) {
          float v = f32_of(d.inputs[0], std::size_t(r * cols + j));
          nan |= std::isnan(v);
          m = std::fmax(m, v);
        }
        if (nan) m = NAN;
        if (defect == no_max) m = 0;
        float sum = 0;
        for (std::int64_t j = 0; j < cols; ++j) {
          sum += std::exp(f32_of(d.inputs[0], std::size_t(r * cols + j)) - m);
          if (defect == sum_bf16) sum = bf16_to_f32(f32_to_bf16_rne(sum));
        }
        const std::int64_t wcols = defect == tail ? cols - cols % 4 : cols;
        for (std::int64_t j = 0; j < wcols; ++j)
          store_element(y.dtype, out.data(), std::size_t(r * cols + j), std::exp(f32_of(d.inputs[0], std::size_t(r * cols + j)) - m) / sum);
      }
      return out;
    };
  };
  Supports s = test_util::f32_only();
  s.min_alignment_bytes = 4;
  for (auto [name, defect] : {std::pair{"good", none}, {"no_max_subtraction", no_max}, {"missing_tail", tail},
                              {"sum_in_bf16", sum_bf16}, {"wrong_row_max", row_max_first_half}}) {
    const std::string a = verdict(builtin, kernel(defect), s), b = verdict(declared, kernel(defect), s);
    EXPECT_EQ(a, b) << name << ": built-in '" << a << "', declared '" << b << "'";
    if (defect == none) {
      EXPECT_EQ(a, "");
    } else {
      EXPECT_NE(a, "") << name;
    }
  }
}

TEST(DeclaredContract, RmsnormCasesReferenceAndBounds) {
  KQUAL_NEED_NUMPY();
  const Contract& c = ContractLookup().resolve("rmsnorm", kRepo / "candidates/rmsnorm/good");
  EXPECT_EQ(declared_file(c), fs::weakly_canonical(kRepo / "contracts/rmsnorm/contract.toml"));
  ASSERT_EQ(c.scalars().size(), 1u);
  EXPECT_EQ(c.scalars()[0].name, "eps");
  EXPECT_EQ(c.tensor_dtype("w", DType::bf16), DType::f32);  // the bf16 row keeps the weight in f32
  EXPECT_EQ(c.tensor_dtype("y", DType::bf16), DType::bf16);
  Supports s = test_util::f32_only();
  s.min_alignment_bytes = 4;
  auto cases = c.correctness_cases(s, 3, false);
  std::set<std::int64_t> cols;
  for (const auto& cs : cases) cols.insert(cs.dims.at("cols"));
  for (std::int64_t v : {1, 31, 32, 33, 255, 256, 257, 1023, 1024, 1025}) EXPECT_TRUE(cols.count(v)) << v;
  // An f32 emulation of the good kernel passes every case; without eps, the 'tiny' family fails.
  auto run = [&](bool eps_on) {
    for (const auto& cs : cases) {
      CaseData d = c.make_case(cs);
      auto want = c.reference(d, test_util::run_host());
      const std::int64_t rows = d.dims.at("rows"), n = d.dims.at("cols");
      std::vector<std::uint8_t> out(want[0].bytes.size(), 0xA5);
      for (std::int64_t r = 0; r < rows; ++r) {
        float ss = 0;
        for (std::int64_t j = 0; j < n; ++j) ss = std::fma(f32_of(d.inputs[0], std::size_t(r * n + j)), f32_of(d.inputs[0], std::size_t(r * n + j)), ss);
        // The kernel's rule for a row holding +-Inf (its sum of squares is Inf): NaN across the row.
        const float k = std::isinf(ss) ? std::numeric_limits<float>::quiet_NaN() : 1.0f / std::sqrt(ss / float(n) + (eps_on ? 1e-6f : 0.0f));
        for (std::int64_t j = 0; j < n; ++j)
          store_element(DType::f32, out.data(), std::size_t(r * n + j), f32_of(d.inputs[0], std::size_t(r * n + j)) * k * f32_of(d.inputs[1], std::size_t(j)));
      }
      Comparison cmp = c.compare(want[0], out.data(), 0xA5);
      if (!cmp.ok) return cs.id + ": " + cmp.code + ": " + cmp.detail;
    }
    return std::string();
  };
  EXPECT_EQ(run(true), "");
  const std::string no_eps = run(false);
  EXPECT_NE(no_eps.find("wrong_result"), std::string::npos) << no_eps;
}

}  // namespace
}  // namespace kqual::contract

namespace kqual::contract {
namespace {

// [index_cases]: past 2^31 elements only where the claim reaches; windows of whole rows whose
// sub-case reference equals the same rows of the whole case's reference.
// The working directory may be a candidate's tree: its json.py or numpy.py must not run inside the
// trusted reference process (`python3 -c` puts the working directory first on sys.path).
TEST(DeclaredContract, TheReferenceProcessImportsNothingFromTheWorkingDirectory) {
  KQUAL_NEED_NUMPY();
  ScratchDir t("kqual-evil-cwd");
  const fs::path marker = t.path() / "PWNED";
  for (const char* mod : {"json.py", "numpy.py", "random.py", "inspect.py", "traceback.py"})
    std::ofstream(t.path() / mod) << "open(" << marker << ", 'a').write('" << mod << " ran in the reference process\\n')\n";
  const fs::path before = fs::current_path();
  fs::current_path(t.path());
  std::string error;
  try {
    const Contract& c = load_declared_contract(kRepo / "contracts/gelu/contract.toml");
    Supports s = test_util::f32_only();
    const auto cases = c.correctness_cases(s, 3, false);
    if (cases.empty()) throw std::runtime_error("gelu has no f32 case");
    CaseData d = c.make_case(cases.front());
    EXPECT_FALSE(c.reference(d, test_util::run_host()).empty());
  } catch (const std::exception& e) {
    error = e.what();
  }
  fs::current_path(before);
  EXPECT_TRUE(error.empty()) << error;
  std::error_code ec;
  EXPECT_FALSE(fs::exists(marker, ec)) << std::ifstream(marker).rdbuf();
}

TEST(DeclaredContract, IndexCasesAndTheirWindows) {
  KQUAL_NEED_NUMPY();
  const Contract& c = ContractLookup().resolve("rmsnorm", kRepo / "candidates/rmsnorm/good");
  Supports s;
  s.dtypes = {DType::f32, DType::bf16};
  EXPECT_TRUE(c.index_cases(s, 1).empty());  // the default claim stops below 2^31
  s.max_n = kUnlimited;
  const auto big = c.index_cases(s, 1);
  ASSERT_EQ(big.size(), 3u);  // f32 and bf16 past 2^31, the narrowest row past 2^32
  for (const auto& cs : big) {
    EXPECT_EQ(cs.family, kGeneratedFamily);
    const std::int64_t n = c.tensor_elements("x", cs.dims);
    EXPECT_GT(n, std::int64_t(1) << 31) << cs.id;
    bool across = false;
    for (const auto& w : c.index_case_windows(cs)) {
      EXPECT_EQ(w.gather.at("w"), (std::vector<std::pair<std::int64_t, std::int64_t>>{{0, cs.dims.at("cols")}}));
      EXPECT_EQ(w.count, w.sub_dims.at("rows") * cs.dims.at("cols"));
      across |= w.begin <= (std::int64_t(1) << 31) && (std::int64_t(1) << 31) < w.begin + w.count;
    }
    EXPECT_TRUE(across) << cs.id << ": no window holds element 2^31";
  }
  // Every bundled declared contract whose range passes 2^31 elements gets such cases.
  for (const auto& f : ContractLookup().discover({kRepo / "contracts"})) {
    const Contract& d = load_declared_contract(f);
    Supports wide;
    wide.dtypes = d.dtypes();
    wide.min_alignment_bytes = 1;
    wide.max_n = kUnlimited;
    const auto cases = d.index_cases(wide, 3);
    // Strided layouts get none (their windows would cross the padding; docs/declared-contracts.md).
    bool strided = false;
    for (const auto& t : d.domain().tensors) strided |= t.layout == Layout::strided;
    EXPECT_EQ(!cases.empty(), d.claimed_range(wide).past_int32() && !strided) << d.name();
    for (const auto& cs : cases) {
      std::int64_t largest = 0;
      for (const auto& t : d.tensors()) largest = std::max(largest, d.tensor_elements(t.name, cs.dims));
      EXPECT_GT(largest, std::int64_t(1) << 31) << cs.id;
      EXPECT_FALSE(d.validate(d.request(cs.dtype, cs.dims), wide)) << cs.id;
      EXPECT_FALSE(d.index_case_windows(cs).empty()) << cs.id;
    }
  }
  // Small enough to evaluate whole: every window's reference is the whole reference's rows.
  CaseSpec small = big.front();
  small.dims = c.complete_dims({{"rows", 3000}, {"cols", 100}});
  small.id = "f32/small/counter";
  OutputWindow whole;
  whole.tensor = "y";
  whole.count = 300000;
  whole.sub_dims = small.dims;
  whole.gather = {{"x", {{0, 300000}}}, {"w", {{0, 100}}}};
  whole.why = "whole";
  const auto all = c.reference(generated_subcase(c, small, whole), test_util::run_host()).at(0);
  const auto windows = c.index_case_windows(small);
  ASSERT_GE(windows.size(), 3u);
  for (const auto& w : windows) {
    const auto part = c.window_reference(small, w, test_util::run_host()).at(0);
    ASSERT_EQ(part.elements, w.count);
    for (std::int64_t i = 0; i < w.count; ++i)
      ASSERT_NEAR(part.ref[std::size_t(i)], all.ref[std::size_t(w.begin + i)], 1e-14 * std::fabs(all.ref[std::size_t(w.begin + i)]))
          << w.why << " element " << i;
  }
}

}  // namespace
}  // namespace kqual::contract

namespace kqual::contract {
namespace {

// A tensor's declared alignment is the contract's: a request breaking it is refused whatever the
// candidate claims, no case starts off it, and the refusal examples hold to it.
TEST(DeclaredContract, DeclaredAlignmentIsTheContracts) {
  std::string toml = minimal("aligned16");
  toml.replace(toml.find("shape = [\"n\"]"), 13, "shape = [\"n\"]\nalignment = 16");
  Written w(toml, "def f(x):\n    return 2 * x\n", "aligned16");
  const Contract& c = load_declared_contract(w.file);
  Supports s = test_util::f32_only();
  s.min_alignment_bytes = 4;  // the candidate would take any element
  auto r = c.validate(c.request(DType::f32, {{"n", 100}}, 1), s);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->code, "misaligned");
  EXPECT_NE(r->reason.find("contract's alignment of 16 bytes for tensor 'x'"), std::string::npos) << r->reason;
  EXPECT_FALSE(c.validate(c.request(DType::f32, {{"n", 100}}, 4), s));
  for (const auto& cs : c.correctness_cases(s, 1, false)) EXPECT_EQ(cs.offset_elements, 0) << cs.id;
  for (const auto& ex : c.refusal_examples()) {
    auto got = c.validate(ex.request, ex.claims ? *ex.claims : Supports{c.dtypes(), 1, kUnlimited, true, std::nullopt});
    ASSERT_TRUE(got) << ex.code;
    EXPECT_EQ(got->code, ex.code);
    if (ex.claims) {
      EXPECT_FALSE(c.validate(ex.request, Supports{c.dtypes(), 1, kUnlimited, true, std::nullopt})) << ex.code << " must be claim-dependent";
    }
  }
  std::string bad = minimal("aligned_bad");
  bad.replace(bad.find("shape = [\"n\"]"), 13, "shape = [\"n\"]\nalignment = 12");
  Written wb(bad, "def f(x):\n    return 2 * x\n", "aligned_bad");
  EXPECT_NE(error_of([&] { (void)load_declared_contract(wb.file); }).find("tensors.x.alignment: 12 is not a power of two"),
            std::string::npos);
}

}  // namespace
}  // namespace kqual::contract

namespace kqual::contract {
namespace {

// Timed inputs generated on the device (issue 23) only where any generated values are valid inputs.
TEST(TimedInputs, GeneratedOnlyWhereTheValuesNeedNoStructure) {
  CaseSpec spec;
  spec.dtype = DType::f32;
  spec.dims = {{"n", 4096}};
  spec.family = kGeneratedFamily;
  EXPECT_TRUE(find_contract("residual_add_relu").inputs_generatable(spec));
  const Written plain(minimal("timed_plain"), "def f(x):\n    return {'y': 2 * x}\n");
  EXPECT_TRUE(load_declared_contract(plain.file).inputs_generatable(spec));
  // The same operation whose input must hold small integers: generated values would break it.
  std::string ints = minimal("timed_ints");
  ints.replace(ints.find("shape = [\"n\"]\n[tensors.y]"), std::string("shape = [\"n\"]\n").size(),
               "shape = [\"n\"]\nvalues = { dist = \"int\", lo = 0, hi = 7 }\n");
  const Written structured(ints, "def f(x):\n    return {'y': 2 * x}\n");
  EXPECT_FALSE(load_declared_contract(structured.file).inputs_generatable(spec));
}

// The whole generated case on the CPU is what the device generator makes, element for element.
TEST(TimedInputs, TheWholeGeneratedCaseIsTheGeneratorsValues) {
  const Contract& c = find_contract("residual_add_relu");
  CaseSpec spec;
  spec.dtype = DType::bf16;
  spec.dims = {{"n", 3000}};
  spec.family = kGeneratedFamily;
  spec.seed = 0xFEEDull;
  spec.id = "t";
  const CaseData d = generated_case(c, spec);
  ASSERT_EQ(d.inputs.size(), 2u);
  for (int stream = 0; stream < 2; ++stream) {
    const Tensor& t = d.inputs[std::size_t(stream)];
    ASSERT_EQ(t.bytes.size(), 3000u * 2);
    for (std::uint64_t i : {0ull, 1ull, 1499ull, 2999ull}) {
      std::uint16_t got;
      std::memcpy(&got, t.bytes.data() + i * 2, 2);
      EXPECT_EQ(got, std::uint16_t(generated_bits(0xFEED, stream, i, DType::bf16))) << t.name << "[" << i << "]";
    }
  }
  // Another seed, other values.
  spec.seed = 0xBEEFull;
  EXPECT_NE(generated_case(c, spec).inputs[0].bytes, d.inputs[0].bytes);
}

}  // namespace
}  // namespace kqual::contract

namespace kqual::contract {
namespace {

// KernelBench's 19_ReLU imported as rows x cols with bases 64 and 48: varying one axis at a time
// keeps rows * cols a multiple of 4, and a kernel dropping the last (n mod 4) elements was accepted
// on the H200. One case moves every free axis to a prime at once.
TEST(DeclaredContract, OneCaseHasEveryFreeAxisOffItsBaseAtOnce) {
  std::string toml = minimal("two_axes");
  toml.replace(toml.find("[axes.n]\nrange = [1, 1000000]\nhints = [32]\nbase = 40\n"),
               std::string("[axes.n]\nrange = [1, 1000000]\nhints = [32]\nbase = 40\n").size(),
               "[axes.rows]\nrange = [1, 100000]\nhints = [32]\nbase = 64\n[axes.cols]\nrange = [1, 100000]\nhints = [32]\nbase = 48\n");
  for (const char* shape : {"shape = [\"n\"]\n[tensors.y]", "shape = [\"n\"]\nerror"}) {
    const std::size_t at = toml.find(shape);
    ASSERT_NE(at, std::string::npos) << shape;
    toml.replace(at, std::string("shape = [\"n\"]").size(), "shape = [\"rows\", \"cols\"]");
  }
  toml.replace(toml.find("flops = \"n\""), std::string("flops = \"n\"").size(), "flops = \"rows * cols\"");
  const Written w(toml, "def f(x):\n    return {'y': 2 * x}\n", "two_axes");
  const Contract& c = load_declared_contract(w.file);
  Supports s = test_util::f32_only();
  bool odd = false;
  for (const auto& cs : c.correctness_cases(s, 1, false)) {
    const std::int64_t n = cs.dims.at("rows") * cs.dims.at("cols");
    odd = odd || (cs.dims.at("rows") != 64 && cs.dims.at("cols") != 48 && n % 2 == 1);
  }
  EXPECT_TRUE(odd) << "no case moves both axes to odd sizes";
}

// A 1 x n matrix read transposed is the same bytes: at one row its "transposed" stride is 1 and the
// request is accepted. The refusal examples started from the base shape, so a declared contract whose
// base holds its rows at 1 (SOL-ExecBench's softmax_h4096, batch_size 1 first) had a "transposed"
// example that was accepted, and `kqual check` stopped with an internal error (qualify's refusal
// check). The example now takes a row count where the refusal is real, and a contract whose rows can
// never exceed one lists no such refusal at all.
TEST(DeclaredContract, TransposedRefusalIsRealWhenTheBaseHasOneRow) {
  // y = 2 x over rows x cols (test_util::rows_cols_contract), its axes `axes`.
  auto contract = [](const std::string& name, const std::string& axes) {
    test_util::RowsCols keys;
    keys.axes = axes;
    return test_util::rows_cols_contract(name, keys);
  };
  // rows variable with a base of 1 (cols constant, so the base shape is the domain's example); rows a
  // constant 1 (cols variable): no row-major operand can ever be transposed.
  const Written one_row_base(contract("one_row_base", "[axes.rows]\nrange = [1, 4096]\nhints = [1, 32]\nbase = 1\n[axes.cols]\nvalue = 64\n"),
                             "def f(x):\n    return 2 * x\n", "one_row_base");
  const Written one_row_only(contract("one_row_only", "[axes.rows]\nvalue = 1\n[axes.cols]\nrange = [1, 4096]\nbase = 64\n"),
                             "def f(x):\n    return 2 * x\n", "one_row_only");
  for (const Written* w : {&one_row_base, &one_row_only}) {
    const Contract& c = load_declared_contract(w->file);
    const std::vector<std::string> codes = refusal_codes(c.domain());
    const bool can_transpose = w == &one_row_base;
    EXPECT_EQ(std::count(codes.begin(), codes.end(), "transposed"), can_transpose ? 1 : 0) << c.name();
    bool transposed = false;
    for (const auto& ex : c.refusal_examples()) {
      auto got = c.validate(ex.request, ex.claims ? *ex.claims : widest_claims(c.domain()));
      ASSERT_TRUE(got) << c.name() << ": the '" << ex.code << "' example is accepted";
      EXPECT_EQ(got->code, ex.code) << c.name() << ": " << got->reason;
      if (ex.code == "transposed") {
        transposed = true;
        EXPECT_GT(ex.request.dims.at("rows"), 1) << c.name();
      }
    }
    EXPECT_EQ(transposed, can_transpose) << c.name();
    // What `kqual check` runs before any GPU work (qualify's contract block): every claim-independent
    // example refused with its own code.
    for (const auto& [req, code] : c.unsupported_examples()) {
      auto got = c.validate(req, widest_claims(c.domain()));
      ASSERT_TRUE(got) << c.name() << ": " << code;
      EXPECT_EQ(got->code, code) << c.name();
    }
  }
}

}  // namespace
}  // namespace kqual::contract
