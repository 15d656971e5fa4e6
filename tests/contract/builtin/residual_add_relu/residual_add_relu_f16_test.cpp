// residual_add_relu in f16: the reference (the exact sum rounded once to f16) is what the good kernel's
// f32 add rounded to f16 gives, bit for bit; the value families reach f16's edges (sums past 65504,
// subnormals); no f16 case is generated on the device; and the bundled f16 kernels, emulated on the
// CPU, are judged as the check judges them (contract/builtin_emulation.hpp).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <set>

#include "contract/f16_test_util.hpp"
#include "kqual/contract/compare.hpp"
#include "kqual/contract/contract.hpp"
#include "kqual/contract/random.hpp"

namespace kqual::contract {
namespace {
using namespace emulation;

const Contract& C() { return find_contract("residual_add_relu"); }

Tensor halves(const std::string& name, const std::vector<std::uint16_t>& h) {
  Tensor t;
  t.name = name;
  t.dtype = DType::f16;
  t.elements = std::int64_t(h.size());
  t.bytes.resize(h.size() * 2);
  std::memcpy(t.bytes.data(), h.data(), t.bytes.size());
  return t;
}

float relu_nan(float v) { return v > 0.0f ? v : (v != v ? v : 0.0f); }

// candidates/residual_add_relu/good/kernel.cu, f16: __fadd_rn of the widened inputs, relu (NaN kept),
// __float2half_rn. The vector and scalar paths do the same per element.
std::uint16_t good_add_relu(std::uint16_t x, std::uint16_t r) { return f2h(relu_nan(h2f(x) + h2f(r))); }

// -DKQUAL_BUG_F16_FTZ_ADD: inputs and the f16 sum flushed to sign-preserving zero below 2^-14; __hadd
// rounds the exact sum once (here: the f32 sum rounded to f16, the same value).
std::uint16_t flush(std::uint16_t h) { return (h & 0x7C00u) == 0 ? std::uint16_t(h & 0x8000u) : h; }
std::uint16_t ftz_add_relu(std::uint16_t x, std::uint16_t r) {
  return f2h(relu_nan(h2f(flush(f2h(h2f(flush(x)) + h2f(flush(r)))))));
}
// -DKQUAL_BUG_HMAX_RELU: __hmax(__hadd(x, r), 0): the other operand when one is NaN; +0 over -0.
std::uint16_t hmax_add_relu(std::uint16_t x, std::uint16_t r) {
  const std::uint16_t s = f2h(h2f(x) + h2f(r));
  const float v = h2f(s);
  return v != v || !(v > 0.0f) ? std::uint16_t(0) : s;
}

Kernel elementwise(std::uint16_t (*f)(std::uint16_t, std::uint16_t)) {
  return [f](const CaseData& d, Outputs& out) {
    const Tensor& x = d.inputs.at(0);
    const Tensor& r = d.inputs.at(1);
    std::vector<std::uint8_t>& y = out.at("y");
    for (std::size_t i = 0; i < std::size_t(x.elements); ++i) put_half(y, i, f(half_at(x, i), half_at(r, i)));
  };
}

TEST(ResidualAddReluF16, ReferenceIsTheF32AddRoundedToF16BitForBit) {
  // Every x against a spread of r (zeros, subnormals, normals, 65504, Inf, NaN), and 2^20 random pairs
  // of bit patterns: the exact sum rounded once equals the f32 sum rounded again (24 >= 2*11 + 2).
  std::vector<std::uint16_t> xs, rs;
  const std::uint16_t fixed[] = {0x0000, 0x8000, 0x0001, 0x8001, 0x03FF, 0x0400, 0x3C00, 0xBC00, 0x3C01,
                                 0x1400, 0x7BFF, 0xFBFF, 0x7C00, 0xFC00, 0x7E00, 0x0200, 0x5BFF, 0xE400};
  for (std::uint32_t x = 0; x < 65536; ++x)
    for (std::uint16_t r : fixed) {
      xs.push_back(std::uint16_t(x));
      rs.push_back(r);
    }
  Rng rng(77);
  for (int k = 0; k < (1 << 20); ++k) {
    xs.push_back(std::uint16_t(rng.next()));
    rs.push_back(std::uint16_t(rng.next()));
  }
  CaseData d;
  d.spec.dtype = DType::f16;
  d.dims = {{"n", std::int64_t(xs.size())}};
  d.inputs = {halves("x", xs), halves("r", rs)};
  const Tensor y = C().reference(d).at(0);
  ASSERT_EQ(y.dtype, DType::f16);
  int nan = 0, inf = 0, sub = 0;
  for (std::size_t i = 0; i < xs.size(); ++i) {
    const std::uint16_t want = good_add_relu(xs[i], rs[i]), got = half_at(y, i);
    const bool both_nan = std::isnan(h2f(want)) && std::isnan(h2f(got));
    ASSERT_TRUE(want == got || both_nan) << std::hex << xs[i] << " + " << rs[i] << ": " << got << " vs " << want;
    nan += both_nan;
    inf += h2f(got) == INFINITY;
    sub += got != 0 && (got & 0x7C00) == 0;
  }
  EXPECT_GT(nan, 1000);
  EXPECT_GT(inf, 1000);
  EXPECT_GT(sub, 1000);
  // By hand: 65504 + 16 is the tie between 65504 and the next step (65536): even, so Inf; 65504 + 8 is 65504.
  CaseData e;
  e.spec.dtype = DType::f16;
  e.inputs = {halves("x", {0x7BFF, 0x7BFF, 0x0001, 0x8002, 0x0001}), halves("r", {0x4C00, 0x4800, 0x0001, 0x0001, 0x8001})};
  const Tensor ye = C().reference(e).at(0);
  EXPECT_EQ(half_at(ye, 0), 0x7C00);  // 65504 + 16 -> Inf
  EXPECT_EQ(half_at(ye, 1), 0x7BFF);  // 65504 + 8 -> 65504
  EXPECT_EQ(half_at(ye, 2), 0x0002);  // 2^-24 + 2^-24: a subnormal, kept
  EXPECT_EQ(half_at(ye, 3), 0x0000);  // -2^-23 + 2^-24 < 0: +0
  EXPECT_EQ(half_at(ye, 4), 0x0000);  // 2^-24 - 2^-24 = 0
}

TEST(ResidualAddReluF16, FamiliesReachOverflowAndSubnormals) {
  auto make = [](const char* fam) { return C().make_case(CaseSpec{"t", fam, DType::f16, {{"n", 4096}}, 0, 99}); };
  // near_max: inputs finite up to 65504, half the pairs share a sign and their sum passes 65504.
  const CaseData near = make("near_max");
  for (std::size_t i = 0; i < 4096; ++i) {
    EXPECT_TRUE(std::isfinite(h2f(half_at(near.inputs[0], i))));
    EXPECT_GE(std::fabs(h2f(half_at(near.inputs[0], i))), 32752.0f);
  }
  int inf = 0;
  const Tensor ny = C().reference(near).at(0);
  for (std::size_t i = 0; i < 4096; ++i) inf += h2f(half_at(ny, i)) == INFINITY;
  EXPECT_GT(inf, 700);  // a quarter of the pairs are both positive
  // denormals: x an f16 subnormal (2^-24 .. 2^-14), r too or a normal near 2^-13; results subnormal.
  const CaseData den = make("denormals");
  int sub_in = 0, sub_out = 0, normal_out = 0;
  const Tensor dy = C().reference(den).at(0);
  for (std::size_t i = 0; i < 4096; ++i) {
    const std::uint16_t x = half_at(den.inputs[0], i), y = half_at(dy, i);
    sub_in += x != 0 && (x & 0x7FFF) < 0x0400;
    sub_out += y != 0 && y < 0x0400;
    normal_out += y >= 0x0400 && y < 0x7C00;
  }
  EXPECT_EQ(sub_in, 4096);
  EXPECT_GT(sub_out, 1000);
  EXPECT_GT(normal_out, 100);
  // specials: NaN, +-Inf and -0 in f16.
  const CaseData sp = make("specials");
  std::set<std::uint16_t> seen;
  for (std::size_t i = 0; i < 4096; ++i) seen.insert(half_at(sp.inputs[0], i));
  EXPECT_TRUE(seen.count(0x7C00) && seen.count(0xFC00) && seen.count(0x8000));
  EXPECT_TRUE(std::isnan(h2f(half_at(sp.inputs[0], 0))));
}

TEST(ResidualAddReluF16, CasesAndNoneGeneratedOnTheDevice) {
  std::set<std::int64_t> sizes;
  const int offsets = f16_cases(C(), {"normal", "nonzero_mean", "all_negative", "near_max", "denormals", "specials"}, 2,
                                [&](const CaseSpec& c) {
                                  EXPECT_NE(c.family, kGeneratedFamily) << c.id;  // no generated f16 case is asked for (builtin::kNoGeneratedF16)
                                  sizes.insert(c.dim("n"));
                                });
  for (std::int64_t n : {1, 2, 3, 255, 256, 257, 1023, 1024, 1025, 999983, (1 << 24) + 1}) EXPECT_TRUE(sizes.count(n)) << n;
  EXPECT_GT(offsets, 0);
  // Past 2^31: f32 and bf16 as before (past 2^32 in bf16, still the narrowest generated dtype), no f16.
  Supports all;
  all.dtypes = {DType::f32, DType::bf16, DType::f16};
  all.max_n = std::numeric_limits<std::int64_t>::max();
  const auto idx = C().index_cases(all, 1);
  ASSERT_EQ(idx.size(), 3u);
  for (const auto& c : idx) EXPECT_NE(c.dtype, DType::f16) << c.id;
  EXPECT_EQ(idx.back().dtype, DType::bf16);
  EXPECT_TRUE(C().index_cases(f16_claims(), 1).empty());
  Supports f16_wide = f16_claims();
  f16_wide.max_n = std::numeric_limits<std::int64_t>::max();
  EXPECT_TRUE(C().index_cases(f16_wide, 1).empty());
  // The policy names f16, its edges, and the cases it does not run.
  const std::string p = C().numerical_policy();
  for (const char* w : {"f16", "65504", "2^-24", "f16 shapes past 2^31 elements"}) EXPECT_NE(p.find(w), std::string::npos) << w;
}

TEST(ResidualAddReluF16, TheGoodKernelIsAcceptedOnEveryCase) {
  ASSERT_NO_FATAL_FAILURE(expect_good_f16_accepted(C(), "residual_add_relu", "good/f16", elementwise(good_add_relu), 5));
}

TEST(ResidualAddReluF16, EachKnownBrokenF16KernelIsRejectedForItsStatedReason) {
  const std::map<std::string, Kernel> by_define = {{"KQUAL_BUG_F16_FTZ_ADD", elementwise(ftz_add_relu)},
                                                   {"KQUAL_BUG_HMAX_RELU", elementwise(hmax_add_relu)}};
  const auto broken = broken_claiming("residual_add_relu", DType::f16);
  ASSERT_EQ(broken.size(), by_define.size());
  for (const auto& [folder, m] : broken) {
    const std::string define = bug_define(m);
    ASSERT_TRUE(by_define.count(define)) << folder << ": no emulation of '" << define << "'";
    for (std::uint64_t seed : {std::uint64_t(1), std::uint64_t(7), std::uint64_t(0x5EED)}) {
      const Judged j = judge(C(), only(m.supports, DType::f16), by_define.at(define), seed);
      EXPECT_TRUE(expected_code(m, j.code)) << folder << " seed " << seed << ": " << (j.verdict.empty() ? "accepted" : j.verdict);
    }
  }
}

}  // namespace
}  // namespace kqual::contract
