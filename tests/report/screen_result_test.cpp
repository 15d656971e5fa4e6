// kqual screen's typed results (report/screen_result.hpp) at the JSON edge and in their renderers: a
// run's document (GPUs, a shard, the ranking) and a merge's read back into the type and written out
// again unchanged, key order included; the keys in the order screen wrote them before the type; a
// field of the wrong shape named; summary.md made from the document alone.
#include <gtest/gtest.h>

#include "kqual/core/error.hpp"
#include "kqual/report/screen_result.hpp"

namespace kqual::report {
namespace {

ScreenVerdict verdict(const std::string& name, ScreenVerdictKind kind, int gpu, bool resumed) {
  ScreenVerdict v;
  v.candidate = "/campaign/cands/" + name;
  v.name = name;
  v.manifest_sha256 = "ab12";
  v.key = "k-" + name;
  v.verdict = kind;
  v.reason = kind == ScreenVerdictKind::rejected ? "wrong_result" : "";
  if (kind == ScreenVerdictKind::rejected) v.codes["wrong_result"] = 2;
  v.detail = kind == ScreenVerdictKind::rejected ? "case n=1025: 3 of 1025 elements | beyond tolerance" : "";
  v.contract = "residual_add_relu";
  v.wall_ms = 812.25;
  v.compile_ms = 230.25;
  v.finished = "2026-12-07T08:00:00Z";
  v.resumed = resumed;
  v.gpu = gpu;
  if (kind == ScreenVerdictKind::accepted)
    v.speed = json{{"decision", "ship"}, {"effect", {{"ratio", 0.5}, {"speedup", 2.0}, {"ci", {0.45, 0.55}}}}, {"shapes", json::array()}};
  return v;
}

json ranking_example() {
  json population{{"candidates", 2},
                  {"judged", 2},
                  {"correct", 1},
                  {"fraction_correct", 0.5},
                  {"timed_with_effect", 1},
                  {"torch_submissions_timed_against_eager", 0},
                  {"faster_1_0x", 1},
                  {"faster_1_5x", 1},
                  {"point_estimate_faster_1_0x", 1},
                  {"point_estimate_faster_1_5x", 1}};
  json ranked = json::array({json{{"rank", 1}, {"name", "fast"}, {"candidate", "/campaign/cands/fast"}, {"contract", "residual_add_relu"},
                                  {"decision", "ship"}, {"speedup", 2.0}, {"ratio", 0.5}, {"ci", {0.45, 0.55}}}});
  return json{{"ranked", ranked}, {"population", population}};
}

// A run on two GPUs, one of them retired, as shard 1 of 3, under --timing.
ScreenResult run_example() {
  ScreenResult r;
  r.provenance = json{{"kqual_version", "0.1"}, {"gpu", {{"name", "NVIDIA H100 80GB HBM3"}}}, {"device_order", "PCI_BUS_ID"}};
  r.options = json{{"contract", "(each candidate's own)"}, {"seed", 7}, {"arch", "sm_90"}, {"shard", "1/3"}};
  ScreenRunFacts f;
  f.journal = "/campaign/out/journal.jsonl";
  f.device_present = true;
  f.gpus = std::vector<ScreenGpu>{{0, "0000:18:00.0", "0", json{{"name", "NVIDIA H100 80GB HBM3"}}, 1, 0, 1, ""},
                                  {1, "0000:2a:00.0", "1", json{{"name", "NVIDIA H100 80GB HBM3"}}, 1, 2, 3, "lane 1: 2 worker faults"}};
  f.gpus_unavailable = json::array({json{{"ordinal", 2}, {"pci_bus_id", "0000:3a:00.0"}, {"why", "no answer"}}});
  f.shard = json{{"index", 1}, {"count", 3}, {"spec", "1/3"}, {"total", 6}, {"not_in_list", json::array()}};
  f.resumed = 1;
  f.run = 1;
  f.compile_threads = 2;
  f.wall_s = 12.5;
  f.candidates_per_hour = 288.0;
  f.worker_processes_started = 4;
  f.workers_per_gpu = 2;
  f.not_candidates = {"/campaign/cands/notes"};
  f.contracts = json{{"residual_add_relu", {{"origin", "built-in"}}}};
  r.run = f;
  r.verdicts = {verdict("fast", ScreenVerdictKind::accepted, 0, true), verdict("wrong", ScreenVerdictKind::rejected, 1, false)};
  r.candidates = r.verdicts.size();
  r.counts = verdict_counts(r.verdicts);
  r.ranking = ranking_example();
  return r;
}

// A merge of three shards, the third folder a copy of the second and one shard missing.
ScreenResult merge_example() {
  ScreenResult r;
  r.provenance = json{{"kqual_version", "0.1"}, {"gpu", nullptr}};
  r.merged = json{{"shards", json::array({json{{"dir", "/a"}, {"shard", "0/3"}, {"finished", true}, {"verdicts", 1}},
                                          json{{"dir", "/b"}, {"shard", "1/3"}, {"finished", true}, {"verdicts", 1}},
                                          json{{"dir", "/b-copy"}, {"shard", "1/3"}, {"finished", true}, {"verdicts", 1}}})},
                  {"shard_count", 3},
                  {"expected_candidates", 4},
                  {"duplicates", 1},
                  {"missing", 2},
                  {"missing_candidates", {"/campaign/cands/c", "/campaign/cands/d"}},
                  {"missing_shards", json::array({json{{"shard", "2/3"}, {"candidates", 2}}})},
                  {"list", "/campaign/shard-list-3.json"}};
  r.options = json{{"contract", "(each candidate's own)"}, {"seed", 7}, {"arch", "sm_90"}};
  r.verdicts = {verdict("a", ScreenVerdictKind::incomplete, -1, false), verdict("b", ScreenVerdictKind::refused, -1, true)};
  r.candidates = r.verdicts.size();
  r.counts = verdict_counts(r.verdicts);
  return r;
}

void expect_round_trip(const json& d, const std::string& what) {
  EXPECT_EQ(d.dump(2), to_json(screen_result_from_json(d)).dump(2)) << what;
  const json text = json::parse(d.dump(2));
  EXPECT_EQ(text.dump(2), to_json(screen_result_from_json(text)).dump(2)) << what << " (from text)";
}

std::vector<std::string> keys_of(const json& d) {
  std::vector<std::string> keys;
  for (const auto& [k, v] : d.items()) keys.push_back(k);
  return keys;
}

TEST(ScreenResult, ARunRoundTripsInTheOrderScreenWroteIt) {
  const json d = to_json(run_example());
  EXPECT_EQ(d.at("schema"), "kqual.screen/1");
  // The keys and their order as pipeline::screen wrote them before the type (screen.cpp at e570b26).
  EXPECT_EQ(keys_of(d), (std::vector<std::string>{"schema", "schema_version", "provenance", "options", "journal", "device_present",
                                                  "why_no_gpu", "gpus", "gpus_unavailable", "shard", "candidates", "resumed", "run",
                                                  "counts", "compile_threads", "wall_s", "candidates_per_hour",
                                                  "worker_processes_started", "workers_per_gpu", "not_candidates", "contracts",
                                                  "verdicts", "ranking"}));
  EXPECT_EQ(keys_of(d.at("gpus").at(0)), (std::vector<std::string>{"ordinal", "pci_bus_id", "cuda_visible_devices", "device", "judged",
                                                                   "worker_faults", "worker_processes_started", "retired"}));
  EXPECT_TRUE(d.at("gpus").at(0).at("retired").is_null());  // served to the end
  EXPECT_EQ(d.at("verdicts").at(0).at("resumed"), true);
  expect_round_trip(d, "run");
  // Without --gpus, --shard or --timing those blocks are absent, and nothing ran: no throughput.
  ScreenResult plain = run_example();
  plain.run->gpus.reset();
  plain.run->shard.reset();
  plain.run->candidates_per_hour.reset();
  plain.ranking.reset();
  const json p = to_json(plain);
  EXPECT_FALSE(p.contains("gpus") || p.contains("gpus_unavailable") || p.contains("shard") || p.contains("ranking"));
  EXPECT_TRUE(p.at("candidates_per_hour").is_null());
  expect_round_trip(p, "plain run");
}

TEST(ScreenResult, AMergeRoundTripsInTheOrderMergeWroteIt) {
  const json d = to_json(merge_example());
  EXPECT_EQ(keys_of(d), (std::vector<std::string>{"schema", "schema_version", "provenance", "merged", "options", "candidates", "counts",
                                                  "verdicts"}));
  expect_round_trip(d, "merge");
  EXPECT_FALSE(screen_result_from_json(d).run.has_value());
}

TEST(ScreenResult, WrongShapesAreNamed) {
  json d = to_json(run_example());
  d["verdicts"][1]["verdict"] = "maybe";
  try {
    (void)screen_result_from_json(d);
    ADD_FAILURE() << "accepted the verdict 'maybe'";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::input);
    EXPECT_NE(std::string(e.what()).find("verdicts[1]"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("maybe"), std::string::npos) << e.what();
  }
  json c = to_json(run_example());
  c["counts"]["rejected"] = "one";
  EXPECT_THROW((void)screen_result_from_json(c), Error);
  json q = to_json(run_example());
  q["schema"] = "kqual.compare/1";
  EXPECT_THROW((void)screen_result_from_json(q), Error);
}

TEST(ScreenResult, SummaryOfARunNamesEachGpuTheShardAndTheRanking) {
  const std::string md = render_screen_summary_md(screen_result_from_json(to_json(run_example())));
  EXPECT_NE(md.find("2 candidate(s) — accepted 1, rejected 1, refused 0, incomplete 0 — 1 run in 12.5 s, 1 from the journal."),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("Shard 1/3 of a campaign of 6 candidate(s)."), std::string::npos) << md;
  EXPECT_NE(md.find("GPU 0 (PCI bus order, 0000:18:00.0): NVIDIA H100 80GB HBM3 (sm_90), 1 judged."), std::string::npos) << md;
  EXPECT_NE(md.find("GPU 1 (PCI bus order, 0000:2a:00.0): NVIDIA H100 80GB HBM3 (sm_90), 1 judged; retired: lane 1: 2 worker faults."),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("2 worker(s) per GPU checked side by side"), std::string::npos) << md;
  // The table: a '|' inside a cell escaped, the GPU column present, the resumed row marked.
  EXPECT_NE(md.find("3 of 1025 elements \\| beyond tolerance"), std::string::npos) << md;
  EXPECT_NE(md.find("| 1 | fast | residual_add_relu | accepted |  | 812 | 0 | yes |"), std::string::npos) << md;
  EXPECT_NE(md.find("## Ranking (timing tier)"), std::string::npos) << md;
  EXPECT_NE(md.find("| 1 | fast | residual_add_relu | 2.000x [1.818, 2.222] | ship |"), std::string::npos) << md;
  const std::string html = render_screen_ranking_html(ranking_example(), run_example().verdicts);
  EXPECT_NE(html.find("<td>wrong</td><td>rejected</td><td>wrong_result</td>"), std::string::npos) << html;
}

TEST(ScreenResult, SummaryOfAMergeCountsShardsOnceAndNamesWhatIsMissing) {
  const std::string md = render_screen_summary_md(screen_result_from_json(to_json(merge_example())));
  // Three folders, two distinct shards (the copy is the same shard), of three.
  EXPECT_NE(md.find("2 candidate(s) of 4 expected, from 2 of 3 shard(s) — accepted 0, rejected 0, refused 1, incomplete 1; "
                    "1 duplicate verdict(s) dropped, 2 candidate(s) missing."),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("- shard 2/3 has no results: its 2 candidate(s) are missing"), std::string::npos) << md;
  EXPECT_NE(md.find("- missing: /campaign/cands/d"), std::string::npos) << md;
  EXPECT_EQ(md.find("## Ranking"), std::string::npos) << md;
}

TEST(ScreenResult, SummaryWithoutAGpuSaysWhatWasChecked) {
  ScreenResult r = run_example();
  r.run->device_present = false;
  r.run->why_no_gpu = "no CUDA driver";
  r.run->gpus.reset();
  const std::string md = render_screen_summary_md(r);
  EXPECT_NE(md.find("No GPU (no CUDA driver): only manifests and builds were checked, for sm_90."), std::string::npos) << md;
  EXPECT_EQ(md.find("worker(s) per GPU"), std::string::npos) << md;
}

}  // namespace
}  // namespace kqual::report
