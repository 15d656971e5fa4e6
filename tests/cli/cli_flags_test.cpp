// Every negatable flag, parsed through the real command line (make_app), checked by the value the
// option received — not by an exit code. `--no-X` must store false, `--X` true, and no flag the
// default. A flag with its two names swapped fails here.
#include <gtest/gtest.h>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "kqual/core/files.hpp"
#include "kqual/run/cli.hpp"

namespace kqual::run {
namespace {

// Parses `args` (without the program name) into a fresh state; no command body runs. The parser
// refuses paths that are not there (kqual/run/user_paths.hpp), so it runs in a folder that holds the
// candidates these command lines name.
CliState parse(const std::vector<std::string>& args) {
  static const ScratchDir dir("kqual-cli-flags");
  for (const char* name : {"cand", "a", "b", "good", "broken", "old", "new"}) std::filesystem::create_directories(dir.path() / name);
  const std::filesystem::path cwd = std::filesystem::current_path();
  std::filesystem::current_path(dir.path());
  CliState s;
  auto app = make_app(s, /*run_commands=*/false);
  std::vector<std::string> rev(args.rbegin(), args.rend());  // CLI11 takes them in reverse order
  try {
    app->parse(rev);
  } catch (...) {
    std::filesystem::current_path(cwd);
    throw;
  }
  std::filesystem::current_path(cwd);
  return s;
}

struct FlagCase {
  std::string command;                      // subcommand + its required positional(s)
  std::string name;                         // X in --X / --no-X
  bool default_value;
  std::function<bool(const CliState&)> get; // the option the flag must set
};

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::string cur;
  for (char ch : s) {
    if (ch == ' ') {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
    } else {
      cur += ch;
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

const std::vector<FlagCase>& cases() {
  static const std::vector<FlagCase> c = {
      {"qualify cand", "gpu", true, [](const CliState& s) { return s.qualify.use_gpu; }},
      {"qualify cand", "large-cases", true, [](const CliState& s) { return s.qualify.large_cases; }},
      {"check cand", "gpu", true, [](const CliState& s) { return s.check.use_gpu; }},
      {"check cand", "large-cases", true, [](const CliState& s) { return s.check.large_cases; }},
      {"bench cand", "gpu", true, [](const CliState& s) { return s.bench.use_gpu; }},
      {"bench cand", "large-cases", true, [](const CliState& s) { return s.bench.large_cases; }},
      {"selftest", "baselines", true, [](const CliState& s) { return s.selftest.include_baselines; }},
      {"selftest", "large-cases", false, [](const CliState& s) { return s.selftest.large_cases; }},
      {"qualify cand", "sanitizer-pass", true, [](const CliState& s) { return s.qualify.sanitizer_pass; }},
      {"check cand", "sanitizer-pass", true, [](const CliState& s) { return s.check.sanitizer_pass; }},
      {"bench cand", "sanitizer-pass", true, [](const CliState& s) { return s.bench.sanitizer_pass; }},
      {"selftest", "sanitizer-pass", true, [](const CliState& s) { return s.selftest.sanitizer_pass; }},
      {"qualify cand", "clock-guard", true, [](const CliState& s) { return s.qualify.clock_guard; }},
      {"bench cand", "clock-guard", true, [](const CliState& s) { return s.bench.clock_guard; }},
      {"compare old new", "gpu", true, [](const CliState& s) { return s.compare.o.use_gpu; }},
      {"compare old new", "correctness", true, [](const CliState& s) { return s.compare.o.correctness; }},
      {"compare old new", "large-cases", false, [](const CliState& s) { return s.compare.o.large_cases; }},
      {"screen a b", "gpu", true, [](const CliState& s) { return s.screen.use_gpu; }},
      {"screen a b", "large-cases", true, [](const CliState& s) { return s.screen.large_cases; }},
      {"screen a b", "sanitizer-pass", true, [](const CliState& s) { return s.screen.sanitizer_pass; }},
      {"screen a b", "clock-guard", true, [](const CliState& s) { return s.screen.timing.clock_guard; }},
  };
  return c;
}

TEST(CliFlags, NegatedSpellingStoresFalse) {
  for (const auto& c : cases()) {
    auto args = split(c.command);
    args.push_back("--no-" + c.name);
    EXPECT_FALSE(c.get(parse(args))) << c.command << " --no-" << c.name;
  }
}

TEST(CliFlags, PositiveSpellingStoresTrue) {
  for (const auto& c : cases()) {
    auto args = split(c.command);
    args.push_back("--" + c.name);
    EXPECT_TRUE(c.get(parse(args))) << c.command << " --" << c.name;
  }
}

TEST(CliFlags, AbsentFlagKeepsTheDefault) {
  for (const auto& c : cases()) EXPECT_EQ(c.get(parse(split(c.command))), c.default_value) << c.command << " (no --" << c.name << ")";
}

TEST(CliFlags, LastSpellingWins) {
  EXPECT_TRUE(parse({"qualify", "cand", "--no-gpu", "--gpu"}).qualify.use_gpu);
  EXPECT_FALSE(parse({"qualify", "cand", "--gpu", "--no-gpu"}).qualify.use_gpu);
}

TEST(CliFlags, FlagsOfOneCommandLeaveTheOthersAlone) {
  CliState s = parse({"compare", "a", "b", "--no-gpu", "--large-cases"});
  EXPECT_FALSE(s.compare.o.use_gpu);
  EXPECT_TRUE(s.compare.o.large_cases);
  EXPECT_TRUE(s.compare.o.correctness);
  EXPECT_TRUE(s.qualify.use_gpu);
  EXPECT_TRUE(s.qualify.large_cases);
}

TEST(CliFlags, HelpStatesEachFlagsDefault) {
  CliState s;
  auto app = make_app(s, false);
  const std::string help = app->get_subcommand("compare")->help();
  EXPECT_NE(help.find("default: --gpu"), std::string::npos) << help;
  EXPECT_NE(help.find("default: --no-large-cases"), std::string::npos) << help;
  const std::string sh = app->get_subcommand("selftest")->help();
  EXPECT_NE(sh.find("default: --no-large-cases"), std::string::npos) << sh;
}

// Every option in the full command line (all subcommands) spelled --no-X must be the negative
// half of a pair registered by add_negatable_flag, and the pair must be covered by cases() above.
TEST(CliFlags, EveryNegatableFlagIsCoveredHere) {
  CliState s;
  auto app = make_app(s, /*run_commands=*/true);
  std::vector<std::string> found;
  for (const CLI::App* sub : app->get_subcommands([](const CLI::App*) { return true; })) {
    for (const CLI::Option* opt : sub->get_options()) {
      for (const std::string& ln : opt->get_lnames()) {
        if (ln.rfind("no-", 0) != 0) continue;
        const std::string x = ln.substr(3);
        const auto& names = opt->get_lnames();
        EXPECT_NE(std::find(names.begin(), names.end(), x), names.end())
            << sub->get_name() << " --" << ln << " has no --" << x << " spelling";
        EXPECT_NE(opt->get_description().find("(--" + x + " / --no-" + x), std::string::npos)
            << sub->get_name() << " --" << ln << " was not registered with add_negatable_flag";
        found.push_back(sub->get_name() + " " + x);
      }
    }
  }
  for (const auto& f : found) {
    bool covered = false;
    for (const auto& c : cases())
      if (split(c.command).front() + " " + c.name == f) covered = true;
    EXPECT_TRUE(covered) << "negatable flag without a value test: " << f;
  }
  EXPECT_GE(found.size(), cases().size());
}

// A repeatable option takes one value per occurrence: the candidates after two --shape options stay
// candidates (CLI11 let a list option eat them, and `screen --timing --shape A --shape B good broken`
// failed with "candidates is required").
TEST(CliLists, ARepeatedOptionLeavesThePositionalsAfterIt) {
  CliState s = parse({"screen", "--timing", "--shape", "1048576", "--shape", "67108864", "good", "broken"});
  EXPECT_EQ(s.screen.timing.shapes, (std::vector<std::string>{"1048576", "67108864"}));
  EXPECT_EQ(s.screen.inputs, (std::vector<std::filesystem::path>{"good", "broken"}));
  s = parse({"qualify", "--shape", "rows=4,cols=8", "cand"});
  ASSERT_EQ(s.qualify.shapes.size(), 1u);
  EXPECT_EQ(s.qualify.shapes.front(), "rows=4,cols=8");
}

}  // namespace
}  // namespace kqual::run

namespace kqual::run {
namespace {

TEST(CliTimer, TimerAndWarmL2Parse) {
  CliState s = parse({"bench", "cand", "--timer", "cupti", "--l2-flush", "none"});
  EXPECT_EQ(s.bench.timer, worker::TimerKind::cupti);
  EXPECT_EQ(s.bench.flush_mode, "none");
  EXPECT_EQ(parse({"qualify", "cand"}).qualify.timer, worker::TimerKind::events);  // the default
  s = parse({"bench", "cand", "--timer", "graph", "--l2-flush", "none", "--graph-launches", "64"});
  EXPECT_EQ(s.bench.graph_launches, 64);
}

}  // namespace
}  // namespace kqual::run
