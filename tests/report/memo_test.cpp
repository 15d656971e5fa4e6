// The memo renders every section from a results document, including a timing section built by
// the real timing/statistics code paths (a GPU run produced a document the renderer choked on:
// the CI interval is a two-element array).
#include <gtest/gtest.h>

#include "kqual/report/memo.hpp"
#include "kqual/report/provenance.hpp"
#include "kqual/stats/compare.hpp"
#include "kqual/stats/summary.hpp"

namespace kqual::report {
namespace {

json results_with_timing() {
  std::vector<double> cand, base;
  for (int i = 0; i < 30; ++i) {
    cand.push_back(0.60 + 0.001 * (i % 5));
    base.push_back(1.20 + 0.002 * (i % 7));
  }
  stats::Comparison cmp = stats::compare(base, cand);
  json series = json::array();
  series.push_back({{"label", "cand"}, {"role", "candidate"}, {"verified", true}, {"summary_ms", stats::to_json(stats::summarize(cand))},
                    {"bytes_per_s", 3.9e12}, {"samples_ms", cand}});
  series.push_back({{"label", "eager"}, {"role", "baseline"}, {"verified", true}, {"summary_ms", stats::to_json(stats::summarize(base))},
                    {"bytes_per_s", 1.9e12}, {"samples_ms", base}});
  json shape{{"shape", "n=268435456"}, {"dims", {{"n", 268435456}}}, {"dtype", "f32"}, {"min_bytes", 3.2e9}, {"series", series}, {"fastest_baseline", "eager"},
             {"candidate_vs_fastest", stats::to_json(cmp)},
             {"device_copy", {{"bytes_per_s", 4.2e12}, {"samples_ms", {0.5, 0.51}}}}};
  json r{{"schema", "kqual.qualify/1"},
         {"provenance", provenance("kqual qualify x", json{{"name", "NVIDIA H200"}, {"arch", "sm_90"}, {"sms", 132},
                                                           {"l2_bytes", 62914560}, {"driver_version", 13000}})},
         {"candidate", {{"name", "cand"}, {"contract", "residual_add_relu"},
                        {"claims", {{"dtypes", {"f32"}}, {"min_alignment_bytes", 16}, {"max_n", 1000}, {"in_place", false}}}}},
         {"contract", {{"name", "residual_add_relu"}, {"summary", "y = relu(x + r)"}, {"numerical_policy", "exact"},
                       {"refusals_checked", json::array()}}},
         {"artifact", {{"compiler", "NVRTC 13.0"}, {"arch", "sm_90"}, {"options", {"-O3"}}, {"compile_ms", 10.0},
                       {"source", "k.cu"}, {"source_sha256", "ab"}, {"image", {{"kind", "cubin"}, {"bytes", 10}, {"sha256", "cd"}}},
                       {"kernels", {{"k<float>", {{"symbol", "_Z1k"}, {"registers", 16}}}}}}},
         {"correctness", {{"candidate", "cand"}, {"verdict", "accepted"}, {"cases", 10}, {"passed", 10}, {"failed", 0},
                          {"refused", 0}, {"failure_codes", json::object()}, {"failing_cases", json::array()}}},
         {"timing", {{"boundary", "events"}, {"shapes", {shape}}}},
         {"phases", {{"timing", "done"}}},
         {"verdict", {{"decision", "ship"}, {"exit_code", 0}, {"summary", "ok"}, {"reasons", {"fast"}}, {"would_reverse", {"slow"}}}}};
  return r;
}

TEST(Memo, RendersTimingAndVerdictFromResults) {
  std::string m = render_qualify_memo(results_with_timing());
  EXPECT_NE(m.find("**Verdict: SHIP**"), std::string::npos) << m;
  EXPECT_NE(m.find("## Timing"), std::string::npos);
  EXPECT_NE(m.find("n=268435456: fastest baseline `eager`"), std::string::npos) << m;
  EXPECT_NE(m.find("→ **faster**"), std::string::npos) << m;
  EXPECT_NE(m.find("4.20 TB/s"), std::string::npos) << m;  // device copy, same run
  EXPECT_NE(m.find("92.9 %"), std::string::npos) << m;     // 3.9 / 4.2 of copy
  EXPECT_NE(m.find("| `k<float>` | `_Z1k` | 16 |"), std::string::npos) << m;
  EXPECT_NE(m.find("NVIDIA H200"), std::string::npos);
}

TEST(Memo, IncompleteRunSaysWhatWasNotRun) {
  json r = results_with_timing();
  r.erase("timing");
  r.erase("correctness");
  r["phases"] = {{"correctness", "not run: needs a GPU"}, {"timing", "not run: needs a GPU"}};
  r["verdict"]["decision"] = "incomplete";
  std::string m = render_qualify_memo(r);
  EXPECT_NE(m.find("INCOMPLETE"), std::string::npos);
  EXPECT_NE(m.find("not run: needs a GPU"), std::string::npos) << m;
}

}  // namespace
}  // namespace kqual::report
