// kqual selftest's terminal text (report/selftest_text.hpp) from a typed result: the per-contract tally, a
// row per candidate with UNEXPECTED where a seed's outcome was not the expected one and the first
// failure's reason, the classes of defect, the totals; and without a GPU, what was not run.
#include <gtest/gtest.h>

#include <string>

#include "kqual/report/selftest_text.hpp"

namespace kqual::report {
namespace {

SelftestResult one_contract(bool device) {
  SelftestResult r;
  r.device_present = device;
  r.why_no_device = "no CUDA driver";
  r.provenance = json{{"gpu", {{"name", "NVIDIA H100 80GB HBM3"}}}};
  r.seeds = {1, 2};
  r.contracts.push_back({"softmax", 2, 1, 1, 1, 1});
  SelftestCandidate good{"good", "softmax", "candidates/softmax/good", "good", "accepted", {}, {}, {}, {}};
  SelftestCandidate broken{"no_max", "softmax", "candidates/softmax/broken/no_max", "broken", "rejected: wrong_result", {}, {}, {}, {}};
  if (device) {
    SelftestSeed ok;
    ok.seed = 1;
    ok.outcome = "accepted";
    ok.as_expected = true;
    good.seeds = std::vector<SelftestSeed>{ok};
    SelftestSeed missed;
    missed.seed = 1;
    missed.outcome = "accepted";
    missed.as_expected = false;
    missed.first_failure = "";
    broken.seeds = std::vector<SelftestSeed>{missed};
  } else {
    good.outcome = "compiled (not run: no GPU)";
    broken.outcome = "compiled (not run: no GPU)";
  }
  r.candidates = {good, broken};
  r.classes.push_back({"wrong_result", 1, 0, {"softmax/no_max"}});
  r.checks = 2;
  r.unexpected = device ? 1 : 0;
  return r;
}

TEST(SelftestText, TalliesRowsClassesAndTotalsOnADevice) {
  const std::string t = render_selftest_text(one_contract(true), 4);
  for (const char* says : {"selftest on NVIDIA H100 80GB HBM3 — seeds [1,2], 4 lane(s)",
                           "== softmax: broken rejected 1/2 (for the intended reason 1/2), good accepted 1/1",
                           "UNEXPECTED accepted", "== by class of defect", "wrong_result           rejected for it 0/1 checks  (softmax/no_max)",
                           "selftest: 2 checks, 1 unexpected"})
    EXPECT_NE(t.find(says), std::string::npos) << says << "\n" << t;
  // Only the broken row is unexpected: the good one's line says its outcome plainly.
  const std::size_t good_row = t.find("  good      good");
  ASSERT_NE(good_row, std::string::npos) << t;
  const std::string line = t.substr(good_row, t.find('\n', good_row) - good_row);
  EXPECT_EQ(line.find("UNEXPECTED"), std::string::npos) << line;
  EXPECT_NE(line.find("accepted"), std::string::npos) << line;
}

TEST(SelftestText, WithoutAGpuSaysWhatWasNotRun) {
  const std::string t = render_selftest_text(one_contract(false), 1);
  for (const char* says : {"selftest: no GPU (no CUDA driver): candidates compiled only, none run", "== softmax: not run (no GPU)",
                           "compiled (not run: no GPU)", "selftest: 2 checks, 0 unexpected"})
    EXPECT_NE(t.find(says), std::string::npos) << says << "\n" << t;
  EXPECT_EQ(t.find("by class of defect"), std::string::npos) << t;
}

}  // namespace
}  // namespace kqual::report
