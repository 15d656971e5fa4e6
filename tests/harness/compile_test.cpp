// NVRTC compilation of every bundled candidate and baseline (CPU only: NVRTC needs no GPU).
#include <gtest/gtest.h>

#include <filesystem>

#include "kqual/core/error.hpp"
#include "kqual/core/files.hpp"
#include "kqual/cuda/nvrtc.hpp"
#include "kqual/harness/evaluate.hpp"
#include "test_util.hpp"

namespace kqual::harness {
namespace {
namespace fs = std::filesystem;

TEST(Compile, EveryBundledCandidateAndBaselineCompilesForSm90) {
  ScratchDir out("kqual-compile-test");
  int n = 0;
  for (const char* sub : {"candidates", "baselines"})
    for (const auto& e : fs::recursive_directory_iterator(test::repo_root() / sub)) {
      if (e.path().filename() != "kqual.toml") continue;
      Manifest m = load_manifest(e.path());
      if (m.source.empty()) continue;  // a library baseline (CUB, cuBLAS): nothing to compile
      BuiltCandidate b = build_candidate(m, "sm_90", out.path());
      ++n;
      EXPECT_TRUE(fs::exists(b.image_path)) << e.path();
      EXPECT_EQ(b.image_sha256.size(), 64u);
      // An ELF cubin (native SASS): magic 0x7f 'E' 'L' 'F'.
      MappedFile img = MappedFile::open_read(b.image_path);
      ASSERT_GE(img.size(), 4u);
      EXPECT_EQ(img.data()[0], 0x7f);
      EXPECT_EQ(img.data()[1], 'E');
      for (DType t : m.supports.dtypes)
        for (const auto& k : m.kernel_names(t)) EXPECT_TRUE(b.lowered.count(k)) << k << " in " << e.path();
    }
  EXPECT_GE(n, 8);
}

TEST(Compile, GoodCandidatePlanResolvesAgainstAnH200) {
  ScratchDir out("kqual-compile-test");
  BuiltCandidate b = build_candidate(load_manifest(test::repo_root() / "candidates/residual_add_relu/good"), "sm_90", out.path());
  DeviceFacts dev;
  dev.sms = 132;
  dev.l2_bytes = 60 << 20;
  ResolvedPlan p = resolve_plan(b, DType::f32, {{"n", std::int64_t(1) << 28}}, dev);
  ASSERT_TRUE(p.refusal.empty()) << p.refusal;
  ASSERT_EQ(p.launches.size(), 1u);
  EXPECT_EQ(p.launches[0]["grid"][0].get<std::int64_t>(), 132 * 64);
  EXPECT_EQ(p.launches[0]["block"][0].get<std::int64_t>(), 256);
  EXPECT_EQ(p.launches[0]["args"][3]["scalar"].get<std::int64_t>(), std::int64_t(1) << 28);
  EXPECT_EQ(p.launches[0]["args"][3]["size"].get<int>(), 8);
  p = resolve_plan(b, DType::f32, {{"n", 1}}, dev);
  EXPECT_EQ(p.launches[0]["grid"][0].get<std::int64_t>(), 1);
}

TEST(Compile, PlanRefusesWhatTheDeviceCannotLaunch) {
  ScratchDir out("kqual-compile-test");
  BuiltCandidate b = build_candidate(load_manifest(test::repo_root() / "baselines/residual_add_relu/eager"), "sm_90", out.path());
  DeviceFacts dev;
  dev.sms = 132;
  ResolvedPlan p = resolve_plan(b, DType::f32, {{"n", std::int64_t(1) << 40}}, dev);
  EXPECT_NE(p.refusal.find("grid[0]"), std::string::npos) << p.refusal;
}

TEST(Compile, CompileErrorsCarryTheLog) {
  cuda::NvrtcRequest r;
  r.source = "__global__ void k() { this is not cuda; }";
  r.source_name = "bad.cu";
  try {
    cuda::nvrtc_compile(r);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::nvrtc);
    EXPECT_NE(std::string(e.what()).find("bad.cu"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace kqual::harness
