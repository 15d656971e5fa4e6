// kqual screen --timing without a device: the ranking and the peers' figures computed from timed
// verdicts (kqual's strict reading beside the point estimate), the speed record's trip through the
// journal, the timing options in the journal's header (a journal made without --timing is not
// resumed with it), and the files a --no-gpu run writes. The tier itself times on the GPU
// (screen_device_test.cpp).
#include <gtest/gtest.h>

#include <fstream>

#include "kqual/core/files.hpp"
#include "kqual/worker/worker.hpp"
#include "kqual/pipeline/screen.hpp"
#include "kqual/pipeline/screen_journal.hpp"
#include "kqual/pipeline/screen_timing.hpp"
#include "test_util.hpp"

namespace kqual::pipeline {
namespace {
namespace fs = std::filesystem;

// An accepted, timed verdict whose overall effect is `ratio` (candidate / baseline time) in [lo, hi].
ScreenVerdict timed(const std::string& name, double ratio, double lo, double hi, const std::string& decision = "ship") {
  ScreenVerdict v;
  v.name = name;
  v.candidate = "/c/" + name;
  v.contract = "residual_add_relu";
  v.verdict = ScreenVerdictKind::accepted;
  v.speed = json{{"decision", decision}, {"effect", {{"ratio", ratio}, {"ci", {lo, hi}}, {"speedup", 1.0 / ratio}}}};
  return v;
}

ScreenVerdict judged(const std::string& name, ScreenVerdictKind k) {
  ScreenVerdict v;
  v.name = name;
  v.verdict = k;
  v.reason = k == ScreenVerdictKind::rejected ? "wrong_result" : "";
  return v;
}

TEST(ScreenRanking, FastestFirstAndTheFiguresCountOnlyWhatTheIntervalShows) {
  std::vector<ScreenVerdict> vs = {
      timed("slow", 1.20, 1.10, 1.30, "do_not_ship"),
      timed("fast_sure", 0.50, 0.45, 0.55),                  // 2x, the whole interval past 1.5x
      timed("fast_unsure", 0.60, 0.30, 1.05, "inconclusive"),  // 1.67x by its estimate, interval reaches 1
      timed("a_bit", 0.90, 0.85, 0.95),                       // faster, not by 1.5x
      judged("wrong", ScreenVerdictKind::rejected),
      judged("no_build", ScreenVerdictKind::refused),
  };
  ScreenVerdict untimed = judged("no_effect", ScreenVerdictKind::accepted);
  untimed.speed = json{{"error", "timing failed: x"}};
  vs.push_back(untimed);
  const json r = screen_ranking(vs);
  const json& list = r["ranked"];
  ASSERT_EQ(list.size(), 5u);
  EXPECT_EQ(list[0]["name"], "fast_sure");
  EXPECT_EQ(list[1]["name"], "fast_unsure");
  EXPECT_EQ(list[2]["name"], "a_bit");
  EXPECT_EQ(list[3]["name"], "slow");
  EXPECT_EQ(list[0]["rank"], 1);
  EXPECT_EQ(list[4]["name"], "no_effect");
  EXPECT_EQ(list[4]["rank"], 0) << "no effect: listed after the ranked ones, unranked";
  EXPECT_NE(list[4]["why_not"].get<std::string>().find("timing failed"), std::string::npos);
  const json& p = r["population"];
  EXPECT_EQ(p["judged"], 6) << "accepted and rejected; the refused never reached the GPU";
  EXPECT_EQ(p["correct"], 5);
  EXPECT_DOUBLE_EQ(p["fraction_correct"].get<double>(), 5.0 / 6.0);
  EXPECT_EQ(p["faster_1_0x"], 2) << "fast_sure and a_bit: intervals wholly below 1";
  EXPECT_EQ(p["faster_1_5x"], 1) << "fast_sure only";
  EXPECT_EQ(p["point_estimate_faster_1_0x"], 3);
  EXPECT_EQ(p["point_estimate_faster_1_5x"], 2) << "the peers' reading counts fast_unsure too";
  const std::string md = report::render_screen_ranking_md(r);
  EXPECT_NE(md.find("| 1 | fast_sure | residual_add_relu | 2.000x [1.818, 2.222] | ship |"), std::string::npos) << md;
}

// A candidate that crashed, hung or raised while timed is rejected (worker_fault, its worker
// replaced), not left accepted; a shape refused before launch or kqual's own failure rejects nothing.
TEST(ScreenRanking, ACandidateThatFailsWhileTimedIsRejected) {
  auto report_with = [](const std::string& error) {
    bench::TimingReport tr;
    bench::ShapeResult sh;
    sh.shape = "n=4096";
    sh.series.resize(2);
    sh.series[0].error = error;
    tr.shapes.push_back(sh);
    return tr;
  };
  ScreenVerdict v = judged("c", ScreenVerdictKind::accepted);
  bool fault = false;
  reject_failure_while_timed(report_with("crashed: the worker died (signal 11)"), v, &fault);
  EXPECT_EQ(v.verdict, ScreenVerdictKind::rejected);
  EXPECT_EQ(v.reason, "worker_fault");
  EXPECT_TRUE(fault);
  ScreenVerdict raised = judged("r", ScreenVerdictKind::accepted);
  fault = false;
  reject_failure_while_timed(report_with("error: launch failed: an illegal memory access"), raised, &fault);
  EXPECT_EQ(raised.verdict, ScreenVerdictKind::rejected);
  EXPECT_EQ(raised.reason, "timed_launch_failed");
  EXPECT_FALSE(fault);
  for (const std::string& not_its : {std::string("refused: the candidate does not claim dtype f32"),
                                    std::string("error: ") + worker::kHarnessFailure + ": out of device memory"}) {
    ScreenVerdict ok = judged("ok", ScreenVerdictKind::accepted);
    reject_failure_while_timed(report_with(not_its), ok, &fault);
    EXPECT_EQ(ok.verdict, ScreenVerdictKind::accepted) << not_its;
  }
}

// The effect of the shapes that did not crash is no speed: a record with a failed shape (or an
// incomplete one) is listed unranked and counts in no "faster" figure.
TEST(ScreenRanking, AnEffectWithAFailedShapeIsNeitherRankedNorCounted) {
  ScreenVerdict crashed = timed("crashed_once", 0.5, 0.45, 0.55, "do_not_ship");
  crashed.speed["shapes"] = json::array({json{{"shape", "n=4096"}, {"call", "failed"}}, json{{"shape", "n=1048576"}, {"call", "faster"}}});
  ScreenVerdict partial = timed("partial", 0.5, 0.45, 0.55, "incomplete");
  const json r = screen_ranking({crashed, partial, timed("fine", 0.9, 0.85, 0.95)});
  EXPECT_EQ(r["ranked"][0]["name"], "fine");
  EXPECT_EQ(r["ranked"][1]["rank"], 0);
  EXPECT_EQ(r["ranked"][2]["rank"], 0);
  EXPECT_EQ(r["population"]["faster_1_5x"], 0);
  EXPECT_EQ(r["population"]["faster_1_0x"], 1);
  EXPECT_EQ(r["population"]["point_estimate_faster_1_5x"], 0);
}

TEST(ScreenRanking, PyTorchSubmissionsAreCountedAgainstEagerToo) {
  // The peers' figures are against PyTorch eager: a timed submission's record carries that effect
  // apart from the one against the fastest baseline (which may be torch.compile).
  ScreenVerdict a = timed("sub_a", 1.10, 1.05, 1.15, "do_not_ship");  // slower than compiled...
  a.speed["vs_eager"] = json{{"ratio", 0.6}, {"ci", {0.55, 0.65}}, {"speedup", 1.0 / 0.6}};  // ...1.67x eager, sure
  ScreenVerdict b = timed("sub_b", 0.95, 0.80, 1.10, "inconclusive");
  b.speed["vs_eager"] = json{{"ratio", 0.9}, {"ci", {0.7, 1.1}}, {"speedup", 1.0 / 0.9}};  // faster by its estimate only
  ScreenVerdict c = timed("kernel", 0.9, 0.85, 0.95);  // a kernel candidate: no eager effect
  const json p = screen_ranking({a, b, c})["population"];
  EXPECT_EQ(p["torch_submissions_timed_against_eager"], 2);
  EXPECT_EQ(p["faster_than_eager_1_0x"], 1);
  EXPECT_EQ(p["faster_than_eager_1_5x"], 1);
  EXPECT_EQ(p["point_estimate_faster_than_eager_1_0x"], 2);
  EXPECT_EQ(p["point_estimate_faster_than_eager_1_5x"], 1);
  EXPECT_NE(report::render_screen_ranking_md(screen_ranking({a, b, c})).find("PyTorch submissions against PyTorch eager: 2 timed"), std::string::npos);
}

TEST(ScreenRanking, TheHtmlPageEscapesNamesAndNeedsNoScript) {
  std::vector<ScreenVerdict> vs = {timed("<b>&x", 0.5, 0.4, 0.6)};
  const std::string h = report::render_screen_ranking_html(screen_ranking(vs), vs);
  EXPECT_NE(h.find("&lt;b&gt;&amp;x"), std::string::npos) << h;
  EXPECT_EQ(h.find("<b>&x"), std::string::npos);
  EXPECT_EQ(h.find("<script"), std::string::npos);
  EXPECT_NE(h.find("<table>"), std::string::npos);
}

TEST(ScreenRanking, TheSpeedRecordTravelsThroughTheJournal) {
  const ScreenVerdict v = timed("x", 0.8, 0.7, 0.9);
  const ScreenVerdict back = ScreenVerdict::from_json(v.to_json());
  EXPECT_EQ(back.speed, v.speed);
  EXPECT_FALSE(judged("y", ScreenVerdictKind::rejected).to_json().contains("speed")) << "untimed verdicts keep their old form";
}

TEST(ScreenTimingOptions, TheyDecideAVerdictOnlyWhenTheTierIsOn) {
  ScreenOptions o;
  EXPECT_FALSE(screen_verdict_options(o, "sm_90", "").contains("timing")) << "journals of correctness-only screens resume as before";
  o.timing.on = true;
  o.timing.rounds = 5;
  const json j = screen_verdict_options(o, "sm_90", "");
  ASSERT_TRUE(j.contains("timing"));
  EXPECT_EQ(j["timing"]["rounds"], 5);
}

TEST(ScreenTimingRun, WithoutAGpuNothingIsTimedAndTheRankingSaysSo) {
  ScratchDir tmp("kqual-screen-timing");
  ScreenOptions o;
  o.inputs = {test::repo_root() / "candidates/residual_add_relu/good"};
  o.out_dir = tmp.path() / "out";
  o.use_gpu = false;
  o.timing.on = true;
  const ScreenOutcome out = screen(o);
  EXPECT_EQ(out.exit_code, 3);
  ASSERT_TRUE(out.results.contains("ranking"));
  EXPECT_TRUE(out.results["ranking"]["ranked"].empty());
  EXPECT_EQ(out.results["ranking"]["population"]["judged"], 0);
  EXPECT_TRUE(fs::is_regular_file(o.out_dir / "ranking.html"));
  EXPECT_NE(read_text_file(o.out_dir / "summary.md").find("## Ranking (timing tier)"), std::string::npos);
  // The same folder screened again without --timing: the journal's options differ, named.
  ScreenOptions plain = o;
  plain.timing.on = false;
  try {
    (void)screen(plain);
    ADD_FAILURE() << "a journal made with --timing resumed without it";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("timing"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace kqual::pipeline
