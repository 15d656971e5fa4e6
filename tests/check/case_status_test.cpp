// Case statuses are an enum with one table of words: the words are the "status" of each case in
// results.json, which other tools read, so they must not change.
#include <gtest/gtest.h>

#include "kqual/check/evaluate.hpp"

namespace kqual::check {
namespace {

TEST(CaseStatus, EveryStatusHasItsWordBothWays) {
  const std::pair<CaseStatus, const char*> words[] = {{CaseStatus::pass, "pass"},
                                                      {CaseStatus::fail, "fail"},
                                                      {CaseStatus::refused, "refused"},
                                                      {CaseStatus::skipped, "skipped"},
                                                      {CaseStatus::not_run, "not_run"}};
  for (const auto& [status, word] : words) {
    EXPECT_STREQ(to_string(status), word);
    EXPECT_EQ(kCaseStatusNames.parse(word), status) << word;
  }
  EXPECT_FALSE(kCaseStatusNames.parse("passed"));
  EXPECT_FALSE(kCaseStatusNames.parse("Pass"));
}

TEST(CaseStatus, TheReportWritesWordsNotNumbers) {
  CorrectnessReport rep;
  for (CaseStatus s : {CaseStatus::pass, CaseStatus::fail, CaseStatus::not_run}) {
    CaseResult r;
    r.spec.id = to_string(s);
    r.status = s;
    rep.results.push_back(r);
  }
  const json cases = rep.to_json(true).at("case_results");
  ASSERT_EQ(cases.size(), 3u) << cases.dump(1);
  for (const auto& c : cases) EXPECT_EQ(c.at("status"), c.at("id")) << c.dump();
  // Without all cases the passed ones are left out; failing and not-run ones stay.
  EXPECT_EQ(rep.to_json(false).at("failing_cases").size(), 2u);
  json j = CaseStatus::skipped;  // a status put in a document by itself is its word too
  EXPECT_EQ(j, "skipped");
}

TEST(CaseStatus, ACaseNeverJudgedIsNoPass) { EXPECT_EQ(CaseResult{}.status, CaseStatus::fail); }

}  // namespace
}  // namespace kqual::check
