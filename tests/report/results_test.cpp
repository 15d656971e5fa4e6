// The typed results (report/results.hpp) at the JSON edge: every document kqual writes reads back
// into its type and writes out again unchanged, key order included; and the documents the pipeline
// writes still carry every key they carried before the pipeline filled typed results (the key lists
// in data/*.keys were taken from the documents the JSON-assembling code wrote, fixtures.hpp).
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

#include "fixtures.hpp"
#include "kqual/core/error.hpp"
#include "kqual/core/files.hpp"
#include "kqual/report/memo.hpp"
#include "kqual/report/results.hpp"

namespace kqual::report {
namespace {
namespace fs = std::filesystem;
namespace fx = test::fixtures;

// Built once per suite: each one compiles the bundled candidate with NVRTC.
const json& results_doc(const std::string& which) {
  static ScratchDir scratch("kqual-results-test");
  const fs::path& dir = scratch.path();
  static std::map<std::string, json> cache;
  auto it = cache.find(which);
  if (it != cache.end()) return it->second;
  json d;
  if (which == "qualify") d = fx::qualify_gpu(dir / which);
  else if (which == "qualify-rejected") d = fx::qualify_rejected(dir / which);
  else if (which == "qualify-nogpu") d = fx::qualify_static(dir / which);
  else if (which == "check-nogpu") d = fx::qualify_static(dir / which, "check");
  else if (which == "bench-nogpu") d = fx::qualify_static(dir / which, "bench");
  else if (which == "compare") d = fx::compare_gpu(dir / which);
  else if (which == "compare-nogpu") d = fx::compare_static(dir / which);
  return cache[which] = d;
}

// The document as `kqual report` sees it: read back from its text.
json reparsed(const json& d) { return json::parse(d.dump(2)); }

void expect_same(const json& want, const json& got, const std::string& what) {
  EXPECT_EQ(want, got) << what;
  EXPECT_EQ(want.dump(2), got.dump(2)) << what;  // key order and number formatting too
}

TEST(Results, QualifyFamilyRoundTrips) {
  for (const char* which : {"qualify", "qualify-rejected", "qualify-nogpu", "check-nogpu", "bench-nogpu"}) {
    const json& d = results_doc(which);
    expect_same(d, to_json(qualify_result_from_json(d)), which);
    const json text = reparsed(d);
    expect_same(text, to_json(qualify_result_from_json(text)), std::string(which) + " (from text)");
  }
  // The PyTorch baselines' block is part of the typed result, last, as qualify has always written it.
  json d = results_doc("qualify");
  d["torch_baselines"] = json{{"status", "timed"}, {"eager", {{"shapes", 2}}}};
  const QualifyResult r = qualify_result_from_json(d);
  ASSERT_TRUE(r.torch_baselines.has_value());
  expect_same(d, to_json(r), "qualify with torch_baselines");
}

// Where the time went: each step that ran, in order, typed and rendered in the memo.
TEST(Results, WallTimePerStepIsRecordedAndRendered) {
  const QualifyResult r = qualify_result_from_json(reparsed(results_doc("qualify-nogpu")));
  ASSERT_FALSE(r.wall_seconds.empty());
  EXPECT_EQ(r.wall_seconds.front().first, "compile") << "without a GPU only the static steps ran";
  EXPECT_GT(r.wall_seconds.front().second, 0.0);
  for (const auto& [step, s] : r.wall_seconds) EXPECT_NE(step, "timing") << "nothing was timed without a GPU";
  const std::string memo = render_qualify_memo(r);
  EXPECT_NE(memo.find("Wall time: compile "), std::string::npos) << memo;
}

TEST(Results, TimingStaysTyped) {
  const QualifyResult r = qualify_result_from_json(reparsed(results_doc("qualify")));
  ASSERT_TRUE(r.timing);
  ASSERT_EQ(r.timing->shapes.size(), 3u);
  const bench::ShapeResult& sh = r.timing->shapes.back();
  EXPECT_EQ(sh.dims.at("n"), 268435456);
  EXPECT_EQ(sh.series.size(), 3u);
  EXPECT_EQ(sh.series.at(0).role, "candidate");
  EXPECT_EQ(sh.series.at(0).samples_ms.size(), 30u);
  EXPECT_EQ(sh.vs_baselines.size(), 2u);
  EXPECT_GT(sh.copy_bytes_per_s, 0);
  EXPECT_EQ(r.verdict.verdict, decision::ShipVerdict::ship);
  EXPECT_EQ(r.candidate.claims.dtypes.empty(), false);
  EXPECT_FALSE(r.contract.refusals_checked.empty());
  EXPECT_EQ(r.phases.get("timing"), "done: 3 shapes, 2 baselines");
}

TEST(Results, CompareRoundTrips) {
  for (const char* which : {"compare", "compare-nogpu"}) {
    const json& d = results_doc(which);
    const CompareResult r = compare_result_from_json(d);
    EXPECT_EQ(r.measured, std::string(which) == "compare") << which;
    expect_same(d, to_json(r), which);
    const json text = reparsed(d);
    expect_same(text, to_json(compare_result_from_json(text)), std::string(which) + " (from text)");
  }
}

TEST(Results, JudgeFillsTheSameResultItWrites) {
  const json& d = results_doc("compare");
  const CompareResult r = compare_result_from_json(d);
  EXPECT_EQ(r.verdict.exit_code, d.at("verdict").at("exit_code").get<int>());
  ASSERT_TRUE(r.verdict.profile);
  EXPECT_EQ(*r.verdict.profile, d.at("verdict").at("profile").get<std::string>());
  ASSERT_TRUE(r.correctness_relation);
  EXPECT_EQ(r.correctness_relation->relation, "both accepted");
  EXPECT_TRUE(r.warm && r.startup && r.decisions);
}

SelftestResult selftest_example() {
  SelftestResult r;
  r.provenance = provenance("kqual selftest --seeds 1,2", fx::h200());
  r.device_present = true;
  r.seeds = {1, 2};
  r.lanes = 4;
  r.compile_threads = 16;
  r.contracts = {{"residual_add_relu", 2, 2, 1, 1, 1}};
  r.classes = {{"missing_tail", 2, 2, {"residual_add_relu/missing_tail"}}, {"race", 2, 1, {"residual_add_relu/race"}}};
  SelftestCandidate good;
  good.candidate = "add_relu_vec";
  good.contract = "residual_add_relu";
  good.dir = "/x/candidates/residual_add_relu/good";
  good.kind = "good";
  good.expected = "accepted";
  SelftestSeed sd;
  sd.seed = 1;
  sd.outcome = "accepted";
  sd.as_expected = true;
  sd.cases = 40;
  sd.passed = 36;
  sd.evidence = 36;
  sd.timed = false;
  sd.sanitizer_pass = json{{"status", "clean"}, {"tools", json::array()}};
  sd.wall_ms = 812.25;
  sd.slowest_cases = json::array({json{{"id", "f32/n=257/normal/off=0"}, {"wall_ms", 3.5}}});
  good.seeds = std::vector<SelftestSeed>{sd};
  good.as_expected = true;
  SelftestCandidate broken = good;
  broken.kind = "broken";
  broken.candidate = "race";
  broken.expected = "rejected: race or wrong_value";
  broken.sanitizer = json{{"tool", "racecheck"}, {"errors", 3}, {"log", "/tmp/x.log"}};
  sd.outcome = "rejected: wrong_value";
  sd.failure_codes = {{"wrong_value", 3}, {"race", 1}};
  sd.first_failure = "y[3] = 0 but expected 1.5";
  sd.sanitizer_pass = "not run";
  broken.seeds = std::vector<SelftestSeed>{sd, sd};
  broken.seeds->at(1).seed = 2;
  SelftestCandidate unbuilt;
  unbuilt.candidate = "bad";
  unbuilt.contract = "softmax";
  unbuilt.dir = "/x/candidates/softmax/broken/bad";
  unbuilt.kind = "broken";
  unbuilt.expected = "a valid manifest";
  unbuilt.outcome = "manifest invalid: no [candidate] table";
  unbuilt.as_expected = false;
  SelftestCandidate nogpu = unbuilt;
  nogpu.outcome = "compiled; not run (no GPU)";
  nogpu.as_expected.reset();
  r.candidates = {good, broken, unbuilt, nogpu};
  r.checks = 3;
  r.unexpected = 1;
  r.sanitizer = SelftestSanitizer{"racecheck", "/usr/local/cuda/bin/compute-sanitizer", ""};
  return r;
}

TEST(Results, SelftestRoundTrips) {
  const json d = to_json(selftest_example());
  EXPECT_EQ(d.at("schema"), "kqual.selftest/1");
  // The keys and their order as pipeline::selftest has always written them.
  std::vector<std::string> keys;
  for (const auto& [k, v] : d.items()) keys.push_back(k);
  EXPECT_EQ(keys, (std::vector<std::string>{"schema", "schema_version", "provenance", "device_present", "why_no_device", "seeds",
                                            "contracts", "classes", "candidates", "checks", "unexpected", "sanitizer", "lanes",
                                            "compile_threads"}));
  std::vector<std::string> seed_keys;
  for (const auto& [k, v] : d.at("candidates").at(0).at("seeds").at(0).items()) seed_keys.push_back(k);
  EXPECT_EQ(seed_keys, (std::vector<std::string>{"seed", "outcome", "as_expected", "cases", "passed", "failed", "evidence",
                                                 "skipped", "failure_codes", "first_failure", "timed", "sanitizer_pass",
                                                 "wall_ms", "slowest_cases"}));
  expect_same(d, to_json(selftest_result_from_json(d)), "selftest");
  expect_same(reparsed(d), to_json(selftest_result_from_json(reparsed(d))), "selftest (from text)");
}

// Every key path of a document, in document order, arrays collapsed to "[]".
void key_paths(const json& j, const std::string& path, std::vector<std::string>& out, std::set<std::string>& seen) {
  if (j.is_object()) {
    for (const auto& [k, v] : j.items()) {
      const std::string p = path.empty() ? k : path + "." + k;
      if (seen.insert(p).second) out.push_back(p);
      key_paths(v, p, out, seen);
    }
  } else if (j.is_array()) {
    for (const auto& v : j) key_paths(v, path + "[]", out, seen);
  }
}

std::vector<std::string> key_paths(const json& j) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  key_paths(j, "", out, seen);
  return out;
}

std::vector<std::string> read_keys(const std::string& name) {
  std::ifstream in(fs::path(KQUAL_SOURCE_DIR) / "tests/report/data" / (name + ".keys"));
  std::vector<std::string> v;
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) v.push_back(line);
  return v;
}

// The key lists were taken from the documents the JSON-assembling code wrote (the fixtures as they
// were then). The documents the pipeline itself writes here (qualify and compare without a GPU,
// compare's judge()) keep their key order too; the measured qualify fixtures were assembled by the
// test in another order then, so only their keys are compared.
TEST(Results, PipelineOutputKeepsEveryKey) {
  for (const char* which : {"qualify", "qualify-rejected", "qualify-nogpu", "compare", "compare-nogpu"}) {
    const std::vector<std::string> want = read_keys(which);
    ASSERT_FALSE(want.empty()) << which;
    const std::vector<std::string> got = key_paths(results_doc(which));
    // KQUAL_WRITE_KEYS=1 rewrites the lists from what the pipeline writes now (review the diff: a
    // key that disappears is a reader broken downstream).
    if (std::getenv("KQUAL_WRITE_KEYS")) {
      std::ofstream out(fs::path(KQUAL_SOURCE_DIR) / "tests/report/data" / (std::string(which) + ".keys"));
      for (const auto& k : got) out << k << "\n";
      continue;
    }
    std::string missing, added;
    for (const auto& k : want)
      if (std::find(got.begin(), got.end(), k) == got.end()) missing += " " + k;
    for (const auto& k : got)
      if (std::find(want.begin(), want.end(), k) == want.end()) added += " " + k;
    EXPECT_EQ(missing, "") << which << ": keys no longer written";
    EXPECT_EQ(added, "") << which << ": keys not written before";
    const std::string w = which;
    if (w != "qualify" && w != "qualify-rejected") {
      EXPECT_EQ(want, got) << which << ": same keys, in another order";
    }
  }
}

TEST(Results, MemoFromTypedEqualsMemoFromDocument) {
  for (const char* which : {"qualify", "qualify-rejected", "qualify-nogpu"}) {
    const json text = reparsed(results_doc(which));
    EXPECT_EQ(render_qualify_memo(results_doc(which)), render_qualify_memo(qualify_result_from_json(text))) << which;
  }
  for (const char* which : {"compare", "compare-nogpu"})
    EXPECT_EQ(render_compare_memo(results_doc(which)), render_compare_memo(compare_result_from_json(reparsed(results_doc(which))))) << which;
}

TEST(Results, WrongShapesAreNamed) {
  json d = reparsed(results_doc("qualify"));
  d["timing"]["shapes"][1]["series"][0]["summary_ms"]["median"] = "fast";
  try {
    (void)qualify_result_from_json(d);
    ADD_FAILURE() << "accepted a string median";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::input);
    EXPECT_NE(std::string(e.what()).find("timing.shapes[1].series[0].summary_ms.median: expected a number, found string"),
              std::string::npos)
        << e.what();
  }
  json c = reparsed(results_doc("compare"));
  c["verdict"]["decision"] = "maybe";
  EXPECT_THROW((void)compare_result_from_json(c), Error);
  EXPECT_THROW((void)qualify_result_from_json(results_doc("compare")), Error);  // another command's document
  EXPECT_THROW((void)compare_result_from_json(results_doc("qualify")), Error);
}

}  // namespace
}  // namespace kqual::report
