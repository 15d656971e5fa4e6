// GPU test of the gemm contract: the fp64 GPU reference (run by the harness in its own worker)
// agrees with the CPU reference — values within 1e-12 relative, bounds within 1e-9 relative — on
// shapes that are not tile multiples, including a long reduction. Skipped without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>

#include "kqual/contract/contract.hpp"
#include "kqual/cuda/driver.hpp"
#include "kqual/check/evaluate.hpp"
#include "kqual/worker/session.hpp"
#include "test_util.hpp"

namespace kqual {
namespace {

struct Shape {
  const char* family;
  DType dtype;
  std::int64_t m, n, k;
};

class GemmGpuReference : public ::testing::TestWithParam<Shape> {
 protected:
  void SetUp() override {
    if (!cuda::driver_available()) GTEST_SKIP() << "no GPU: " << cuda::driver_unavailable_reason();
    // Workers are spawned from the kqual binary (a test binary cannot serve as one).
    setenv("KQUAL_EXE", test::kqual_exe().c_str(), 0);
  }
};

TEST_P(GemmGpuReference, AgreesWithTheCpuReference) {
  const Shape& s = GetParam();
  const contract::Contract& c = contract::find_contract("gemm");
  contract::CaseSpec spec{"device-test", s.family, s.dtype, {{"m", s.m}, {"n", s.n}, {"k", s.k}}, 0, 77};
  contract::CaseData data = c.make_case(spec);
  worker::SessionOptions o;
  o.exe = test::kqual_exe().string();
  worker::Session session(o);
  ASSERT_TRUE(session.device().present) << session.device().why_absent;
  contract::Tensor gpu = check::gpu_reference(session, c, data).at(0);
  contract::Tensor cpu = c.reference(data).at(0);
  ASSERT_EQ(gpu.ref.size(), cpu.ref.size());
  ASSERT_EQ(gpu.bound.size(), cpu.bound.size());
  std::int64_t bad_ref = 0, bad_bound = 0;
  for (std::size_t i = 0; i < cpu.ref.size(); ++i) {
    const double r = cpu.ref[i], g = gpu.ref[i];
    bool same_ref = (std::isnan(r) && std::isnan(g)) || r == g || std::fabs(r - g) <= 1e-12 * std::fabs(r);
    bool same_bound = cpu.bound[i] == gpu.bound[i] || std::fabs(cpu.bound[i] - gpu.bound[i]) <= 1e-9 * std::fabs(cpu.bound[i]);
    if (!same_ref && bad_ref++ == 0) ADD_FAILURE() << "ref[" << i << "]: cpu " << r << ", gpu " << g;
    if (!same_bound && bad_bound++ == 0) ADD_FAILURE() << "bound[" << i << "]: cpu " << cpu.bound[i] << ", gpu " << gpu.bound[i];
  }
  EXPECT_EQ(bad_ref, 0);
  EXPECT_EQ(bad_bound, 0);
  // The expected tensors (the reference rounded to the dtype) are identical.
  EXPECT_EQ(gpu.bytes, cpu.bytes);
}

INSTANTIATE_TEST_SUITE_P(Gemm, GemmGpuReference,
                         ::testing::Values(Shape{"normal", DType::f32, 129, 65, 8197}, Shape{"nonzero_mean", DType::f32, 131, 257, 67},
                                           Shape{"specials", DType::f32, 65, 63, 1000}, Shape{"nonzero_mean", DType::bf16, 33, 17, 16384},
                                           Shape{"row_scaled", DType::bf16, 127, 129, 509}),
                         [](const auto& test_info) {
                           const Shape& s = test_info.param;
                           return std::string(s.family) + "_" + std::string(to_string(s.dtype)) + "_" + std::to_string(s.m) + "x" +
                                  std::to_string(s.n) + "x" + std::to_string(s.k);
                         });

}  // namespace
}  // namespace kqual
