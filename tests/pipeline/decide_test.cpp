// kqual decide on qualify-family documents (pipeline/decide.hpp): a document shaped as the landed
// version wrote it (no verdict.speed) is judged by the current rule from its samples; a document
// written now gives back its own verdict; a profile changes the weights; bench never ships; a
// malformed document is an input error naming the field.
#include <gtest/gtest.h>

#include <fstream>

#include "kqual/core/error.hpp"
#include "kqual/core/exit_codes.hpp"
#include "kqual/core/files.hpp"
#include "kqual/core/xoshiro.hpp"
#include "kqual/decision/qualify.hpp"
#include "kqual/pipeline/decide.hpp"
#include "kqual/report/results.hpp"
#include "test_util.hpp"

namespace kqual::pipeline {
namespace {

bench::Series series(const std::string& label, const std::string& role, double us, double noise, std::uint64_t seed) {
  bench::Series s;
  s.label = label;
  s.role = role;
  Xoshiro256 rng(seed);
  for (int i = 0; i < 30; ++i) s.samples_ms.push_back(us * 1e-3 * (1 + noise * (double(rng.next() >> 11) * 0x1.0p-53 - 0.5)));
  s.summary = stats::summarize(s.samples_ms);
  return s;
}

// The bundled good kernel's H200 numbers (docs/gpu-runs.md): 2.6 % slower at n=4096 (0.1 us),
// 12 % and 5 % faster at 2^20 and 2^28, against the plain fused baseline.
report::QualifyResult recorded(const std::string& command) {
  report::QualifyResult r;
  r.command = command;
  r.candidate.name = "residual_add_relu_good";
  r.candidate.contract = "residual_add_relu";
  r.contract.name = "residual_add_relu";
  r.artifact = json{{"arch", "sm_90"}};
  if (command != "bench") {
    check::CorrectnessReport rep;
    rep.cases = rep.passed = rep.evidence = 171;
    r.correctness = rep.to_json(false);
  }
  bench::TimingReport t;
  const struct { const char* shape; double base_us, ratio; } rows[] = {
      {"n=4096", 3.87, 1.026}, {"n=1048576", 9.1, 0.88}, {"n=268435456", 2450, 0.95}};
  std::uint64_t seed = 1;
  for (const auto& row : rows) {
    bench::ShapeResult sh;
    sh.shape = row.shape;
    sh.series.push_back(series("residual_add_relu_good", "candidate", row.base_us * row.ratio, 0.02, seed++));
    sh.series.push_back(series("eager_two_kernel", "baseline", row.base_us * 1.6, 0.02, seed++));
    sh.series.push_back(series("plain_fused", "baseline", row.base_us, 0.02, seed++));
    sh.fastest_baseline = "plain_fused";
    t.shapes.push_back(std::move(sh));
  }
  r.timing = std::move(t);
  // The landed version's verdict on these numbers: n=4096 outside the fixed 2 % margin.
  r.verdict.verdict = decision::ShipVerdict::inconclusive;
  r.verdict.summary = "Correct on every case, but the timing is inconclusive on at least one shape.";
  return r;
}

TEST(Decide, ALandedQualifyDocumentIsJudgedByTheCurrentRuleFromItsSamples) {
  const json doc = report::to_json(recorded("qualify"));
  ASSERT_FALSE(doc.at("verdict").contains("speed"));  // as written before the speed rule
  EXPECT_EQ(doc.at("schema"), "kqual.qualify/1");
  const DecideOutcome d = decide_results(doc, {});
  EXPECT_EQ(d.recorded, "inconclusive");
  EXPECT_EQ(d.verdict, "ship") << d.text;
  EXPECT_EQ(d.exit_code, kExitPass);
  ASSERT_FALSE(d.notes.empty());
  EXPECT_NE(d.notes.front().find("before the speed rule"), std::string::npos);
  EXPECT_TRUE(d.verdict_json.contains("speed"));
  EXPECT_NE(d.text.find("| **overall** |"), std::string::npos) << d.text;
}

TEST(Decide, ADocumentWrittenNowGivesBackItsOwnVerdict) {
  report::QualifyResult r = recorded("qualify");
  // What qualify writes now: the verdict from the same rule on the same samples.
  const DecideOutcome first = decide_results(report::to_json(r), {});
  r.verdict = decision::QualifyVerdict{};
  r.verdict.verdict = *decision::ship_verdict_from_string(first.verdict);
  r.verdict.speed = decision::speed_judgement_from_json(first.verdict_json.at("speed"));
  const json doc = report::to_json(r);
  const DecideOutcome again = decide_results(doc, {});
  EXPECT_EQ(again.recorded, again.verdict);
  EXPECT_EQ(again.verdict_json.at("speed").dump(), doc.at("verdict").at("speed").dump());
  EXPECT_TRUE(again.notes.empty());
}

TEST(Decide, AProfileAndAMarginAnswerAndUnderOurProfile) {
  const json doc = report::to_json(recorded("qualify"));
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / ("kqual-decide-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const auto profile = dir / "tiny.toml";
  // A service of tiny calls that feels 0.05 us: n=4096's 0.1 us now counts, and it dominates the time.
  std::ofstream(profile) << "name = \"tiny calls\"\n[decision]\nmargin_us = 0.05\n"
                            "[[shape]]\nshape = \"n=4096\"\ncalls = 1e6\n[[shape]]\nshape = \"n=1048576\"\ncalls = 1\n"
                            "[[shape]]\nshape = \"n=268435456\"\ncalls = 1\n";
  DecideOptions o;
  o.profiles = {profile.string()};
  const DecideOutcome d = decide_results(doc, o);
  EXPECT_NE(d.verdict, "ship") << d.text;
  EXPECT_EQ(d.verdict_json.at("speed").at("mix").at("profile"), "tiny calls");
  // A regression limit of 1 % makes the n=4096 row decide under the default mix too.
  DecideOptions strict;
  strict.margin = "1%,0.01us";
  strict.regression_limit = "1%";
  EXPECT_EQ(decide_results(doc, strict).verdict, "do_not_ship");
  std::filesystem::remove_all(dir);
}

// The GPU run of an f16-only candidate timed at f32: the contract refused every shape for it before
// any launch. That is no failure of the candidate: incomplete, naming the refusal, never do_not_ship.
TEST(Decide, AShapeRefusedBeforeLaunchIsNotTheCandidatesFailure) {
  report::QualifyResult r = recorded("qualify");
  bench::Series& cs = r.timing->shapes[0].series[0];
  cs.samples_ms.clear();
  cs.error = "refused: the candidate does not claim dtype f32";
  const DecideOutcome d = decide_results(report::to_json(r), {});
  EXPECT_EQ(d.verdict, "incomplete") << d.text;
  EXPECT_EQ(d.summary.find("failed or was wrong"), std::string::npos) << d.summary;
  EXPECT_NE(d.summary.find("does not claim dtype f32"), std::string::npos) << d.summary;
  EXPECT_EQ(d.verdict_json.at("speed").at("shapes").at(0).at("verdict"), "not_compared");
}

// A qualify run with a profile records that profile's verdict; decide with no options must give it
// back from the recorded policy and mix (it re-judged under the defaults: ship), and say what a
// command-line option replaced.
TEST(Decide, TheRecordedPolicyAndMixGiveBackTheRecordedVerdict) {
  report::QualifyResult r = recorded("qualify");
  ScratchDir t("kqual-decide-test");
  const auto profile = t.path() / "p43.toml";
  std::ofstream(profile) << "name = \"p43\"\n[decision]\nmargin = 0.04\nregression_limit = 0.2\n"
                            "[[shape]]\nshape = \"n=4096\"\ncalls = 43\n[[shape]]\nshape = \"n=1048576\"\ncalls = 1\n"
                            "[[shape]]\nshape = \"n=268435456\"\ncalls = 1\n";
  DecideOptions with_profile;
  with_profile.profiles = {profile.string()};
  const DecideOutcome under_profile = decide_results(report::to_json(r), with_profile);
  ASSERT_NE(under_profile.verdict, decide_results(report::to_json(r), {}).verdict) << "the fixture must tell the two apart";
  r.verdict = decision::QualifyVerdict{};
  r.verdict.verdict = *decision::ship_verdict_from_string(under_profile.verdict);
  r.verdict.speed = decision::speed_judgement_from_json(under_profile.verdict_json.at("speed"));
  const json doc = report::to_json(r);
  const DecideOutcome again = decide_results(doc, {});
  EXPECT_EQ(again.verdict, under_profile.verdict) << again.text;
  EXPECT_EQ(again.verdict_json.at("speed").dump(), doc.at("verdict").at("speed").dump());
  EXPECT_TRUE(again.notes.empty());
  // An option replaces one recorded setting, and says so; the recorded mix stays.
  DecideOptions limit;
  limit.regression_limit = "1%";
  const DecideOutcome strict = decide_results(doc, limit);
  EXPECT_EQ(strict.verdict_json.at("speed").at("mix").at("profile"), "p43");
  EXPECT_DOUBLE_EQ(strict.verdict_json.at("speed").at("policy").at("margin_relative").get<double>(), 0.04);
  ASSERT_EQ(strict.notes.size(), 1u);
  EXPECT_NE(strict.notes[0].find("1 % replaces 20 %"), std::string::npos) << strict.notes[0];
}

// A damaged document (a zero sample) is an input error naming the field, not exit 4; a qualify
// document without timing, or with no timed shape, is incomplete, never ship or no_difference.
TEST(Decide, AZeroSampleIsAnInputErrorAndMissingTimingIsIncomplete) {
  json doc = report::to_json(recorded("qualify"));
  doc["timing"]["shapes"][2]["series"][2]["samples_ms"][0] = 0.0;
  try {
    decide_results(doc, {});
    FAIL() << "accepted a zero sample";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::input) << e.what();
    EXPECT_NE(std::string(e.what()).find("timing.shapes[2].series[2].samples_ms[0]"), std::string::npos) << e.what();
  }
  report::QualifyResult r = recorded("qualify");
  r.timing.reset();
  const DecideOutcome none = decide_results(report::to_json(r), {});
  EXPECT_EQ(none.verdict, "incomplete") << none.text;
  EXPECT_EQ(none.exit_code, kExitIncomplete);
  r = recorded("qualify");
  r.timing->shapes.clear();
  EXPECT_EQ(decide_results(report::to_json(r), {}).verdict, "incomplete");
  // check never times: correct is ship, no performance claim.
  r = recorded("check");
  r.timing.reset();
  EXPECT_EQ(decide_results(report::to_json(r), {}).verdict, "ship");
}

TEST(Decide, BenchResultsNeverShip) {
  const DecideOutcome d = decide_results(report::to_json(recorded("bench")), {});
  EXPECT_EQ(d.verdict, "incomplete") << d.text;
  EXPECT_NE(d.summary.find("Correctness was not checked"), std::string::npos);
}

TEST(Decide, AMalformedDocumentNamesTheField) {
  json doc = report::to_json(recorded("qualify"));
  doc["timing"]["shapes"][0]["series"][0]["samples_ms"] = "fast";
  try {
    decide_results(doc, {});
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::input);
    EXPECT_NE(std::string(e.what()).find("samples_ms"), std::string::npos) << e.what();
  }
  EXPECT_THROW(decide_results(json{{"schema", "kqual.selftest/1"}}, {}), Error);
}

}  // namespace
}  // namespace kqual::pipeline
