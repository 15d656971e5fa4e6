// kqual screen in shards, without a device (issue 26): --shard I/N and the campaign's candidate list,
// their merge, --gpus refused without a GPU, and the Slurm scripts, run by bash as array tasks would
// be. GPU selection and the lane dispatcher are in screen_lanes_test.cpp.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "kqual/core/error.hpp"
#include "kqual/core/files.hpp"
#include "kqual/pipeline/screen.hpp"
#include "kqual/pipeline/screen_shard.hpp"
#include "kqual/pipeline/screen_slurm.hpp"
#include "scaleout_test_util.hpp"
#include "screen_fixture.hpp"
#include "test_util.hpp"

namespace kqual::pipeline {
namespace {
namespace fs = std::filesystem;
using test::scaleout::error_of;
using test::scaleout::has;

using test::write_text;

// ---- shards and merge ----

class ShardTest : public test::ScreenFixture {
 protected:
  ShardTest() : ScreenFixture("kqual-shard-test") {}
  void SetUp() override {
    // Two compilable candidates (incomplete without a GPU) and ten that are refused at once.
    for (const char* name : {"good0", "good1"}) {
      copy_good(name);
      write_text(cands_ / name / "kqual.toml", read_text_file(cands_ / name / "kqual.toml") + "# copy " + name + "\n");
    }
    for (int i = 0; i < 10; ++i)
      write_text(cands_ / ("bad" + std::to_string(i)) / "kqual.toml",
                 "[candidate]\nname = \"bad" + std::to_string(i) + "\"\ncontract = \"residual_add_relu\"\n");
  }
  ScreenOptions opts(const std::string& shard, const std::string& out) const {
    ScreenOptions o = cpu_options(tmp_->path() / out);
    o.shard = shard;
    o.jobs = 1;
    return o;
  }
};

TEST(ScreenShard, SpecsAreCheckedByName) {
  EXPECT_EQ(parse_shard("0/1").count, 1);
  EXPECT_EQ(parse_shard("3/4").index, 3);
  for (const char* bad : {"3/2", "2/2", "x/2", "1", "-1/2", "1/0", "1/", "/3", "1/2/3", " 1/2"}) {
    ErrorKind k{};
    const std::string msg = error_of([&] { parse_shard(bad); }, &k);
    EXPECT_EQ(k, ErrorKind::usage) << bad;
    EXPECT_TRUE(has(msg, std::string("--shard ") + bad)) << msg;
  }
  EXPECT_TRUE(has(error_of([] { parse_shard("3/2"); }), "not below the count"));
}

// The campaign's list, written when the first shard starts, decides the shares by name: an edit, an
// added candidate or another order later changes nothing.
TEST_F(ShardTest, TheCampaignsListDealsTheCandidatesByNameOnceForAll) {
  const std::vector<fs::path> all = screen_candidates({cands_});
  const fs::path file = default_shard_list(tmp_->path() / "shard-0-of-3", 3);
  EXPECT_EQ(file, tmp_->path() / "shard-list-3.json");
  bool created = false;
  const ShardList list = open_shard_list(file, 3, all, &created);
  EXPECT_TRUE(created);
  ASSERT_EQ(list.candidates.size(), all.size());
  std::vector<fs::path> mine;
  const ShardRecord r = plan_shards(ShardSpec{0, 3}, list, &mine);
  EXPECT_EQ(r.total, all.size());
  std::size_t sum = 0;
  for (std::size_t s : r.share_sizes) sum += s;
  EXPECT_EQ(sum, all.size());
  EXPECT_EQ(mine.size(), r.share_sizes[0]);
  // Later tasks read it: fewer candidates, another order, an edited one: the same list.
  write_text(cands_ / "bad3" / "kqual.toml", "[candidate]\nname = \"edited\"\n");
  std::vector<fs::path> rev(all.rbegin(), all.rend() - 1);
  const ShardList again = open_shard_list(file, 3, rev, &created);
  EXPECT_FALSE(created);
  EXPECT_EQ(again.candidates, list.candidates);
  EXPECT_EQ(again.shard, list.shard);
  EXPECT_EQ(again.sha256, list.sha256);
  // Another shard count on the same list is refused by name.
  ErrorKind k{};
  const std::string msg = error_of([&] { open_shard_list(file, 4, all); }, &k);
  EXPECT_EQ(k, ErrorKind::usage);
  EXPECT_TRUE(has(msg, "3 shard(s), not 4")) << msg;
}

// Two campaigns with the same shard count and --out folders under one parent: the second one's
// shard screened the first campaign's candidates and none of its own, warned only by a progress line.
// A list naming none of the candidates given is another campaign's: an input error.
TEST_F(ShardTest, AnotherCampaignsListIsRefused) {
  screen(opts("0/2", "shard-0-of-2"));
  const fs::path other = tmp_->path() / "campB";
  write_text(other / "b1" / "kqual.toml", "[candidate]\nname = \"b1\"\ncontract = \"residual_add_relu\"\n");
  ScreenOptions b = opts("0/2", "B0");
  b.inputs = {other};
  ErrorKind k{};
  const std::string msg = error_of([&] { screen(b); }, &k);
  EXPECT_EQ(k, ErrorKind::input) << msg;
  EXPECT_TRUE(has(msg, "names none of the 1 candidate(s) given")) << msg;
}

// A candidate added after the campaign started is not screened by any shard (and said so), instead
// of falling into one shard's share on some tasks and not on others.
TEST_F(ShardTest, ACandidateAddedAfterTheListIsNotScreenedAndIsNamed) {
  screen(opts("0/2", "shard-0-of-2"));
  fs::copy(cands_ / "good0", cands_ / "late", fs::copy_options::recursive);
  const ScreenOutcome out = screen(opts("1/2", "shard-1-of-2"));
  EXPECT_EQ(out.results["shard"]["not_in_list"].size(), 1u);
  for (const auto& v : out.verdicts) EXPECT_NE(v.name, "late");
  MergeOptions m;
  m.dirs = {tmp_->path() / "shard-0-of-2", tmp_->path() / "shard-1-of-2"};
  m.out_dir = tmp_->path() / "merged";
  const MergeOutcome merged = merge_screen(m);
  EXPECT_EQ(merged.verdicts.size(), 12u);
  EXPECT_EQ(merged.missing, 0u);
}

// Moving a candidate between shards (an edited list) makes the merge fail by name; two different
// verdicts for one candidate too; a shard that did not finish leaves its candidates missing, named.
TEST_F(ShardTest, MergeFailsOnAMovedCandidateOrTwoVerdictsAndNamesTheMissing) {
  for (int s = 0; s < 2; ++s) screen(opts(std::to_string(s) + "/2", "shard-" + std::to_string(s) + "-of-2"));
  const fs::path d0 = tmp_->path() / "shard-0-of-2", d1 = tmp_->path() / "shard-1-of-2";
  MergeOptions m;
  m.dirs = {d0, d1};
  m.out_dir = tmp_->path() / "merged";
  ASSERT_EQ(merge_screen(m).missing, 0u);

  // Shard 1's results claim one of shard 0's candidates, with another verdict: two verdicts.
  const json r0 = json::parse(read_text_file(d0 / "results.json"));
  json r1 = json::parse(read_text_file(d1 / "results.json"));
  json stolen = r0["verdicts"][0];
  stolen["verdict"] = stolen["verdict"] == "refused" ? "incomplete" : "refused";
  r1["verdicts"].push_back(stolen);
  write_text(d1 / "results.json", r1.dump(1));
  ErrorKind k{};
  std::string msg = error_of([&] { merge_screen(m); }, &k);
  EXPECT_EQ(k, ErrorKind::input);
  EXPECT_TRUE(has(msg, stolen["candidate"].get<std::string>())) << msg;
  EXPECT_TRUE(has(msg, "shard 0/2")) << msg;  // the list gives it to shard 0

  // The list edited after the shards ran (a candidate moved to the other shard): refused by name.
  r1["verdicts"].erase(r1["verdicts"].size() - 1);
  write_text(d1 / "results.json", r1.dump(1));
  const fs::path list = tmp_->path() / "shard-list-2.json";
  json l = json::parse(read_text_file(list));
  l["candidates"][0]["shard"] = 1 - l["candidates"][0]["shard"].get<int>();
  write_text(list, l.dump(1));
  msg = error_of([&] { merge_screen(m); }, &k);
  EXPECT_EQ(k, ErrorKind::usage);
  EXPECT_TRUE(has(msg, "edited")) << msg;

  // A shard that never finished: each of its candidates named as missing, and the exit code says so.
  l["candidates"][0]["shard"] = 1 - l["candidates"][0]["shard"].get<int>();
  write_text(list, l.dump(1));
  fs::remove(d1 / "results.json");
  const MergeOutcome out = merge_screen(m);
  EXPECT_EQ(out.missing, r1["verdicts"].size());
  ASSERT_EQ(out.missing_candidates.size(), out.missing);
  EXPECT_EQ(out.missing_candidates.front(), r1["verdicts"][0]["candidate"].get<std::string>());
  EXPECT_EQ(out.results["merged"]["missing_candidates"].size(), out.missing);
  EXPECT_TRUE(has(read_text_file(tmp_->path() / "merged/summary.md"), "missing: " + out.missing_candidates.front()));
  test::expect_written_from_one_result(tmp_->path() / "merged");
}

TEST_F(ShardTest, ShardsMergeIntoEveryCandidateExactlyOnce) {
  std::set<std::string> judged;
  std::vector<fs::path> dirs;
  for (int s = 0; s < 3; ++s) {
    const ScreenOutcome out = screen(opts(std::to_string(s) + "/3", "shard" + std::to_string(s)));
    EXPECT_EQ(out.results["shard"]["spec"], std::to_string(s) + "/3");
    EXPECT_EQ(out.results["options"]["shard"], std::to_string(s) + "/3");
    for (const auto& v : out.verdicts) EXPECT_TRUE(judged.insert(v.candidate).second) << v.candidate << " in two shards";
    dirs.push_back(tmp_->path() / ("shard" + std::to_string(s)));
  }
  EXPECT_EQ(judged.size(), 12u);
  MergeOptions m;
  m.dirs = dirs;
  m.out_dir = tmp_->path() / "merged";
  MergeOutcome out = merge_screen(m);
  EXPECT_EQ(out.verdicts.size(), 12u);
  EXPECT_EQ(out.duplicates, 0u);
  EXPECT_EQ(out.missing, 0u);
  EXPECT_EQ(out.results["counts"]["refused"], 10);
  EXPECT_EQ(out.results["counts"]["incomplete"], 2);
  EXPECT_EQ(out.exit_code, 2);  // refused outranks incomplete, as in screen
  EXPECT_TRUE(fs::exists(tmp_->path() / "merged/summary.md"));
  EXPECT_FALSE(out.results["options"].contains("shard"));
  test::expect_written_from_one_result(m.out_dir);
  test::expect_written_from_one_result(dirs[0]);

  // A shard given twice under another folder: its verdicts are duplicates, counted and dropped.
  fs::copy(dirs[1], tmp_->path() / "copy1", fs::copy_options::recursive);
  m.dirs.push_back(tmp_->path() / "copy1");
  out = merge_screen(m);
  EXPECT_EQ(out.verdicts.size(), 12u);
  EXPECT_EQ(out.duplicates, std::size_t(json::parse(read_text_file(dirs[1] / "results.json"))["candidates"].get<int>()));

  // A shard that never finished: its candidates are missing, by count, and the exit code says so.
  const std::size_t share2 = json::parse(read_text_file(dirs[2] / "results.json"))["candidates"].get<std::size_t>();
  fs::remove(dirs[2] / "results.json");
  m.dirs = dirs;
  out = merge_screen(m);
  EXPECT_EQ(out.missing, share2);
  EXPECT_EQ(out.verdicts.size(), 12u - share2);
  EXPECT_EQ(out.results["merged"]["missing_shards"].size(), 1u);
  m.dirs = {dirs[0], dirs[1]};  // and one not given at all
  EXPECT_EQ(merge_screen(m).missing, share2);
}

TEST_F(ShardTest, TimedShardsMergeIntoOneRanking) {
  // --timing on every shard: the merge ranks every shard's timed verdicts together. No GPU here, so
  // one shard's verdict is edited into an accepted, timed one, as a GPU shard would have written it.
  std::vector<fs::path> dirs;
  for (int s = 0; s < 2; ++s) {
    ScreenOptions o = opts(std::to_string(s) + "/2", "t" + std::to_string(s));
    o.timing.on = true;
    screen(o);
    dirs.push_back(tmp_->path() / ("t" + std::to_string(s)));
  }
  json r = json::parse(read_text_file(dirs[1] / "results.json"));
  ASSERT_FALSE(r["verdicts"].empty());
  json& v = r["verdicts"][0];
  v["verdict"] = "accepted";
  v["speed"] = json{{"decision", "ship"}, {"effect", {{"ratio", 0.5}, {"ci", {0.45, 0.55}}, {"speedup", 2.0}}}};
  write_file_atomic(dirs[1] / "results.json", r.dump(2));
  MergeOptions m;
  m.dirs = dirs;
  m.out_dir = tmp_->path() / "tmerged";
  const MergeOutcome out = merge_screen(m);
  ASSERT_TRUE(out.results.contains("ranking")) << out.results.dump(1);
  const json& ranked = out.results["ranking"]["ranked"];
  ASSERT_EQ(ranked.size(), 1u);
  EXPECT_EQ(ranked[0]["name"], v["name"]);
  EXPECT_EQ(out.results["ranking"]["population"]["faster_1_5x"], 1);
  EXPECT_TRUE(fs::is_regular_file(m.out_dir / "ranking.html"));
  EXPECT_NE(read_text_file(m.out_dir / "summary.md").find("## Ranking (timing tier)"), std::string::npos);
  test::expect_written_from_one_result(m.out_dir);
}

TEST_F(ShardTest, ARerunOfAShardResumesItsOwnJournal) {
  screen(opts("1/3", "s1"));
  const ScreenOutcome again = screen(opts("1/3", "s1"));
  EXPECT_EQ(again.results["run"], 0);
  // Another shard spec on the same journal is refused, by name.
  const std::string msg = error_of([&] { screen(opts("2/3", "s1")); });
  EXPECT_TRUE(has(msg, "--shard")) << msg;
}

TEST_F(ShardTest, MergeRefusesShardsOfOtherOptionsOrNoShardAtAll) {
  screen(opts("0/2", "a"));
  ScreenOptions o = opts("1/2", "b");
  o.seed = 7;
  screen(o);
  MergeOptions m;
  m.dirs = {tmp_->path() / "a", tmp_->path() / "b"};
  m.out_dir = tmp_->path() / "merged";
  ErrorKind k{};
  std::string msg = error_of([&] { merge_screen(m); }, &k);
  EXPECT_EQ(k, ErrorKind::usage);
  EXPECT_TRUE(has(msg, "--seed")) << msg;
  EXPECT_TRUE(has(msg, (tmp_->path() / "b").string())) << msg;
  EXPECT_FALSE(fs::exists(tmp_->path() / "merged/results.json"));  // nothing half-written
  // Other shard counts.
  screen(opts("1/3", "c"));
  m.dirs = {tmp_->path() / "a", tmp_->path() / "c"};
  EXPECT_TRUE(has(error_of([&] { merge_screen(m); }), "--shard")) << msg;
  // An unsharded screen, and a folder that is no screen at all.
  ScreenOptions whole = opts("", "whole");
  screen(whole);
  m.dirs = {tmp_->path() / "a", tmp_->path() / "whole"};
  EXPECT_TRUE(has(error_of([&] { merge_screen(m); }), "not a sharded screen"));
  m.dirs = {tmp_->path() / "a", cands_};
  EXPECT_TRUE(has(error_of([&] { merge_screen(m); }), "neither results.json nor journal.jsonl"));
}

TEST_F(ShardTest, GpusWithoutAGpuIsAClearErrorAndNoGpuStillWorks) {
  ScreenOptions o = opts("", "g");
  o.use_gpu = true;
  o.gpus = "all";
  o.gpu_list_dir = tmp_->path() / "no-such-proc";
  ErrorKind k{};
  std::string msg = error_of([&] { screen(o); }, &k);
  EXPECT_EQ(k, ErrorKind::usage);
  EXPECT_TRUE(has(msg, "no GPU found")) << msg;
  EXPECT_TRUE(has(msg, "--no-gpu")) << msg;
  // GPUs listed by the driver but none answering (no libcuda here): named, one by one.
  for (const char* id : {"0000:19:00.0", "0000:3b:00.0"}) fs::create_directories(tmp_->path() / "proc" / id);
  o.gpu_list_dir = tmp_->path() / "proc";
  ::setenv("KQUAL_EXE", test::kqual_exe().c_str(), 1);
  msg = error_of([&] { screen(o); });
  ::unsetenv("KQUAL_EXE");
  EXPECT_TRUE(has(msg, "no selected GPU answered")) << msg;
  EXPECT_TRUE(has(msg, "GPU 0:") && has(msg, "GPU 1:")) << msg;
  o.use_gpu = false;
  EXPECT_TRUE(has(error_of([&] { screen(o); }), "--no-gpu contradict"));
  o.gpus.clear();
  EXPECT_EQ(screen(o).verdicts.size(), 12u);
}

// ---- Slurm scripts ----

TEST_F(ShardTest, SlurmScriptsBatchShardsPastMaxArraySizeAndRunAsArrayTasks) {
  SlurmScreenOptions so;
  so.screen = opts("", "campaign");
  so.shards = 5;
  so.max_array_size = 2;
  so.kqual_exe = test::kqual_exe().string();
  so.partition = "debug";
  so.time = "0:10:00";
  const SlurmPlan p = plan_slurm_screen(so);
  EXPECT_EQ(p.array_tasks, 2);
  EXPECT_EQ(p.candidates, 12u);
  EXPECT_TRUE(has(p.screen_script, "#SBATCH -a 0-1\n")) << p.screen_script;
  EXPECT_TRUE(has(p.screen_script, "#SBATCH --partition=debug\n"));
  EXPECT_TRUE(has(p.screen_script, "#SBATCH --time=0:10:00\n"));
  EXPECT_TRUE(has(p.screen_script, "#SBATCH --requeue\n"));
  EXPECT_FALSE(has(p.screen_script, "--gres"));  // --no-gpu asks for none
  EXPECT_TRUE(has(p.screen_script, "--no-gpu"));
  EXPECT_TRUE(has(p.merge_script, "screen merge"));
  // Both scripts run by bash as Slurm would run them: task 0 takes shards 0, 2, 4; task 1 shards 1, 3.
  const fs::path sdir = tmp_->path() / "scripts";
  write_text(sdir / "screen.sbatch", p.screen_script);
  write_text(sdir / "merge.sbatch", p.merge_script);
  for (int t = 0; t < 2; ++t) {
    const auto r = test::run("SLURM_ARRAY_TASK_ID=" + std::to_string(t) + " bash " + test::quote(sdir / "screen.sbatch"));
    EXPECT_EQ(r.exit_code, 0) << r.output;
  }
  for (int s = 0; s < 5; ++s) EXPECT_TRUE(fs::exists(p.out_dir / ("shard-" + std::to_string(s) + "-of-5/journal.jsonl"))) << s;
  const auto r = test::run("bash " + test::quote(sdir / "merge.sbatch"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  const json merged = json::parse(read_text_file(p.out_dir / "merged/results.json"));
  EXPECT_EQ(merged["candidates"], 12);
  EXPECT_EQ(merged["merged"]["missing"], 0);
  EXPECT_EQ(merged["merged"]["duplicates"], 0);

  // With GPUs: a GRES line, and each task's screen takes its allocation's GPUs.
  so.screen.use_gpu = true;
  so.gpus_per_task = 2;
  const SlurmPlan g = plan_slurm_screen(so);
  EXPECT_TRUE(has(g.screen_script, "#SBATCH --gres=gpu:2\n"));
  EXPECT_TRUE(has(g.screen_script, "--gpus all"));
  EXPECT_TRUE(has(g.screen_script, "export CUDA_DEVICE_ORDER=PCI_BUS_ID"));
}

TEST_F(ShardTest, SlurmRefusesBadInputsByNameAndSubmitsNothingWithoutSbatch) {
  SlurmScreenOptions so;
  so.screen = opts("", "campaign");
  so.max_array_size = 10;
  so.kqual_exe = "/bin/true";
  so.shards = 0;
  EXPECT_TRUE(has(error_of([&] { plan_slurm_screen(so); }), "--tasks 0"));
  so.shards = 4;
  so.partition = "a b";
  EXPECT_TRUE(has(error_of([&] { plan_slurm_screen(so); }), "--partition 'a b'"));
  so.partition.clear();
  so.screen.use_gpu = true;
  so.gpus_per_task = 0;
  EXPECT_TRUE(has(error_of([&] { plan_slurm_screen(so); }), "--gpus-per-task 0"));
  so.gpus_per_task = 1;
  const SlurmPlan p = plan_slurm_screen(so);
  const std::string old_path = std::getenv("PATH") ? std::getenv("PATH") : "";
  ::setenv("PATH", (tmp_->path() / "empty-bin").c_str(), 1);
  ErrorKind k{};
  const std::string msg = error_of([&] { submit_slurm_screen(p); }, &k);
  ::setenv("PATH", old_path.c_str(), 1);
  EXPECT_EQ(k, ErrorKind::usage);
  EXPECT_TRUE(has(msg, "sbatch is not on PATH")) << msg;
  EXPECT_TRUE(has(msg, "--dry-run")) << msg;
  EXPECT_FALSE(fs::exists(p.out_dir / "slurm"));
}

TEST(ScreenCli, MergeAndSlurmAreCommandsWithClearErrors) {
  const std::string k = test::quote(test::kqual_exe());
  auto r = test::run(k + " screen");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(has(r.output, "candidates is required")) << r.output;
  r = test::run(k + " screen merge /nonexistent-shard-dir");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(has(r.output, "/nonexistent-shard-dir")) << r.output;
  r = test::run(k + " screen --shard 3/2 " + test::quote(test::repo_root() / "candidates/residual_add_relu/good"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(has(r.output, "--shard 3/2")) << r.output;
  r = test::run(k + " slurm screen --dry-run --no-gpu --tasks 2 --max-array-size 5 " +
                test::quote(test::repo_root() / "candidates/residual_add_relu/good"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(has(r.output, "#SBATCH -a 0-1")) << r.output;
}

}  // namespace
}  // namespace kqual::pipeline
