// The bundled declared contracts' special-value policies, on the CPU: each policy names the framework
// whose special values it follows (PyTorch) and states any deliberate difference; swiglu and gelu
// take PyTorch's values where a literal evaluation of PyTorch's formula gives NaN (silu(-Inf) =
// -Inf / Inf, gelu(-Inf) = -Inf * 0), so a kernel written as PyTorch's is accepted and one that
// returns the limit 0 there is rejected (nan_policy). The GPU side, PyTorch's own result judged by
// each contract: tests/device/declared_specials_device_test.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "kqual/contract/compare.hpp"
#include "kqual/contract/declared.hpp"
#include "kqual/core/files.hpp"
#include "contract_test_util.hpp"

namespace kqual::contract {
namespace {
namespace fs = std::filesystem;

const fs::path kSpecialsRepo = KQUAL_SOURCE_DIR;

#define SPECIALS_NEED_NUMPY() \
  if (!test_util::have_numpy()) GTEST_SKIP() << "no Python 3 with NumPy (install python3-numpy)"

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
    const std::vector<Tensor> want = c.reference(d);
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
  // The one deliberate difference is stated with PyTorch's behaviour and the reason.
  const std::string relu = load_declared_contract(kSpecialsRepo / "contracts/residual_add_relu_declared").numerical_policy();
  for (const char* says : {"relu(-0) is +0", "clamp_min", "built-in residual_add_relu"})
    EXPECT_NE(relu.find(says), std::string::npos) << says << " not in: " << relu;
}

TEST(DeclaredSpecials, SwigluTakesPyTorchsSiluAtMinusInfinity) {
  SPECIALS_NEED_NUMPY();
  const Contract& c = load_declared_contract(kSpecialsRepo / "contracts/swiglu");
  // The reference itself: silu(-Inf) * b is NaN for every b (PyTorch: -Inf / (1 + exp(+Inf))).
  Supports s = every_claim(c);
  int checked = 0;
  for (const auto& cs : c.correctness_cases(s, 5, false)) {
    if (cs.family != "specials") continue;
    const CaseData d = c.make_case(cs);
    const Tensor y = c.reference(d).at(0);
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
  SPECIALS_NEED_NUMPY();
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

TEST(DeclaredSpecials, ResidualAddReluDiffersFromPyTorchOnlyAtMinusZero) {
  SPECIALS_NEED_NUMPY();
  const Contract& c = load_declared_contract(kSpecialsRepo / "contracts/residual_add_relu_declared");
  // PyTorch's relu, clamp_min(s, 0): NaN kept, s itself where s == 0 (so -0 stays -0), else max.
  auto clamp_min = [](const std::vector<float>& v) {
    const float s = v[0] + v[1];
    return std::isnan(s) || s == 0.0f ? s : s < 0.0f ? 0.0f : s;
  };
  for (const auto& cs : c.correctness_cases(every_claim(c), 31, false)) {
    if (cs.family != "specials" && cs.family != "denormals" && cs.family != "near_max") continue;
    const CaseData d = c.make_case(cs);
    const Tensor y = c.reference(d).at(0);
    std::vector<std::uint8_t> got = run_elementwise(d, y, clamp_min);
    // Every element that differs is a -0 + -0 (the stated difference); with those set to +0 it passes.
    for (std::size_t i = 0; i < std::size_t(y.elements); ++i) {
      const double s = element_as_double(y.dtype, got.data(), i);
      if (s == 0 && std::signbit(s)) {
        EXPECT_TRUE(std::signbit(element_as_double(d.inputs[0].dtype, d.inputs[0].bytes.data(), i)) &&
                    std::signbit(element_as_double(d.inputs[1].dtype, d.inputs[1].bytes.data(), i)))
            << cs.id << ": -0 at " << i << " from inputs other than -0 + -0";
        store_element(y.dtype, got.data(), i, 0.0);
      }
    }
    const Comparison cmp = c.compare(y, got.data(), 0xA5);
    EXPECT_TRUE(cmp.ok) << cs.id << ": " << cmp.code << ": " << cmp.detail;
  }
}

}  // namespace
}  // namespace kqual::contract
