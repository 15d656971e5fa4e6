// The pipeline's shared phases: the target (device and arch) and the one writer of results.
#include <gtest/gtest.h>

#include <filesystem>

#include "kqual/core/error.hpp"
#include "kqual/core/files.hpp"
#include "kqual/pipeline/qualify.hpp"
#include "kqual/pipeline/phases.hpp"
#include "test_util.hpp"

namespace kqual::pipeline {
namespace {
namespace fs = std::filesystem;

TEST(TargetAndWrite, WithoutAGpuTheTargetIsTheArchOptionOrTheDefault) {
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

TEST(TargetAndWrite, WriteResultsLeavesBothFilesAndNoPartials) {
  ScratchDir t("kqual-stages-test");
  const fs::path dir = t.path() / "out";
  Written w = write_results(dir, json{{"a", 1}}, {{"memo.md", "# memo\n"}});
  EXPECT_EQ(json::parse(read_text_file(w.results)).at("a"), 1);
  ASSERT_EQ(w.files.size(), 1u);
  EXPECT_EQ(read_text_file(w.files[0]), "# memo\n");
  int files = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    ++files;
    EXPECT_EQ(e.path().filename().string().find("partial"), std::string::npos) << e.path();
  }
  EXPECT_EQ(files, 2);
}

TEST(TargetAndWrite, AFailedWriteLeavesThePreviousPairAndNoPartials) {
  ScratchDir t("kqual-stages-test");
  const fs::path dir = t.path() / "out";
  write_results(dir, json{{"run", 1}}, {{"memo.md", "first\n"}});
  // The memo's temporary name is taken by a folder: the second write fails half-way.
  fs::create_directories(dir / ".memo.md.partial" / "x");
  EXPECT_THROW(write_results(dir, json{{"run", 2}}, {{"memo.md", "second\n"}}), std::exception);
  EXPECT_EQ(json::parse(read_text_file(dir / "results.json")).at("run"), 1);
  EXPECT_EQ(read_text_file(dir / "memo.md"), "first\n");
  EXPECT_FALSE(fs::exists(dir / ".results.json.partial"));
}

// screen's set (summary.md, ranking.html) in the one write; bytes that are not UTF-8 (a compiler's output
// quoted in a reason) are replaced, not a failed write; results.json alone (selftest --out) is a set too.
TEST(TargetAndWrite, EveryFileOfTheSetIsWrittenAndBadUtf8IsReplaced) {
  ScratchDir t("kqual-stages-test");
  const fs::path dir = t.path() / "out";
  const Written w = write_results(dir, json{{"reason", std::string("ptxas: \xff\xfe bytes")}},
                                  {{"summary.md", "# summary\n"}, {"ranking.html", "<html></html>\n"}});
  ASSERT_EQ(w.files.size(), 2u);
  EXPECT_EQ(w.files[0], dir / "summary.md");
  EXPECT_EQ(read_text_file(dir / "ranking.html"), "<html></html>\n");
  const std::string reason = json::parse(read_text_file(w.results)).at("reason");
  EXPECT_NE(reason.find("ptxas: "), std::string::npos) << reason;
  EXPECT_EQ(reason.find('\xff'), std::string::npos) << reason;
  const fs::path alone = t.path() / "alone";
  EXPECT_TRUE(write_results(alone, json{{"a", 2}}, {}).files.empty());
  EXPECT_EQ(json::parse(read_text_file(alone / "results.json")).at("a"), 2);
}

// A candidate is timed at a dtype it claims: its first claim when none is asked for; a --dtype it
// does not claim is a usage error (it would refuse every shape, and that refusal is not its failure).
TEST(TargetAndWrite, TheTimingDtypeIsOneTheCandidateClaims) {
  EXPECT_EQ(timing_dtype("", {DType::f16}, "candidate x"), DType::f16);
  EXPECT_EQ(timing_dtype("", {DType::bf16, DType::f32}, "candidate x"), DType::bf16);
  EXPECT_EQ(timing_dtype("f32", {DType::bf16, DType::f32}, "candidate x"), DType::f32);
  try {
    timing_dtype("f32", {DType::f16}, "candidate x");
    FAIL() << "timed an f16-only candidate at f32";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::usage);
    EXPECT_NE(std::string(e.what()).find("claims f16"), std::string::npos) << e.what();
  }
  EXPECT_THROW(timing_dtype("f33", {DType::f16}, "candidate x"), Error);
}

// qualify of the bundled f16-only candidate: with no --dtype it goes on (the static phases, exit 3
// without a GPU); with --dtype f32 it stops before any GPU work, naming the claim.
TEST(TargetAndWrite, QualifyOfAnF16OnlyCandidateNeverTimesItAtF32) {
  ScratchDir t("kqual-stages-test");
  QualifyOptions o;
  o.candidate = test::repo_root() / "candidates/residual_add_relu/good/f16";
  o.out_dir = t.path() / "out";
  o.use_gpu = false;
  EXPECT_EQ(qualify(o).exit_code, 3);
  o.dtype = "f32";
  try {
    qualify(o);
    FAIL() << "qualify accepted --dtype f32 for an f16-only candidate";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::usage) << e.what();
  }
}

}  // namespace
}  // namespace kqual::pipeline
