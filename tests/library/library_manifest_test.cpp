// [[launch]] library = "...": parsing, validation errors (file, key, value), build without NVRTC,
// and the worker plan a library launch resolves to. Uses residual_add_relu (dims n; tensors x, r,
// y) so the tests do not depend on the contracts the library baselines are for.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "kqual/contract/contract.hpp"
#include "kqual/core/error.hpp"
#include "kqual/core/files.hpp"
#include "kqual/cuda/library.hpp"
#include "kqual/check/evaluate.hpp"
#include "kqual/build/manifest.hpp"
#include "manifest_util.hpp"
#include "test_util.hpp"

namespace kqual::check {
using build::BuiltCandidate;
using build::Manifest;
using build::load_manifest;
using build::build_candidate;
using worker::DeviceFacts;

namespace {
namespace fs = std::filesystem;

class LibraryManifestTest : public test::ManifestFixture {
 protected:
  LibraryManifestTest() : ManifestFixture("kqual-library-manifest-test") {}
  static std::string good() {
    return R"TOML([candidate]
contract = "residual_add_relu"
description = "library-only"
[supports]
dtypes = ["f32"]
[[launch]]
library = "cub.sum<{T}>"
args = ["x", "y", "n:i64"]
)TOML";
  }
};

TEST_F(LibraryManifestTest, ParsesALibraryOnlyManifestWithoutSource) {
  Manifest m = parse(good());
  EXPECT_TRUE(m.source.empty());
  ASSERT_EQ(m.launches.size(), 1u);
  EXPECT_EQ(m.launches[0].library, "cub.sum<{T}>");
  EXPECT_TRUE(m.launches[0].kernel.empty());
  EXPECT_FALSE(m.has_kernels());
  EXPECT_TRUE(m.kernel_names(DType::f32).empty());
  EXPECT_EQ(m.library_names(DType::f32), std::vector<std::string>{"cub.sum<float>"});
}

TEST_F(LibraryManifestTest, ConcreteTypeIsAccepted) {
  Manifest m = parse(replace(good(), "cub.sum<{T}>", "cub.sum<float>"));
  EXPECT_EQ(m.library_names(DType::f32), std::vector<std::string>{"cub.sum<float>"});
}

TEST_F(LibraryManifestTest, UnknownRoutineIsNamedWithTheKnownOnes) {
  expect_error_naming(replace(good(), "cub.sum<{T}>", "cub.prefix<{T}>"),
                      {"kqual.toml: launch[0].library", "unknown library routine \"cub.prefix<{T}>\"",
                       "cublas.gemm<T>(a, b, c, m:i32, n:i32, k:i32)"});
}

TEST_F(LibraryManifestTest, MissingTypeIsAnError) {
  expect_error_naming(replace(good(), "cub.sum<{T}>", "cub.sum"), {"give the element type"});
}

TEST_F(LibraryManifestTest, DtypeOutsideTheRoutineIsAnError) {
  expect_error_naming(replace(good(), "dtypes = [\"f32\"]", "dtypes = [\"f32\", \"bf16\"]"),
                      {"launch[0].library", "{T} = bf16: cub.sum supports only f32"});
  expect_error_naming(replace(good(), "cub.sum<{T}>", "cub.sum<int>"), {"type 'int' is not supported by cub.sum"});
}

TEST_F(LibraryManifestTest, ArityIsCheckedPerRoutine) {
  const std::string args = "args = [\"x\", \"y\", \"n:i64\"]";
  expect_error_naming(replace(good(), args, "args = [\"x\", \"y\"]"),
                      {"launch[0].args: cub.sum<{T}> takes 3 arguments, args lists 2"});
  expect_error_naming(replace(good(), args, "args = [\"x\", \"n:i64\", \"y\"]"), {"launch[0].args[1]", "pointer 'out'"});
  expect_error_naming(replace(good(), args, "args = [\"x\", \"y\", \"r\"]"), {"launch[0].args[2]", "the integer 'n'"});
}

TEST_F(LibraryManifestTest, ScalarTypeMustBeTheRoutines) {
  expect_error_naming(replace(good(), "n:i64", "n:i32"), {"launch[0].args[2]", "write \"n:i64\""});
}

TEST_F(LibraryManifestTest, LaunchGeometryIsRejectedForLibraryLaunches) {
  expect_error_naming(replace(good(), "library = ", "grid = 1\nlibrary = "),
                      {"launch[0].grid", "not used by a library launch"});
  expect_error_naming(replace(good(), "library = ", "kernel = \"k\"\nlibrary = "), {"either kernel or library"});
}

TEST_F(LibraryManifestTest, KernelLaunchWithoutSourceIsAnError) {
  expect_error_naming(R"TOML([candidate]
contract = "residual_add_relu"
[supports]
dtypes = ["f32"]
[[launch]]
kernel = "k<{T}>"
grid = 1
block = 1
args = ["x", "r", "y", "n:i64"]
)TOML",
                      {"candidate.source: missing"});
}

TEST_F(LibraryManifestTest, BuildNeedsNoCompilerAndRecordsTheLibrary) {
  Manifest m = parse(good());
  BuiltCandidate b = build_candidate(m, "sm_90", dir.path());
  EXPECT_TRUE(b.image_path.empty());
  EXPECT_TRUE(b.lowered.empty());
  EXPECT_EQ(b.libraries, std::vector<std::string>{"cub.sum<float>"});
  EXPECT_EQ(b.compiler, "library: cub.sum<float>");
  ASSERT_TRUE(b.library_versions.contains("CUB"));
  EXPECT_NE(b.library_versions["CUB"].get<std::string>().find("CUB 3."), std::string::npos) << b.library_versions.dump();
  EXPECT_EQ(b.image_sha256.size(), 64u);
  json j = b.to_json();
  EXPECT_EQ(j["libraries"][0], "cub.sum<float>");
}

TEST_F(LibraryManifestTest, ResolvePlanEmitsALibraryEntry) {
  Manifest m = parse(good());
  BuiltCandidate b = build_candidate(m, "sm_90", dir.path());
  DeviceFacts dev;
  dev.present = true;
  dev.sms = 132;
  dev.l2_bytes = 50 << 20;
  ResolvedPlan p = resolve_plan(b, DType::f32, {{"n", 12345}}, dev);
  ASSERT_TRUE(p.refusal.empty()) << p.refusal;
  ASSERT_EQ(p.launches.size(), 1u);
  worker::Launch want;
  want.library = "cub.sum<float>";
  want.args = {worker::Arg::pointer("x"), worker::Arg::pointer("y"), worker::Arg::value(12345, 8)};
  EXPECT_EQ(p.launches[0], want) << [&] {
    worker::RunRequest r;
    r.launches = p.launches;
    return worker::to_json(r).dump();
  }();
}

TEST_F(LibraryManifestTest, MixedKernelAndLibraryLaunches) {
  std::ofstream(dir.path() / "k.cu") << "template <class T> __global__ void k(T* y, long long n) {}\n";
  Manifest m = parse(replace(replace(good(), "description = \"library-only\"", "source = \"k.cu\""), "[[launch]]",
                             "[[launch]]\nkernel = \"k<{T}>\"\ngrid = 1\nblock = 32\nargs = [\"y\", \"n:i64\"]\n[[launch]]"));
  ASSERT_EQ(m.launches.size(), 2u);
  EXPECT_TRUE(m.has_kernels());
  EXPECT_EQ(m.kernel_names(DType::f32), std::vector<std::string>{"k<float>"});
  EXPECT_EQ(m.library_names(DType::f32), std::vector<std::string>{"cub.sum<float>"});
}

// The bundled library baselines parse against their contracts (when those are built in).
TEST(LibraryBaselines, BundledManifestsParse) {
  const fs::path root = test::repo_root() / "baselines";
  const std::pair<const char*, const char*> dirs[] = {
      {"gemm", "gemm/cublas"}, {"exclusive_scan", "exclusive_scan/cub"}, {"reduce_sum", "reduce_sum/cub"}};
  for (const auto& [contract_name, d] : dirs) {
    try {
      contract::find_contract(contract_name);
    } catch (const Error&) {
      continue;  // contract not in this build yet
    }
    Manifest m = load_manifest(root / d);
    EXPECT_FALSE(m.has_kernels()) << d;
    EXPECT_EQ(m.contract, contract_name);
    BuiltCandidate b = build_candidate(m, "sm_90", fs::temp_directory_path());
    EXPECT_FALSE(b.libraries.empty()) << d;
  }
}

}  // namespace
}  // namespace kqual::check
