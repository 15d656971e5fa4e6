// GPU test of startup evidence: one kernel built at test time by NVRTC as native sm_90
// SASS and as PTX only. In cold-cache mode the PTX-only module load must pay a clear JIT cost; in
// warm-cache mode not. Then a pair with a genuinely faster warm kernel that ships as PTX only must
// get "ship" for a long-lived profile and "do not ship as built" for a cold-start-heavy one.
// Skipped visibly without a GPU.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "kqual/cuda/driver.hpp"
#include "kqual/core/json.hpp"
#include "kqual/cuda/nvrtc.hpp"
#include "kqual/decision/decision.hpp"
#include "kqual/startup/startup.hpp"
#include "kqual/stats/summary.hpp"

namespace fs = std::filesystem;
using namespace kqual;
using startup::CacheMode;
using startup::LoadingMode;

namespace {

// Zero parameters (so kqual may launch it); a long unrolled body so the PTX takes the JIT a
// noticeable time; a dependent FMA loop of ITERS steps sets the warm run time.
const char* kSource = R"(
__device__ float sink[1024];
extern "C" __global__ void startup_probe_kernel() {
  float x = threadIdx.x * 0.001f;
#pragma unroll
  for (int i = 0; i < 1024; ++i) x = __sinf(x) * 1.0001f + __cosf(x * 0.5f + i);
#pragma unroll 1
  for (int i = 0; i < ITERS; ++i) x = fmaf(x, 0.999999f, 0.5f);
  sink[threadIdx.x] = x;
}
)";

std::string build(const fs::path& dir, const std::string& arch, int iters) {
  cuda::NvrtcRequest req;
  req.source = kSource;
  req.arch = arch;
  req.options = {"-DITERS=" + std::to_string(iters)};
  const cuda::NvrtcResult r = cuda::nvrtc_compile(req);
  const fs::path p = dir / (arch + "-" + std::to_string(iters) + (r.is_cubin ? ".cubin" : ".ptx"));
  std::ofstream(p, std::ios::binary).write(reinterpret_cast<const char*>(r.image.data()), std::streamsize(r.image.size()));
  return p.string();
}

startup::StartupReport measure(const std::string& artifact, const fs::path& tmp) {
  startup::StartupConfig c;
  c.artifact = artifact;
  c.kernel = "startup_probe_kernel";
  c.launch = true;
  c.runs = 12;
  c.steady_launches = 10;
  c.cache_modes = {CacheMode::cold, CacheMode::warm};
  c.loading_modes = {LoadingMode::eager};
  // KQUAL_EXE in the environment overrides the build-time path (a binary copied to a GPU machine).
  const char* exe = std::getenv("KQUAL_EXE");
  c.probe_executable = exe ? exe : KQUAL_EXE;
  c.temp_root = tmp.string();
  return startup::measure_startup(c);
}

double median_of(const startup::StartupReport& r, CacheMode c, const std::string& phase) {
  const auto* m = r.find(c, LoadingMode::eager);
  EXPECT_NE(m, nullptr);
  if (!m || !m->phases.count(phase)) return -1;
  return m->phases.at(phase).median;
}

std::vector<double> seconds(const startup::StartupReport& r, CacheMode c, const std::string& phase) {
  auto v = r.find(c, LoadingMode::eager)->phase_samples(phase);
  for (auto& x : v) x *= 1e-3;
  return v;
}

class StartupDevice : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cuda::driver_available()) GTEST_SKIP() << "no GPU: " << cuda::driver_unavailable_reason();
    dir_ = fs::temp_directory_path() / ("kqual-startup-device-" + std::to_string(::getpid()));
    fs::create_directories(dir_ / "tmp");
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};


TEST_F(StartupDevice, PtxOnlyPaysJitColdButNotWarm) {
  const auto sass = measure(build(dir_, "sm_90", 1000), dir_ / "tmp");
  const auto ptx = measure(build(dir_, "compute_90", 1000), dir_ / "tmp");
  ASSERT_TRUE(sass.gpu_ran && ptx.gpu_ran);
  EXPECT_EQ(sass.failed_probes, 0u) << startup::to_text(sass);
  EXPECT_EQ(ptx.failed_probes, 0u) << startup::to_text(ptx);
  std::cout << startup::to_text(sass) << "\n" << startup::to_text(ptx) << "\n";

  const double sass_cold = median_of(sass, CacheMode::cold, "module_load");
  const double ptx_cold = median_of(ptx, CacheMode::cold, "module_load");
  const double sass_warm = median_of(sass, CacheMode::warm, "module_load");
  const double ptx_warm = median_of(ptx, CacheMode::warm, "module_load");
  // Cold: the JIT shows — at least 5 ms and 5x the native load.  [ms]
  EXPECT_GT(ptx_cold - sass_cold, 5.0) << "cold module load, PTX " << ptx_cold << " ms vs SASS " << sass_cold << " ms";
  EXPECT_GT(ptx_cold, 5 * sass_cold);
  // The driver's own JIT wall time is reported for the PTX load.
  EXPECT_GT(median_of(ptx, CacheMode::cold, "jit_wall"), 1.0);
  // Warm: a cache hit, within 2 ms (or 50 %) of the native load.  [ms]
  EXPECT_LT(std::abs(ptx_warm - sass_warm), std::max(2.0, 0.5 * sass_warm))
      << "warm module load, PTX " << ptx_warm << " ms vs SASS " << sass_warm << " ms";
  EXPECT_LT(ptx_warm, ptx_cold / 3);
}

TEST_F(StartupDevice, FasterButPtxOnlyShipsForServerNotForColdStartHeavy) {
  // Old: native SASS, slow kernel. New: PTX only, half the warm time.
  const auto old_r = measure(build(dir_, "sm_90", 4000000), dir_ / "tmp");
  const auto new_r = measure(build(dir_, "compute_90", 2000000), dir_ / "tmp");
  ASSERT_TRUE(old_r.gpu_ran && new_r.gpu_ran);
  std::cout << startup::to_text(old_r) << "\n" << startup::to_text(new_r) << "\n";
  stats::DecisionOptions opt;
  opt.margin = {0.02, 0.5e-3};  // 2 % or 0.5 ms for first-request times
  decision::DecisionInput in;
  for (auto mode : {CacheMode::cold, CacheMode::warm})
    in.cold.push_back(decision::cold_start_delta(mode, seconds(old_r, mode, "first_use"), seconds(new_r, mode, "first_use"),
                                                 seconds(old_r, mode, "kernel_first_use"),
                                                 seconds(new_r, mode, "kernel_first_use"), opt));
  stats::DecisionOptions warm_opt;
  warm_opt.margin = {0.02, 0.0};
  in.warm = decision::warm_delta(seconds(old_r, CacheMode::warm, "steady_launch"), seconds(new_r, CacheMode::warm, "steady_launch"), warm_opt);
  in.new_uses_ptx_jit = true;
  ASSERT_EQ(in.warm.verdict, stats::Verdict::faster);
  ASSERT_EQ(in.cold[0].verdict, stats::Verdict::slower) << "the JIT must make the cold first request slower";

  // Profiles scaled to the measured break-even so the test does not depend on this GPU's speed.
  const double breakeven = in.cold[0].delta_s / -in.warm.delta_s;
  decision::DeploymentProfile server, burst;
  server.name = "long-lived server";
  server.calls_per_process = 1000 * breakeven;
  server.jit_cache = CacheMode::cold;
  burst.name = "cold-start-heavy";
  burst.calls_per_process = std::max(1.0, breakeven / 20);
  burst.process_starts_per_day = 20000;
  burst.jit_cache = CacheMode::cold;
  const auto ds = decision::decide(in, server);
  const auto db = decision::decide(in, burst);
  std::cout << decision::to_markdown(ds) << "\n" << decision::to_markdown(db) << "\n";
  EXPECT_EQ(ds.verdict, decision::ShipVerdict::ship);
  EXPECT_EQ(db.verdict, decision::ShipVerdict::do_not_ship);
}

// A library's first request (kqual compare's library probe): the toolkit's libcublas, three shapes, lazy
// and eager module loading. Every phase is measured, the probe reports loading exactly the named file
// (and the libcublasLt beside it), and eager loading pays for the library's modules when it is opened.
TEST_F(StartupDevice, LibraryProbeTimesLoadHandleAndEachShapesFirstCall) {
  const char* lib = "/usr/local/cuda/lib64/libcublas.so.13";
  if (!fs::exists(lib)) GTEST_SKIP() << "no " << lib;
  startup::StartupConfig c;
  c.artifact = lib;
  c.library = true;
  c.library_dtype = "bf16";
  c.library_shapes = {"1024,1024,1024", "64,4096,512", "4096,4096,4096"};
  c.runs = 3;
  c.steady_launches = 5;
  c.cache_modes = {CacheMode::cold};
  c.loading_modes = {LoadingMode::lazy, LoadingMode::eager};
  const char* exe = std::getenv("KQUAL_EXE");
  c.probe_executable = exe ? exe : KQUAL_EXE;
  c.temp_root = (dir_ / "tmp").string();
  const auto r = startup::measure_startup(c);
  ASSERT_TRUE(r.gpu_ran) << r.gpu_unavailable;
  EXPECT_EQ(r.failed_probes, 0u) << startup::to_text(r);
  EXPECT_EQ(r.artifact_kind, "library");
  std::cout << startup::to_text(r) << "\n";
  for (auto loading : {LoadingMode::lazy, LoadingMode::eager}) {
    const auto* m = r.find(CacheMode::cold, loading);
    ASSERT_NE(m, nullptr);
    for (const char* ph : {"driver_init", "context", "library_load", "handle", "first_call", "steady_call", "kernel_first_use",
                           "first_use"})
      EXPECT_TRUE(m->phases.count(ph)) << ph << " missing (" << startup::to_string(loading) << ")";
    for (const auto& smp : m->samples) {
      ASSERT_TRUE(smp.ok) << smp.failure;
      EXPECT_TRUE(smp.phases.count("first_call[64,4096,512]") && smp.phases.count("first_call[4096,4096,4096]"));
      const json& l = smp.raw.at("library");
      EXPECT_EQ(l.at("loaded"), lib);
      EXPECT_EQ(l.at("cublaslt_loaded_first"), "/usr/local/cuda/lib64/libcublasLt.so.13");
      EXPECT_NE(l.at("version").get<std::string>().find("cuBLAS 13."), std::string::npos) << l.dump();
      EXPECT_EQ(smp.raw.value("loading_mode_applied", ""), startup::to_string(loading));
    }
    // The first call pays for what a warm call does not (module loading, heuristics).
    EXPECT_GT(m->phases.at("first_call").median, m->phases.at("steady_call").median);
  }
  // The same build through cuBLASLt: the libcublasLt of the same folder is what is loaded and called.
  c.library_api = "cublaslt";
  c.runs = 2;
  c.loading_modes = {LoadingMode::lazy};
  const auto lt = startup::measure_startup(c);
  ASSERT_TRUE(lt.gpu_ran) << lt.gpu_unavailable;
  EXPECT_EQ(lt.failed_probes, 0u) << startup::to_text(lt);
  for (const auto& smp : lt.find(CacheMode::cold, LoadingMode::lazy)->samples) {
    ASSERT_TRUE(smp.ok) << smp.failure;
    EXPECT_EQ(smp.raw.at("library").at("loaded"), "/usr/local/cuda/lib64/libcublasLt.so.13");
    EXPECT_EQ(smp.raw.at("library").at("routine"), "cublaslt.gemm<__nv_bfloat16>");
    EXPECT_TRUE(smp.phases.count("first_call") && smp.phases.count("first_call[4096,4096,4096]"));
  }
}

}  // namespace
