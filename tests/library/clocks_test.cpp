// NVML clock reading and CUPTI loading on the CPU machine: names of clock-event reasons, and a
// clear reason (never a crash) when NVML or the device is not there.
#include <gtest/gtest.h>

#include "kqual/cuda/cupti.hpp"
#include "kqual/cuda/nvml.hpp"

namespace kqual {
namespace {

TEST(Clocks, ReasonBitsAreNamedAndUnknownBitsShownInHex) {
  using namespace cuda::clock_reason;
  EXPECT_EQ(cuda::describe_clock_reasons(0), "");
  EXPECT_EQ(cuda::describe_clock_reasons(sw_power_cap | hw_thermal), "sw_power_cap+hw_thermal");
  EXPECT_EQ(cuda::describe_clock_reasons(gpu_idle), "gpu_idle");
  EXPECT_EQ(cuda::describe_clock_reasons(0x10000 | hw_slowdown), "hw_slowdown+0x10000");
  // Idle and application-clock settings are not throttling; power, thermal and hardware are.
  EXPECT_EQ(throttling & (gpu_idle | applications_clocks | sync_boost | display_clock), 0u);
  EXPECT_NE(throttling & sw_power_cap, 0u);
  EXPECT_NE(throttling & hw_power_brake, 0u);
}

TEST(Clocks, AMissingDeviceGivesAReasonNotAnError) {
  std::string why;
  auto c = cuda::DeviceClocks::open("0000:ff:1f.7", &why);  // no such bus id anywhere
  EXPECT_EQ(c, nullptr);
  EXPECT_FALSE(why.empty());
  EXPECT_NE(why.find("NVML"), std::string::npos) << why;
}

}  // namespace
}  // namespace kqual
