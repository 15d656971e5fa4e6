// Prebuilt artifacts as compare sides, without a GPU: a launch-plan manifest without `source`,
// kernels found by their demangled names, and host executables whose embedded module holding the
// kernel is picked and extracted. nvcc builds the inputs here (it runs without a GPU).
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <fstream>

#include "compare_util.hpp"
#include "kqual/artifact/artifact.hpp"
#include "kqual/core/error.hpp"
#include "kqual/core/files.hpp"
#include "kqual/build/manifest.hpp"
#include "kqual/build/toolchain.hpp"

namespace fs = std::filesystem;
using namespace kqual;

namespace {

const fs::path kExample = test::repo_root() / "examples/upgrade";
const char* kNvcc = "/usr/local/cuda/bin/nvcc";

// Builds once per test binary: sass.fatbin, ptx.fatbin, app (host exe: sm_80 SASS + compute_80 PTX).
const fs::path& builds() {
  static test::TempDir dir;
  static bool done = false;
  if (!done) {
    const std::string src = test::quote(kExample / "candidate/kernel.cu");
    const std::string d = dir.path.string();
    for (const std::string& cmd :
         {std::string(kNvcc) + " -fatbin -gencode arch=compute_90,code=sm_90 -o " + d + "/sass.fatbin " + src,
          std::string(kNvcc) + " -fatbin -gencode arch=compute_90,code=compute_90 -o " + d + "/ptx.fatbin " + src,
          std::string(kNvcc) + " -gencode arch=compute_80,code=sm_80 -gencode arch=compute_80,code=compute_80 -o " + d +
              "/app " + src + " " + test::quote(kExample / "host.cpp")}) {
      auto r = test::run(cmd);
      EXPECT_EQ(r.exit_code, 0) << cmd << "\n" << r.output;
    }
    done = true;
  }
  return dir.path;
}

build::Manifest plan() { return build::load_manifest(kExample / "plan", build::ManifestUse::launch_plan); }

}  // namespace

TEST(KernelSymbols, DemangledNamesMatchWhatManifestsWrite) {
  EXPECT_EQ(artifact::kernel_display_name("_Z12add_relu_ilpIfEvPKT_S2_PS0_x"), "add_relu_ilp<float>");
  EXPECT_EQ(artifact::kernel_display_name("plain_c_kernel"), "plain_c_kernel");
  EXPECT_EQ(artifact::kernel_display_name("_Z6scale2PfS_i"), "scale2");
  const std::vector<std::string> syms{"_Z12add_relu_ilpIfEvPKT_S2_PS0_x", "_Z12add_relu_ilpI6__halfEvPKT_S3_PS1_x",
                                      "_Z1kPf", "_Z1kPd"};
  auto m = artifact::find_kernel_symbol(syms, "add_relu_ilp< float >");
  ASSERT_TRUE(m.symbol);
  EXPECT_EQ(*m.symbol, syms[0]);
  EXPECT_EQ(*artifact::find_kernel_symbol(syms, syms[1]).symbol, syms[1]);  // the mangled name itself
  auto overloaded = artifact::find_kernel_symbol(syms, "k");
  EXPECT_FALSE(overloaded.symbol);
  EXPECT_EQ(overloaded.candidates.size(), 2u);
  EXPECT_FALSE(artifact::find_kernel_symbol(syms, "add_relu_ilp<double>").symbol);
}

TEST(LaunchPlanManifest, SourceIsOptionalOnlyForPrebuiltSides) {
  EXPECT_NO_THROW(plan());
  try {
    build::load_manifest(kExample / "plan");  // as a candidate: it must be buildable
    ADD_FAILURE() << "a manifest without source was accepted as a candidate";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("candidate.source"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("--manifest"), std::string::npos) << e.what();
  }
}

TEST(LaunchPlanManifest, AdoptsAFatbinByDemangledName) {
  if (!fs::exists(kNvcc)) GTEST_SKIP() << "no nvcc";
  build::BuildProvenance pv;
  build::BuiltCandidate b = build::adopt_prebuilt(plan(), builds() / "sass.fatbin", "sm_90", &pv);
  ASSERT_EQ(b.lowered.size(), 1u);
  EXPECT_EQ(b.lowered.at("add_relu_ilp<float>"), "_Z12add_relu_ilpIfEvPKT_S2_PS0_x");
  EXPECT_NE(pv.to_json().dump().find("demangling"), std::string::npos);
}

TEST(LaunchPlanManifest, MissingKernelSaysWhatTheImageHolds) {
  if (!fs::exists(kNvcc)) GTEST_SKIP() << "no nvcc";
  test::TempDir t;
  std::string toml = read_text_file(kExample / "plan/kqual.toml");
  toml.replace(toml.find("add_relu_ilp<{T}>"), 17, "add_relu_vec<{T}>");
  std::ofstream(t.path / "kqual.toml") << toml;
  build::Manifest m = build::load_manifest(t.path, build::ManifestUse::launch_plan);
  try {
    build::adopt_prebuilt(m, builds() / "sass.fatbin", "sm_90", nullptr);
    ADD_FAILURE() << "a missing kernel was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::input);
    EXPECT_NE(std::string(e.what()).find("add_relu_vec<float>"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("holds: add_relu_ilp<float>"), std::string::npos) << e.what();
  }
}

TEST(HostBinarySide, PicksAndExtractsTheModuleHoldingTheKernel) {
  if (!fs::exists(kNvcc)) GTEST_SKIP() << "no nvcc";
  test::TempDir t;
  const artifact::Artifact app = artifact::parse_artifact((builds() / "app").string());
  ASSERT_EQ(app.container, artifact::ContainerKind::host_binary);
  ASSERT_GE(app.containers.size(), 1u);
  build::ModulePick pick = build::pick_module(plan(), builds() / "app", "sm_90", t.path);
  EXPECT_EQ(pick.modules, app.containers.size());
  EXPECT_NE(pick.reason.find(fmt::format("module {} of {}", pick.container, app.containers.size())), std::string::npos)
      << pick.reason;
  EXPECT_NE(pick.reason.find("ptx_jit"), std::string::npos) << pick.reason;  // sm_80 SASS + PTX on sm_90
  // The extracted module is a standalone fatbin holding the kernel, byte for byte the container.
  const artifact::Artifact mod = artifact::parse_artifact(pick.module_path.string());
  EXPECT_EQ(mod.container, artifact::ContainerKind::fatbin);
  const auto syms = artifact::kernel_symbols(mod);
  EXPECT_NE(std::find(syms.begin(), syms.end(), "_Z12add_relu_ilpIfEvPKT_S2_PS0_x"), syms.end());
  EXPECT_EQ(fs::file_size(pick.module_path), app.containers.at(pick.container).bytes);
}

TEST(HostBinarySide, CompareStaticPhasesWithAHostExecutableAndNoSource) {
  if (!fs::exists(kNvcc)) GTEST_SKIP() << "no nvcc";
  test::TempDir t;
  auto r = test::run(test::quote(test::compare_kqual()) + " compare " + test::quote(builds() / "app") + " " +
                     test::quote(builds() / "sass.fatbin") + " --manifest " + test::quote(kExample / "plan") +
                     " --no-gpu --quiet --out " + test::quote(t.path / "o"));
  EXPECT_EQ(r.exit_code, 3) << r.output;
  json j = json::parse(read_text_file(t.path / "o" / "results.json"));
  EXPECT_EQ(j["sides"]["old"]["loading_path"], "ptx_jit");
  EXPECT_EQ(j["sides"]["new"]["loading_path"], "native_sass");
  EXPECT_NE(j["sides"]["old"]["module"].get<std::string>().find("holds the manifest's kernels"), std::string::npos);
  EXPECT_EQ(j["sides"]["old"]["startup_kernel"], "_Z12add_relu_ilpIfEvPKT_S2_PS0_x");
  EXPECT_EQ(j["sides"]["new"]["startup_kernel"], "_Z12add_relu_ilpIfEvPKT_S2_PS0_x");
  // A host binary without a launch plan: the module cannot be picked; a clear usage error.
  r = test::run(test::quote(test::compare_kqual()) + " compare " + test::quote(builds() / "app") + " " +
                test::quote(builds() / "sass.fatbin") + " --no-gpu --quiet --out " + test::quote(t.path / "p"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--manifest"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(t.path / "p" / "results.json"));
}

TEST(HostBinarySide, SharedLibraryModuleIsPickedToo) {
  if (!fs::exists(kNvcc)) GTEST_SKIP() << "no nvcc";
  test::TempDir t;
  const std::string so = (t.path / "libkernels.so").string();
  auto r = test::run(std::string(kNvcc) + " -shared -Xcompiler -fPIC -gencode arch=compute_90,code=sm_90 -o " + so + " " +
                     test::quote(kExample / "candidate/kernel.cu"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  build::ModulePick pick = build::pick_module(plan(), so, "sm_90", t.path / "x");
  EXPECT_NE(pick.reason.find("libkernels.so"), std::string::npos) << pick.reason;
  EXPECT_NE(pick.reason.find("native_sass"), std::string::npos) << pick.reason;
  const auto syms = artifact::kernel_symbols(artifact::parse_artifact(pick.module_path.string()));
  EXPECT_NE(std::find(syms.begin(), syms.end(), "_Z12add_relu_ilpIfEvPKT_S2_PS0_x"), syms.end());
}

// kqual inspect on a library whose modules target different GPUs: it passes when some module loads
// (the others are reported, briefly), and --kernel decides on the module holding that kernel.
TEST(LibraryVerdict, ModulesWithoutAnImageAreReportedNotFailed) {
  if (!fs::exists(kNvcc)) GTEST_SKIP() << "no nvcc";
  test::TempDir t;
  std::ofstream(t.path / "a.cu") << "__global__ void on_hopper(float* p) { p[0] = 1; }\n";
  std::ofstream(t.path / "b.cu") << "__global__ void on_ampere_only(float* p) { p[0] = 2; }\n";
  const std::string so = (t.path / "libmixed.so").string();
  auto r = test::run(std::string(kNvcc) + " -shared -Xcompiler -fPIC -rdc=false -o " + so + " " +
                     test::quote(t.path / "a.cu") + " -gencode arch=compute_90,code=sm_90");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // Two translation units, two modules: build them apart and link them into one library.
  for (const auto& [src, arch] : {std::pair{"a", "90"}, std::pair{"b", "80"}}) {
    r = test::run(std::string(kNvcc) + " -c -Xcompiler -fPIC -gencode arch=compute_" + arch + ",code=sm_" + arch + " -o " +
                  test::quote(t.path / (std::string(src) + ".o")) + " " + test::quote(t.path / (std::string(src) + ".cu")));
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }
  r = test::run(std::string(kNvcc) + " -shared -o " + so + " " + test::quote(t.path / "a.o") + " " + test::quote(t.path / "b.o"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string kq = test::quote(test::compare_kqual()) + " inspect " + test::quote(so) + " --arch sm_90";
  r = test::run(kq);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("have no image for it"), std::string::npos) << r.output;
  // The worst module's reason lists only that module's archs, not the other modules' sm_90.
  const auto at = r.output.find("SASS present: ");
  ASSERT_NE(at, std::string::npos) << r.output;
  EXPECT_EQ(r.output.substr(at, r.output.find(')', at) - at).find("sm_90"), std::string::npos) << r.output;
  EXPECT_EQ(test::run(kq + " --kernel on_hopper").exit_code, 0);
  r = test::run(kq + " --kernel on_ampere_only");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("does not load"), std::string::npos) << r.output;
  r = test::run(kq + " --kernel not_there");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("not_there"), std::string::npos) << r.output;
}
