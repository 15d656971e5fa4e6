// What kqual writes where: results on stdout, progress lines on stderr (silenced by --quiet, before
// or after the command), and never an ANSI colour sequence (https://no-color.org: kqual emits no
// colour at all, so NO_COLOR holds trivially; the source scan below keeps it so).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <vector>

#include "kqual/core/files.hpp"
#include "kqual/core/json.hpp"
#include "test_util.hpp"

namespace kqual {
namespace {
namespace fs = std::filesystem;

struct Streams {
  int exit_code = -1;
  std::string out, err;
};

// Runs `kqual ARGS` with stdout and stderr kept apart; `env` is prepended (VAR=value ...).
Streams run_kqual(const std::string& args, const std::string& env = "") {
  ScratchDir d("kqual-output-test");
  const fs::path o = d.path() / "out", e = d.path() / "err";
  auto r = test::run("(" + env + " " + test::quote(test::kqual_exe()) + " " + args + " >" + test::quote(o) + " 2>" +
                     test::quote(e) + ")");
  return {r.exit_code, read_text_file(o), read_text_file(e)};
}

std::string good() { return test::quote(test::repo_root() / "candidates/residual_add_relu/good"); }

TEST(Output, ProgressOnStderrResultsOnStdout) {
  ScratchDir out("kqual-output-test");
  const Streams s = run_kqual("qualify --no-gpu " + good() + " --out " + test::quote(out.path()));
  ASSERT_EQ(s.exit_code, 3) << s.out << s.err;
  EXPECT_NE(s.out.find("verdict: incomplete"), std::string::npos) << s.out;
  EXPECT_EQ(s.out.find("kqual qualify ["), std::string::npos) << "progress on stdout:\n" << s.out;
  EXPECT_NE(s.err.find("kqual qualify ["), std::string::npos) << s.err;
  for (const char* phase : {"] manifest:", "] compile: add_relu_vec for sm_90", "] compile: 2 baseline(s)", "] no GPU:",
                            "] verdict: incomplete"})
    EXPECT_NE(s.err.find(phase), std::string::npos) << phase << "\n" << s.err;
}

TEST(Output, EachCommandNamesItselfAndJsonStdoutStaysParseable) {
  ScratchDir out("kqual-output-test");
  const Streams s = run_kqual("--json check --no-gpu " + good() + " --out " + test::quote(out.path()));
  ASSERT_EQ(s.exit_code, 3) << s.err;
  EXPECT_NE(s.err.find("kqual check ["), std::string::npos) << s.err;
  const json j = json::parse(s.out);  // nothing but the document on stdout
  EXPECT_EQ(j.at("schema"), "kqual.check/1");
}

TEST(Output, QuietSilencesProgressBeforeOrAfterTheCommand) {
  ScratchDir out("kqual-output-test");
  for (const std::string& args : std::vector<std::string>{"--quiet qualify --no-gpu " + good(), "qualify --quiet --no-gpu " + good()}) {
    const Streams s = run_kqual(args + " --out " + test::quote(out.path()));
    EXPECT_EQ(s.exit_code, 3) << args << "\n" << s.err;
    EXPECT_TRUE(s.err.empty()) << args << "\n" << s.err;
    EXPECT_NE(s.out.find("verdict: incomplete"), std::string::npos);
  }
  // Every long command takes --quiet.
  for (const char* cmd : {"qualify", "check", "bench", "selftest", "compare", "startup", "inspect"}) {
    const Streams s = run_kqual(std::string(cmd) + " --help");
    EXPECT_NE(s.out.find("--quiet"), std::string::npos) << cmd;
  }
}

// Help shows each command's own options and no framework leftovers: no stored flag value beside a
// name ("{false}"), no positional count ("(1x)"), and check (correctness only) no timing option.
TEST(Output, HelpHasNoFrameworkLeftoversAndCheckNoTimingOptions) {
  for (const char* cmd : {"qualify", "check", "bench", "selftest", "compare", "screen", "inspect", "import-triton", "model", "explain",
                          "startup", "report", "decide", "contracts", "import-definition", "slurm", "import-kernelbench", "replay",
                          "judge"}) {
    const Streams s = run_kqual(std::string(cmd) + " --help");
    EXPECT_EQ(s.exit_code, 0) << cmd << "\n" << s.err;
    for (const char* leftover : {"{false}", "{true}", "(1x)", "(2x)", "INT:INT", "FLOAT:FLOAT", "INT:POSITIVE", "FLOAT:POSITIVE", "TEXT:{"})
      EXPECT_EQ(s.out.find(leftover), std::string::npos) << cmd << " --help shows " << leftover << ":\n" << s.out;
  }
  const Streams check = run_kqual("check --help");
  for (const char* timing : {"--rounds", "--samples", "--l2-flush", "--timer", "--margin", "--regression-limit", "--profile",
                             "--torch-baselines", "--verify-launches", "--clock-guard", "--sizes"})
    EXPECT_EQ(check.out.find(timing), std::string::npos) << "check takes no timing option, yet lists " << timing;
  const Streams qualify = run_kqual("qualify --help");
  for (const char* timing : {"--rounds", "--l2-flush", "--margin", "--recheck-baselines"})
    EXPECT_NE(qualify.out.find(timing), std::string::npos) << "qualify lists " << timing;
  EXPECT_NE(run_kqual("inspect --help").out.find("artifact [artifact]"), std::string::npos);
  // A value's range, choices and default in words.
  EXPECT_NE(qualify.out.find("--samples INT in [2, 100000], default 10"), std::string::npos) << qualify.out;
  EXPECT_NE(qualify.out.find("--l2-flush {write,clean,invalidate,none}, default write"), std::string::npos) << qualify.out;
}

TEST(Output, NoAnsiColourWithOrWithoutNoColor) {
  ScratchDir out("kqual-output-test");
  for (const std::string env : {"TERM=xterm-256color CLICOLOR_FORCE=1", "TERM=xterm-256color NO_COLOR=1"}) {
    for (const std::string& args : std::vector<std::string>{"--help", "qualify --no-gpu " + good() + " --out " + test::quote(out.path()),
                                                           "qualify /nonexistent", "model waves --tiles 96 --slots 80"}) {
      const Streams s = run_kqual(args, env);
      EXPECT_EQ(s.out.find('\x1b'), std::string::npos) << env << " " << args;
      EXPECT_EQ(s.err.find('\x1b'), std::string::npos) << env << " " << args;
    }
  }
}

// Fewer fresh processes than the decision rule needs could only end inconclusive after minutes on a GPU:
// compare refuses them at once (exit 2), naming the minimum, and writes nothing.
TEST(Output, CompareRefusesTooFewProcessesForAVerdict) {
  ScratchDir out("kqual-compare-too-few");
  const std::string g = good();
  for (const char* opts : {"--processes 4", "--startup-runs 4 --startup-max-runs 6", "--startup-runs 8 --startup-max-runs 6"}) {
    const Streams s = run_kqual("compare " + g + " " + g + " " + opts + " --out " + test::quote(out.path() / "r"));
    EXPECT_EQ(s.exit_code, 2) << opts << "\n" << s.err;
    EXPECT_NE(s.err.find("at least"), std::string::npos) << opts << "\n" << s.err;
    EXPECT_FALSE(fs::exists(out.path() / "r")) << opts;
  }
}

// Colour would have to be written somewhere in the sources: nothing there does. Adding it means one
// helper that honours NO_COLOR and whether the stream is a terminal, listed here as the exception.
TEST(Output, SourcesWriteNoAnsiEscapes) {
  const fs::path root = test::repo_root();
  for (const char* dir : {"src", "include", "tools"})
    for (const auto& e : fs::recursive_directory_iterator(root / dir)) {
      if (!e.is_regular_file()) continue;
      const std::string text = read_text_file(e.path());
      for (const char* needle : {"\\033[", "\\x1b[", "\\x1B[", "\\e[", "fmt/color.h", "fmt::fg(", "fmt::bg("})
        EXPECT_EQ(text.find(needle), std::string::npos) << e.path() << " writes " << needle;
    }
}

}  // namespace
}  // namespace kqual
