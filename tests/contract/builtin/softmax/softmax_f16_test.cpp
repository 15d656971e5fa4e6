// softmax in f16: the reference rounded once to f16 with a bound that knows f16's 11 bits and its
// subnormal outputs; the families that reach them; no f16 case past 2^31 elements; and the bundled
// kernel's f16 path emulated on the CPU (online (max, sum) state per thread, warp butterflies, the
// block's fixed merge order), judged as the check judges it: the good one accepted, the known-broken
// one (exp in f16 without the max subtracted) rejected for its stated reason over several seeds.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <set>

#include "contract/f16_test_util.hpp"
#include "kqual/contract/compare.hpp"
#include "kqual/contract/contract.hpp"

namespace kqual::contract {
namespace {
using namespace emulation;

const Contract& C() { return find_contract("softmax"); }
const float kNegInf = -std::numeric_limits<float>::infinity();

CaseData f16_rows(const std::vector<float>& v, std::int64_t rows, std::int64_t cols) {
  CaseData d;
  d.spec.dtype = DType::f16;
  d.dims = {{"rows", rows}, {"cols", cols}};
  d.inputs = {f16_tensor("x", rows * cols, v)};
  return d;
}

// ---- candidates/softmax/good/kernel.cu, f16, on the CPU ---------------------------------------

struct State {
  float m = kNegInf, s = 0.0f;
};

// The good kernel's fold and merge (__expf as expf: the bound admits either).
void fold(State& a, float v) {
  if (v > a.m) {
    a.s = a.s * std::exp(a.m - v) + 1.0f;
    a.m = v;
  } else if (v != kNegInf) {
    a.s += std::exp(v - a.m);
  }
}
State merge(State a, State b) {
  const float mn = std::fmax(a.m, b.m);
  State r;
  r.s = mn == kNegInf ? a.s + b.s : a.s * std::exp(a.m - mn) + b.s * std::exp(b.m - mn);
  r.m = mn;
  return r;
}
// -DKQUAL_BUG_F16_EXP_NO_MAX: e = hexp(x) (here f16(exp(x))), summed as they come; the max kept.
float hexp(float x) { return round_h(float(std::exp(double(x)))); }
void fold_no_max(State& a, float v) {
  if (v > a.m) a.m = v;
  if (v != kNegInf) a.s += hexp(v);
}
State merge_no_max(State a, State b) { return {std::fmax(a.m, b.m), a.s + b.s}; }

// One row as the kernel does it: a warp (cols <= 1024) or a block of 256; per thread, the 8-wide
// vectors v = t, t + nt, ... when the row starts 16-byte aligned, then the scalar rest j = done + t, ...;
// butterflies within each warp, then the block's warps merged in order; y = exp(x - m) * (1 / s).
void softmax_row(const float* x, std::vector<std::uint8_t>& y, std::size_t y0, std::int64_t cols, bool aligned, bool bug) {
  const int nt = cols <= 1024 ? 32 : 256;
  std::vector<State> st(static_cast<std::size_t>(nt));
  auto f = [&](std::int64_t t, float v) { bug ? fold_no_max(st[std::size_t(t)], v) : fold(st[std::size_t(t)], v); };
  auto mg = [&](State a, State b) { return bug ? merge_no_max(a, b) : merge(a, b); };
  std::int64_t done = 0;
  if (aligned) {
    const std::int64_t nv = cols / 8;
    for (std::int64_t v = 0; v < nv; ++v)
      for (int k = 0; k < 8; ++k) f(v % nt, x[v * 8 + k]);
    done = nv * 8;
  }
  for (std::int64_t j = done; j < cols; ++j) f((j - done) % nt, x[j]);
  for (int w = 0; w < nt / 32; ++w)
    for (int off = 16; off >= 1; off /= 2) {
      State next[32];
      for (int l = 0; l < 32; ++l) next[l] = mg(st[std::size_t(w * 32 + l)], st[std::size_t(w * 32 + (l ^ off))]);
      for (int l = 0; l < 32; ++l) st[std::size_t(w * 32 + l)] = next[l];
    }
  State all = st[0];
  for (int w = 1; w < nt / 32; ++w) all = mg(all, st[std::size_t(w * 32)]);
  const float inv = (all.m == INFINITY || all.m == kNegInf) ? NAN : 1.0f / all.s;
  for (std::int64_t j = 0; j < cols; ++j)
    put_half(y, y0 + std::size_t(j), f2h((bug ? hexp(x[j]) : std::exp(x[j] - all.m)) * inv));
}

Kernel softmax_kernel(bool bug) {
  return [bug](const CaseData& d, Outputs& out) {
    const std::int64_t rows = d.dims.at("rows"), cols = d.dims.at("cols");
    const Tensor& x = d.inputs.at(0);
    std::vector<float> row(static_cast<std::size_t>(cols));
    for (std::int64_t r = 0; r < rows; ++r) {
      for (std::int64_t j = 0; j < cols; ++j) row[std::size_t(j)] = h2f(half_at(x, std::size_t(r * cols + j)));
      const bool aligned = (d.spec.offset_elements + r * cols) % 8 == 0;  // x and y start 16-byte aligned
      softmax_row(row.data(), out.at("y"), std::size_t(r * cols), cols, aligned, bug);
    }
  };
}

// ---- reference and error model --------------------------------------------------------------

TEST(SoftmaxF16, ReferenceRoundedOnceWithF16sBound) {
  // [0, 0, 1, 2]: each output rounded once to f16; the bound admits that rounding (2^-11 relative)
  // and no more than a few f32 roundings beyond it.
  const Tensor y = C().reference(f16_rows({0, 0, 1, 2}, 1, 4)).at(0);
  const double s = 2 + std::exp(1.0) + std::exp(2.0);
  for (int j = 0; j < 4; ++j) {
    const double want = std::exp(double(j < 2 ? 0 : j - 1)) / s;
    EXPECT_NEAR(y.ref[std::size_t(j)], want, 1e-15);
    EXPECT_EQ(half_at(y, std::size_t(j)), f2h(float(want)));
    EXPECT_GT(y.bound[std::size_t(j)], want * std::ldexp(1.0, -11));
    EXPECT_LT(y.bound[std::size_t(j)], want * std::ldexp(1.0, -11) * 1.01 + std::ldexp(1.0, -24));
  }
  // A probability among f16's subnormals (e^-14 / (1 + e^-14) ~ 8.3e-7): the bound is half the
  // subnormal spacing, 2^-25, plus its relative part, so the correctly rounded subnormal passes and
  // zero (a flush) does not.
  const Tensor t = C().reference(f16_rows({0, -14}, 1, 2)).at(0);
  EXPECT_LT(t.ref[1], std::ldexp(1.0, -14));
  EXPECT_GT(t.ref[1], std::ldexp(1.0, -24));
  EXPECT_GE(t.bound[1], std::ldexp(1.0, -25));
  EXPECT_LT(t.bound[1], std::ldexp(1.0, -25) + t.ref[1] * 0.001);
  std::vector<std::uint8_t> got = t.bytes;
  EXPECT_TRUE(C().compare(t, got.data(), 0xFF).ok);
  put_half(got, 1, 0);
  EXPECT_EQ(C().compare(t, got.data(), 0xFF).code, "wrong_result");
  // Special values as in f32: a NaN row, a +Inf row, -Inf entries exactly 0.
  const Tensor sp = C().reference(f16_rows({1, NAN, 1, INFINITY, kNegInf, 0}, 3, 2)).at(0);
  for (int j = 0; j < 4; ++j) EXPECT_TRUE(std::isnan(sp.ref[std::size_t(j)])) << j;
  EXPECT_EQ(sp.ref[4], 0.0);
  EXPECT_EQ(sp.ref[5], 1.0);
}

TEST(SoftmaxF16, FamiliesReachSubnormalOutputsAndF16ExpOverflow) {
  auto make = [](std::int64_t rows, std::int64_t cols, const char* fam) {
    return C().make_case(CaseSpec{"t", fam, DType::f16, {{"rows", rows}, {"cols", cols}}, 0, 3});
  };
  // ramp: a quarter and more of the outputs are f16 subnormals (2^-24 .. 2^-14).
  const Tensor ramp = C().reference(make(9, 129, "ramp")).at(0);
  int sub = 0;
  for (std::size_t i = 0; i < std::size_t(ramp.elements); ++i) {
    const std::uint16_t h = half_at(ramp, i);
    sub += h != 0 && h < 0x0400;
  }
  EXPECT_GT(sub, int(ramp.elements) / 4);
  // normal: rows whose logits pass 11.09, where exp in f16 passes 65504.
  const CaseData n = make(16, 64, "normal");
  int over = 0;
  for (std::size_t i = 0; i < 16 * 64; ++i) over += h2f(half_at(n.inputs[0], i)) > 11.1f;
  EXPECT_GT(over, 10);
  // large_logits: |x| in 100 .. ~1000 (f16's spacing there, 0.5 at most, keeps rows from one-hot).
  const CaseData big = make(4, 1025, "large_logits");
  const Tensor by = C().reference(big).at(0);
  int spread = 0;
  for (std::size_t i = 0; i < std::size_t(big.inputs[0].elements); ++i) {
    const float v = std::fabs(h2f(half_at(big.inputs[0], i)));
    EXPECT_GE(v, 90.0f);
    EXPECT_LE(v, 1010.0f);
    spread += by.ref[i] > 1e-3 && by.ref[i] < 0.5;
  }
  EXPECT_GT(spread, 100);
}

TEST(SoftmaxF16, CasesAndNoneGeneratedPast2To31) {
  int long_rows = 0;
  const int offsets = f16_cases(C(), {"normal", "large_logits", "specials", "ramp", "neg_inf", "nonzero_mean"}, 2,
                                [&](const CaseSpec& c) { long_rows += c.dim("cols") >= 8192; });
  EXPECT_GT(offsets, 0);
  EXPECT_GT(long_rows, 0);
  ASSERT_NO_FATAL_FAILURE(expect_one_f32_index_case(C()));
  const std::string p = C().numerical_policy();
  for (const char* w : {"f16", "2^-11", "2^-25", "11.09", "f16 shapes past 2^31 elements"}) EXPECT_NE(p.find(w), std::string::npos) << w;
}

// ---- the bundled kernels, emulated -------------------------------------------------------------

TEST(SoftmaxF16, TheGoodKernelIsAcceptedOnEveryCase) {
  for (std::uint64_t seed : {std::uint64_t(2), std::uint64_t(31)})
    ASSERT_NO_FATAL_FAILURE(expect_good_f16_accepted(C(), "softmax", "good", softmax_kernel(false), seed));
}

TEST(SoftmaxF16, TheKnownBrokenF16KernelIsRejectedForItsStatedReason) {
  BrokenF16 b;
  ASSERT_NO_FATAL_FAILURE(judge_broken_f16(C(), "softmax", "KQUAL_BUG_F16_EXP_NO_MAX", softmax_kernel(true), {1, 2, 3, 4, 5, 6, 7, 8}, b));
  // The stated reason is the usual one: exp overflowing f16 makes NaN rows.
  EXPECT_GE(b.codes[*b.manifest.expect_rejected_for], 6);
}

}  // namespace
}  // namespace kqual::contract
