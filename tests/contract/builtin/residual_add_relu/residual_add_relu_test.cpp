#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>
#include <set>

#include "kqual/contract/compare.hpp"
#include "kqual/contract/contract.hpp"
#include "kqual/core/error.hpp"
#include "kqual/cuda/nvrtc.hpp"
#include "contract/contract_test_util.hpp"

namespace kqual::contract {
namespace {

const Contract& C() { return find_contract("residual_add_relu"); }

Supports f32_bf16(std::int64_t align = 4) { return test_util::claims_of({DType::f32, DType::bf16}, align); }

Request req(DType t, std::int64_t n) {
  Request r;
  r.dtype = t;
  r.lengths = {{"x", n}, {"r", n}, {"y", n}};
  return r;
}

float ref1(float x, float r) {
  CaseData d;
  d.spec.dtype = DType::f32;
  Tensor tx{"x", DType::f32, 1, std::vector<std::uint8_t>(4), {}, {}}, tr{"r", DType::f32, 1, std::vector<std::uint8_t>(4), {}, {}};
  std::memcpy(tx.bytes.data(), &x, 4);
  std::memcpy(tr.bytes.data(), &r, 4);
  d.inputs = {tx, tr};
  float y;
  std::memcpy(&y, C().reference(d).at(0).bytes.data(), 4);
  return y;
}

TEST(ResidualAddReluReference, NanPropagatesInfAndSignedZero) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  EXPECT_TRUE(std::isnan(ref1(nan, 1.0f)));
  EXPECT_TRUE(std::isnan(ref1(inf, -inf)));  // Inf + -Inf = NaN, relu keeps NaN
  EXPECT_EQ(ref1(inf, 1.0f), inf);
  EXPECT_EQ(f32_bits(ref1(-inf, 1.0f)), 0u);  // -Inf → +0
  EXPECT_EQ(f32_bits(ref1(-0.0f, -0.0f)), 0u); // -0 → +0 (bits, not just value)
  EXPECT_EQ(ref1(1.5f, 2.25f), 3.75f);
  EXPECT_EQ(f32_bits(ref1(-1.0f, 0.5f)), 0u);
}

TEST(ResidualAddReluReference, F32AddIsRoundedOnceLikeIeeeSingle) {
  // 1 + 2^-24 is exactly halfway between 1 and the next float: ties to even gives 1.
  EXPECT_EQ(ref1(1.0f, std::ldexp(1.0f, -24)), 1.0f);
  // 1 + 3*2^-25 rounds up to 1 + 2^-23.
  EXPECT_EQ(ref1(1.0f, 3 * std::ldexp(1.0f, -25)), 1.0f + std::ldexp(1.0f, -23));
  // Overflow: FLT_MAX + FLT_MAX = +Inf.
  EXPECT_EQ(ref1(FLT_MAX, FLT_MAX), std::numeric_limits<float>::infinity());
  // Denormals are preserved, not flushed.
  float d = std::ldexp(1.0f, -140);
  EXPECT_EQ(ref1(d, d), 2 * d);
  EXPECT_GT(ref1(d, d), 0.0f);
}

TEST(ResidualAddReluReference, Bf16RoundsNearestEven) {
  EXPECT_EQ(f32_to_bf16_rne(1.0f), 0x3F80);
  // 1 + 2^-8 is halfway between bf16 1.0 and 1.0078125: ties to even → 1.0.
  EXPECT_EQ(f32_to_bf16_rne(1.0f + std::ldexp(1.0f, -8)), 0x3F80);
  // 1 + 3*2^-9 rounds up.
  EXPECT_EQ(f32_to_bf16_rne(1.0f + 3 * std::ldexp(1.0f, -9)), 0x3F81);
  EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16_rne(std::numeric_limits<float>::quiet_NaN()))));
  CaseSpec s{"t", "normal", DType::bf16, {{"n", 1000}}, 0, 7};
  CaseData d = C().make_case(s);
  auto y = C().reference(d).at(0);
  auto* px = reinterpret_cast<const std::uint16_t*>(d.inputs[0].bytes.data());
  auto* pr = reinterpret_cast<const std::uint16_t*>(d.inputs[1].bytes.data());
  auto* py = reinterpret_cast<const std::uint16_t*>(y.bytes.data());
  for (int i = 0; i < 1000; ++i) {
    float v = bf16_to_f32(px[i]) + bf16_to_f32(pr[i]);
    std::uint16_t want = f32_to_bf16_rne(v > 0 ? v : 0.0f);
    ASSERT_EQ(py[i], want) << i;
  }
}

TEST(ResidualAddReluCases, SizesFamiliesAndOffsets) {
  auto cases = C().correctness_cases(f32_bf16(), 1, false);
  std::set<std::int64_t> sizes;
  std::set<std::string> fams;
  int offset_cases = 0;
  for (const auto& c : cases) {
    sizes.insert(c.dim("n"));
    fams.insert(c.family);
    offset_cases += c.offset_elements == 1;
  }
  for (std::int64_t n : {1, 2, 3, 255, 256, 257, 1023, 1024, 1025, 999983, (1 << 24) + 1}) EXPECT_TRUE(sizes.count(n)) << n;
  for (const char* f : {"normal", "nonzero_mean", "all_negative", "near_max", "denormals", "specials"}) EXPECT_TRUE(fams.count(f)) << f;
  EXPECT_GT(offset_cases, 0);
  // A candidate that needs 16-byte alignment gets no offset cases.
  for (const auto& c : C().correctness_cases(f32_bf16(16), 1, false)) EXPECT_EQ(c.offset_elements, 0);
  // Large cases include one whose tensors exceed 2^31 bytes.
  bool huge = false;
  for (const auto& c : C().correctness_cases(f32_bf16(), 1, true)) huge |= c.dim("n") * 4 > (std::int64_t(1) << 31);
  EXPECT_TRUE(huge);
}

TEST(ResidualAddReluCases, FamiliesHaveTheirValues) {
  auto make = [](const char* fam, DType t = DType::f32) { return C().make_case(CaseSpec{"t", fam, t, {{"n", 4096}}, 0, 99}); };
  auto floats = [](const Tensor& t) {
    std::vector<float> v(std::size_t(t.elements));
    std::memcpy(v.data(), t.bytes.data(), t.bytes.size());
    return v;
  };
  int nan = 0, inf = 0, negzero = 0;
  for (float v : floats(make("specials").inputs[0])) {
    nan += std::isnan(v);
    inf += std::isinf(v);
    negzero += v == 0 && std::signbit(v);
  }
  EXPECT_GT(nan, 0);
  EXPECT_GT(inf, 0);
  EXPECT_GT(negzero, 0);
  for (float v : floats(make("all_negative").inputs[0])) EXPECT_LT(v, 0);
  int denorm = 0;
  for (float v : floats(make("denormals").inputs[0])) denorm += std::fpclassify(v) == FP_SUBNORMAL;
  EXPECT_GT(denorm, 4000);
  int overflow = 0;
  auto d = make("near_max");
  for (float v : floats(C().reference(d).at(0))) overflow += std::isinf(v);
  EXPECT_GT(overflow, 100);
  // Same seed → same data; different seed → different data.
  EXPECT_EQ(make("normal").inputs[0].bytes, make("normal").inputs[0].bytes);
  EXPECT_NE(C().make_case(CaseSpec{"t", "normal", DType::f32, {{"n", 64}}, 0, 1}).inputs[0].bytes,
            C().make_case(CaseSpec{"t", "normal", DType::f32, {{"n", 64}}, 0, 2}).inputs[0].bytes);
}

TEST(ResidualAddReluCompare, ClassifiesUnwrittenNanAndWrong) {
  auto d = C().make_case(CaseSpec{"t", "specials", DType::f32, {{"n", 64}}, 0, 3});
  auto y = C().reference(d).at(0);
  std::vector<std::uint8_t> out = y.bytes;
  EXPECT_TRUE(C().compare(y, out.data(), 0xFF).ok);
  // Unwritten tail: still the poison pattern.
  auto bad = out;
  std::memset(bad.data() + 60 * 4, 0x7F, 16);
  auto c = C().compare(y, bad.data(), 0x7F);
  EXPECT_EQ(c.code, "unwritten_output");
  EXPECT_EQ(c.mismatches, 4);
  // NaN swallowed: expected NaN at index 0 (specials), give 0.
  bad = out;
  float zero = 0;
  std::memcpy(bad.data(), &zero, 4);
  EXPECT_EQ(C().compare(y, bad.data(), 0xFF).code, "nan_policy");
  // -0 instead of +0 is a bitwise difference.
  bad = out;
  int idx = -1;
  for (int i = 0; i < 64; ++i) {
    float v;
    std::memcpy(&v, out.data() + 4 * i, 4);
    if (v == 0 && !std::signbit(v)) { idx = i; break; }
  }
  ASSERT_GE(idx, 0);
  float nz = -0.0f;
  std::memcpy(bad.data() + 4 * idx, &nz, 4);
  EXPECT_EQ(C().compare(y, bad.data(), 0xFF).code, "wrong_result");
}

TEST(ResidualAddReluDomain, RefusesUnsupportedRequestsWithReasons) {
  using namespace test_util;
  Supports s = f32_bf16(16);
  EXPECT_FALSE(C().validate(req(DType::f32, 1024), s));
  auto code = [](const Request& r, const Supports& sup) { return refusal_code(C(), r, sup); };
  EXPECT_EQ(code(req(DType::f64, 1024), s), "dtype_unsupported");
  EXPECT_EQ(code(req(DType::i32, 1024), s), "dtype_unsupported");
  const Request mm = with_length(req(DType::f32, 1024), "r", 1000);
  EXPECT_EQ(code(mm, s), "length_mismatch");
  EXPECT_EQ(code(with_stride(req(DType::f32, 1024), "y", 3), s), "non_contiguous");
  EXPECT_EQ(code(req(DType::f32, 0), s), "empty");
  const Request off = offset_by(req(DType::f32, 1024), 1);
  EXPECT_EQ(code(off, s), "misaligned");
  EXPECT_EQ(code(off, f32_bf16(4)), "accepted");
  EXPECT_EQ(code(in_place(req(DType::f32, 1024)), s), "aliasing_not_claimed");
  EXPECT_EQ(code(req(DType::bf16, 1024), only_dtypes(s, {DType::f32})), "dtype_not_claimed");
  EXPECT_EQ(code(req(DType::f32, 1024), at_most(s, 1000)), "exceeds_claim");
  // The reason names the offending value.
  EXPECT_NE(C().validate(mm, s)->reason.find("1000"), std::string::npos);
  // The contract's own list of examples agrees with validate().
  expect_examples_refused(C(), {s}, {});
}

TEST(Contracts, UnknownNameListsKnownOnes) {
  try {
    find_contract("softmaxx");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("residual_add_relu"), std::string::npos);
  }
}

}  // namespace
}  // namespace kqual::contract

// Issue 21: the large cases are generated on the device and verified there against a trusted
// reference kernel; its source compiles for the default target here (NVRTC needs no GPU), its one
// launch covers every element with 64-bit indices, and its raw output is the expected output
// itself (dtype and length), so the two outputs can be compared through hashes.
namespace kqual::contract {
namespace {

TEST(ResidualAddReluDeviceReference, LargeCasesAreGeneratedAndHaveACompilingReference) {
  Supports s;
  s.dtypes = {DType::f32, DType::bf16};
  s.min_alignment_bytes = 4;
  int large = 0;
  for (const auto& spec : find_contract("residual_add_relu").correctness_cases(s, 3, true)) {
    if (spec.dim("n") <= (std::int64_t(1) << 24) + 1) {
      EXPECT_FALSE(find_contract("residual_add_relu").device_reference(spec)) << spec.id;
      continue;
    }
    ++large;
    EXPECT_EQ(spec.family, kGeneratedFamily) << spec.id;
    auto g = find_contract("residual_add_relu").device_reference(spec);
    ASSERT_TRUE(g) << spec.id;
    ASSERT_EQ(g->launches.size(), 1u);
    const GpuLaunch& l = g->launches[0];
    EXPECT_GE(l.grid[0] * l.block[0], std::min<std::int64_t>(spec.dim("n"), 132 * 32 * 256)) << spec.id;
    ASSERT_EQ(l.args.size(), 4u);
    EXPECT_EQ(l.args[3].scalar, spec.dim("n"));
    EXPECT_EQ(l.args[3].scalar_bytes, 8);
    ASSERT_EQ(g->raw_outputs.size(), 1u);
    EXPECT_EQ(g->raw_outputs[0].dtype, spec.dtype);
    EXPECT_EQ(g->raw_outputs[0].elements, spec.dim("n"));
    cuda::NvrtcRequest req;
    req.source = g->source;
    req.source_name = "residual_add_relu_reference.cu";
    req.arch = "sm_90";
    cuda::NvrtcResult built = cuda::nvrtc_compile(req);
    EXPECT_TRUE(built.is_cubin);
    auto w = find_contract("residual_add_relu").output_window(spec, "y", 1 << 20, 1 << 20);
    ASSERT_TRUE(w);
    EXPECT_EQ(w->gather.at("x"), (std::vector<std::pair<std::int64_t, std::int64_t>>{{1 << 20, 1 << 20}}));
  }
  EXPECT_EQ(large, 3);  // 2^27+5 in f32 and bf16, 2^29+7 in f32
}

// f16's timed inputs come from the device generator (at 2^28 elements the CPU spent minutes making
// and checking them): the f16 reference kernel is there for them, and it compiles.
TEST(ResidualAddReluDeviceReference, TimedF16InputsAreGeneratedAndHaveACompilingReference) {
  const Contract& c = find_contract("residual_add_relu");
  CaseSpec spec;
  spec.dtype = DType::f16;
  spec.dims = {{"n", std::int64_t(1) << 28}};
  spec.family = kGeneratedFamily;
  spec.id = "f16/n=268435456/fresh";
  EXPECT_TRUE(c.inputs_generatable(spec));
  const auto g = c.device_reference(spec);
  ASSERT_TRUE(g);
  ASSERT_EQ(g->launches.size(), 1u);
  EXPECT_EQ(g->launches[0].kernel, "kqual_ref_add_relu_f16");
  ASSERT_EQ(g->raw_outputs.size(), 1u);
  EXPECT_EQ(g->raw_outputs[0].dtype, DType::f16);
  cuda::NvrtcRequest req;
  req.source = g->source;
  req.source_name = "residual_add_relu_reference.cu";
  req.arch = "sm_90";
  EXPECT_TRUE(cuda::nvrtc_compile(req).is_cubin);
  spec.family = "uniform";
  EXPECT_FALSE(c.device_reference(spec)) << "only generated inputs are checked on the device";
}

}  // namespace
}  // namespace kqual::contract

namespace kqual::contract {
namespace {

// A reference past the output dtype's largest finite value is matched by the infinity it rounds to
// (a correctly rounded overflow), and only by it; a reference below the overflow threshold is not.
TEST(CompareBounded, ACorrectlyRoundedOverflowIsNotWrong) {
  for (DType t : {DType::f32, DType::bf16}) {
    const double big = t == DType::f32 ? 3.5e38 : 3.4e38;  // both round to +Inf in their dtype
    const double below = t == DType::f32 ? 3.0e38 : 3.3e38;
    Tensor want;
    want.name = "y";
    want.dtype = t;
    want.elements = 4;
    want.ref = {big, -big, below, big};
    want.bound = {1e37, 1e37, 1e37, 1e37};  // wide enough for a bf16 rounding at 3e38 (spacing 2^120 ~ 1.3e36)
    std::vector<std::uint8_t> got(4 * dtype_size(t));
    store_element(t, got.data(), 0, INFINITY);
    store_element(t, got.data(), 1, -INFINITY);
    store_element(t, got.data(), 2, below);
    store_element(t, got.data(), 3, INFINITY);
    EXPECT_EQ(rounded_to(t, big), INFINITY) << to_string(t);
    Comparison ok = compare_bounded(want, got.data(), 0xA5);
    EXPECT_TRUE(ok.ok) << to_string(t) << ": " << ok.detail;
    store_element(t, got.data(), 2, INFINITY);  // +Inf where the reference is finite and below the threshold
    Comparison bad = compare_bounded(want, got.data(), 0xA5);
    EXPECT_EQ(bad.code, "wrong_result") << to_string(t);
    EXPECT_EQ(bad.examples, (std::vector<std::int64_t>{2})) << to_string(t);
    store_element(t, got.data(), 2, below);
    store_element(t, got.data(), 1, INFINITY);  // the wrong sign
    EXPECT_FALSE(compare_bounded(want, got.data(), 0xA5).ok) << to_string(t);
  }
}

}  // namespace
}  // namespace kqual::contract
