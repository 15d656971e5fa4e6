// CPU tests of the softmax contract: reference on hand-computed rows, the error model (correct f32
// implementations in several orders pass, narrow accumulations and scaled exp arguments fail,
// NaN/Inf rules), the case generator, refusals, and the known-broken candidates' bugs simulated
// on the CPU against the generated cases.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <set>

#include "kqual/contract/compare.hpp"
#include "kqual/contract/contract.hpp"
#include "kqual/core/error.hpp"
#include "contract/contract_test_util.hpp"

namespace kqual::contract {
namespace softmax_model {
double exp_rel(double d);
double sum_rel(std::int64_t cols);
}  // namespace softmax_model
namespace {

const Contract& C() { return find_contract("softmax"); }
const float kInf = std::numeric_limits<float>::infinity();
const float kNan = std::numeric_limits<float>::quiet_NaN();

Supports claims(std::int64_t align = 4, std::vector<DType> t = {DType::f32, DType::bf16}) {
  return test_util::claims_of(std::move(t), align);
}

Request req(DType t, std::int64_t rows, std::int64_t cols) { return test_util::rows_cols_request(t, rows, cols, rows * cols); }

CaseData from_floats(const std::vector<float>& v, std::int64_t rows, std::int64_t cols, DType t = DType::f32) {
  CaseData d;
  d.spec.dtype = t;
  d.dims = {{"rows", rows}, {"cols", cols}};
  Tensor x{"x", t, rows * cols, std::vector<std::uint8_t>(v.size() * dtype_size(t)), {}, {}};
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (t == DType::f32) std::memcpy(x.bytes.data() + 4 * i, &v[i], 4);
    else {
      std::uint16_t b = f32_to_bf16_rne(v[i]);
      std::memcpy(x.bytes.data() + 2 * i, &b, 2);
    }
  }
  d.inputs = {x};
  return d;
}

CaseData make(DType t, std::int64_t rows, std::int64_t cols, const std::string& fam, std::uint64_t seed = 5) {
  return C().make_case(CaseSpec{"t", fam, t, {{"rows", rows}, {"cols", cols}}, 0, seed});
}

TEST(SoftmaxReference, HandComputedRows) {
  // [0, 0] → [1/2, 1/2]; [1, 2, 3] → e^(j-3) / (1 + e^-1 + e^-2); [1e4, 1e4 - ln 3] → [3/4, 1/4].
  auto y = C().reference(from_floats({0, 0, 1, 2, 3, 0}, 2, 3)).at(0);
  const double s = 1 + std::exp(-1.0) + std::exp(-2.0);
  // Row 0 is [0, 0, 1], row 1 is [2, 3, 0].
  EXPECT_NEAR(y.ref[0], 1 / (2 + std::exp(1.0)), 1e-15);
  EXPECT_NEAR(y.ref[2], std::exp(1.0) / (2 + std::exp(1.0)), 1e-15);
  EXPECT_NEAR(y.ref[4], 1 / (1 + std::exp(-1.0) + std::exp(-3.0)), 1e-15);
  auto y2 = C().reference(from_floats({1, 2, 3}, 1, 3)).at(0);
  EXPECT_NEAR(y2.ref[0], std::exp(-2.0) / s, 1e-15);
  EXPECT_NEAR(y2.ref[1], std::exp(-1.0) / s, 1e-15);
  EXPECT_NEAR(y2.ref[2], 1.0 / s, 1e-15);
  const float big = 1e4f;
  const float small = big - float(std::log(3.0));  // representable: 9998.901..
  auto y3 = C().reference(from_floats({big, small}, 1, 2)).at(0);
  const double e = std::exp(double(small) - double(big));
  EXPECT_NEAR(y3.ref[0], 1 / (1 + e), 1e-15);
  EXPECT_NEAR(y3.ref[1], e / (1 + e), 1e-15);
  EXPECT_NEAR(y3.ref[1], 0.25, 1e-3);
  // Expected bytes are the reference rounded to the dtype.
  float f;
  std::memcpy(&f, y3.bytes.data(), 4);
  EXPECT_EQ(f, float(1 / (1 + e)));
  // Rows sum to 1 and the bound is relative: at least u, at most a few hundred u for short rows.
  for (std::size_t j = 0; j < 3; ++j) {
    EXPECT_GT(y2.bound[j], y2.ref[j] * std::ldexp(1.0, -24));
    EXPECT_LT(y2.bound[j], y2.ref[j] * 200 * std::ldexp(1.0, -24));
  }
}

TEST(SoftmaxReference, SpecialValuePolicy) {
  // Row 0: NaN anywhere → NaN row. Row 1: +Inf → NaN row. Row 2: all -Inf → NaN row.
  // Row 3: -Inf entries with a finite max → exactly 0 there. Row 4: one finite entry → 1.
  auto d = from_floats({1, kNan, 2, 3, kInf, 1, -kInf, -kInf, -kInf, 0, -kInf, 0, -kInf, 5, -kInf}, 5, 3);
  auto y = C().reference(d).at(0);
  for (int j = 0; j < 9; ++j) EXPECT_TRUE(std::isnan(y.ref[std::size_t(j)])) << j;
  EXPECT_EQ(y.ref[9], 0.5);
  EXPECT_EQ(y.ref[10], 0.0);
  EXPECT_EQ(y.ref[11], 0.5);
  EXPECT_EQ(y.ref[12], 0.0);
  EXPECT_EQ(y.ref[13], 1.0);
  // A -Inf position must be (within the subnormal floor) zero.
  EXPECT_LT(y.bound[10], 1e-37);
  // bf16: the same, rounded once to bf16.
  auto yb = C().reference(from_floats({0, 0, 1, 2}, 1, 4, DType::bf16)).at(0);
  std::uint16_t b;
  std::memcpy(&b, yb.bytes.data() + 6, 2);
  const double want = std::exp(0.0) / (2 + std::exp(1.0) + std::exp(2.0)) * std::exp(2.0);
  EXPECT_EQ(b, f32_to_bf16_rne(float(want)));
  EXPECT_GT(yb.bound[3], want * std::ldexp(1.0, -8));  // admits the bf16 output rounding
}

// ---- Simulated implementations ------------------------------------------------------------

// A whole-matrix implementation on floats; y starts as kUnwritten (a NaN payload used only as a
// marker), and pack() turns markers into the harness's poison bytes.
using Impl = std::function<void(const std::vector<float>& x, std::vector<float>& y, std::int64_t rows, std::int64_t cols)>;
const std::uint32_t kUnwritten = 0x7FBADBADu;

std::vector<float> unpack(const Tensor& x) {
  std::vector<float> v(std::size_t(x.elements));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = float(element_as_double(x.dtype, x.bytes.data(), i));
  return v;
}

std::vector<std::uint8_t> pack(const std::vector<float>& y, DType t, std::uint8_t poison) {
  const std::size_t es = dtype_size(t);
  std::vector<std::uint8_t> out(y.size() * es);
  for (std::size_t i = 0; i < y.size(); ++i) {
    if (f32_bits(y[i]) == kUnwritten) {
      std::memset(out.data() + i * es, poison, es);
    } else if (t == DType::f32) {
      std::memcpy(out.data() + 4 * i, &y[i], 4);
    } else {
      std::uint16_t b = f32_to_bf16_rne(y[i]);
      std::memcpy(out.data() + 2 * i, &b, 2);
    }
  }
  return out;
}

Comparison run_impl(const Impl& impl, const CaseData& d) {
  auto x = unpack(d.inputs[0]);
  std::vector<float> y(x.size(), f32_from_bits(kUnwritten));
  impl(x, y, d.dims.at("rows"), d.dims.at("cols"));
  auto expected = C().reference(d).at(0);
  auto out = pack(y, expected.dtype, 0xFF);
  return C().compare(expected, out.data(), 0xFF);
}

// Replays impl on every generated case up to a size; the set of outcomes ("pass" or a code).
std::set<std::string> replay(const Impl& impl, std::int64_t max_elements = 70000, std::set<std::string>* failing = nullptr) {
  std::set<std::string> codes;
  for (const auto& spec : C().correctness_cases(claims(), 17, false)) {
    if (spec.dim("rows") * spec.dim("cols") > max_elements) continue;
    auto c = run_impl(impl, C().make_case(spec));
    codes.insert(c.ok ? "pass" : c.code);
    if (!c.ok && failing) failing->insert(spec.id + ": " + c.detail);
  }
  return codes;
}

// exp with the worst error fast-math __expf is documented to have (2 + 1.173|d| ulp), all one way.
float fast_exp(float d) {
  if (!std::isfinite(d)) return std::exp(d);
  double e = std::exp(double(d));
  return float(e * (1 + (2 + 1.173 * std::fabs(d)) * std::ldexp(1.0, -23)));
}
float exact_expf(float d) { return std::exp(d); }

// One row, three passes in f32: max, sum of exp (in the order given by the summation), divide.
template <typename Sum>
Impl three_pass(Sum sum, float (*expf_)(float) = exact_expf, bool reciprocal = false) {
  return [=](const std::vector<float>& x, std::vector<float>& y, std::int64_t R, std::int64_t C_) {
    for (std::int64_t r = 0; r < R; ++r) {
      const float* xr = x.data() + r * C_;
      float* yr = y.data() + r * C_;
      float m = -kInf;
      bool nan = false;
      for (std::int64_t j = 0; j < C_; ++j) {
        nan |= std::isnan(xr[j]);
        m = std::max(m, xr[j]);
      }
      std::vector<float> e(static_cast<std::size_t>(C_));
      for (std::int64_t j = 0; j < C_; ++j) e[std::size_t(j)] = nan ? kNan : expf_(xr[j] - m);
      float s = sum(e);
      float inv = 1.0f / s;
      for (std::int64_t j = 0; j < C_; ++j) yr[j] = reciprocal ? e[std::size_t(j)] * inv : e[std::size_t(j)] / s;
    }
  };
}

float forward_sum(const std::vector<float>& e) {
  float s = 0;
  for (float v : e) s += v;
  return s;
}
float reverse_sum(const std::vector<float>& e) {
  float s = 0;
  for (std::size_t i = e.size(); i-- > 0;) s += e[i];
  return s;
}
float pairwise_sum(const std::vector<float>& e) {
  std::vector<float> v = e;
  while (v.size() > 1) {
    std::vector<float> w((v.size() + 1) / 2);
    for (std::size_t i = 0; i < w.size(); ++i) w[i] = 2 * i + 1 < v.size() ? v[2 * i] + v[2 * i + 1] : v[2 * i];
    v.swap(w);
  }
  return v.empty() ? 0.0f : v[0];
}
// Round to a narrower float format with `bits` significand bits (bf16: 8, f16: 11), RNE.
float round_to(double v, int bits) {
  if (v == 0 || !std::isfinite(v)) return float(v);
  int e;
  double m = std::frexp(v, &e);
  return float(std::ldexp(std::nearbyint(std::ldexp(m, bits)), e - bits));
}
float bf16_accumulated_sum(const std::vector<float>& e) {
  float s = 0;
  for (float v : e) s = round_to(double(s) + double(v), 8);
  return s;
}
float f16_accumulated_sum(const std::vector<float>& e) {
  float s = 0;
  for (float v : e) s = round_to(double(s) + double(v), 11);
  return s;
}

// The good candidate's algorithm: `threads` lanes, each an online (max, sum) over a strided slice,
// merged by a butterfly; optionally with the merge bug (no rescale) or the fast exp.
struct Ms { float m, s; };
Ms online_merge(Ms a, Ms b, bool rescale) {
  Ms o;
  o.m = std::max(a.m, b.m);
  if (!rescale) {
    o.s = a.s + b.s;  // BUG (wrong_merge): partial sums relative to different maxima added as they are
  } else if (o.m == -kInf) {
    o.s = a.s + b.s;  // both empty (0), or NaN from a slice holding only NaN: keep it
  } else {
    o.s = a.s * fast_exp(a.m - o.m) + b.s * fast_exp(b.m - o.m);
  }
  return o;
}
Impl online(int threads, bool rescale_on_merge = true) {
  return [=](const std::vector<float>& x, std::vector<float>& y, std::int64_t R, std::int64_t C_) {
    for (std::int64_t r = 0; r < R; ++r) {
      const float* xr = x.data() + r * C_;
      std::vector<Ms> lane(std::size_t(threads), Ms{-kInf, 0});
      for (int t = 0; t < threads; ++t)
        for (std::int64_t j = t; j < C_; j += threads) {
          float v = xr[j];
          Ms& p = lane[std::size_t(t)];
          if (v > p.m) {
            p.s = p.s * fast_exp(p.m - v) + 1;
            p.m = v;
          } else if (v != -kInf) {
            p.s += fast_exp(v - p.m);
          }
        }
      for (int off = threads / 2; off >= 1; off /= 2) {
        auto old = lane;
        for (int t = 0; t < threads; ++t) lane[std::size_t(t)] = online_merge(old[std::size_t(t)], old[std::size_t(t ^ off)], rescale_on_merge);
      }
      Ms f = lane[0];
      float inv = (f.m == kInf || f.m == -kInf) ? kNan : 1.0f / f.s;
      for (std::int64_t j = 0; j < C_; ++j) y[std::size_t(r * C_ + j)] = fast_exp(xr[j] - f.m) * inv;
    }
  };
}

TEST(SoftmaxErrorModel, CorrectF32ImplementationsInAnyOrderPass) {
  EXPECT_EQ(replay(three_pass(forward_sum)), std::set<std::string>{"pass"});
  EXPECT_EQ(replay(three_pass(reverse_sum, fast_exp, true)), std::set<std::string>{"pass"});
  EXPECT_EQ(replay(three_pass(pairwise_sum, fast_exp)), std::set<std::string>{"pass"});
  std::set<std::string> why;
  EXPECT_EQ(replay(online(32), 140000, &why), std::set<std::string>{"pass"});
  for (const auto& w : why) ADD_FAILURE() << w;
  EXPECT_EQ(replay(online(256)), std::set<std::string>{"pass"});
  // One lane: the longest chain of online rescalings (every element of a ramp row is a new max).
  EXPECT_TRUE(run_impl(online(1), make(DType::f32, 16, 8192, "ramp")).ok);
  EXPECT_TRUE(run_impl(online(1), make(DType::f32, 2, 65537, "ramp")).ok);
}

TEST(SoftmaxErrorModel, NarrowAccumulationFailsOnLongRows) {
  for (const char* fam : {"normal", "ramp", "neg_inf"}) {
    auto d = make(DType::f32, 16, 8192, fam);
    EXPECT_EQ(run_impl(three_pass(bf16_accumulated_sum), d).code, "wrong_result") << fam;
    EXPECT_EQ(run_impl(three_pass(f16_accumulated_sum), d).code, "wrong_result") << fam;
  }
  // bf16 in/out: the accumulation must still be f32 or wider.
  EXPECT_EQ(run_impl(three_pass(bf16_accumulated_sum), make(DType::bf16, 16, 8192, "normal")).code, "wrong_result");
  EXPECT_TRUE(run_impl(three_pass(forward_sum), make(DType::bf16, 16, 8192, "normal")).ok);
  // The bound scales with cols: at 8192 it is 6 * 8194 * 2^-24 ~ 2.9e-3 (the sum term).
  EXPECT_NEAR(softmax_model::sum_rel(8192), 6.0 * 8194 * std::ldexp(1.0, -24), 1e-12);
}

TEST(SoftmaxErrorModel, ExpArgumentScaledBeforeSubtractionFailsOnLargeLogits) {
  // exp2(x*log2e - m*log2e) with both products rounded to f32: the rounding of x*log2e is an
  // absolute error ~u*|x|*log2e in the exponent (1e4 here), not ~u*|x - m|. (With an FMA for the
  // first product, the error cancels across the row; that variant is fine.)
  auto impl = [](const std::vector<float>& x, std::vector<float>& y, std::int64_t R, std::int64_t C_) {
    const float l2e = 1.44269504f;
    for (std::int64_t r = 0; r < R; ++r) {
      const float* xr = x.data() + r * C_;
      float m = -kInf;
      for (std::int64_t j = 0; j < C_; ++j) m = std::max(m, xr[j]);
      const float ms = m * l2e;
      std::vector<float> e(static_cast<std::size_t>(C_));
      float s = 0;
      for (std::int64_t j = 0; j < C_; ++j) {
        const float p = float(double(xr[j]) * double(l2e));  // rounded product
        s += e[std::size_t(j)] = std::exp2(p - ms);
      }
      for (std::int64_t j = 0; j < C_; ++j) y[std::size_t(r * C_ + j)] = e[std::size_t(j)] / s;
    }
  };
  EXPECT_EQ(run_impl(impl, make(DType::f32, 5, 33, "large_logits")).code, "wrong_result");
  EXPECT_EQ(run_impl(impl, make(DType::f32, 9, 129, "large_logits")).code, "wrong_result");
  EXPECT_TRUE(run_impl(impl, make(DType::f32, 5, 33, "normal")).ok);  // harmless for small logits
}

TEST(SoftmaxErrorModel, NanAndInfRules) {
  auto d = make(DType::f32, 9, 129, "specials");
  auto y = C().reference(d).at(0);
  auto x = unpack(d.inputs[0]);
  std::vector<float> good(x.size());
  three_pass(forward_sum)(x, good, 9, 129);
  auto out = pack(good, DType::f32, 0xFF);
  ASSERT_TRUE(C().compare(y, out.data(), 0xFF).ok);
  // Row 1 is a NaN row: a number there is nan_policy.
  auto bad = out;
  float half = 0.5f;
  std::memcpy(bad.data() + 4 * 129, &half, 4);
  EXPECT_EQ(C().compare(y, bad.data(), 0xFF).code, "nan_policy");
  // NaN where a number belongs (row 0) is nan_policy too (a 0x7fc00000 NaN, not the poison).
  bad = out;
  std::memcpy(bad.data(), &kNan, 4);
  EXPECT_EQ(C().compare(y, bad.data(), 0xFF).code, "nan_policy");
  // +Inf where a finite probability belongs: wrong_result, whatever the bound.
  bad = out;
  std::memcpy(bad.data(), &kInf, 4);
  EXPECT_EQ(C().compare(y, bad.data(), 0xFF).code, "wrong_result");
  // The poison pattern (0xff.., itself a NaN) where a number belongs: unwritten, not a NaN-policy error.
  bad = out;
  std::memset(bad.data(), 0xFF, 4);
  EXPECT_EQ(C().compare(y, bad.data(), 0xFF).code, "unwritten_output");
  // A row with a +Inf (row 2) is NaN: "1 at the Inf position, 0 elsewhere" is rejected.
  bad = out;
  for (int j = 0; j < 129; ++j) {
    float v = std::isinf(x[std::size_t(2 * 129 + j)]) ? 1.0f : 0.0f;
    std::memcpy(bad.data() + 4 * (2 * 129 + j), &v, 4);
  }
  EXPECT_EQ(C().compare(y, bad.data(), 0xFF).code, "nan_policy");
}

TEST(SoftmaxCases, SizesFamiliesOffsetsAndCount) {
  auto cases = C().correctness_cases(claims(), 1, false);
  std::set<std::int64_t> cols;
  std::set<std::string> fams;
  std::set<DType> types;
  int offsets = 0;
  std::int64_t largest = 0, many_rows = 0;
  for (const auto& c : cases) {
    cols.insert(c.dim("cols"));
    fams.insert(c.family);
    types.insert(c.dtype);
    offsets += c.offset_elements == 1;
    largest = std::max(largest, c.dim("rows") * c.dim("cols"));
    many_rows = std::max(many_rows, c.dim("rows"));
  }
  for (std::int64_t v : {1, 2, 31, 32, 33, 127, 128, 129, 255, 256, 257, 1023, 1024, 1025, 4097, 8192, 65537})
    EXPECT_TRUE(cols.count(v)) << v;
  for (const char* f : {"normal", "nonzero_mean", "large_logits", "all_equal", "ramp", "neg_inf", "specials"})
    EXPECT_TRUE(fams.count(f)) << f;
  EXPECT_EQ(types.size(), 2u);
  EXPECT_GT(offsets, 0);
  EXPECT_GE(many_rows, 65537);
  EXPECT_EQ(largest, std::int64_t(1) << 24);
  EXPECT_GE(cases.size(), 40u);
  EXPECT_LE(cases.size(), 90u);
  for (const auto& c : C().correctness_cases(claims(16), 1, false)) EXPECT_EQ(c.offset_elements, 0);
  for (const auto& c : C().correctness_cases(claims(4, {DType::f32}), 1, false)) EXPECT_EQ(c.dtype, DType::f32);
  EXPECT_GT(C().correctness_cases(claims(), 1, true).size(), cases.size());
}

TEST(SoftmaxCases, FamiliesHaveTheirValuesAndAreNotDegenerate) {
  EXPECT_EQ(make(DType::f32, 9, 129, "normal", 1).inputs[0].bytes, make(DType::f32, 9, 129, "normal", 1).inputs[0].bytes);
  EXPECT_NE(make(DType::f32, 9, 129, "normal", 1).inputs[0].bytes, make(DType::f32, 9, 129, "normal", 2).inputs[0].bytes);
  // large_logits: beyond exp overflow, yet the outputs are far from one-hot.
  auto d = make(DType::f32, 16, 1025, "large_logits");
  auto x = unpack(d.inputs[0]);
  float amax = 0;
  for (float v : x) amax = std::max(amax, std::fabs(v));
  EXPECT_GT(amax, 1000.0f);
  auto y = C().reference(d).at(0);
  double top = 0;
  for (double v : y.ref) top = std::max(top, v);
  EXPECT_LT(top, 0.5);
  // Non-degenerate: every generated case with cols > 1, except all-equal rows by design.
  int degenerate = 0, total = 0;
  for (const auto& spec : C().correctness_cases(claims(), 3, false)) {
    if (spec.dim("rows") * spec.dim("cols") > 300000) continue;
    auto yy = C().reference(C().make_case(spec)).at(0);
    ++total;
    if (!degenerate_reason(yy).empty()) {
      ++degenerate;
      EXPECT_EQ(spec.dim("cols"), 1) << spec.id;
    }
  }
  EXPECT_LT(degenerate * 10, total);
  // specials: NaN rows, +Inf rows, -Inf entries; neg_inf: an all -Inf row.
  auto s = C().reference(make(DType::f32, 8, 33, "specials")).at(0);
  int nan_rows = 0;
  for (int r = 0; r < 8; ++r) nan_rows += std::isnan(s.ref[std::size_t(r * 33 + 5)]);
  EXPECT_EQ(nan_rows, 4);  // rows 1, 2, 5, 6 (NaN and +Inf)
  auto n = C().reference(make(DType::f32, 5, 33, "neg_inf")).at(0);
  EXPECT_TRUE(std::isnan(n.ref[0]));
  double row1 = 0;
  for (int j = 0; j < 33; ++j) row1 += n.ref[std::size_t(33 + j)];
  EXPECT_EQ(row1, 1.0);
}

TEST(SoftmaxDomain, EveryRefusalWithAReason) {
  using namespace test_util;
  auto code = [](const Request& r, const Supports& s) { return refusal_code(C(), r, s); };
  const Supports s = claims(16);
  EXPECT_EQ(code(req(DType::f32, 8, 1024), s), "accepted");
  EXPECT_EQ(code(req(DType::f64, 8, 1024), s), "dtype_unsupported");
  EXPECT_EQ(code(req(DType::bf16, 8, 1024), claims(16, {DType::f32})), "dtype_not_claimed");
  EXPECT_EQ(code(without_tensor(req(DType::f32, 8, 1024), "y"), s), "missing_tensor");
  EXPECT_EQ(code(without_dim(req(DType::f32, 8, 1024), "cols"), s), "missing_dim");
  EXPECT_EQ(code(req(DType::f32, 8, 0), s), "empty");
  Request big = req(DType::f32, 1, 1);
  big.dims["rows"] = std::int64_t(1) << 32;
  EXPECT_EQ(code(big, s), "dim_too_large");
  const Request mm = with_length(req(DType::f32, 8, 1024), "y", 8191);
  EXPECT_EQ(code(mm, s), "length_mismatch");
  EXPECT_NE(C().validate(mm, s)->reason.find("8191"), std::string::npos);
  EXPECT_EQ(code(req(DType::f32, 8, 1024), at_most(s, 4096)), "exceeds_claim");
  EXPECT_EQ(code(with_stride(req(DType::f32, 8, 1024), "x", 1024), s), "non_contiguous");
  const Request off = offset_by(req(DType::bf16, 8, 1024), 1);
  EXPECT_EQ(code(off, s), "misaligned");
  EXPECT_EQ(code(off, claims(2)), "accepted");
  const Request ip = in_place(req(DType::f32, 8, 1024));
  EXPECT_EQ(code(ip, s), "aliasing_not_claimed");
  EXPECT_EQ(code(ip, in_place_claimed(s)), "accepted");
  expect_examples_refused(C(), {s, claims(2)},
                          {"dtype_unsupported", "missing_tensor", "missing_dim", "empty", "dim_too_large", "length_mismatch",
                           "non_contiguous"});
}

// ---- Known-broken candidates, their bugs replayed on the CPU --------------------------------

TEST(SoftmaxBroken, NoMaxSubtractionOverflowsOnLargeLogits) {
  // candidates/softmax/broken/no_max_subtraction: y = exp(x) / sum exp(x).
  auto codes = replay([](const std::vector<float>& x, std::vector<float>& y, std::int64_t R, std::int64_t C_) {
    for (std::int64_t r = 0; r < R; ++r) {
      float s = 0;
      for (std::int64_t j = 0; j < C_; ++j) s += std::exp(x[std::size_t(r * C_ + j)]);
      for (std::int64_t j = 0; j < C_; ++j) y[std::size_t(r * C_ + j)] = std::exp(x[std::size_t(r * C_ + j)]) / s;
    }
  });
  EXPECT_TRUE(codes.count("nan_policy"));
  EXPECT_TRUE(codes.count("pass"));  // small logits hide it
}

TEST(SoftmaxBroken, MergeWithoutRescaleIsWrongResult) {
  // candidates/softmax/broken/wrong_merge: lanes' (max, sum) merged without exp(m_old - m_new).
  auto codes = replay(online(32, /*rescale_on_merge=*/false));
  EXPECT_TRUE(codes.count("wrong_result"));
}

TEST(SoftmaxBroken, MissingTailLeavesOutputsUnwritten) {
  // candidates/softmax/broken/missing_tail: four elements per step, no remainder loop.
  auto codes = replay([](const std::vector<float>& x, std::vector<float>& y, std::int64_t R, std::int64_t C_) {
    const std::int64_t body = C_ / 4 * 4;
    for (std::int64_t r = 0; r < R; ++r) {
      const float* xr = x.data() + r * C_;
      float m = -kInf, s = 0;
      for (std::int64_t j = 0; j < body; ++j) m = std::max(m, xr[j]);
      for (std::int64_t j = 0; j < body; ++j) s += std::exp(xr[j] - m);
      for (std::int64_t j = 0; j < body; ++j) y[std::size_t(r * C_ + j)] = std::exp(xr[j] - m) / s;
    }
  });
  EXPECT_TRUE(codes.count("unwritten_output"));
}

TEST(SoftmaxBroken, WrongRowMaxIsWrongResult) {
  // candidates/softmax/broken/wrong_row_max: eight rows per block; the output pass reads the max
  // of the neighbouring row (warp ^ 1) from shared memory, the sum used the right one.
  auto codes = replay([](const std::vector<float>& x, std::vector<float>& y, std::int64_t R, std::int64_t C_) {
    std::vector<float> m(std::size_t(R), -kInf), s(std::size_t(R), 0);
    for (std::int64_t r = 0; r < R; ++r) {
      for (std::int64_t j = 0; j < C_; ++j) m[std::size_t(r)] = std::max(m[std::size_t(r)], x[std::size_t(r * C_ + j)]);
      for (std::int64_t j = 0; j < C_; ++j) s[std::size_t(r)] += std::exp(x[std::size_t(r * C_ + j)] - m[std::size_t(r)]);
    }
    for (std::int64_t r = 0; r < R; ++r) {
      const std::int64_t other = r ^ 1;
      const float mo = other < R ? m[std::size_t(other)] : -kInf;  // an idle warp's slot holds -Inf
      for (std::int64_t j = 0; j < C_; ++j) y[std::size_t(r * C_ + j)] = std::exp(x[std::size_t(r * C_ + j)] - mo) / s[std::size_t(r)];
    }
  });
  EXPECT_TRUE(codes.count("wrong_result"));
}

}  // namespace
}  // namespace kqual::contract
