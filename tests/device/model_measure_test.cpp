// GPU test for `kqual model roofline --measure`: the measured ceilings of the live device must be
// plausible. Written for this project's H200 (docs/gpu-runs.md: a D2D copy reached 4.25 TB/s); skipped
// visibly without a device.
#include <gtest/gtest.h>

#include <string>

#include "kqual/cuda/driver.hpp"
#include "kqual/bench/ceilings.hpp"
#include "test_util.hpp"

namespace kqual {
namespace {

TEST(ModelMeasure, H200CopyBandwidthAndFmaRateArePlausible) {
  if (!cuda::driver_available()) GTEST_SKIP() << "no CUDA device: " << cuda::driver_unavailable_reason();
  // The worker must be the kqual binary, not this test executable (seen on the H200, 2026-12-02:
  // the test binary answered the worker protocol with gtest's banner).
  setenv("KQUAL_EXE", test::kqual_exe().c_str(), 0);
  const bench::DeviceCeilings c = bench::measure_device_ceilings(120.0);
  std::printf("measured on %s (%s, %d SMs): copy %.3f TB/s, FP32 FMA %.2f TFLOP/s\n", c.device.c_str(),
              c.arch.c_str(), c.sms, c.copy_bytes_per_s / 1e12, c.fp32_fma_flops_per_s / 1e12);
  if (c.device.find("H200") == std::string::npos)
    GTEST_SKIP() << "the expected ceilings are the H200's; this device is " << c.device;
  // [B/s] bytes read + written by a device-to-device copy: within 15 % of 4.3 TB/s.
  EXPECT_NEAR(c.copy_bytes_per_s, 4.3e12, 0.15 * 4.3e12);
  // [FLOP/s] datasheet peak is 67 TFLOP/s FP32; a plain FMA loop lands well inside 20-80.
  EXPECT_GT(c.fp32_fma_flops_per_s, 20e12);
  EXPECT_LT(c.fp32_fma_flops_per_s, 80e12);
}

}  // namespace
}  // namespace kqual
