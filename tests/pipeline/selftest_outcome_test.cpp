// selftest's outcome of one seed against what the folder expects (src/pipeline/selftest_outcome.cpp).
#include <gtest/gtest.h>

#include "../../src/pipeline/selftest_outcome.hpp"

namespace kqual::pipeline {
namespace {

CorrectnessSummary summary(bool accepted, const std::string& primary, int harness_errors = 0) {
  CorrectnessSummary s;
  s.accepted = accepted;
  s.primary_code = primary;
  s.harness_errors = harness_errors;
  s.incomplete = harness_errors > 0 && primary.empty();
  if (harness_errors > 0) s.harness_failure = "f32/cols=2050,rows=1048576/past-2^31: the reference worker stopped";
  return s;
}

SelftestExpectation good() { return {false, {}, "accepted", false}; }
SelftestExpectation broken(const std::string& code) { return {true, {code}, "rejected: " + code, false}; }

TEST(SelftestOutcome, AcceptedAndRejectedAsTheFolderSays) {
  const auto a = seed_outcome(good(), "", summary(true, ""), {}, "", "");
  EXPECT_EQ(a.got, "accepted");
  EXPECT_TRUE(a.ok);
  const auto r = seed_outcome(broken("nan_policy"), "", summary(false, "nan_policy"), {{"nan_policy", 3}}, "", "");
  EXPECT_EQ(r.got, "rejected: nan_policy");
  EXPECT_TRUE(r.ok);
  EXPECT_TRUE(r.rejected);
  const auto other = seed_outcome(broken("nan_policy"), "", summary(false, "wrong_result"), {{"wrong_result", 1}}, "", "");
  EXPECT_FALSE(other.ok);
  const auto timed = seed_outcome(broken("timed_output_wrong"), "", summary(true, ""), {{"timed_output_wrong", 1}},
                                  "timed_output_wrong", "shape n=4096: launch 7 wrong");
  EXPECT_EQ(timed.got, "rejected: timed_output_wrong");
  EXPECT_TRUE(timed.ok);
}

// Seen on the H100 (layernorm's eager baseline, 2026-12-07): every case run passed and kqual's own failure
// stopped the rest; the row said "UNEXPECTED rejected: " with no class, a verdict no rule gives.
TEST(SelftestOutcome, KqualsOwnFailureIsIncompleteNeverAnEmptyRejection) {
  for (const SelftestExpectation& x : {good(), broken("wrong_result")}) {
    const auto o = seed_outcome(x, "", summary(false, "", 1), {}, "", "");
    EXPECT_EQ(o.got.rfind("incomplete: kqual's own failure: f32/cols=2050", 0), 0u) << o.got;
    EXPECT_FALSE(o.ok);
    EXPECT_FALSE(o.rejected);
  }
  const auto load = seed_outcome(good(), "no kernel named k", summary(false, ""), {}, "", "");
  EXPECT_EQ(load.got, "load failed: no kernel named k");
  EXPECT_FALSE(load.ok);
}

}  // namespace
}  // namespace kqual::pipeline
