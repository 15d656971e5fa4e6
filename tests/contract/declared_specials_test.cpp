// The bundled declared contracts' special-value policies, on the CPU: each policy names the framework
// whose special values it follows (PyTorch); swiglu and gelu take PyTorch's values where a literal
// evaluation of PyTorch's formula gives NaN (silu(-Inf) = -Inf / Inf, gelu(-Inf) = -Inf * 0), so a
// kernel written as PyTorch's is accepted and one that returns the limit 0 there is rejected
// (nan_policy); rmsnorm and rmsnorm_strided make a row holding +-Inf all NaN, as F.rms_norm does on
// CUDA, so a kernel giving the row's finite elements rsqrt(Inf) = 0 is rejected (nan_policy). The GPU
// side, PyTorch's own result judged by each contract: tests/device/declared_specials_device_test.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "kqual/contract/compare.hpp"
#include "kqual/contract/declared/declared.hpp"
#include "kqual/core/files.hpp"
#include "contract_test_util.hpp"

namespace kqual::contract {
namespace {
namespace fs = std::filesystem;

const fs::path kSpecialsRepo = KQUAL_SOURCE_DIR;

const char* const kBundledDeclared[] = {"bmm",     "gelu",    "layernorm", "residual_add_relu_declared", "rmsnorm",
                                        "rmsnorm_strided", "rotary", "softmax_declared", "swiglu"};

Supports every_claim(const Contract& c) {
  Supports s;
  s.dtypes = c.dtypes();
  s.min_alignment_bytes = 16;
  s.max_n = std::numeric_limits<std::int64_t>::max();
  return s;
}

// An elementwise kernel emulated on the host: f32 arithmetic on the widened inputs, one rounding
// to the output's dtype on store.
using ElementOp = std::function<float(const std::vector<float>&)>;

std::vector<std::uint8_t> run_elementwise(const CaseData& d, const Tensor& y, const ElementOp& op) {
  std::vector<std::uint8_t> out(y.bytes.size(), 0xA5);
  std::vector<float> in(d.inputs.size());
  for (std::size_t i = 0; i < std::size_t(y.elements); ++i) {
    for (std::size_t k = 0; k < d.inputs.size(); ++k) in[k] = float(element_as_double(d.inputs[k].dtype, d.inputs[k].bytes.data(), i));
    store_element(y.dtype, out.data(), i, op(in));
  }
  return out;
}

// The classes the op's output gets over every case of `families` ("" when all are accepted: else
// the first case's id and code), and how many elements had an input equal to `watch`.
struct Judged {
  std::string first_rejection;
  int cases = 0;
  std::int64_t watched = 0;
};

Judged judge(const Contract& c, const std::vector<std::string>& families, const ElementOp& op, float watch) {
  Judged j;
  for (const auto& cs : c.correctness_cases(every_claim(c), 31, false)) {
    if (std::find(families.begin(), families.end(), cs.family) == families.end()) continue;
    const CaseData d = c.make_case(cs);
    const std::vector<Tensor> want = c.reference(d, test_util::run_host());
    ++j.cases;
    for (std::size_t i = 0; i < std::size_t(want.at(0).elements); ++i)
      if (element_as_double(d.inputs[0].dtype, d.inputs[0].bytes.data(), i) == double(watch)) ++j.watched;
    const std::vector<std::uint8_t> got = run_elementwise(d, want.at(0), op);
    const Comparison cmp = c.compare(want.at(0), got.data(), 0xA5);
    if (!cmp.ok && j.first_rejection.empty()) j.first_rejection = cs.id + ": " + cmp.code + ": " + cmp.detail;
  }
  return j;
}

TEST(DeclaredSpecials, EveryBundledPolicyNamesTheFrameworkItFollows) {
  for (const char* name : kBundledDeclared) {
    const fs::path file = kSpecialsRepo / "contracts" / name / "contract.toml";
    const Contract& c = load_declared_contract(file);
    const std::string policy = c.numerical_policy();
    EXPECT_NE(policy.find("Special values follow PyTorch eager ("), std::string::npos) << name << ": " << policy;
    // Something for the GPU test to compare: a family with NaN, +-Inf and -0 in an input.
    EXPECT_NE(read_text_file(file).find("specials ="), std::string::npos) << name << ": no specials family";
  }
  // relu(-0) is stated with the reason (the built-in's twin) and what PyTorch on CUDA was measured to give.
  const std::string relu = load_declared_contract(kSpecialsRepo / "contracts/residual_add_relu_declared").numerical_policy();
  for (const char* says : {"relu(-0) is +0", "built-in residual_add_relu", "no known difference", "PyTorch eager on CUDA gives relu(-0) = +0 too"})
    EXPECT_NE(relu.find(says), std::string::npos) << says << " not in: " << relu;
  // The row normalizations state both of PyTorch's answers for a +-Inf row, as measured on CUDA.
  for (const char* name : {"rmsnorm", "rmsnorm_strided"}) {
    const std::string policy = load_declared_contract(kSpecialsRepo / "contracts" / name).numerical_policy();
    EXPECT_NE(policy.find("its finite elements either NaN or the +-0"), std::string::npos) << name << ": " << policy;
    EXPECT_NE(policy.find("measured on the H200 and the H100 with PyTorch 2.11"), std::string::npos) << name << ": " << policy;
  }
}

TEST(DeclaredSpecials, SwigluTakesPyTorchsSiluAtMinusInfinity) {
  KQUAL_NEED_NUMPY();
  const Contract& c = load_declared_contract(kSpecialsRepo / "contracts/swiglu");
  // The reference itself: silu(-Inf) * b is NaN for every b (PyTorch: -Inf / (1 + exp(+Inf))).
  Supports s = every_claim(c);
  int checked = 0;
  for (const auto& cs : c.correctness_cases(s, 5, false)) {
    if (cs.family != "specials") continue;
    const CaseData d = c.make_case(cs);
    const Tensor y = c.reference(d, test_util::run_host()).at(0);
    for (std::size_t i = 0; i < std::size_t(y.elements); ++i) {
      const double a = element_as_double(d.inputs[0].dtype, d.inputs[0].bytes.data(), i);
      const double b = element_as_double(d.inputs[1].dtype, d.inputs[1].bytes.data(), i);
      if (a == -INFINITY) {
        EXPECT_TRUE(std::isnan(y.ref[i])) << cs.id << ": y[" << i << "] = " << y.ref[i] << " for a = -Inf, b = " << b;
        ++checked;
      } else if (a == INFINITY && std::isfinite(b) && b != 0) {
        EXPECT_EQ(y.ref[i], b > 0 ? INFINITY : -INFINITY) << cs.id << ": y[" << i << "] for a = +Inf, b = " << b;
      }
    }
  }
  EXPECT_GT(checked, 0) << "no specials case puts -Inf in the gate";
  // A kernel written as PyTorch computes it is accepted on every family; one that returns the limit 0
  // at -Inf (the old policy) is rejected for it.
  const std::vector<std::string> all = {"base", "large_gate", "specials"};
  const Judged literal = judge(c, all, [](const std::vector<float>& v) { return v[0] / (1.0f + std::exp(-v[0])) * v[1]; }, -INFINITY);
  EXPECT_EQ(literal.first_rejection, "");
  EXPECT_GT(literal.watched, 0);
  const Judged limit = judge(c, {"specials"}, [](const std::vector<float>& v) {
    const float r = 1.0f / (1.0f + std::exp(-v[0]));
    return (r == 0.0f ? 0.0f : v[0] * r) * v[1];
  }, -INFINITY);
  EXPECT_NE(limit.first_rejection.find("nan_policy"), std::string::npos) << limit.first_rejection;
  // candidates/swiglu/broken/clamp_nan (fmaxf(a, -80) first) stays rejected for its stated reason.
  const Judged clamped = judge(c, all, [](const std::vector<float>& v) {
    const float a = std::fmax(v[0], -80.0f);
    return a / (1.0f + std::exp(-a)) * v[1];
  }, -INFINITY);
  EXPECT_NE(clamped.first_rejection.find("nan_policy"), std::string::npos) << clamped.first_rejection;
}

TEST(DeclaredSpecials, GeluTakesPyTorchsTanhFormAtMinusInfinity) {
  KQUAL_NEED_NUMPY();
  const Contract& c = load_declared_contract(kSpecialsRepo / "contracts/gelu");
  auto gelu_h = [](float x) { return 1.0f + std::tanh(0.7978845608028654f * (x + 0.044715f * x * x * x)); };
  // ATen's tanh-form GELU: 0.5 x (1 + tanh(u)), -Inf * 0 = NaN at x = -Inf.
  const Judged literal = judge(c, {"base", "large", "specials"}, [&](const std::vector<float>& v) { return 0.5f * v[0] * gelu_h(v[0]); }, -INFINITY);
  EXPECT_EQ(literal.first_rejection, "");
  EXPECT_GT(literal.watched, 0);
  const Judged limit = judge(c, {"specials"}, [&](const std::vector<float>& v) {
    const float h = gelu_h(v[0]);
    return h == 0.0f ? 0.0f : 0.5f * v[0] * h;
  }, -INFINITY);
  EXPECT_NE(limit.first_rejection.find("nan_policy"), std::string::npos) << limit.first_rejection;
}

TEST(DeclaredSpecials, ResidualAddReluLiteralClampMinDiffersOnlyAtMinusZero) {
  KQUAL_NEED_NUMPY();
  const Contract& c = load_declared_contract(kSpecialsRepo / "contracts/residual_add_relu_declared");
  // A literal clamp_min(s, 0): NaN kept, s itself where s == 0 (so -0 stays -0), else max. (PyTorch's
  // relu on CUDA gives +0 at -0: measured, PyTorch 2.11 on the H200.)
  auto clamp_min = [](const std::vector<float>& v) {
    const float s = v[0] + v[1];
    return std::isnan(s) || s == 0.0f ? s : s < 0.0f ? 0.0f : s;
  };
  for (const auto& cs : c.correctness_cases(every_claim(c), 31, false)) {
    if (cs.family != "specials" && cs.family != "denormals" && cs.family != "near_max") continue;
    const CaseData d = c.make_case(cs);
    const Tensor y = c.reference(d, test_util::run_host()).at(0);
    std::vector<std::uint8_t> got = run_elementwise(d, y, clamp_min);
    // Every element that differs is a -0 + -0 (the contract wants +0); with those set to +0 it passes.
    bool minus_zero = false;
    for (std::size_t i = 0; i < std::size_t(y.elements); ++i) {
      const double s = element_as_double(y.dtype, got.data(), i);
      if (s == 0 && std::signbit(s)) {
        EXPECT_TRUE(std::signbit(element_as_double(d.inputs[0].dtype, d.inputs[0].bytes.data(), i)) &&
                    std::signbit(element_as_double(d.inputs[1].dtype, d.inputs[1].bytes.data(), i)))
            << cs.id << ": -0 at " << i << " from inputs other than -0 + -0";
        if (!minus_zero) {
          EXPECT_FALSE(c.compare(y, got.data(), 0xA5).ok) << cs.id << ": -0 accepted for +0 at " << i;
        }
        minus_zero = true;
        store_element(y.dtype, got.data(), i, 0.0);
      }
    }
    const Comparison cmp = c.compare(y, got.data(), 0xA5);
    EXPECT_TRUE(cmp.ok) << cs.id << ": " << cmp.code << ": " << cmp.detail;
  }
}

// rmsnorm and rmsnorm_strided: a +-Inf anywhere in a row makes the row's finite elements NaN or +-0
// (F.rms_norm on CUDA gave both). The reference gives NaN and its [reference] alternative the literal
// x * rsqrt(mean(x^2) + eps) * w; the good kernels' rule (NaN across a row whose f32 sum of squares is
// Inf) and the literal formula are accepted on every family. Rejected (nan_policy): a kernel that
// writes a finite nonzero value into an Inf row (rsqrt(Inf) taken as 1), and one that zeroes a NaN
// row (the alternative is no licence to drop a NaN).
TEST(DeclaredSpecials, RmsnormRowHoldingInfIsNaNOrZero) {
  KQUAL_NEED_NUMPY();
  enum class Rule { nan_row, literal, inf_row_as_one, nan_row_zeroed };
  for (const char* name : {"rmsnorm", "rmsnorm_strided"}) {
    const Contract& c = load_declared_contract(kSpecialsRepo / "contracts" / name);
    Supports s = every_claim(c);
    s.dtypes = {DType::f32};
    auto emulate = [&](const CaseData& d, const Tensor& y, Rule rule) {
      const std::int64_t rows = d.dims.at("rows"), n = d.dims.at("cols");
      const std::int64_t sx = d.inputs[0].row_stride > 0 ? d.inputs[0].row_stride : n, sy = y.row_stride > 0 ? y.row_stride : n;
      std::vector<std::uint8_t> out(y.bytes.size(), 0xA5);
      auto x_at = [&](std::int64_t r, std::int64_t j) { return float(element_as_double(DType::f32, d.inputs[0].bytes.data(), std::size_t(r * sx + j))); };
      for (std::int64_t r = 0; r < rows; ++r) {
        float ss = 0;
        for (std::int64_t j = 0; j < n; ++j) ss = std::fma(x_at(r, j), x_at(r, j), ss);
        float k = 1.0f / std::sqrt(ss / float(n) + 1e-6f);
        if (std::isinf(ss) && rule == Rule::nan_row) k = std::numeric_limits<float>::quiet_NaN();
        if (std::isinf(ss) && rule == Rule::inf_row_as_one) k = 1;
        for (std::int64_t j = 0; j < n; ++j) {
          float v = x_at(r, j) * k * float(element_as_double(DType::f32, d.inputs[1].bytes.data(), std::size_t(j)));
          if (std::isnan(ss) && rule == Rule::nan_row_zeroed) v = 0;
          store_element(DType::f32, out.data(), std::size_t(r * sy + j), v);
        }
      }
      return out;
    };
    int inf_rows = 0, with_alternative = 0;
    std::map<Rule, std::string> rejected;
    for (const auto& cs : c.correctness_cases(s, 31, false)) {
      if (cs.dims.at("rows") * cs.dims.at("cols") > 40000 || cs.offset_elements != 0) continue;
      const CaseData d = c.make_case(cs);
      const Tensor y = c.reference(d, test_util::run_host()).at(0);
      with_alternative += y.alt.size() == y.ref.size();
      const std::int64_t rows = d.dims.at("rows"), n = d.dims.at("cols");
      const std::int64_t sx = d.inputs[0].row_stride > 0 ? d.inputs[0].row_stride : n, sy = y.row_stride > 0 ? y.row_stride : n;
      for (std::int64_t r = 0; r < rows; ++r) {
        bool inf = false;
        for (std::int64_t j = 0; j < n; ++j) inf |= std::isinf(element_as_double(DType::f32, d.inputs[0].bytes.data(), std::size_t(r * sx + j)));
        if (!inf) continue;
        ++inf_rows;
        for (std::int64_t j = 0; j < n; ++j)
          EXPECT_TRUE(std::isnan(y.ref[std::size_t(r * sy + j)])) << name << " " << cs.id << ": row " << r << ", column " << j << ": " << y.ref[std::size_t(r * sy + j)];
      }
      for (Rule rule : {Rule::nan_row, Rule::literal}) {
        const Comparison ok = c.compare(y, emulate(d, y, rule).data(), 0xA5);
        EXPECT_TRUE(ok.ok) << name << " " << cs.id << " (rule " << int(rule) << "): " << ok.code << ": " << ok.detail;
      }
      for (Rule rule : {Rule::inf_row_as_one, Rule::nan_row_zeroed}) {
        const Comparison bad = c.compare(y, emulate(d, y, rule).data(), 0xA5);
        if (!bad.ok && rejected[rule].empty()) rejected[rule] = cs.id + ": " + bad.code + ": " + bad.detail;
      }
    }
    EXPECT_GT(inf_rows, 0) << name << ": no case puts +-Inf in a row";
    EXPECT_GT(with_alternative, 0) << name << ": no case carries the alternative's values";
    EXPECT_NE(rejected[Rule::inf_row_as_one].find("nan_policy"), std::string::npos) << name << ": " << rejected[Rule::inf_row_as_one];
    EXPECT_NE(rejected[Rule::nan_row_zeroed].find("nan_policy"), std::string::npos) << name << ": " << rejected[Rule::nan_row_zeroed];
  }
}

}  // namespace
}  // namespace kqual::contract
