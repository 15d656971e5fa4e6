#include <gtest/gtest.h>

#include <set>

#include "kqual/core/error.hpp"
#include "kqual/model/roofline.hpp"

namespace kqual::model {
namespace {

TEST(DeviceTable, HasTheRequiredGpusWithSources) {
  std::set<std::string> keys;
  for (const auto& d : known_devices()) {
    keys.insert(d.key);
    EXPECT_GT(d.sms, 0) << d.key;
    EXPECT_GT(d.mem_bytes_per_s, 0) << d.key;
    EXPECT_GT(d.fp32_flops_per_s, 0) << d.key;
    EXPECT_GT(d.bf16_flops_per_s, d.fp32_flops_per_s) << d.key;  // tensor cores beat FP32 everywhere here
    EXPECT_GT(d.fp64_flops_per_s, 0) << d.key;
    EXPECT_NE(d.source.find("https://"), std::string::npos) << d.key << " has no source";
  }
  EXPECT_EQ(keys, (std::set<std::string>{"a100", "b200", "h100", "h200", "l40s"}));
  const auto& h200 = find_device("H200");
  EXPECT_DOUBLE_EQ(h200.mem_bytes_per_s, 4.8e12);
  EXPECT_DOUBLE_EQ(h200.fp32_flops_per_s, 67e12);
  EXPECT_EQ(h200.sms, 132);
}

TEST(DeviceTable, UnknownDeviceNamesTheKnownOnes) {
  try {
    find_device("v100");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::usage);
    EXPECT_NE(std::string(e.what()).find("--device 'v100'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("h200"), std::string::npos) << e.what();
  }
}

// docs/models.md, worked example: n = 2^28 f32 residual add + relu on the H200, plain fused kernel 0.832 ms.
TEST(Roofline, ResidualAddReluOnH200IsMemoryBound) {
  RooflineInput in;
  in.flops = 2.0 * (1 << 28);        // add + max per element
  in.bytes = 3.0 * (1 << 28) * 4.0;  // x, r read; y written
  in.ceilings = ceilings_for(find_device("h200"), Precision::fp32);
  in.measured_s = 0.832e-3;
  const auto r = roofline(in);
  EXPECT_NEAR(r.arithmetic_intensity, 1.0 / 6.0, 1e-12);
  EXPECT_NEAR(r.ridge_point, 67e12 / 4.8e12, 1e-9);
  EXPECT_EQ(r.bound, "memory");
  EXPECT_NEAR(r.floor_s, 3221225472.0 / 4.8e12, 1e-15);  // 0.671 ms
  EXPECT_NEAR(r.memory_time_s, 6.7108864e-4, 1e-12);
  EXPECT_NEAR(*r.fraction_of_floor, 0.80659, 1e-4);
  EXPECT_NEAR(*r.achieved_bytes_per_s, 3.8717e12, 1e9);
}

TEST(Roofline, LargeBf16GemmIsComputeBound) {
  RooflineInput in;
  in.flops = 2.0 * 4096.0 * 4096.0 * 4096.0;
  in.bytes = 3.0 * 4096.0 * 4096.0 * 2.0;
  in.ceilings = ceilings_for(find_device("h200"), Precision::bf16);
  const auto r = roofline(in);
  EXPECT_NEAR(r.arithmetic_intensity, 4096.0 / 3.0, 1e-9);
  EXPECT_EQ(r.bound, "compute");
  EXPECT_NEAR(r.floor_s, in.flops / 989.5e12, 1e-15);
  EXPECT_DOUBLE_EQ(r.attainable_flops_per_s, 989.5e12);
  EXPECT_FALSE(r.measured_s.has_value());
}

TEST(Roofline, EdgeCounts) {
  RooflineInput in;
  in.ceilings = ceilings_for(find_device("a100"), Precision::fp64);
  in.flops = 0;
  in.bytes = 1e9;  // a copy: intensity 0, memory-bound
  auto r = roofline(in);
  EXPECT_EQ(r.arithmetic_intensity, 0.0);
  EXPECT_EQ(r.bound, "memory");
  EXPECT_NEAR(r.floor_s, 1e9 / 2.039e12, 1e-15);
  in.flops = 1e12;
  in.bytes = 0;  // all in registers: compute-bound, intensity unbounded
  r = roofline(in);
  EXPECT_EQ(r.bound, "compute");
  EXPECT_NEAR(r.floor_s, 1e12 / 9.7e12, 1e-15);
  in.flops = 0;
  EXPECT_THROW(roofline(in), Error);  // both zero: nothing to model
  in.flops = 1;
  in.measured_s = 0.0;
  EXPECT_THROW(roofline(in), Error);
}

}  // namespace
}  // namespace kqual::model
