// Progress lines: "kqual <command> [<elapsed> s] <line>", one write each; nothing when quiet.
#include <gtest/gtest.h>

#include <cstdio>
#include <regex>
#include <string>

#include "kqual/core/progress.hpp"

namespace kqual {
namespace {

std::string contents(std::FILE* f) {
  std::fflush(f);
  std::rewind(f);
  std::string s;
  char buf[256];
  while (std::size_t n = std::fread(buf, 1, sizeof buf, f)) s.append(buf, n);
  return s;
}

TEST(Progress, OneLinePerPhaseWithElapsedSeconds) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  Progress p("qualify", true, f);
  p.say("compile: add_relu_vec for sm_90");
  ProgressFn sink = p.sink();
  ASSERT_TRUE(sink);
  sink("timing: shape 1/3 n=4096");
  const std::string out = contents(f);
  std::fclose(f);
  EXPECT_TRUE(std::regex_match(out, std::regex(R"((kqual qualify \[ *[0-9]+\.[0-9] s\] [^\n]+\n){2})"))) << out;
  EXPECT_NE(out.find("] compile: add_relu_vec for sm_90\n"), std::string::npos);
  EXPECT_NE(out.find("] timing: shape 1/3 n=4096\n"), std::string::npos);
  EXPECT_GE(p.elapsed_s(), 0.0);
}

TEST(Progress, QuietDropsEverything) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  Progress p("compare", false, f);
  p.say("startup: block 1/4");
  EXPECT_FALSE(p.sink());  // callers can skip building lines
  EXPECT_TRUE(contents(f).empty());
  std::fclose(f);
}

}  // namespace
}  // namespace kqual
