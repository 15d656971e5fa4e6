// The pipeline's shared phases: the target (device and arch) and the one writer of results.
#include <gtest/gtest.h>

#include <filesystem>

#include "kqual/core/error.hpp"
#include "kqual/core/files.hpp"
#include "kqual/pipeline/stages.hpp"
#include "test_util.hpp"

namespace kqual::pipeline {
namespace {
namespace fs = std::filesystem;

TEST(Stages, WithoutAGpuTheTargetIsTheArchOptionOrTheDefault) {
  Target t = open_target({false, 10, "sm_80"});
  EXPECT_FALSE(t.gpu());
  EXPECT_EQ(t.arch, "sm_80");
  EXPECT_EQ(t.arch_source, "--arch");
  EXPECT_EQ(t.why_no_gpu, "GPU phases disabled (--no-gpu)");
  EXPECT_TRUE(t.device_json().is_null());
  Target d = open_target({false, 10, ""});
  EXPECT_EQ(d.arch, KQUAL_DEFAULT_ARCH);
  EXPECT_EQ(d.arch_source, "default (no device)");
}

TEST(Stages, WriteResultsLeavesBothFilesAndNoPartials) {
  ScratchDir t("kqual-stages-test");
  const fs::path dir = t.path() / "out";
  Written w = write_results(dir, json{{"a", 1}}, "# memo\n");
  EXPECT_EQ(json::parse(read_text_file(w.results)).at("a"), 1);
  EXPECT_EQ(read_text_file(w.memo), "# memo\n");
  int files = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    ++files;
    EXPECT_EQ(e.path().filename().string().find("partial"), std::string::npos) << e.path();
  }
  EXPECT_EQ(files, 2);
}

TEST(Stages, AFailedWriteLeavesThePreviousPairAndNoPartials) {
  ScratchDir t("kqual-stages-test");
  const fs::path dir = t.path() / "out";
  write_results(dir, json{{"run", 1}}, "first\n");
  // The memo's temporary name is taken by a folder: the second write fails half-way.
  fs::create_directories(dir / ".memo.md.partial" / "x");
  EXPECT_THROW(write_results(dir, json{{"run", 2}}, "second\n"), std::exception);
  EXPECT_EQ(json::parse(read_text_file(dir / "results.json")).at("run"), 1);
  EXPECT_EQ(read_text_file(dir / "memo.md"), "first\n");
  EXPECT_FALSE(fs::exists(dir / ".results.json.partial"));
}

}  // namespace
}  // namespace kqual::pipeline
