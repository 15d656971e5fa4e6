// kqual compare OLD.so NEW.so without a GPU: two builds of cuBLAS are library sides (kqual's own gemm
// call through each), their artifact diff is summarised per architecture, and what cannot be a
// library comparison is refused up front with nothing written. The library probe's refusals.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>

#include "compare_util.hpp"
#include "kqual/core/files.hpp"
#include "kqual/core/json.hpp"

namespace fs = std::filesystem;
using namespace kqual;

namespace {

const fs::path kRoot = test::repo_root();
const fs::path kToolkitCublas = "/usr/local/cuda/lib64/libcublas.so.13";

test::CommandResult kq(const std::string& args) { return test::run(test::quote(test::compare_kqual()) + " " + args); }

// Two "builds": the toolkit's libcublas, and the same bytes with one appended (a different file that
// still parses), each in a folder of its own as an upgrade would have them.
struct TwoBuilds {
  test::TempDir t;
  fs::path old_lib, new_lib;
  TwoBuilds() {
    fs::create_directories(t.path / "old");
    fs::create_directories(t.path / "new");
    old_lib = t.path / "old" / "libcublas.so.13";
    new_lib = t.path / "new" / "libcublas.so.13";
    fs::copy_file(kToolkitCublas, old_lib);
    fs::copy_file(kToolkitCublas, new_lib);
    std::ofstream(new_lib, std::ios::app | std::ios::binary) << 'x';
  }
};

}  // namespace

TEST(LibrarySides, TwoCublasBuildsAreComparedByKqualsOwnGemmCall) {
  if (!fs::exists(kToolkitCublas)) GTEST_SKIP() << "no " << kToolkitCublas;
  TwoBuilds b;
  const fs::path out = b.t.path / "o";
  auto r = kq("compare " + test::quote(b.old_lib) + " " + test::quote(b.new_lib) + " --no-gpu --out " + test::quote(out));
  ASSERT_EQ(r.exit_code, 3) << r.output;
  const json j = json::parse(read_text_file(out / "results.json"));
  for (const char* side : {"old", "new"}) {
    EXPECT_EQ(j["sides"][side]["kind"], "library") << side;
    EXPECT_EQ(j["sides"][side]["loading_path"], "per module") << side;
    EXPECT_NE(j["sides"][side]["manifest_from"].get<std::string>().find("baselines/gemm/cublas"), std::string::npos);
    EXPECT_EQ(j["sides"][side]["candidate"]["contract"], "gemm");
  }
  EXPECT_NE(j["sides"]["old"]["image"]["sha256"], j["sides"]["new"]["image"]["sha256"]);
  const std::string diff_phase = j["phases"]["artifact_diff"].get<std::string>();
  EXPECT_NE(diff_phase.find("modules on sm_90: old "), std::string::npos) << diff_phase;
  EXPECT_GT(j["artifact_diff"]["kernels"].size(), 1000u);  // every kernel stays in the results
  EXPECT_EQ(j["verdict"]["decision"], "incomplete");
  // The memo summarises thousands of identical kernels instead of listing them.
  const std::string memo = read_text_file(out / "memo.md");
  EXPECT_NE(memo.find("| sm_90 |"), std::string::npos) << memo.substr(0, 3000);
  EXPECT_NE(memo.find("identical."), std::string::npos);
  EXPECT_EQ(memo.find("| `_Z10dot_kernel"), std::string::npos) << "identical kernels listed one by one";
  EXPECT_LT(std::count(memo.begin(), memo.end(), '\n'), 200);
}

TEST(LibrarySides, WhatCannotBeALibraryComparisonIsRefusedUpFront) {
  if (!fs::exists(kToolkitCublas)) GTEST_SKIP() << "no " << kToolkitCublas;
  TwoBuilds b;
  auto refused = [&](const std::string& args, const std::string& says) {
    const fs::path out = b.t.path / "refused";
    auto r = kq("compare " + args + " --no-gpu --out " + test::quote(out));
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.output;
    EXPECT_NE(r.output.find(says), std::string::npos) << args << "\n" << r.output;
    EXPECT_FALSE(fs::exists(out)) << "written although refused: " << args;
  };
  // cuBLASLt alone: kqual loads it with the libcublas beside it.
  fs::copy_file(b.old_lib, b.t.path / "libcublasLt.so.13");
  refused(test::quote(b.old_lib) + " " + test::quote(b.t.path / "libcublasLt.so.13"), "is cuBLASLt");
  // A library against a kernel artifact.
  refused(test::quote(b.old_lib) + " " + test::quote(kRoot / "candidates/residual_add_relu/good"), "is a library build");
  // The same bytes twice.
  fs::copy_file(b.old_lib, b.t.path / "libcublas.so.13");
  refused(test::quote(b.old_lib) + " " + test::quote(b.t.path / "libcublas.so.13"), "byte-identical");
  // Build options: a library is not built from source.
  refused(test::quote(b.old_lib) + " " + test::quote(b.new_lib) + " --new-mode ptx", "prebuilt");
  // A launch plan that calls no library routine.
  refused(test::quote(b.old_lib) + " " + test::quote(b.new_lib) + " --manifest " +
              test::quote(kRoot / "candidates/residual_add_relu/good"),
          "calls a library");
}

// One build only: the same file judged cuBLAS against cuBLASLt (issue 56's fallback) is a comparison,
// not "the same build twice"; the API is only for library sides and names one of the two.
TEST(LibrarySides, OneBuildIsJudgedCublasAgainstCublasLt) {
  if (!fs::exists(kToolkitCublas)) GTEST_SKIP() << "no " << kToolkitCublas;
  TwoBuilds b;
  const fs::path out = b.t.path / "lt";
  auto r = kq("compare " + test::quote(b.old_lib) + " --new-api cublaslt --no-gpu --out " + test::quote(out));
  ASSERT_EQ(r.exit_code, 3) << r.output;
  const json j = json::parse(read_text_file(out / "results.json"));
  EXPECT_EQ(j["sides"]["old"]["candidate"]["libraries"][0], "cublas.gemm<float>");
  EXPECT_EQ(j["sides"]["new"]["candidate"]["libraries"][0], "cublaslt.gemm<float>");
  EXPECT_NE(j["notes"].dump().find("one build of cuBLAS on both sides"), std::string::npos) << j["notes"].dump();
  auto refused = [&](const std::string& args, const std::string& says) {
    auto x = kq("compare " + args + " --no-gpu --out " + test::quote(b.t.path / "refused"));
    EXPECT_EQ(x.exit_code, 2) << args << "\n" << x.output;
    EXPECT_NE(x.output.find(says), std::string::npos) << args << "\n" << x.output;
  };
  refused(test::quote(b.old_lib) + " --new-api cublasXt", "is not cublas or cublaslt");
  refused(test::quote(b.old_lib) + " --old-api cublaslt --new-api cublaslt", "the same build");
  refused(test::quote(kRoot / "candidates/residual_add_relu/good") + " --old-mode ptx --new-api cublaslt", "for library sides");
}

TEST(LibrarySides, TheProbeRefusesAShapeItCannotCall) {
  // Checked before the driver is touched: the same answer with and without a GPU.
  auto r = kq("__startup-probe --library " + test::quote(kToolkitCublas) + " --library-shape 64,0,64");
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("is not m,n,k"), std::string::npos) << r.output;
  r = kq("__startup-probe --library " + test::quote(kToolkitCublas) + " --library-shape 64,64,64 --library-dtype i32");
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("is not f32, bf16 or f16"), std::string::npos) << r.output;
  r = kq("__startup-probe --library " + test::quote(kToolkitCublas) + " --library-shape 64,64,64 --library-api cublasXt");
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("is not cublas or cublaslt"), std::string::npos) << r.output;
}
