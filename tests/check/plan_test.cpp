// Launch plans resolved against a device's limits (CPU only: NVRTC builds, no worker runs).
#include <gtest/gtest.h>

#include "kqual/build/manifest.hpp"
#include "kqual/build/candidate.hpp"
#include "kqual/check/plan.hpp"
#include "kqual/core/files.hpp"
#include "test_util.hpp"

namespace kqual::check {
namespace {
using build::BuiltCandidate;
using build::build_candidate;
using build::load_manifest;
using worker::DeviceFacts;

TEST(Plan, GoodCandidatePlanResolvesAgainstAnH200) {
  ScratchDir out("kqual-compile-test");
  BuiltCandidate b = build_candidate(load_manifest(test::repo_root() / "candidates/residual_add_relu/good"), "sm_90", out.path());
  DeviceFacts dev;
  dev.sms = 132;
  dev.l2_bytes = 60 << 20;
  ResolvedPlan p = resolve_plan(b, DType::f32, {{"n", std::int64_t(1) << 28}}, dev);
  ASSERT_TRUE(p.refusal.empty()) << p.refusal;
  ASSERT_EQ(p.launches.size(), 1u);
  EXPECT_EQ(p.launches[0].grid[0], (std::int64_t(1) << 28) / (256 * 2 * 4));  // one tile of 2 x 256 float4 per block
  EXPECT_EQ(p.launches[0].block[0], 256);
  EXPECT_EQ(p.launches[0].args[3].scalar, std::int64_t(1) << 28);
  EXPECT_EQ(p.launches[0].args[3].size, 8);
  p = resolve_plan(b, DType::f32, {{"n", 1}}, dev);
  EXPECT_EQ(p.launches[0].grid[0], 1);
}

TEST(Plan, PlanRefusesWhatTheDeviceCannotLaunch) {
  ScratchDir out("kqual-compile-test");
  BuiltCandidate b = build_candidate(load_manifest(test::repo_root() / "baselines/residual_add_relu/eager"), "sm_90", out.path());
  DeviceFacts dev;
  dev.sms = 132;
  ResolvedPlan p = resolve_plan(b, DType::f32, {{"n", std::int64_t(1) << 40}}, dev);
  EXPECT_NE(p.refusal.find("grid[0]"), std::string::npos) << p.refusal;
}

}  // namespace
}  // namespace kqual::check
