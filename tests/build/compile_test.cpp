// NVRTC compilation of every bundled candidate and baseline (CPU only: NVRTC needs no GPU).
#include <gtest/gtest.h>

#include <filesystem>

#include "kqual/core/error.hpp"
#include "kqual/core/files.hpp"
#include "kqual/cuda/nvrtc.hpp"
#include "kqual/check/evaluate.hpp"
#include "test_util.hpp"

namespace kqual::build {
namespace {
namespace fs = std::filesystem;

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
}  // namespace kqual::build
