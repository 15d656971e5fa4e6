// CPU tests of the gemm contract: reference on hand-computed examples, the error model against
// simulated implementations (correct ones in several summation orders must pass; TF32 inputs,
// narrow accumulators and the bundled broken candidates' bugs must fail), the case generator and
// every refusal.
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
namespace {

const Contract& C() { return find_contract("gemm"); }

Supports claims(std::int64_t align = 4) { return test_util::claims_of({DType::f32, DType::bf16}, align); }

CaseData make_f32(std::int64_t m, std::int64_t n, std::int64_t k, const std::vector<float>& a, const std::vector<float>& b) {
  CaseData d;
  d.spec.dtype = DType::f32;
  d.spec.dims = {{"m", m}, {"n", n}, {"k", k}};
  d.dims = d.spec.dims;
  Tensor ta{"a", DType::f32, m * k, std::vector<std::uint8_t>(a.size() * 4), {}, {}};
  Tensor tb{"b", DType::f32, k * n, std::vector<std::uint8_t>(b.size() * 4), {}, {}};
  std::memcpy(ta.bytes.data(), a.data(), a.size() * 4);
  std::memcpy(tb.bytes.data(), b.data(), b.size() * 4);
  d.inputs = {ta, tb};
  return d;
}

// ---- simulated implementations --------------------------------------------------------------
// One output element from row i of a and column j of b, both widened to float.
using Dot = std::function<float(const float* arow, const float* bcol, std::int64_t k)>;

float sequential_fma(const float* a, const float* b, std::int64_t k) {
  float acc = 0.0f;
  for (std::int64_t p = 0; p < k; ++p) acc = std::fma(a[p], b[p], acc);
  return acc;
}

Dot split_k(int chunks) {
  return [chunks](const float* a, const float* b, std::int64_t k) {
    float total = 0.0f;
    for (int c = 0; c < chunks; ++c) {
      std::int64_t lo = k * c / chunks, hi = k * (c + 1) / chunks;
      total += sequential_fma(a + lo, b + lo, hi - lo);
    }
    return total;
  };
}

float pairwise(const float* a, const float* b, std::int64_t k) {
  if (k <= 4) {
    float s = 0.0f;
    for (std::int64_t p = 0; p < k; ++p) s += a[p] * b[p];  // separate multiply and add: two roundings
    return s;
  }
  std::int64_t h = k / 2;
  return pairwise(a, b, h) + pairwise(a + h, b + h, k - h);
}

float round_tf32(float x) {  // round to nearest (ties away), 10 stored mantissa bits, as cvt.rna.tf32.f32
  if (!std::isfinite(x)) return x;
  std::uint32_t u = f32_bits(x);
  u = (u + 0x1000u) & ~0x1FFFu;
  return f32_from_bits(u);
}

float tf32_inputs(const float* a, const float* b, std::int64_t k) {
  float acc = 0.0f;
  for (std::int64_t p = 0; p < k; ++p) acc = std::fma(round_tf32(a[p]), round_tf32(b[p]), acc);
  return acc;
}

float bf16_accumulator(const float* a, const float* b, std::int64_t k) {  // broken/bf16_accumulation
  float acc = 0.0f;
  for (std::int64_t p = 0; p < k; ++p) acc = bf16_to_f32(f32_to_bf16_rne(std::fma(a[p], b[p], acc)));
  return acc;
}

float f16_round(float x) {  // binary16, round to nearest even, overflow to Inf (normal range is enough here)
  if (!std::isfinite(x) || x == 0) return x;
  int e = std::ilogb(x);
  if (e < -14) e = -14;
  double q = std::ldexp(1.0, e - 10);
  double r = std::nearbyint(double(x) / q) * q;
  return std::fabs(r) > 65504.0 ? std::copysign(INFINITY, x) : float(r);
}

float f16_accumulator(const float* a, const float* b, std::int64_t k) {
  float acc = 0.0f;
  for (std::int64_t p = 0; p < k; ++p) acc = f16_round(std::fma(a[p], b[p], acc));
  return acc;
}

constexpr std::int64_t kTileK = 16;  // the bundled candidates' k-tile

float missing_k_tail(const float* a, const float* b, std::int64_t k) {  // broken/missing_k_tail
  return sequential_fma(a, b, k / kTileK * kTileK);
}

// broken/missing_sync: without the barrier after the tile load, a warp that runs ahead reads the
// previous k-tile's shared memory. Simulated for rows whose warp is "early" on odd tiles: the
// values of tile t-1 are used instead of tile t's (zeros for the first tile).
Dot stale_tile_for_row(std::int64_t i) {
  return [i](const float* a, const float* b, std::int64_t k) {
    float acc = 0.0f;
    for (std::int64_t p = 0; p < k; ++p) {
      std::int64_t tile = p / kTileK;
      bool stale = (i % 8 == 3) && tile % 2 == 1;
      float x = stale ? a[p - kTileK] : a[p], y = stale ? b[p - kTileK] : b[p];
      acc = std::fma(x, y, acc);
    }
    return acc;
  };
}

// Output bytes of a simulated implementation on a case (row-dependent implementations get i).
std::vector<std::uint8_t> simulate(const CaseData& d, const std::function<Dot(std::int64_t)>& impl_for_row) {
  const std::int64_t m = d.dims.at("m"), n = d.dims.at("n"), k = d.dims.at("k");
  const DType t = d.inputs[0].dtype;
  std::vector<float> a(std::size_t(m * k)), bt(std::size_t(n * k));
  for (std::int64_t e = 0; e < m * k; ++e) a[std::size_t(e)] = float(element_as_double(t, d.inputs[0].bytes.data(), std::size_t(e)));
  for (std::int64_t p = 0; p < k; ++p)
    for (std::int64_t j = 0; j < n; ++j)
      bt[std::size_t(j * k + p)] = float(element_as_double(t, d.inputs[1].bytes.data(), std::size_t(p * n + j)));
  std::vector<std::uint8_t> out(std::size_t(m * n) * dtype_size(t));
  parallel_for(std::size_t(m), [&](std::size_t i) {
    Dot dot = impl_for_row(std::int64_t(i));
    for (std::int64_t j = 0; j < n; ++j) {
      float v = dot(a.data() + i * std::size_t(k), bt.data() + std::size_t(j * k), k);
      store_element(t, out.data(), i * std::size_t(n) + std::size_t(j), v);
    }
  });
  return out;
}

std::vector<std::uint8_t> simulate(const CaseData& d, Dot dot) {
  return simulate(d, [dot](std::int64_t) { return dot; });
}

// The generated cases a CPU simulation can afford (every long-K case is among them).
std::vector<CaseSpec> affordable_cases(std::uint64_t seed = 11) {
  std::vector<CaseSpec> v;
  for (const auto& c : C().correctness_cases(claims(), seed, false))
    if (c.dim("m") * c.dim("n") * c.dim("k") <= (std::int64_t(1) << 28)) v.push_back(c);
  return v;
}

bool is_long_k(const CaseSpec& c) { return c.dim("k") >= 8192; }

// ---- reference ------------------------------------------------------------------------------

TEST(GemmReference, HandComputed2x2AndBound) {
  auto d = make_f32(2, 2, 2, {1, 2, 3, 4}, {5, 6, 7, 8});
  Tensor c = C().reference(d).at(0);
  ASSERT_EQ(c.elements, 4);
  EXPECT_EQ(c.ref, (std::vector<double>{19, 22, 43, 50}));
  float out[4];
  std::memcpy(out, c.bytes.data(), 16);
  EXPECT_EQ(out[0], 19.0f);
  EXPECT_EQ(out[3], 50.0f);
  // k = 2: gamma = min(2, 1.5 sqrt 2 + 4) = 2; S = 19 (all terms positive); 0.5 ulp_f32 of ~19 = 2^-20.
  double acc = (2 * std::ldexp(1.0, -24) + 2 * std::ldexp(1.0, -53)) * 19.0;
  EXPECT_DOUBLE_EQ(c.bound[0], acc + std::ldexp(1.0, -20));
  // Signs: S uses |a||b|, the reference does not.
  auto e = make_f32(1, 1, 3, {1, -2, 3}, {4, 5, -6});
  Tensor ce = C().reference(e).at(0);
  EXPECT_EQ(ce.ref[0], 4 - 10 - 18);
  EXPECT_GT(ce.bound[0], 28 * 3 * std::ldexp(1.0, -24));  // S = 4 + 10 + 18 = 32, gamma(3) = 3
  EXPECT_LT(ce.bound[0], 33 * 3 * std::ldexp(1.0, -24) + std::ldexp(1.0, -19));
}

TEST(GemmReference, NanRowsInfTimesZeroAndInfinities) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  // a = [[NaN, 1], [Inf, 1], [1, 1]], b = [[0, 2], [1, 1]]
  auto d = make_f32(3, 2, 2, {nan, 1, inf, 1, 1, 1}, {0, 2, 1, 1});
  Tensor c = C().reference(d).at(0);
  EXPECT_TRUE(std::isnan(c.ref[0]) && std::isnan(c.ref[1]));  // a NaN in row 0 of a: row 0 of c is NaN
  EXPECT_TRUE(std::isnan(c.ref[2]));                           // Inf * 0 = NaN
  EXPECT_EQ(c.ref[3], inf);                                    // Inf * 2 + 1
  EXPECT_EQ(c.ref[4], 1.0);
  EXPECT_EQ(c.ref[5], 3.0);
}

TEST(GemmReference, Bf16RoundedOnceFromTheExactSum) {
  // 1 + 2^-8 + 2^-20: in bf16 the exact value rounds up to 1 + 2^-7; rounding 1 + 2^-8 first (a tie)
  // would give 1. The reference rounds the f64 sum once.
  CaseData d;
  d.spec.dtype = DType::bf16;
  d.dims = {{"m", 1}, {"n", 1}, {"k", 3}};
  auto bf = [](std::vector<float> v) {
    std::vector<std::uint8_t> bytes(v.size() * 2);
    for (std::size_t i = 0; i < v.size(); ++i) {
      std::uint16_t h = f32_to_bf16_rne(v[i]);
      std::memcpy(bytes.data() + 2 * i, &h, 2);
    }
    return bytes;
  };
  d.inputs = {Tensor{"a", DType::bf16, 3, bf({1.0f, 1.0f, 1.0f}), {}, {}},
              Tensor{"b", DType::bf16, 3, bf({1.0f, std::ldexp(1.0f, -8), std::ldexp(1.0f, -20)}), {}, {}}};
  Tensor c = C().reference(d).at(0);
  std::uint16_t got;
  std::memcpy(&got, c.bytes.data(), 2);
  EXPECT_EQ(got, 0x3F81);
  // The bound is dominated by half a bf16 ulp (2^-8 at 1.0).
  EXPECT_GT(c.bound[0], std::ldexp(1.0, -8));
  EXPECT_LT(c.bound[0], std::ldexp(1.0, -8) * 1.01);
}

TEST(GemmReference, IdentityFamilyCopiesRowsOfB) {
  CaseData d = C().make_case(CaseSpec{"t", "identity", DType::f32, {{"m", 37}, {"n", 19}, {"k", 23}}, 0, 5});
  Tensor c = C().reference(d).at(0);
  for (std::int64_t i = 0; i < 37; ++i)
    for (std::int64_t j = 0; j < 19; ++j)
      ASSERT_EQ(c.ref[std::size_t(i * 19 + j)], element_as_double(DType::f32, d.inputs[1].bytes.data(), std::size_t((i % 23) * 19 + j)));
}

// ---- error model ----------------------------------------------------------------------------

TEST(GemmErrorModel, CorrectF32SummationOrdersPass) {
  auto cases = affordable_cases();
  std::vector<std::pair<std::string, Dot>> impls = {{"sequential", sequential_fma}, {"split2", split_k(2)}, {"split3", split_k(3)},
                                                    {"split8", split_k(8)},        {"pairwise", pairwise}};
  int long_k = 0;
  for (const auto& spec : cases) {
    CaseData d = C().make_case(spec);
    Tensor ref = C().reference(d).at(0);
    long_k += is_long_k(spec);
    for (const auto& [name, dot] : impls) {
      auto out = simulate(d, dot);
      Comparison cmp = C().compare(ref, out.data(), 0xFF);
      EXPECT_TRUE(cmp.ok) << name << " on " << spec.id << ": " << cmp.detail;
    }
  }
  EXPECT_GE(long_k, 6);
}

TEST(GemmErrorModel, Tf32InputsFailOnLongReductions) {
  // Every zero-mean long-K case, and same-sign data at k ~ 8192, catch TF32 inputs. Same-sign data
  // at k = 16384 cannot: there TF32's error (~2^13 / sqrt(k) u S) is within 1.5x of the error of a
  // correct sequential f32 sum (~0.25 sqrt(k) u S), so no S-scaled bound separates them.
  int checked = 0;
  for (const auto& spec : affordable_cases()) {
    if (spec.dtype != DType::f32 || !is_long_k(spec) || spec.family == "specials") continue;
    if (spec.family == "nonzero_mean" && spec.dim("k") > 8192) continue;
    CaseData d = C().make_case(spec);
    Tensor ref = C().reference(d).at(0);
    Comparison cmp = C().compare(ref, simulate(d, tf32_inputs).data(), 0xFF);
    EXPECT_EQ(cmp.code, "wrong_result") << spec.id << ": " << cmp.detail;
    ++checked;
  }
  EXPECT_GE(checked, 4);
}

TEST(GemmErrorModel, NarrowAccumulatorsFail) {
  int checked = 0;
  for (const auto& spec : affordable_cases()) {
    if (!is_long_k(spec)) continue;
    CaseData d = C().make_case(spec);
    Tensor ref = C().reference(d).at(0);
    EXPECT_EQ(C().compare(ref, simulate(d, bf16_accumulator).data(), 0xFF).code, "wrong_result") << spec.id;
    EXPECT_EQ(C().compare(ref, simulate(d, f16_accumulator).data(), 0xFF).code, "wrong_result") << spec.id;
    ++checked;
  }
  EXPECT_GE(checked, 6);
}

TEST(GemmErrorModel, NanNeverMatchesANumberAndInfinitiesMatchExactly) {
  CaseData d = C().make_case(CaseSpec{"t", "specials", DType::f32, {{"m", 65}, {"n", 63}, {"k", 64}}, 0, 3});
  Tensor ref = C().reference(d).at(0);
  auto out = simulate(d, sequential_fma);
  ASSERT_TRUE(C().compare(ref, out.data(), 0xFF).ok);
  std::size_t nan_at = ref.ref.size(), inf_at = ref.ref.size(), num_at = 0;
  for (std::size_t i = 0; i < ref.ref.size(); ++i) {
    if (std::isnan(ref.ref[i]) && nan_at == ref.ref.size()) nan_at = i;
    if (std::isinf(ref.ref[i]) && inf_at == ref.ref.size()) inf_at = i;
    if (std::isfinite(ref.ref[i])) num_at = i;
  }
  ASSERT_LT(nan_at, ref.ref.size());
  ASSERT_LT(inf_at, ref.ref.size());
  auto bad = out;
  store_element(DType::f32, bad.data(), nan_at, 0.0);  // NaN swallowed
  EXPECT_EQ(C().compare(ref, bad.data(), 0xFF).code, "nan_policy");
  bad = out;
  store_element(DType::f32, bad.data(), num_at, std::numeric_limits<double>::quiet_NaN());  // NaN invented
  EXPECT_EQ(C().compare(ref, bad.data(), 0xFF).code, "nan_policy");
  bad = out;
  store_element(DType::f32, bad.data(), inf_at, -ref.ref[inf_at]);  // wrong-signed infinity
  EXPECT_EQ(C().compare(ref, bad.data(), 0xFF).code, "wrong_result");
  bad = out;
  store_element(DType::f32, bad.data(), inf_at, 3.0e38);  // a huge number is not Inf
  EXPECT_EQ(C().compare(ref, bad.data(), 0xFF).code, "wrong_result");
  bad = out;
  std::memset(bad.data() + 4 * num_at, 0xFF, 4);  // the poison survived
  EXPECT_EQ(C().compare(ref, bad.data(), 0xFF).code, "unwritten_output");
}

TEST(GemmErrorModel, BoundScalesWithKAndS) {
  auto bound_for = [](std::int64_t k) {
    std::vector<float> a(std::size_t(k), 1.0f), b(std::size_t(k), 1.0f);
    return C().reference(make_f32(1, 1, k, a, b)).at(0).bound[0];
  };
  // S = k here: the accumulation part is (1.5 sqrt(k) + 4) u k for long k, k^2 u for short.
  double u = std::ldexp(1.0, -24);
  EXPECT_NEAR(bound_for(4) , 4 * 4 * u + 0.5 * std::ldexp(1.0, 2 - 23), 1e-12);
  double b8k = bound_for(8192);
  EXPECT_GT(b8k, (1.5 * std::sqrt(8192.0) + 4) * u * 8192);
  EXPECT_LT(b8k, (1.5 * std::sqrt(8192.0) + 4) * u * 8192 * 1.01 + std::ldexp(1.0, 13 - 23));
}

// ---- the bundled broken candidates, simulated ------------------------------------------------

TEST(GemmBrokenSimulated, MissingKTailIsWrongResult) {
  int failed = 0, with_tail = 0;
  for (const auto& spec : affordable_cases()) {
    if (spec.dim("k") % kTileK == 0 || spec.family == "specials" || spec.family == "identity") continue;
    ++with_tail;
    CaseData d = C().make_case(spec);
    Comparison cmp = C().compare(C().reference(d).at(0), simulate(d, missing_k_tail).data(), 0xFF);
    failed += cmp.code == "wrong_result";
  }
  EXPECT_GE(with_tail, 8);
  EXPECT_EQ(failed, with_tail);
}

TEST(GemmBrokenSimulated, Bf16AccumulationIsWrongResult) {
  int failed = 0, total = 0;
  for (const auto& spec : affordable_cases()) {
    if (spec.dim("k") < 64 || spec.family == "integers" || spec.family == "identity") continue;
    ++total;
    CaseData d = C().make_case(spec);
    failed += C().compare(C().reference(d).at(0), simulate(d, bf16_accumulator).data(), 0xFF).code == "wrong_result";
  }
  EXPECT_GE(total, 10);
  EXPECT_GE(failed, total - 2);  // the candidate needs only one; nearly every long-enough case catches it
}

TEST(GemmBrokenSimulated, StaleSharedTileIsWrongResult) {
  int failed = 0, total = 0;
  for (const auto& spec : affordable_cases()) {
    if (spec.dim("k") < 2 * kTileK || spec.dim("m") < 4 || spec.family == "specials") continue;
    ++total;
    CaseData d = C().make_case(spec);
    failed += C().compare(C().reference(d).at(0), simulate(d, stale_tile_for_row).data(), 0xFF).code == "wrong_result";
  }
  EXPECT_GE(total, 10);
  EXPECT_EQ(failed, total);
}

TEST(GemmBrokenSimulated, MissingEdgeGuardWritesIntoTheGuardRegionFirst) {
  // The unguarded store of a 128 x 128 tile writes c[r * n + col] for r, col < 128. On the first case
  // (1x1x1) the highest such index lands inside the harness's 4 KiB guard after c, so the first
  // failure is out_of_bounds_write (not a device fault further out).
  auto cases = C().correctness_cases(claims(), 1, false);
  const auto& first = cases.at(0);
  ASSERT_EQ(first.dtype, DType::f32);
  const std::int64_t m = first.dim("m"), n = first.dim("n");
  ASSERT_LT(m, 128);
  const std::int64_t last = 127 * n + 127;                 // highest element the tile writes
  const std::int64_t past_end_bytes = (last + 1 - m * n) * 4;
  EXPECT_GT(past_end_bytes, 0);
  EXPECT_LE(past_end_bytes, 4096);
}

TEST(GemmBrokenSimulated, Tf32CandidateIsWrongResult) {
  // broken/tf32_inputs rounds a and b with cvt.rna.tf32.f32 (tensor-core numerics) before f32 FMAs.
  bool any = false;
  for (const auto& spec : affordable_cases())
    if (spec.dtype == DType::f32 && is_long_k(spec)) {
      CaseData d = C().make_case(spec);
      any |= C().compare(C().reference(d).at(0), simulate(d, tf32_inputs).data(), 0xFF).code == "wrong_result";
    }
  EXPECT_TRUE(any);
}

// ---- cases ----------------------------------------------------------------------------------

TEST(GemmCases, SizesFamiliesAndCounts) {
  auto cases = C().correctness_cases(claims(), 1, false);
  EXPECT_GE(cases.size(), 40u);
  EXPECT_LE(cases.size(), 60u);
  std::set<std::int64_t> dims, ks;
  std::set<std::string> fams;
  std::set<DType> types;
  int offsets = 0;
  bool tall = false, wide = false;
  for (const auto& c : cases) {
    for (const char* d : {"m", "n", "k"}) dims.insert(c.dim(d));
    ks.insert(c.dim("k"));
    fams.insert(c.family);
    types.insert(c.dtype);
    offsets += c.offset_elements == 1;
    tall |= c.dim("m") > 4000 && c.dim("n") == 1;
    wide |= c.dim("m") == 1 && c.dim("n") > 4000;
    EXPECT_LE(c.dim("m") * c.dim("n") * c.dim("k"), std::int64_t(1) << 31) << c.id;
    EXPECT_FALSE(C().prefers_gpu_reference(c.dims)) << c.id;
  }
  for (std::int64_t s : {1, 15, 16, 17, 63, 64, 65, 127, 128, 129, 131, 257, 509}) EXPECT_TRUE(dims.count(s)) << s;
  for (std::int64_t k : {1, 7, 8197, 16384}) EXPECT_TRUE(ks.count(k)) << k;
  for (const char* f : {"normal", "nonzero_mean", "integers", "identity", "row_scaled", "specials"}) EXPECT_TRUE(fams.count(f)) << f;
  EXPECT_EQ(types.size(), 2u);
  EXPECT_GT(offsets, 0);
  EXPECT_TRUE(tall);
  EXPECT_TRUE(wide);
  // 16-byte alignment claims get no offset cases; f32-only claims no bf16 cases.
  for (const auto& c : C().correctness_cases(claims(16), 1, false)) EXPECT_EQ(c.offset_elements, 0);
  Supports f32_only = claims();
  f32_only.dtypes = {DType::f32};
  for (const auto& c : C().correctness_cases(f32_only, 1, false)) EXPECT_EQ(c.dtype, DType::f32);
  // Large cases are referenced on the GPU.
  int gpu_ref = 0;
  for (const auto& c : C().correctness_cases(claims(), 1, true)) gpu_ref += C().prefers_gpu_reference(c.dims);
  EXPECT_GE(gpu_ref, 2);
}

TEST(GemmCases, DeterministicBySeedAndMostlyNotDegenerate) {
  CaseSpec s{"t", "normal", DType::f32, {{"m", 17}, {"n", 9}, {"k", 33}}, 0, 42};
  EXPECT_EQ(C().make_case(s).inputs[0].bytes, C().make_case(s).inputs[0].bytes);
  EXPECT_EQ(C().make_case(s).inputs[1].bytes, C().make_case(s).inputs[1].bytes);
  CaseSpec s2 = s;
  s2.seed = 43;
  EXPECT_NE(C().make_case(s).inputs[0].bytes, C().make_case(s2).inputs[0].bytes);
  auto c1 = C().correctness_cases(claims(), 1, false), c2 = C().correctness_cases(claims(), 2, false);
  ASSERT_EQ(c1.size(), c2.size());
  EXPECT_NE(c1[3].seed, c2[3].seed);
  int degenerate = 0, total = 0;
  for (const auto& spec : affordable_cases()) {
    ++total;
    degenerate += !degenerate_reason(C().reference(C().make_case(spec)).at(0)).empty();
  }
  EXPECT_EQ(degenerate, 0) << "of " << total;
}

TEST(GemmCases, FamiliesHaveTheirValues) {
  auto floats = [](const Tensor& t) {
    std::vector<double> v(std::size_t(t.elements));
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = element_as_double(t.dtype, t.bytes.data(), i);
    return v;
  };
  auto mk = [](const char* fam, DType t = DType::f32) {
    return C().make_case(CaseSpec{"t", fam, t, {{"m", 64}, {"n", 64}, {"k", 64}}, 0, 9});
  };
  double sum = 0;
  for (double v : floats(mk("nonzero_mean").inputs[0])) sum += v;
  EXPECT_GT(sum / 4096, 0.8);
  for (double v : floats(mk("integers").inputs[1])) EXPECT_EQ(v, std::round(v));
  // Integer inputs give integer, exactly known results.
  const Tensor integers = C().reference(mk("integers")).at(0);  // a named copy: the range-for must not dangle
  for (double v : integers.ref) EXPECT_EQ(v, std::round(v));
  auto sp = C().reference(mk("specials", DType::bf16)).at(0);
  int nan = 0, inf = 0, fin = 0;
  for (double v : sp.ref) {
    nan += std::isnan(v);
    inf += std::isinf(v);
    fin += std::isfinite(v);
  }
  EXPECT_GT(nan, 60);   // the NaN row of a, plus Inf * 0
  EXPECT_GT(inf, 60);   // the Inf row and column
  EXPECT_GT(fin, 3500); // most of c stays finite
}

// ---- refusals -------------------------------------------------------------------------------

TEST(GemmRefusals, EveryExampleRefusedWithItsCode) {
  test_util::expect_examples_refused(C(), {claims()},
                                     {"dtype_unsupported", "missing_dim", "empty", "too_large", "missing_tensor", "shape_mismatch",
                                      "transposed", "non_contiguous", "aliasing_unsupported"});
}

TEST(GemmRefusals, CandidateClaimsAndAcceptedRequests) {
  Request r;
  r.dtype = DType::bf16;
  r.dims = {{"m", 16384}, {"n", 1}, {"k", 16384}};
  for (const char* t : {"a", "b", "c"}) r.lengths[t] = C().tensor_elements(t, r.dims);
  EXPECT_FALSE(C().validate(r, claims()).has_value());
  EXPECT_EQ(C().validate(r, test_util::only_dtypes(claims(), {DType::f32}))->code, "dtype_not_claimed");
  EXPECT_EQ(C().validate(r, test_util::at_most(claims(), 1 << 20))->code, "exceeds_claim");
  r.offset_elements = 1;
  EXPECT_FALSE(C().validate(r, claims(2)).has_value());
  EXPECT_EQ(C().validate(r, claims(16))->code, "misaligned");
  EXPECT_NE(C().validate(r, claims(16))->reason.find("16 bytes"), std::string::npos);
}

TEST(GemmContract, Metadata) {
  EXPECT_EQ(C().roofline_ceiling(), "fma");
  Dims d{{"m", 3}, {"n", 5}, {"k", 7}};
  EXPECT_EQ(C().flops(d, DType::f32), 2.0 * 3 * 5 * 7);
  EXPECT_EQ(C().min_bytes(d, DType::bf16), 2.0 * (21 + 35 + 15));
  // Split-K with atomics is admitted: the bound covers any order (a difference is held to it).
  EXPECT_FALSE(C().deterministic(DType::f32));
  EXPECT_FALSE(C().deterministic(DType::bf16));
  EXPECT_EQ(C().benchmark_shapes().back().at("k"), 4096);
  EXPECT_EQ(parse_shape(C(), "m=2,n=3,k=4").at("k"), 4);
  EXPECT_NE(C().numerical_policy().find("sqrt(k)"), std::string::npos);
  // The GPU reference: one launch, raw f64 outputs named apart from the tensors.
  CaseData cd = C().make_case(CaseSpec{"t", "normal", DType::bf16, {{"m", 5}, {"n", 300}, {"k", 9}}, 0, 1});
  auto g = C().gpu_reference(cd);
  ASSERT_TRUE(g.has_value());
  EXPECT_EQ(g->launches.at(0).kernel, "gemm_ref_bf16");
  EXPECT_EQ(g->launches.at(0).grid[0], 2);
  EXPECT_EQ(g->launches.at(0).grid[1], 5);
  ASSERT_EQ(g->raw_outputs.size(), 2u);
  // reference_from_gpu on raw values equal to the CPU's gives the CPU's expected tensor.
  Tensor cpu = C().reference(cd).at(0);
  std::vector<Tensor> raw = g->raw_outputs;
  std::vector<double> s(cpu.ref.size());
  {
    // Recompute S by hand for the raw sabs output.
    for (std::int64_t i = 0; i < 5; ++i)
      for (std::int64_t j = 0; j < 300; ++j) {
        double t = 0;
        for (std::int64_t p = 0; p < 9; ++p)
          t += std::fabs(element_as_double(DType::bf16, cd.inputs[0].bytes.data(), std::size_t(i * 9 + p)) *
                         element_as_double(DType::bf16, cd.inputs[1].bytes.data(), std::size_t(p * 300 + j)));
        s[std::size_t(i * 300 + j)] = t;
      }
  }
  raw[0].bytes.resize(cpu.ref.size() * 8);
  std::memcpy(raw[0].bytes.data(), cpu.ref.data(), raw[0].bytes.size());
  raw[1].bytes.resize(s.size() * 8);
  std::memcpy(raw[1].bytes.data(), s.data(), raw[1].bytes.size());
  Tensor gpu = C().reference_from_gpu(cd, raw).at(0);
  EXPECT_EQ(gpu.bytes, cpu.bytes);
  for (std::size_t i = 0; i < cpu.bound.size(); ++i) ASSERT_NEAR(gpu.bound[i], cpu.bound[i], 1e-12 * cpu.bound[i]);
}

}  // namespace
}  // namespace kqual::contract
