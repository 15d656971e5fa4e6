// reduce_sum in f16: f16 in and out, accumulation in f32 or wider, one rounding. The reference's bound
// (the f32 accumulation bound, 2^-11 relative and 2^-25 absolute for the output), the families at
// f16's edges (sums past 65504, subnormal elements), no f16 case past 2^31 elements or among the large
// ones, and the bundled kernel's f16 path emulated on the CPU in its own order (warp per short row,
// 256-thread segments and a fixed-order finish for long ones), judged as the check judges it: the good
// one accepted, the known-broken one (every add rounded to f16) rejected for its stated reason.
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

const Contract& C() { return find_contract("reduce_sum"); }

CaseData f16_matrix(const std::vector<double>& v, std::int64_t rows, std::int64_t cols) {
  CaseData d;
  d.spec.dtype = DType::f16;
  d.spec.dims = {{"rows", rows}, {"cols", cols}};
  d.dims = d.spec.dims;
  d.inputs = {f16_tensor("x", rows * cols, v)};
  return d;
}

std::vector<float> widened(const Tensor& x) {
  std::vector<float> v(static_cast<std::size_t>(x.elements));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = h2f(half_at(x, i));
  return v;
}

// ---- candidates/reduce_sum/good/kernel.cu, f16, on the CPU -------------------------------------

constexpr int kSms = 132;  // the H200's, which the manifest's split expression reads

struct Adder {
  bool f16;  // -DKQUAL_BUG_F16_ACCUMULATION: every add rounded to f16
  float operator()(float a, float b) const { return f16 ? round_h(a + b) : a + b; }
};

// segment_sum: thread t of nt over x[beg, end): scalar head to an 8-element boundary, 16-byte vectors
// of 8 (pairs, then pairs of pairs), scalar tail.
float segment_sum(const float* x, std::int64_t beg, std::int64_t end, int t, int nt, Adder add) {
  float acc = 0.0f;
  std::int64_t a = std::min(end, (beg + 7) / 8 * 8);
  for (std::int64_t i = beg + t; i < a; i += nt) acc = add(acc, x[i]);
  const std::int64_t nv = (end - a) / 8;
  for (std::int64_t v = t; v < nv; v += nt) {
    const float* p = x + a + 8 * v;
    acc = add(acc, add(add(add(p[0], p[1]), add(p[2], p[3])), add(add(p[4], p[5]), add(p[6], p[7]))));
  }
  for (std::int64_t i = a + nv * 8 + t; i < end; i += nt) acc = add(acc, x[i]);
  return acc;
}

// The butterfly of __shfl_xor_sync (offsets 16 .. 1): lane 0's value.
float warp_sum(std::vector<float> lanes, Adder add) {
  for (int o = 16; o > 0; o >>= 1) {
    std::vector<float> next(32);
    for (int l = 0; l < 32; ++l) next[std::size_t(l)] = add(lanes[std::size_t(l)], lanes[std::size_t(l ^ o)]);
    lanes = next;
  }
  return lanes[0];
}

float row_sum(const float* x, std::int64_t row, std::int64_t rows, std::int64_t cols, Adder add) {
  std::vector<float> lanes(32);
  if (cols <= 1024) {
    for (int l = 0; l < 32; ++l) lanes[std::size_t(l)] = segment_sum(x, row * cols, row * cols + cols, l, 32, add);
    return warp_sum(lanes, add);
  }
  const std::int64_t splits = std::max<std::int64_t>(1, std::min((cols + 8191) / 8192, (kSms * 8 + rows - 1) / rows));
  const std::int64_t chunk = ((cols + splits - 1) / splits + 7) / 8 * 8;
  std::vector<float> partial(static_cast<std::size_t>(splits));
  for (std::int64_t part = 0; part < splits; ++part) {
    const std::int64_t b = std::min(cols, part * chunk), e = std::min(cols, b + chunk);
    float total = 0.0f;
    for (int w = 0; w < 8; ++w) {
      for (int l = 0; l < 32; ++l) lanes[std::size_t(l)] = segment_sum(x, row * cols + b, row * cols + e, w * 32 + l, 256, add);
      const float ws = warp_sum(lanes, add);
      total = w == 0 ? ws : add(total, ws);
    }
    partial[std::size_t(part)] = total;
  }
  if (splits == 1) return partial[0];
  for (int l = 0; l < 32; ++l) {
    float s = 0.0f;
    for (std::int64_t i = l; i < splits; i += 32) s = add(s, partial[std::size_t(i)]);
    lanes[std::size_t(l)] = s;
  }
  return warp_sum(lanes, add);
}

Kernel reduce_kernel(bool f16_accumulation) {
  return [f16_accumulation](const CaseData& d, Outputs& out) {
    const std::int64_t rows = d.dims.at("rows"), cols = d.dims.at("cols");
    const std::vector<float> x = widened(d.inputs.at(0));
    std::vector<std::uint8_t>& y = out.at("y");
    parallel_for(std::size_t(rows), [&](std::size_t r) {
      put_half(y, r, f2h(row_sum(x.data(), std::int64_t(r), rows, cols, Adder{f16_accumulation})));
    });
  };
}

// Other correct orders: sequential f32, and f64 rounded once.
Kernel sequential_kernel(bool in_double) {
  return [in_double](const CaseData& d, Outputs& out) {
    const std::int64_t rows = d.dims.at("rows"), cols = d.dims.at("cols");
    const std::vector<float> x = widened(d.inputs.at(0));
    for (std::int64_t r = 0; r < rows; ++r) {
      float f = 0.0f;
      double g = 0.0;
      for (std::int64_t j = 0; j < cols; ++j) (in_double ? g += x[std::size_t(r * cols + j)] : f += x[std::size_t(r * cols + j)]);
      put_half(out.at("y"), std::size_t(r), in_double ? std::uint16_t(encode_narrow(kF16, g)) : f2h(f));
    }
  };
}

// ---- reference and error model --------------------------------------------------------------

TEST(ReduceSumF16, ReferenceBoundAndOverflow) {
  // [1, 2^-11, 2^-11]: the exact sum 1 + 2^-10 is an f16 value; the bound admits half an ulp (2^-11)
  // and a few f32 roundings, not the neighbouring f16 values (2^-10 away).
  const Tensor y = C().reference(f16_matrix({1, 0x1p-11, 0x1p-11, 60000, 60000, 0, 0x1p-24, 0x1p-24, 0x1p-24}, 3, 3)).at(0);
  EXPECT_EQ(y.ref[0], 1 + 0x1p-10);
  EXPECT_EQ(half_at(y, 0), f2h(1 + 0x1p-10f));
  EXPECT_GT(y.bound[0], 0x1p-11);
  EXPECT_LT(y.bound[0], 0x1p-10);
  // 120000 is past 65504: Inf, and only Inf matches it.
  EXPECT_EQ(y.ref[1], 120000.0);
  EXPECT_EQ(half_at(y, 1), 0x7C00);
  // Three smallest subnormals: exactly 3 * 2^-24, within half a subnormal step (2^-25) and no more.
  EXPECT_EQ(y.ref[2], 3 * 0x1p-24);
  EXPECT_GE(y.bound[2], 0x1p-25);
  EXPECT_LT(y.bound[2], 0x1p-24);
  std::vector<std::uint8_t> got = y.bytes;
  EXPECT_TRUE(C().compare(y, got.data(), 0xFF).ok);
  put_half(got, 1, 0x7BFF);  // 65504: a finite number where the sum overflows
  EXPECT_EQ(C().compare(y, got.data(), 0xFF).code, "wrong_result");
  got = y.bytes;
  put_half(got, 0, std::uint16_t(half_at(y, 0) + 1));  // one ulp up
  EXPECT_EQ(C().compare(y, got.data(), 0xFF).code, "wrong_result");
  got = y.bytes;
  put_half(got, 2, 0x0002);  // 2 * 2^-24: a subnormal step off
  EXPECT_EQ(C().compare(y, got.data(), 0xFF).code, "wrong_result");
}

TEST(ReduceSumF16, FamiliesReachOverflowAndSubnormals) {
  const CaseSpec ov{"t", "overflow", DType::f16, {{"rows", 33}, {"cols", 1023}}, 0, 9};
  const CaseData od = C().make_case(ov);
  const Tensor oy = C().reference(od).at(0);
  const std::vector<float> x = widened(od.inputs[0]);
  for (float v : x) {
    EXPECT_GE(std::fabs(v), 16384.0f);
    EXPECT_LE(std::fabs(v), 65504.0f);
    EXPECT_EQ(std::fmod(v, 32.0f), 0.0f);
  }
  int inf = 0, finite_past = 0;
  for (std::int64_t r = 0; r < 33; ++r) {
    inf += std::isinf(h2f(half_at(oy, std::size_t(r))));
    // A sequential partial sum passes 65504 on a row whose sum is finite.
    double p = 0, most = 0;
    for (std::int64_t j = 0; j < 1023; ++j) most = std::max(most, std::fabs(p += x[std::size_t(r * 1023 + j)]));
    finite_past += std::fabs(oy.ref[std::size_t(r)]) < 65504 && most > 65504;
  }
  EXPECT_GE(inf, 11);
  EXPECT_GE(finite_past, 10);
  const CaseData sd = C().make_case(CaseSpec{"t", "subnormals", DType::f16, {{"rows", 17}, {"cols", 1025}}, 0, 9});
  int sub = 0;
  for (std::size_t i = 0; i < std::size_t(17 * 1025); ++i) {
    const std::uint16_t h = half_at(sd.inputs[0], i);
    sub += (h & 0x7FFF) != 0 && (h & 0x7FFF) < 0x0400;
  }
  EXPECT_GT(sub, 17 * 1025 * 3 / 4);
  // nonzero_mean in f16 is scaled by 2^-8: its longest row (2^24 + 3) still sums below 65504.
  const CaseData nz = C().make_case(CaseSpec{"t", "nonzero_mean", DType::f16, {{"rows", 1}, {"cols", 1 << 20}}, 0, 9});
  EXPECT_LT(C().reference(nz).at(0).ref[0] * 16, 65504.0);
}

TEST(ReduceSumF16, CasesAndNoneGeneratedPast2To31) {
  std::int64_t largest = 0;
  (void)f16_cases(C(), {"normal", "nonzero_mean", "alternating", "specials", "overflow", "subnormals"}, 4,
                  [&](const CaseSpec& c) { largest = std::max(largest, c.dim("rows") * c.dim("cols")); });
  EXPECT_LE(largest, (std::int64_t(1) << 24) + 3);  // no 2^28-element row in f16
  ASSERT_NO_FATAL_FAILURE(expect_one_f32_index_case(C(), 16));
  const std::string p = C().numerical_policy();
  for (const char* w : {"f16", "2^-11", "2^-25", "65504", "f16 shapes past 2^31 elements"}) EXPECT_NE(p.find(w), std::string::npos) << w;
}

// ---- the bundled kernels, emulated -------------------------------------------------------------

TEST(ReduceSumF16, TheGoodKernelAndOtherF32OrdersAreAccepted) {
  Supports s;
  ASSERT_NO_FATAL_FAILURE(expect_good_f16_accepted(C(), "reduce_sum", "good", reduce_kernel(false), 4, &s));
  // The bound admits any f32 order, and wider accumulation: sequential f32 and f64 rounded once
  // (cases up to 2^21 elements, to keep the test short).
  for (bool in_double : {false, true}) {
    const Judged o = judge(C(), s, sequential_kernel(in_double), 4, std::int64_t(1) << 21);
    EXPECT_EQ(o.verdict, "") << (in_double ? "f64" : "sequential f32");
    EXPECT_GE(o.passed, 30);
  }
}

TEST(ReduceSumF16, TheKnownBrokenF16KernelIsRejectedForItsStatedReason) {
  BrokenF16 b;
  ASSERT_NO_FATAL_FAILURE(judge_broken_f16(C(), "reduce_sum", "KQUAL_BUG_F16_ACCUMULATION", reduce_kernel(true), {1, 2, 3, 4, 5, 6}, b));
  EXPECT_GE(b.codes[*b.manifest.expect_rejected_for], 5);
  // The overflow family alone rejects it too: rows whose partial sums pass 65504 though their sum is finite.
  const CaseSpec ov{"t", "overflow", DType::f16, {{"rows", 33}, {"cols", 1023}}, 0, 9};
  const CaseData d = C().make_case(ov);
  const Tensor want = C().reference(d).at(0);
  Outputs out{{"y", std::vector<std::uint8_t>(want.bytes.size(), 0xFF)}};
  reduce_kernel(true)(d, out);
  const Comparison c = C().compare(want, out.at("y").data(), 0xFF);
  EXPECT_TRUE(c.code == "wrong_result" || c.code == "nan_policy") << c.detail;
}

}  // namespace
}  // namespace kqual::contract
