// kqual screen without a device: verdicts from the static phases, one journal line per candidate,
// resume without re-running, a torn last line dropped, options checked against the journal.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <chrono>
#include <fstream>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "kqual/core/error.hpp"
#include "kqual/core/files.hpp"
#include "kqual/pipeline/screen.hpp"
#include "screen_fixture.hpp"
#include "test_util.hpp"

namespace kqual::pipeline {
namespace {
namespace fs = std::filesystem;

std::vector<std::string> lines_of(const fs::path& f) {
  std::ifstream in(f);
  std::vector<std::string> out;
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

using test::verdict_of;
using test::write_text;

class ScreenTest : public test::ScreenFixture {
 protected:
  ScreenTest() : ScreenFixture("kqual-screen-test") {}
  void SetUp() override {
    // Two copies of the good candidate under distinct folder names, and a manifest that cannot load.
    for (const char* name : {"alpha", "beta"}) copy_good(name);
    write_text(cands_ / "broken_manifest/kqual.toml", "[candidate]\nname = \"x\"\ncontract = \"residual_add_relu\"\n");
    fs::create_directories(cands_ / "notes");  // no kqual.toml: not a candidate
  }
};


TEST_F(ScreenTest, CompilableCandidatesAreIncompleteABrokenManifestIsRefused) {
  ScreenOutcome out = screen(opts());
  ASSERT_EQ(out.verdicts.size(), 3u);
  EXPECT_EQ(verdict_of(out, "alpha").verdict, ScreenVerdictKind::incomplete);
  EXPECT_EQ(verdict_of(out, "beta").verdict, ScreenVerdictKind::incomplete);
  const ScreenVerdict& bad = verdict_of(out, "broken_manifest");
  EXPECT_EQ(bad.verdict, ScreenVerdictKind::refused);
  EXPECT_EQ(bad.reason, "manifest_invalid");
  EXPECT_FALSE(bad.detail.empty());
  EXPECT_EQ(out.exit_code, 2);  // refused outranks incomplete
  EXPECT_EQ(out.results["schema"], "kqual.screen/1");
  EXPECT_EQ(out.results["run"], 3);
  EXPECT_EQ(out.results["resumed"], 0);
  EXPECT_EQ(out.results["counts"]["incomplete"], 2);
  EXPECT_EQ(out.results["counts"]["refused"], 1);
  EXPECT_TRUE(out.results["provenance"].is_object());
  EXPECT_EQ(out.results["not_candidates"].size(), 1u);
  test::expect_written_from_one_result(out.results_path.parent_path());
  // Header + one line per candidate, each carrying the manifest's hash.
  auto lines = lines_of(out.journal_path);
  ASSERT_EQ(lines.size(), 4u);
  for (std::size_t i = 1; i < lines.size(); ++i) EXPECT_EQ(json::parse(lines[i])["manifest_sha256"].get<std::string>().size(), 64u);
  EXPECT_TRUE(fs::exists(out_ / "results.json"));
  const std::string md = read_text_file(out_ / "summary.md");
  EXPECT_NE(md.find("| broken_manifest |"), std::string::npos) << md;
  // Only the two good copies: incomplete, exit 3.
  ScreenOptions o = opts();
  o.inputs = {cands_ / "alpha", cands_ / "beta" / "kqual.toml"};
  o.out_dir = tmp_->path() / "out2";
  EXPECT_EQ(screen(o).exit_code, 3);
}

TEST_F(ScreenTest, ASecondRunResumesEveryVerdictFromTheJournal) {
  ScreenOutcome first = screen(opts());
  ScreenOutcome again = screen(opts());
  EXPECT_EQ(again.results["resumed"], 3);
  EXPECT_EQ(again.results["run"], 0);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_TRUE(again.verdicts[i].resumed);
    EXPECT_EQ(again.verdicts[i].finished, first.verdicts[i].finished);
    EXPECT_EQ(again.verdicts[i].verdict, first.verdicts[i].verdict);
  }
  EXPECT_EQ(lines_of(first.journal_path).size(), 4u);  // nothing appended
}

TEST_F(ScreenTest, AnInterruptedRunLosesAndDuplicatesNothing) {
  ScreenOutcome first = screen(opts());
  // As if killed after the first verdict was journaled: header + 1 line.
  auto lines = lines_of(first.journal_path);
  write_text(first.journal_path, lines[0] + "\n" + lines[1] + "\n");
  ScreenOutcome again = screen(opts());
  EXPECT_EQ(again.results["resumed"], 1);
  EXPECT_EQ(again.results["run"], 2);
  auto after = lines_of(first.journal_path);
  ASSERT_EQ(after.size(), 4u);
  std::set<std::string> seen;
  for (std::size_t i = 1; i < after.size(); ++i) EXPECT_TRUE(seen.insert(json::parse(after[i])["candidate"]).second) << after[i];
  EXPECT_EQ(seen.size(), 3u);
}

TEST_F(ScreenTest, ATornLastLineIsDroppedAndItsCandidateRunAgain) {
  ScreenOutcome first = screen(opts());
  auto lines = lines_of(first.journal_path);
  // The last verdict's write was cut short: half of its line, no newline.
  write_text(first.journal_path, lines[0] + "\n" + lines[1] + "\n" + lines[2] + "\n" + lines[3].substr(0, lines[3].size() / 2));
  ScreenJournal jr = read_screen_journal(first.journal_path);
  EXPECT_TRUE(jr.torn_tail);
  EXPECT_EQ(jr.entries.size(), 2u);
  ScreenOutcome again = screen(opts());
  EXPECT_EQ(again.results["resumed"], 2);
  EXPECT_EQ(again.results["run"], 1);
  auto after = lines_of(first.journal_path);
  ASSERT_EQ(after.size(), 4u);
  for (const auto& l : after) {
    json parsed;
    EXPECT_NO_THROW(parsed = json::parse(l)) << l;
  }
  EXPECT_FALSE(read_screen_journal(first.journal_path).torn_tail);
}

TEST_F(ScreenTest, ADamagedLineBeforeTheLastIsAnError) {
  ScreenOutcome first = screen(opts());
  auto lines = lines_of(first.journal_path);
  write_text(first.journal_path, lines[0] + "\n{not json\n" + lines[2] + "\n");
  try {
    screen(opts());
    FAIL() << "a damaged journal was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("line 2"), std::string::npos) << e.what();
  }
}

// A verdict word screen never writes is an input error naming the journal and the line, not a
// verdict taken on resume.
TEST_F(ScreenTest, AnUnknownVerdictInTheJournalIsAnInputErrorNamingItsLine) {
  ScreenOutcome first = screen(opts());
  auto lines = lines_of(first.journal_path);
  ASSERT_EQ(lines.size(), 4u);
  json edited = json::parse(lines[2]);
  edited["verdict"] = "passed";
  write_text(first.journal_path, lines[0] + "\n" + lines[1] + "\n" + edited.dump() + "\n" + lines[3] + "\n");
  try {
    screen(opts());
    FAIL() << "a journal with an unknown verdict was resumed";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::input);
    const std::string msg = e.what();
    EXPECT_NE(msg.find(first.journal_path.string() + ": line 3: "), std::string::npos) << msg;
    EXPECT_NE(msg.find("\"passed\""), std::string::npos) << msg;
    EXPECT_NE(msg.find("accepted, rejected, refused, incomplete or error"), std::string::npos) << msg;
  }
}

// The words of the journal, results.json and summary.md are the table's, both ways; the counts name
// every kind, in the table's order; the exit code follows the worst kind present.
TEST(ScreenVerdictWords, EachKindHasOneWordAndTheCountsNameEveryKind) {
  for (const auto& [kind, word] : kScreenVerdictNames.entries) {
    EXPECT_STREQ(to_string(kind), word);
    EXPECT_EQ(kScreenVerdictNames.parse(word), kind);
    ScreenVerdict v;
    v.verdict = kind;
    EXPECT_EQ(v.to_json().at("verdict"), word);
    EXPECT_EQ(ScreenVerdict::from_json(v.to_json()).verdict, kind);
  }
  std::vector<ScreenVerdict> vs(3);
  vs[0].verdict = ScreenVerdictKind::accepted;
  vs[1].verdict = ScreenVerdictKind::refused;
  vs[2].verdict = ScreenVerdictKind::accepted;
  const ScreenCounts c = verdict_counts(vs);
  EXPECT_EQ(c.to_json().dump(), R"({"accepted":2,"rejected":0,"refused":1,"incomplete":0,"error":0})");
  EXPECT_EQ(screen_exit_code(c), 2);
  EXPECT_EQ(screen_exit_code(verdict_counts({vs[0]})), 0);
  EXPECT_EQ(screen_exit_code(verdict_counts({vs[0]}), 1), 3);  // a missing candidate is incomplete
}

TEST_F(ScreenTest, OtherOptionsAreRefusedUnlessRestarted) {
  screen(opts());
  ScreenOptions o = opts();
  o.seed = 7;
  try {
    screen(o);
    FAIL() << "a journal made with another seed was resumed";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::usage);
    const std::string msg = e.what();
    EXPECT_NE(msg.find("--seed: journal 20261202, this run 7"), std::string::npos) << msg;
    EXPECT_NE(msg.find("--restart"), std::string::npos) << msg;
  }
  o.restart = true;
  ScreenOutcome fresh = screen(o);
  EXPECT_EQ(fresh.results["resumed"], 0);
  EXPECT_EQ(fresh.results["run"], 3);
  auto lines = lines_of(fresh.journal_path);
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(json::parse(lines[0])["options"]["seed"], 7);
}

TEST_F(ScreenTest, AChangedManifestRunsAgain) {
  screen(opts());
  std::ofstream(cands_ / "beta/kqual.toml", std::ios::app) << "# edited\n";
  ScreenOutcome again = screen(opts());
  EXPECT_EQ(again.results["run"], 1);
  EXPECT_FALSE(verdict_of(again, "beta").resumed);
  EXPECT_TRUE(verdict_of(again, "alpha").resumed);
}

TEST_F(ScreenTest, AnotherContractIsRefusedAsAMismatch) {
  ScreenOptions o = opts();
  o.inputs = {cands_ / "alpha"};
  o.contract = "softmax";
  ScreenOutcome out = screen(o);
  ASSERT_EQ(out.verdicts.size(), 1u);
  EXPECT_EQ(out.verdicts[0].verdict, ScreenVerdictKind::refused);
  EXPECT_EQ(out.verdicts[0].reason, "contract_mismatch");
  EXPECT_NE(out.verdicts[0].detail.find("residual_add_relu"), std::string::npos) << out.verdicts[0].detail;
  o.contract = "no_such_contract";
  EXPECT_THROW(screen(o), Error);
}

TEST_F(ScreenTest, AFailedBuildIsRefusedWithTheCompilerLog) {
  fs::path bad = cands_ / "alpha";
  write_text(bad / "kernel.cu", "this is not CUDA\n");
  ScreenOptions o = opts();
  o.inputs = {bad};
  ScreenOutcome out = screen(o);
  ASSERT_EQ(out.verdicts.size(), 1u);
  EXPECT_EQ(out.verdicts[0].verdict, ScreenVerdictKind::refused);
  EXPECT_EQ(out.verdicts[0].reason, "build_failed");
  EXPECT_NE(out.verdicts[0].detail.find("kernel.cu"), std::string::npos) << out.verdicts[0].detail;  // the compiler's log
}

// A real kill: `kqual screen` is SIGKILLed after a few verdicts are journaled; the same command
// again loses none and repeats none.
TEST(ScreenKill, AKilledRunResumesWithNothingLostOrRepeated) {
  ScratchDir t("kqual-screen-test");
  const fs::path cands = t.path() / "cands", out = t.path() / "out";
  constexpr int kCopies = 24;
  fs::create_directories(cands);
  for (int i = 0; i < kCopies; ++i)
    fs::copy(test::repo_root() / "candidates/residual_add_relu/good", cands / ("copy" + std::to_string(100 + i)),
             fs::copy_options::recursive);
  const std::string exe = test::kqual_exe().string();
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    execl(exe.c_str(), exe.c_str(), "--quiet", "screen", cands.c_str(), "--no-gpu", "--no-sanitizer-pass", "--jobs", "1", "--out",
          out.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  const fs::path journal = out / "journal.jsonl";
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (std::chrono::steady_clock::now() < deadline && (!fs::exists(journal) || lines_of(journal).size() < 4))
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  kill(pid, SIGKILL);
  int st = 0;
  waitpid(pid, &st, 0);
  if (!WIFSIGNALED(st)) GTEST_SKIP() << "the run finished before it could be killed (exit " << WEXITSTATUS(st) << ")";
  const std::size_t journaled = read_screen_journal(journal).entries.size();
  ASSERT_GE(journaled, 3u);
  ASSERT_LT(journaled, std::size_t(kCopies));

  ScreenOptions o;
  o.inputs = {cands};
  o.out_dir = out;
  o.use_gpu = false;
  o.sanitizer_pass = false;
  ScreenOutcome again = screen(o);
  EXPECT_EQ(again.results["resumed"].get<std::size_t>(), journaled);
  EXPECT_EQ(again.results["run"].get<std::size_t>(), kCopies - journaled);
  ScreenJournal jr = read_screen_journal(journal);
  EXPECT_FALSE(jr.torn_tail);
  ASSERT_EQ(jr.entries.size(), std::size_t(kCopies));
  std::set<std::string> seen;
  for (const auto& e : jr.entries) EXPECT_TRUE(seen.insert(e.candidate).second) << "twice: " << e.candidate;
  for (const auto& v : again.verdicts) EXPECT_EQ(v.verdict, ScreenVerdictKind::incomplete) << v.name << ": " << v.detail;
}

TEST(ScreenCandidates, InputsAreCheckedAndFoldersScannedOneLevel) {
  ScratchDir t("kqual-screen-test");
  EXPECT_THROW(screen_candidates({t.path() / "absent"}), Error);
  EXPECT_THROW(screen_candidates({t.path()}), Error);  // no candidate in it
  EXPECT_THROW(screen_candidates({}), Error);
  const fs::path rar = test::repo_root() / "candidates/residual_add_relu";
  std::vector<fs::path> skipped;
  auto c = screen_candidates({rar, rar / "good"}, &skipped);  // good appears once
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0].filename(), "good");
  EXPECT_EQ(c[1].filename(), "prebuilt");
  ASSERT_EQ(skipped.size(), 1u);
  EXPECT_EQ(skipped[0].filename(), "broken");
}

// The command line: without a device the GPU phases are reported as not run (exit 3), progress
// lines name each candidate, and an option mismatch is a usage error (exit 2).
TEST(ScreenCli, NoGpuIsIncompleteAndOptionMismatchIsAUsageError) {
  ScratchDir t("kqual-screen-test");
  const fs::path rar = test::repo_root() / "candidates/residual_add_relu";
  const std::string base = test::quote(test::kqual_exe()) + " screen " + test::quote(rar / "good") + " --no-sanitizer-pass --out " +
                           test::quote(t.path() / "out");
  auto r = test::run(base);
  if (r.output.find("incomplete") == std::string::npos || r.exit_code != 3) {
    // A machine with a GPU accepts it instead; this test is about the no-device path.
    if (r.exit_code == 0) GTEST_SKIP() << "a GPU is present: " << r.output;
  }
  ASSERT_EQ(r.exit_code, 3) << r.output;
  EXPECT_NE(r.output.find("screen [1/1] good: incomplete"), std::string::npos) << r.output;
  auto m = test::run(base + " --seed 5");
  EXPECT_EQ(m.exit_code, 2) << m.output;
  EXPECT_NE(m.output.find("--seed"), std::string::npos) << m.output;
  EXPECT_NE(m.output.find("--restart"), std::string::npos) << m.output;
  auto fresh = test::run(test::quote(test::kqual_exe()) + " --json --quiet screen " + test::quote(rar / "good") +
                         " --no-sanitizer-pass --seed 5 --restart --out " + test::quote(t.path() / "out"));
  EXPECT_EQ(fresh.exit_code, 3) << fresh.output;
  json doc = json::parse(fresh.output);  // stdout: the results document alone (--quiet: no progress)
  EXPECT_EQ(doc["schema"], "kqual.screen/1");
  EXPECT_EQ(doc["options"]["seed"], 5);
  EXPECT_EQ(doc["run"], 1);
}

}  // namespace
}  // namespace kqual::pipeline
