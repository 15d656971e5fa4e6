// Reading compute-sanitizer logs: findings classified by what they mean for a candidate, the
// allocation size the tool names (kqual matches it to a tensor), racecheck's warnings kept apart.
#include <gtest/gtest.h>

#include <fstream>

#include "kqual/core/files.hpp"
#include "kqual/worker/sanitizer.hpp"

namespace kqual::worker {
namespace {

SanitizerLog parse(const std::string& text) {
  ScratchDir d("kqual-sanitizer-test");
  std::ofstream(d.path() / "log") << text;
  return read_sanitizer_log(d.path() / "log");
}

TEST(SanitizerLog, MemcheckReadPastAnAllocationIsAnOutOfBoundsRead) {
  const SanitizerLog l = parse(
      "========= COMPUTE-SANITIZER\n"
      "========= Invalid __global__ read of size 16 bytes\n"
      "=========     at add_relu_vec4(const float *, const float *, float *, long long)+0x1a0\n"
      "=========     by thread (63,0,0) in block (3,0,0)\n"
      "=========     Address 0x7f3a00000ffc is 4 bytes after the nearest allocation at 0x7f3a00000000 of size 4092 bytes\n"
      "=========     Saved host backtrace up to driver entry point at kernel launch time\n"
      "=========         Host Frame: [0x2f3c1] in libcuda.so.1\n"
      "=========\n"
      "========= ERROR SUMMARY: 1 error\n");
  EXPECT_TRUE(l.written);
  EXPECT_EQ(l.errors, 1);
  ASSERT_EQ(l.findings.size(), 1u);
  EXPECT_EQ(l.findings[0].code, "out_of_bounds_read");
  EXPECT_EQ(l.findings[0].allocation_bytes, 4092u);
  EXPECT_EQ(l.findings[0].context.size(), 3u);  // stops at the host backtrace
}

TEST(SanitizerLog, RacecheckErrorsAreRacesAndWarningsAreNot) {
  const SanitizerLog l = parse(
      "========= COMPUTE-SANITIZER\n"
      "========= Error: Race reported between Write access at scan_tile+0x2b0\n"
      "=========     and Read access at scan_tile+0x290 [1024 hazards]\n"
      "=========\n"
      "========= WARNING: Race reported between Write access at reduce+0x100\n"
      "=========     and Write access at reduce+0x100 [32 hazards]\n"
      "=========\n"
      "========= RACECHECK SUMMARY: 2 hazards displayed (1 error, 1 warning)\n"
      "========= ERROR SUMMARY: 1 error\n");
  ASSERT_EQ(l.findings.size(), 2u);
  EXPECT_EQ(l.findings[0].code, "race");
  EXPECT_EQ(l.findings[1].code, "race_warning");
  EXPECT_EQ(l.errors, 1);
}

TEST(SanitizerLog, RacechecksOwnSummaryCountsItsErrors) {
  EXPECT_EQ(parse("========= COMPUTE-SANITIZER\n========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)\n").errors, 0);
  EXPECT_EQ(parse("========= RACECHECK SUMMARY: 3 hazards displayed (2 errors, 1 warning)\n").errors, 2);
}

TEST(SanitizerLog, CleanAndMissingLogsAreToldApart) {
  const SanitizerLog clean = parse("========= COMPUTE-SANITIZER\n========= ERROR SUMMARY: 0 errors\n");
  EXPECT_TRUE(clean.written);
  EXPECT_EQ(clean.errors, 0);
  EXPECT_TRUE(clean.findings.empty());
  const SanitizerLog died = parse("========= COMPUTE-SANITIZER\n");
  EXPECT_EQ(died.errors, -1);  // no summary: the worker did not finish
  const SanitizerLog none = read_sanitizer_log("/nonexistent/kqual/sanitizer.log");
  EXPECT_FALSE(none.written);
}

}  // namespace
}  // namespace kqual::worker
