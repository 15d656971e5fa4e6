// NVRTC compilation of every bundled candidate and baseline (CPU only: NVRTC needs no GPU).
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <utility>

#include "kqual/core/error.hpp"
#include "kqual/core/files.hpp"
#include "kqual/cuda/nvrtc.hpp"
#include "kqual/check/evaluate.hpp"
#include "test_util.hpp"

namespace kqual::build {
namespace {
namespace fs = std::filesystem;

// The kind and message of the Error `f` throws; a failure, and an empty message, where it throws none.
template <class F>
std::pair<ErrorKind, std::string> thrown(F f) {
  try {
    f();
  } catch (const Error& e) {
    return {e.kind(), e.what()};
  }
  ADD_FAILURE() << "no error thrown";
  return {ErrorKind::internal, ""};
}

TEST(Compile, EveryBundledCandidateAndBaselineCompilesForSm90) {
  ScratchDir out("kqual-compile-test");
  int n = 0;
  for (const char* sub : {"candidates", "baselines"})
    for (const auto& e : fs::recursive_directory_iterator(test::repo_root() / sub)) {
      if (e.path().filename() != "kqual.toml") continue;
      Manifest m = load_manifest(e.path());
      if (m.source.empty()) continue;  // a library baseline (CUB, cuBLAS) or a prebuilt image: nothing to compile
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

// Every kind of build makes the folder it is given: the screen's timer builds each baseline into a
// folder of its own that nothing made before (an NVRTC build that did not failed every timing there).
TEST(Compile, EachBuildMakesTheFolderItWritesInto) {
  ScratchDir out("kqual-compile-folder");
  int n = 0;
  for (const char* rel : {"candidates/residual_add_relu/good", "baselines/residual_add_relu/eager"}) {
    const fs::path dir = out.path() / "not" / std::to_string(n++) / "yet";
    BuiltCandidate b = build_candidate(load_manifest(test::repo_root() / rel / "kqual.toml"), "sm_90", dir);
    EXPECT_TRUE(fs::is_regular_file(b.image_path)) << rel;
    EXPECT_EQ(b.image_path.parent_path(), dir) << rel;
  }
}

// A candidate that asks selftest for kqual's hash-slot address ([expect] given_hash_slots) must
// define the unmangled global the worker writes it into; the ones that do not ask, must not.
TEST(Compile, CandidatesGivenHashSlotsDefineTheGlobalByItsPlainName) {
  ScratchDir out("kqual-compile-hash-slots");
  int given = 0;
  for (const auto& e : fs::recursive_directory_iterator(test::repo_root() / "candidates")) {
    if (e.path().filename() != "kqual.toml") continue;
    Manifest m = load_manifest(e.path());
    if (m.source.empty()) continue;
    const std::string src = read_text_file(m.source);
    if (!m.expect_given_hash_slots && src.find("kqual_test_hash_slots") == std::string::npos) continue;
    BuiltCandidate b = build_candidate(m, "sm_90", out.path());
    MappedFile img = MappedFile::open_read(b.image_path);
    const std::string bytes(reinterpret_cast<const char*>(img.data()), img.size());
    const bool has = bytes.find(std::string("kqual_test_hash_slots") + '\0') != std::string::npos;
    EXPECT_EQ(has, m.expect_given_hash_slots) << e.path();
    given += m.expect_given_hash_slots;
  }
  EXPECT_GE(given, 1);
}

TEST(Compile, CompileErrorsCarryTheLog) {
  cuda::NvrtcRequest r;
  r.source = "__global__ void k() { this is not cuda; }";
  r.source_name = "bad.cu";
  const auto [kind, what] = thrown([&] { cuda::nvrtc_compile(r); });
  EXPECT_EQ(kind, ErrorKind::nvrtc);
  EXPECT_NE(what.find("bad.cu"), std::string::npos) << what;
}

// A launch whose kernel name the source does not define is said in the manifest's words (which
// launch, the name as written, the kernels the source declares), not as NVRTC's log of the file it
// generates for name lookups (`__nv_name_map(2): error: identifier "swish" is undefined`).
TEST(Compile, AKernelNameNotInTheSourceIsAnInputErrorNamingTheLaunch) {
  ScratchDir dir("kqual-compile-kernel-name");
  const fs::path good = test::repo_root() / "candidates/residual_add_relu/good";
  fs::copy_file(good / "kernel.cu", dir.path() / "kernel.cu");
  std::string toml = read_text_file(good / "kqual.toml");
  const std::string written = "kernel = \"add_relu_vec<{T}>\"";
  ASSERT_NE(toml.find(written), std::string::npos);
  for (const char* wrong : {"swish<{T}>", "add_relu_vec<{T}, 3>"}) {
    std::string t = toml;
    t.replace(t.find(written), written.size(), std::string("kernel = \"") + wrong + "\"");
    write_file_atomic(dir.path() / "kqual.toml", t);
    try {
      build_candidate(load_manifest(dir.path() / "kqual.toml"), "sm_90", dir.path() / "out");
      FAIL() << wrong << " compiled";
    } catch (const Error& e) {
      const std::string what = e.what();
      EXPECT_EQ(e.kind(), ErrorKind::input) << what;
      for (const std::string& part : {(dir.path() / "kqual.toml").string(), std::string("launch[0].kernel: '") + wrong + "'",
                                      std::string("is not a kernel of kernel.cu"),
                                      std::string("the __global__ functions kernel.cu declares: add_relu_vec")})
        EXPECT_NE(what.find(part), std::string::npos) << part << "\n" << what;
      EXPECT_EQ(what.find("__nv_name_map"), std::string::npos) << what;
      EXPECT_EQ(what.find("kernel.cu(73)"), std::string::npos) << "the source's warnings are not the message: " << what;
    }
  }
  // An error in the source itself keeps NVRTC's log: the kernel's name is not the problem there.
  write_file_atomic(dir.path() / "kernel.cu", read_text_file(good / "kernel.cu") + "\nthis is not cuda;\n");
  write_file_atomic(dir.path() / "kqual.toml", toml);
  const auto [kind, what] = thrown([&] { build_candidate(load_manifest(dir.path() / "kqual.toml"), "sm_90", dir.path() / "out"); });
  EXPECT_EQ(kind, ErrorKind::nvrtc) << what;
  EXPECT_NE(what.find("--- NVRTC log ---"), std::string::npos) << what;
}

// A target NVRTC does not take is named with the forms it does take, before NVRTC runs
// (NVRTC itself says only NVRTC_ERROR_INVALID_OPTION).
TEST(Compile, ATargetNvrtcDoesNotTakeIsNamedWithTheFormsItTakes) {
  for (const char* ok : {"sm_90", "sm_90a", "compute_90", "sm_80"}) EXPECT_EQ(cuda::nvrtc_target_problem(ok), "") << ok;
  for (const char* bad : {"banana", "sm_9", "sm_1000", "90", "sm_90x", "compute_"}) {
    const std::string p = cuda::nvrtc_target_problem(bad);
    EXPECT_NE(p.find(std::string("'") + bad + "'"), std::string::npos) << p;
    EXPECT_NE(p.find("sm_XX"), std::string::npos) << p;
    EXPECT_NE(p.find("compute_XX"), std::string::npos) << p;
  }
  cuda::NvrtcRequest r;
  r.source = "__global__ void k() {}";
  r.arch = "banana";
  const auto [kind, what] = thrown([&] { cuda::nvrtc_compile(r); });
  EXPECT_EQ(kind, ErrorKind::usage);
  EXPECT_EQ(what.find("NVRTC_ERROR"), std::string::npos) << what;
}

}  // namespace
}  // namespace kqual::build
