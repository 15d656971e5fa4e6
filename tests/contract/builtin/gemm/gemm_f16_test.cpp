// gemm in f16: a, b, c f16, accumulation in f32, c rounded once. The bound (half an f16 ulp of c, 2^-25
// among f16's subnormals, plus the f32 accumulation term); the families at f16's edges (row_scaled with
// subnormal inputs and outputs; overflow: c past 65504, and products past it cancelling in pairs); the
// fp64 GPU reference's f16 kernel (compiled by NVRTC here; its raw outputs give the CPU's expected
// tensor); and the bundled kernel's f16 path emulated on the CPU (one f32 FMA chain in k order per
// output), judged as the check judges it: the good one accepted, the known-broken one (the running
// sum kept in f16) rejected for its stated reason over several seeds.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <set>

#include "contract/f16_test_util.hpp"
#include "kqual/contract/compare.hpp"
#include "kqual/contract/contract.hpp"
#include "kqual/cuda/nvrtc.hpp"

namespace kqual::contract {
namespace {
using namespace emulation;

const Contract& C() { return find_contract("gemm"); }

CaseData f16_gemm(std::int64_t m, std::int64_t n, std::int64_t k, const std::vector<double>& a, const std::vector<double>& b) {
  CaseData d;
  d.spec.dtype = DType::f16;
  d.spec.dims = {{"m", m}, {"n", n}, {"k", k}};
  d.dims = d.spec.dims;
  d.inputs = {f16_tensor("a", m * k, a), f16_tensor("b", k * n, b)};
  return d;
}

std::vector<float> widened(const Tensor& t) {
  std::vector<float> v(static_cast<std::size_t>(t.elements));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = h2f(half_at(t, i));
  return v;
}

// candidates/gemm/good/kernel.cu, f16: every c[i][j] one f32 FMA chain in k order (its tiles only
// add zeros past k), rounded once to f16; -DKQUAL_BUG_F16_ACCUMULATOR rounds every FMA result to f16.
Kernel gemm_kernel(bool f16_accumulator) {
  return [f16_accumulator](const CaseData& d, Outputs& out) {
    const std::int64_t m = d.dims.at("m"), n = d.dims.at("n"), k = d.dims.at("k");
    const std::vector<float> a = widened(d.inputs.at(0)), b = widened(d.inputs.at(1));
    std::vector<float> bt(b.size());  // b's columns contiguous
    for (std::int64_t p = 0; p < k; ++p)
      for (std::int64_t j = 0; j < n; ++j) bt[std::size_t(j * k + p)] = b[std::size_t(p * n + j)];
    std::vector<std::uint8_t>& c = out.at("c");
    parallel_for(std::size_t(m), [&](std::size_t i) {
      const float* ar = a.data() + i * std::size_t(k);
      for (std::int64_t j = 0; j < n; ++j) {
        const float* bc = bt.data() + std::size_t(j * k);
        float acc = 0.0f;
        for (std::int64_t p = 0; p < k; ++p) {
          acc = std::fma(ar[p], bc[p], acc);
          if (f16_accumulator) acc = round_h(acc);
        }
        put_half(c, i * std::size_t(n) + std::size_t(j), f2h(acc));
      }
    });
  };
}

// ---- reference and error model --------------------------------------------------------------

TEST(GemmF16, ReferenceRoundedOnceWithF16sHalfUlp) {
  // 1 + 2^-11 + 2^-20: exactly between 1 and 1 + 2^-10 plus a little, so it rounds up once; rounding
  // 1 + 2^-11 first (a tie, to even) would give 1.
  const Tensor c = C().reference(f16_gemm(1, 1, 3, {1, 1, 1}, {1, 0x1p-11, 0x1p-20})).at(0);
  EXPECT_EQ(half_at(c, 0), 0x3C01);
  EXPECT_GT(c.bound[0], 0x1p-11);  // half an f16 ulp at 1
  EXPECT_LT(c.bound[0], 0x1p-11 * 1.01);
  // A c among f16's subnormals (3 * 2^-24 = (2^-12)(2^-12) * 3): half the subnormal spacing, 2^-25.
  const Tensor s = C().reference(f16_gemm(1, 1, 3, {0x1p-12, 0x1p-12, 0x1p-12}, {0x1p-12, 0x1p-12, 0x1p-12})).at(0);
  EXPECT_EQ(s.ref[0], 3 * 0x1p-24);
  EXPECT_EQ(half_at(s, 0), 0x0003);
  EXPECT_GE(s.bound[0], 0x1p-25);
  EXPECT_LT(s.bound[0], 0x1p-24);
  // Past 65504: Inf (a c of 131072 = 256 * 512), and a saturated 65504 is not it.
  const Tensor o = C().reference(f16_gemm(1, 2, 1, {256}, {512, 255})).at(0);
  EXPECT_EQ(half_at(o, 0), 0x7C00);
  EXPECT_EQ(h2f(half_at(o, 1)), 65280.0f);
  std::vector<std::uint8_t> got = o.bytes;
  EXPECT_TRUE(C().compare(o, got.data(), 0xFF).ok);
  put_half(got, 0, 0x7BFF);
  EXPECT_EQ(C().compare(o, got.data(), 0xFF).code, "wrong_result");
}

TEST(GemmF16, FamiliesReachSubnormalsAndOverflow) {
  // row_scaled: subnormal inputs and outputs, nothing past 65504.
  const CaseData rs = C().make_case(CaseSpec{"t", "row_scaled", DType::f16, {{"m", 131}, {"n", 257}, {"k", 67}}, 0, 4});
  int sub_in = 0, sub_out = 0;
  for (std::size_t i = 0; i < std::size_t(131 * 67); ++i) {
    const std::uint16_t h = half_at(rs.inputs[0], i) & 0x7FFF;
    sub_in += h != 0 && h < 0x0400;
  }
  const Tensor rc = C().reference(rs).at(0);
  for (std::size_t i = 0; i < std::size_t(131 * 257); ++i) {
    const std::uint16_t h = half_at(rc, i) & 0x7FFF;
    sub_out += h != 0 && h < 0x0400;
    ASSERT_LT(std::fabs(rc.ref[i]), 65504.0) << i;
  }
  EXPECT_GT(sub_in, 100);
  EXPECT_GT(sub_out, 100);
  // overflow: rows 0, 3, ... of c are Inf; rows 1, 4, ... finite, exact, and an f16 accumulator's Inf;
  // rows 2, 5, ... ordinary.
  const CaseData ov = C().make_case(CaseSpec{"t", "overflow", DType::f16, {{"m", 63}, {"n", 64}, {"k", 65}}, 0, 4});
  const Tensor oc = C().reference(ov).at(0);
  Outputs acc{{"c", std::vector<std::uint8_t>(oc.bytes.size(), 0xFF)}};
  gemm_kernel(true)(ov, acc);
  Outputs good{{"c", std::vector<std::uint8_t>(oc.bytes.size(), 0xFF)}};
  gemm_kernel(false)(ov, good);
  for (std::int64_t i = 0; i < 63; ++i)
    for (std::int64_t j = 0; j < 64; ++j) {
      const std::size_t e = std::size_t(i * 64 + j);
      if (i % 3 == 0) {
        EXPECT_EQ(half_at(oc, e), 0x7C00) << i << "," << j;
      } else if (i % 3 == 1) {
        EXPECT_LT(std::fabs(oc.ref[e]), 65504.0) << i << "," << j;
        EXPECT_EQ(oc.ref[e], std::round(oc.ref[e] / 16) * 16);                // exact: multiples of 16
        std::uint16_t h;
        std::memcpy(&h, acc.at("c").data() + 2 * e, 2);
        EXPECT_EQ(h, 0x7C00) << i << "," << j;  // the f16 accumulator passed 65504 on the way
      }
    }
  EXPECT_TRUE(C().compare(oc, good.at("c").data(), 0xFF).ok);
  EXPECT_EQ(C().compare(oc, acc.at("c").data(), 0xFF).code, "wrong_result");
}

TEST(GemmF16, CasesGpuReferenceAndItsKernel) {
  int gpu = 0;
  const int offsets = f16_cases(C(), {"normal", "nonzero_mean", "integers", "identity", "row_scaled", "specials", "overflow"}, 2,
                                [&](const CaseSpec& c) { gpu += C().prefers_gpu_reference(c.dims); });
  EXPECT_EQ(gpu, 1);  // 4096^3, include_large only
  EXPECT_GT(offsets, 0);
  for (const auto& c : C().correctness_cases(f16_claims(), 1, false)) EXPECT_FALSE(C().prefers_gpu_reference(c.dims)) << c.id;
  // The fp64 GPU reference decodes f16 from its bits: it compiles, and raw outputs equal to the CPU's
  // sums give the CPU's expected tensor.
  const CaseData cd = C().make_case(CaseSpec{"t", "row_scaled", DType::f16, {{"m", 5}, {"n", 300}, {"k", 9}}, 0, 1});
  const auto g = C().gpu_reference(cd);
  ASSERT_TRUE(g.has_value());
  EXPECT_EQ(g->launches.at(0).kernel, "gemm_ref_f16");
  cuda::NvrtcRequest req;
  req.source = g->source;
  req.source_name = "gemm_reference.cu";
  req.arch = "sm_90";
  EXPECT_TRUE(cuda::nvrtc_compile(req).is_cubin);
  const Tensor cpu = C().reference(cd).at(0);
  std::vector<double> sabs(cpu.ref.size());
  for (std::int64_t i = 0; i < 5; ++i)
    for (std::int64_t j = 0; j < 300; ++j)
      for (std::int64_t p = 0; p < 9; ++p)
        sabs[std::size_t(i * 300 + j)] += std::fabs(element_as_double(DType::f16, cd.inputs[0].bytes.data(), std::size_t(i * 9 + p)) *
                                                    element_as_double(DType::f16, cd.inputs[1].bytes.data(), std::size_t(p * 300 + j)));
  std::vector<Tensor> raw = g->raw_outputs;
  raw[0].bytes.resize(cpu.ref.size() * 8);
  std::memcpy(raw[0].bytes.data(), cpu.ref.data(), raw[0].bytes.size());
  raw[1].bytes.resize(sabs.size() * 8);
  std::memcpy(raw[1].bytes.data(), sabs.data(), raw[1].bytes.size());
  const Tensor from_gpu = C().reference_from_gpu(cd, raw).at(0);
  EXPECT_EQ(from_gpu.bytes, cpu.bytes);
  EXPECT_EQ(from_gpu.dtype, DType::f16);
  const std::string p = C().numerical_policy();
  for (const char* w : {"f16", "65504", "2^-25", "overflow"}) EXPECT_NE(p.find(w), std::string::npos) << w;
}

// ---- the bundled kernels, emulated -------------------------------------------------------------

TEST(GemmF16, TheGoodKernelIsAcceptedOnEveryCase) {
  ASSERT_NO_FATAL_FAILURE(expect_good_f16_accepted(C(), "gemm", "good", gemm_kernel(false), 6));
}

TEST(GemmF16, TheKnownBrokenF16KernelIsRejectedForItsStatedReason) {
  BrokenF16 b;
  ASSERT_NO_FATAL_FAILURE(judge_broken_f16(C(), "gemm", "KQUAL_BUG_F16_ACCUMULATOR", gemm_kernel(true), {1, 2, 3, 4, 5}, b));
}

}  // namespace
}  // namespace kqual::contract
