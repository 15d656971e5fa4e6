// CPU tests of `kqual startup`: everything that works without a GPU — kernel discovery, input
// errors, crash / hang handling by the watchdog, clean-up of cache directories, NVRTC timing in
// fresh processes, and the "no GPU" report. GPU measurements live in tests/device/startup_test.cpp.
#include "kqual/startup/startup.hpp"

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "kqual/core/error.hpp"
#include "kqual/cuda/driver.hpp"

namespace fs = std::filesystem;
using namespace kqual::startup;

namespace {

const char* kPtx = R"(//
.version 8.0
.target sm_90
.address_size 64
.visible .entry first_kernel()
{
  ret;
}
.visible .entry second_kernel(.param .u64 p)
{
  ret;
}
)";

class StartupCpu : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("kqual-startup-test-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "tmp");
    ptx_ = (dir_ / "k.ptx").string();
    std::ofstream(ptx_) << kPtx;
  }
  void TearDown() override { fs::remove_all(dir_); }
  StartupConfig config() const {
    StartupConfig c;
    c.artifact = ptx_;
    c.runs = 2;
    c.probe_executable = KQUAL_EXE;
    c.temp_root = (dir_ / "tmp").string();
    c.cache_modes = {CacheMode::cold};
    c.loading_modes = {LoadingMode::lazy};
    return c;
  }
  // config() with the probe told to `simulate` a failure, `runs` times.
  StartupConfig simulating(const char* simulate, int runs) const {
    StartupConfig c = config();
    c.simulate = simulate;
    c.runs = runs;
    return c;
  }
  bool temp_root_empty() const { return fs::is_empty(dir_ / "tmp"); }
  fs::path dir_;
  std::string ptx_;
};


TEST(PtxEntries, InOrder) {
  const auto e = ptx_entries(kPtx);
  ASSERT_EQ(e.size(), 2u);
  EXPECT_EQ(e[0], "first_kernel");
  EXPECT_EQ(e[1], "second_kernel");
  EXPECT_TRUE(ptx_entries(".version 8.0\n.target sm_90\n").empty());
}

TEST_F(StartupCpu, CrashingProbeIsARecordedFailure) {
  const StartupReport r = measure_startup(simulating("crash", 2));
  ASSERT_EQ(r.modes.size(), 1u);
  const ModeResult& m = r.modes[0];
  EXPECT_EQ(m.samples.size(), 2u);
  EXPECT_EQ(m.failures, 2u);
  EXPECT_EQ(r.failed_probes, 2u);
  for (const auto& s : m.samples) {
    EXPECT_FALSE(s.ok);
    EXPECT_NE(s.failure.find("crashed (SIGSEGV)"), std::string::npos) << s.failure;
  }
  EXPECT_TRUE(temp_root_empty()) << "cache directories must be removed";
  const auto j = to_json(r);
  EXPECT_EQ(j["schema"], "kqual.startup/1");
  EXPECT_EQ(j["schema_version"], kqual::kJsonSchemaVersion);
  EXPECT_EQ(j["modes"][0]["samples"][0]["ok"], false);
}

TEST_F(StartupCpu, HangingProbeIsKilledByTheWatchdog) {
  StartupConfig c = simulating("hang", 1);
  c.watchdog_s = 1.0;
  const StartupReport r = measure_startup(c);
  ASSERT_EQ(r.modes.size(), 1u);
  ASSERT_EQ(r.modes[0].samples.size(), 1u);
  EXPECT_NE(r.modes[0].samples[0].failure.find("hung"), std::string::npos) << r.modes[0].samples[0].failure;
  EXPECT_TRUE(temp_root_empty());
}

TEST_F(StartupCpu, GivesUpOnAModeAfterConsecutiveFailures) {
  StartupConfig c = simulating("crash", 10);
  c.max_consecutive_failures = 3;
  const StartupReport r = measure_startup(c);
  EXPECT_EQ(r.modes[0].samples.size(), 3u);
  EXPECT_NE(r.modes[0].gave_up.find("3 consecutive"), std::string::npos);
}

TEST_F(StartupCpu, WithoutAGpuSaysWhatCouldNotRun) {
  if (kqual::cuda::driver_available()) GTEST_SKIP() << "a GPU is present: tests/device/startup_test.cpp covers this";
  StartupConfig c = config();
  c.cache_modes = {CacheMode::off, CacheMode::cold, CacheMode::warm};
  c.loading_modes = {LoadingMode::lazy, LoadingMode::eager};
  const StartupReport r = measure_startup(c);
  EXPECT_FALSE(r.gpu_ran);
  EXPECT_FALSE(r.gpu_unavailable.empty());
  EXPECT_TRUE(r.modes.empty());
  EXPECT_EQ(r.kernel, "first_kernel");
  EXPECT_EQ(r.kernel_source, "first .entry in the PTX");
  EXPECT_NE(to_text(r).find("GPU phases NOT run"), std::string::npos);
  EXPECT_TRUE(temp_root_empty());
}

TEST_F(StartupCpu, CliExitsThreeWithoutAGpu) {
  if (kqual::cuda::driver_available()) GTEST_SKIP() << "a GPU is present";
  const std::string cmd = std::string(KQUAL_EXE) + " startup --quiet --runs 1 " + ptx_ + " > " + (dir_ / "out.txt").string() + " 2>&1";
  const int st = std::system(cmd.c_str());
  ASSERT_TRUE(WIFEXITED(st));
  EXPECT_EQ(WEXITSTATUS(st), 3);
  std::ifstream in(dir_ / "out.txt");
  const std::string out((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(out.find("GPU phases NOT run"), std::string::npos) << out;
}

TEST_F(StartupCpu, CompileIsTimedInFreshProcessesEvenWithoutAGpu) {
  const std::string cu = (dir_ / "k.cu").string();
  std::ofstream(cu) << "extern \"C\" __global__ void k0() {}\n";
  StartupConfig c = config();
  c.artifact = cu;
  c.compile = true;
  c.arch = "compute_90";
  c.compile_runs = 2;
  const StartupReport r = measure_startup(c);
  ASSERT_TRUE(r.compile.has_value());
  EXPECT_EQ(r.compile->nvrtc_ms.size(), 2u) << (r.compile->failure_messages.empty() ? "" : r.compile->failure_messages[0]);
  ASSERT_TRUE(r.compile->nvrtc.has_value());
  EXPECT_GT(r.compile->nvrtc->median, 0.0);
  EXPECT_EQ(r.kernel, "k0");
  EXPECT_EQ(r.artifact_kind, "cu");
  EXPECT_NE(r.loaded_image_sha256, r.artifact_sha256);
  EXPECT_TRUE(temp_root_empty());
}

TEST_F(StartupCpu, BadInputsAreRefusedWithTheirReason) {
  StartupConfig c = config();
  c.artifact = dir_.string();
  try {
    measure_startup(c);
    FAIL();
  } catch (const kqual::Error& e) {
    EXPECT_EQ(e.kind(), kqual::ErrorKind::unsupported);
    EXPECT_NE(std::string(e.what()).find("candidate directories"), std::string::npos);
  }
  const std::string junk = (dir_ / "junk.bin").string();
  std::ofstream(junk) << "not an artifact";
  c.artifact = junk;
  EXPECT_THROW(measure_startup(c), kqual::Error);
  const std::string cu = (dir_ / "k.cu").string();
  std::ofstream(cu) << "__global__ void k() {}\n";
  c.artifact = cu;
  try {
    measure_startup(c);
    FAIL();
  } catch (const kqual::Error& e) {
    EXPECT_NE(std::string(e.what()).find("--compile"), std::string::npos);
  }
  c.artifact = (dir_ / "missing.ptx").string();
  EXPECT_THROW(measure_startup(c), kqual::Error);
}

}  // namespace
