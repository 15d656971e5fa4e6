// Every command, fed an input that is not there and an output it cannot write, as a user mistypes
// them: exit 2 (never 4, "internal error"), a message that names the option and the path, and
// nothing left behind. The tables must name every command that `kqual --help` reaches (checked
// against make_app), and every --out, --html and --md option.
#include <gtest/gtest.h>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "kqual/core/files.hpp"
#include "kqual/run/cli.hpp"
#include "kqual/run/user_paths.hpp"
#include "test_util.hpp"

namespace kqual {
namespace {
namespace fs = std::filesystem;

// A command line with placeholders: {m} the missing path, {o} the output path; {cand} a candidate
// folder, {art} a PTX file, {file} some existing file, {dir} some existing folder.
struct PathCase {
  std::string line;
  std::string option;  // the option or positional the message must name
};

const std::vector<PathCase>& missing_input_cases() {
  static const std::vector<PathCase> c = {
      {"qualify {m} --no-gpu", "candidate"},
      {"qualify {cand} --no-gpu --profile {m}", "--profile"},
      {"qualify {cand} --no-gpu --contracts {m}", "--contracts"},
      {"qualify {cand} --no-gpu --baselines {m}", "--baselines"},
      {"check {m} --no-gpu", "candidate"},
      {"bench {m} --no-gpu", "candidate"},
      {"selftest --root {m}", "--root"},
      {"selftest --contracts {m}", "--contracts"},
      {"compare {m} --no-gpu", "old"},
      {"compare {cand} {m} --no-gpu", "new"},
      {"compare {art} --manifest {m} --no-gpu", "--manifest"},
      {"compare {cand} --profile {m} --no-gpu", "--profile"},
      {"screen {m} --no-gpu", "candidates"},
      {"screen {cand} --no-gpu --timing --profile {m}", "--profile"},
      {"screen merge {m}", "dirs"},
      {"inspect {m}", "artifact"},
      {"inspect --diff {art} {m}", "artifact"},
      {"import-triton {m} --out {o}", "cache_dir"},
      {"model service --arrivals trace:{m}", "--arrivals"},
      {"model service --service file:{m}", "--service"},
      {"startup {m}", "artifact"},
      {"startup-torch --profile {m}", "--profile"},
      {"report {m}", "results"},
      {"decide {m}", "results"},
      {"decide {file} --profile {m}", "--profile"},
      {"contracts --dir {m}", "--dir"},
      {"import-definition {m} --out {o}", "definition"},
      {"import-definition {file} --workloads {m} --out {o}", "--workloads"},
      {"slurm screen {m} --tasks 2 --dry-run", "candidates"},
      {"slurm screen {cand} --tasks 2 --dry-run --kqual {m}", "--kqual"},
      {"import-kernelbench {m} --out {o}", "problem"},
      {"import-kernelbench {file} --capture {m} --out {o}", "--capture"},
      {"replay {m} --out {o}", "results"},
      {"replay {file} --out {o} --contracts {m}", "--contracts"},
      {"judge residual_add_relu --case f32/n=3/normal {m}", "outputs"},
      {"judge residual_add_relu --case f32/n=3/normal --contracts {m}", "--contracts"},
  };
  return c;
}

// Outputs: each is run with {o} an existing file (a folder for file outputs), a path under a file,
// and a path in /proc (no new files there, for root too).
struct OutputCase {
  std::string line;
  std::string option;
  bool file = false;  // the option names a file to write (else a folder)
};

const std::vector<OutputCase>& output_cases() {
  static const std::vector<OutputCase> c = {
      {"qualify {cand} --no-gpu --out {o}", "--out"},
      {"check {cand} --no-gpu --out {o}", "--out"},
      {"bench {cand} --no-gpu --out {o}", "--out"},
      {"selftest --contract residual_add_relu --out {o}", "--out"},
      {"compare {cand} --no-gpu --old-mode ptx --out {o}", "--out"},
      {"screen {cand} --no-gpu --out {o}", "--out"},
      {"screen merge {dir} --out {o}", "--out"},
      {"slurm screen {cand} --tasks 2 --dry-run --out {o}", "--out"},
      {"import-triton {dir} --out {o}", "--out"},
      {"startup {art} --out {o}", "--out", true},
      {"startup-torch --out {o}", "--out"},
      {"report {file} --html {o}", "--html", true},
      {"report {file} --md {o}", "--md", true},
      {"import-definition {file} --out {o}", "--out"},
      {"import-kernelbench {file} --out {o}", "--out"},
      {"replay {file} --out {o}", "--out"},
  };
  return c;
}

// Commands that read and write no path named on their command line.
const std::set<std::string>& pathless_commands() {
  static const std::set<std::string> c = {"model roofline", "model waves",    "model amdahl",    "model breakeven",
                                          "explain scan",   "explain transpose", "explain softmax", "explain waves"};
  return c;
}

void replace_all(std::string& s, const std::string& from, const std::string& to) {
  for (std::size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) s.replace(at, from.size(), to);
}

// The folder a case runs in: {file} and {dir} live there, so that what a run leaves behind shows.
class UserPaths : public ::testing::Test {
 protected:
  void SetUp() override {
    std::ofstream(dir_.path() / "afile") << "not a folder\n";
    fs::create_directories(dir_.path() / "adir");
  }
  std::string expand(std::string line, const fs::path& missing, const std::string& out) const {
    replace_all(line, "{m}", missing.string());
    replace_all(line, "{o}", out);
    replace_all(line, "{cand}", (test::repo_root() / "candidates/residual_add_relu/good").string());
    replace_all(line, "{art}", (test::repo_root() / "candidates/residual_add_relu/prebuilt/add_relu_vec.compute_80.ptx").string());
    replace_all(line, "{file}", (dir_.path() / "afile").string());
    replace_all(line, "{dir}", (dir_.path() / "adir").string());
    return line;
  }
  test::CommandResult run(const std::string& line) const {
    return test::run("cd " + test::quote(dir_.path()) + " && " + test::kq() + " " + line);
  }
  // Only what SetUp made: no output folder, no temporary, no write probe.
  void expect_nothing_left(const std::string& line) const {
    std::vector<std::string> names;
    for (const auto& e : fs::recursive_directory_iterator(dir_.path())) names.push_back(fs::relative(e.path(), dir_.path()).string());
    std::sort(names.begin(), names.end());
    EXPECT_EQ(names, (std::vector<std::string>{"adir", "afile"})) << line;
  }
  ScratchDir dir_{"kqual-user-paths"};
};

TEST_F(UserPaths, AMissingInputIsExit2NamingTheOptionAndThePath) {
  for (const PathCase& c : missing_input_cases()) {
    const fs::path missing = dir_.path() / "no-such-input";
    const std::string line = expand(c.line, missing, (dir_.path() / "new-out").string());
    const test::CommandResult r = run(line);
    EXPECT_EQ(r.exit_code, 2) << line << "\n" << r.output;
    EXPECT_TRUE(test::contains(r.output, missing.string())) << line << "\n" << r.output;
    EXPECT_TRUE(test::contains(r.output, c.option)) << line << "\n" << r.output;
    EXPECT_FALSE(test::contains(r.output, "internal error")) << line << "\n" << r.output;
    expect_nothing_left(line);
  }
}

TEST_F(UserPaths, AnOutputThatCannotBeWrittenIsExit2NamingTheOptionAndThePath) {
  for (const OutputCase& c : output_cases()) {
    const std::string existing = (dir_.path() / (c.file ? "adir" : "afile")).string();  // the wrong kind
    for (const std::string& out : {existing, (dir_.path() / "afile/sub").string(),
                                   std::string(c.file ? "/proc/kqual-test-out.json" : "/proc/kqual-test-out")}) {
      const std::string line = expand(c.line, dir_.path() / "unused", out);
      const test::CommandResult r = run(line);
      EXPECT_EQ(r.exit_code, 2) << line << "\n" << r.output;
      EXPECT_TRUE(test::contains(r.output, c.option + ": " + out)) << line << "\n" << r.output;
      EXPECT_FALSE(test::contains(r.output, "internal error")) << line << "\n" << r.output;
      expect_nothing_left(line);
    }
  }
}

// qualify's --out has a default (kqual-out, in the working directory): it is checked as a given one.
TEST_F(UserPaths, TheDefaultOutputIsCheckedToo) {
  const test::CommandResult r = test::run("cd /proc && " + test::kq() + " qualify --no-gpu " +
                                          test::quote(test::repo_root() / "candidates/residual_add_relu/good"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(test::contains(r.output, "--out: kqual-out cannot be written")) << r.output;
  // Only the command that runs: `screen merge` writes its own --out, not screen's kqual-screen.
  ScratchDir shard("kqual-user-paths");
  const test::CommandResult merge =
      test::run("cd /proc && " + test::kq() + " screen merge " + test::quote(shard.path()) + " --out " + test::quote(dir_.path() / "merged"));
  EXPECT_FALSE(test::contains(merge.output, "kqual-screen")) << merge.output;
  EXPECT_TRUE(test::contains(merge.output, "holds neither results.json nor journal.jsonl")) << merge.output;
}

// The tables above reach every command: each one `kqual --help` lists (and each of their
// sub-commands) starts a case or is named as reading no path; every --out/--html/--md is an output case.
TEST(UserPathTables, CoverEveryCommandAndEveryOutputOption) {
  run::CliState s;
  auto app = run::make_app(s, /*run_commands=*/true);
  std::vector<std::pair<std::string, const CLI::App*>> commands;
  auto visible = [](const CLI::App* a) { return !a->get_group().empty(); };
  for (const CLI::App* a : app->get_subcommands(visible)) {
    commands.emplace_back(a->get_name(), a);
    for (const CLI::App* sub : a->get_subcommands(visible)) commands.emplace_back(a->get_name() + " " + sub->get_name(), sub);
  }
  EXPECT_GE(commands.size(), 25u);
  auto starts = [](const std::string& line, const std::string& command) { return line.rfind(command + " ", 0) == 0; };
  for (const auto& entry : commands) {
    const std::string& name = entry.first;
    const CLI::App* cmd = entry.second;
    bool covered = std::any_of(pathless_commands().begin(), pathless_commands().end(),
                               [&](const std::string& p) { return p == name || starts(p, name); });
    for (const PathCase& c : missing_input_cases()) covered = covered || starts(c.line, name);
    EXPECT_TRUE(covered) << "kqual " << name << ": no missing-input case and not named as reading no path";
    for (const CLI::Option* o : cmd->get_options())
      for (const std::string& ln : o->get_lnames()) {
        if (ln != "out" && ln != "html" && ln != "md") continue;
        bool has_case = false;
        for (const OutputCase& c : output_cases()) {
          // A case of this command itself, not of one of its sub-commands (screen, not screen merge).
          const bool deeper = std::any_of(commands.begin(), commands.end(), [&](const auto& other) {
            return starts(other.first, name) && starts(c.line, other.first);
          });
          has_case = has_case || (starts(c.line, name) && !deeper && c.option == "--" + ln);
        }
        EXPECT_TRUE(has_case) << "kqual " << name << " --" << ln << ": no output case";
      }
  }
}

// The checks themselves, without a command around them.
TEST(UserPathChecks, SayWhatIsWrongAndLeaveNothingBehind) {
  ScratchDir dir("kqual-user-paths");
  std::ofstream(dir.path() / "f") << "x";
  using run::PathRole;
  EXPECT_EQ(run::input_path_problem(dir.path() / "f", PathRole::file), "");
  EXPECT_EQ(run::input_path_problem(dir.path(), PathRole::folder), "");
  EXPECT_EQ(run::input_path_problem(dir.path(), PathRole::file_or_folder), "");
  EXPECT_TRUE(test::contains(run::input_path_problem(dir.path() / "g", PathRole::file), "no such file"));
  EXPECT_TRUE(test::contains(run::input_path_problem(dir.path(), PathRole::file), "is a folder, not a file"));
  EXPECT_TRUE(test::contains(run::input_path_problem(dir.path() / "f", PathRole::folder), "is a file, not a folder"));
  EXPECT_TRUE(test::contains(run::input_path_problem("rel-nope", PathRole::file), "relative to the working directory"));

  EXPECT_EQ(run::output_path_problem(dir.path() / "new/deeper", PathRole::folder), "");
  EXPECT_EQ(run::output_path_problem(dir.path(), PathRole::folder), "");
  EXPECT_EQ(run::output_path_problem(dir.path() / "f", PathRole::file), "");  // replaced
  EXPECT_EQ(run::output_path_problem(dir.path() / "new/page.html", PathRole::file), "");
  EXPECT_TRUE(test::contains(run::output_path_problem(dir.path() / "f", PathRole::folder), "is a file, not a folder"));
  EXPECT_TRUE(test::contains(run::output_path_problem(dir.path(), PathRole::file), "is a folder"));
  EXPECT_TRUE(test::contains(run::output_path_problem(dir.path() / "f/x", PathRole::file), "is a file, not a folder"));
  EXPECT_TRUE(test::contains(run::output_path_problem("/proc/kqual-x", PathRole::folder), "cannot be written"));
  std::vector<std::string> left;
  for (const auto& e : fs::directory_iterator(dir.path())) left.push_back(e.path().filename().string());
  EXPECT_EQ(left, std::vector<std::string>{"f"});
}

}  // namespace
}  // namespace kqual
