#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "kqual/core/error.hpp"
#include "kqual/model/amdahl.hpp"

namespace kqual::model {
namespace {

TEST(Amdahl, CeilingAtShareZeroHalfAndOne) {
  EXPECT_DOUBLE_EQ(amdahl_ceiling(0.0), 1.0);
  EXPECT_DOUBLE_EQ(amdahl_ceiling(0.5), 2.0);
  EXPECT_DOUBLE_EQ(amdahl_ceiling(0.3), 1.0 / 0.7);
  EXPECT_TRUE(std::isinf(amdahl_ceiling(1.0)));
  EXPECT_GT(amdahl_ceiling(1.0), 0);
}

TEST(Amdahl, CeilingRefusesSharesOutsideUnitInterval) {
  for (double bad : {-0.01, 1.01, std::numeric_limits<double>::quiet_NaN()}) {
    try {
      amdahl_ceiling(bad);
      FAIL() << "share " << bad << " accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::usage);
    }
  }
}

TEST(Amdahl, SpeedupAtGivenKernelSpeedup) {
  EXPECT_NEAR(amdahl_speedup(0.5, 2.0), 1.0 / 0.75, 1e-15);   // 1/(0.5 + 0.25)
  EXPECT_NEAR(amdahl_speedup(0.3, 2.0), 1.0 / 0.85, 1e-15);   // 1/(0.7 + 0.15)
  EXPECT_DOUBLE_EQ(amdahl_speedup(0.0, 100.0), 1.0);           // share 0: nothing changes
  EXPECT_DOUBLE_EQ(amdahl_speedup(1.0, 4.0), 4.0);             // share 1: the kernel is everything
  EXPECT_NEAR(amdahl_speedup(0.3, 0.5), 1.0 / 1.3, 1e-15);     // a slower kernel slows the whole
  EXPECT_THROW(amdahl_speedup(0.3, 0.0), Error);
}

TEST(Amdahl, ReportExplainsCeilingAndPoints) {
  const auto r = amdahl_report(0.3, {2.0, 4.0});
  ASSERT_EQ(r.points.size(), 2u);
  EXPECT_NEAR(r.ceiling, 1.4285714285714286, 1e-12);
  EXPECT_NEAR(r.points[0].end_to_end_speedup, 1.1764705882352942, 1e-12);
  EXPECT_NEAR(r.points[0].time_saved_fraction, 0.15, 1e-12);
  EXPECT_NE(r.explanation.find("at most 1.43x"), std::string::npos) << r.explanation;
  EXPECT_NE(r.explanation.find("still needs measurement"), std::string::npos);
  const auto j = to_json(amdahl_report(1.0, {}));
  EXPECT_TRUE(j["ceiling"].is_null());
  EXPECT_TRUE(j["ceiling_unbounded"].get<bool>());
}

TEST(Breakeven, CallsIsColdCostOverWarmSaving) {
  const auto b = breakeven_calls(0.070, 12e-6);  // 70 ms of extra JIT against 12 us per call
  EXPECT_NEAR(b.calls, 5833.333333333333, 1e-6);
  EXPECT_FALSE(b.never);
  EXPECT_NE(b.explanation.find("5,834 calls"), std::string::npos) << b.explanation;
}

TEST(Breakeven, NeverWhenWarmSavingIsNotPositive) {
  EXPECT_TRUE(breakeven_calls(0.070, 0.0).never);
  EXPECT_TRUE(breakeven_calls(0.070, -1e-6).never);
  EXPECT_TRUE(std::isinf(breakeven_calls(0.070, -1e-6).calls));
}

TEST(Breakeven, ZeroCallsWhenColdCostIsNotPositive) {
  const auto free_start = breakeven_calls(0.0, 5e-6);
  EXPECT_EQ(free_start.calls, 0.0);
  EXPECT_FALSE(free_start.never);
  // Issue 25: slower warm is never repaid, whatever the start does ("0 calls" before).
  const auto faster_start = breakeven_calls(-0.010, -1e-6);  // starts faster, slower warm
  EXPECT_TRUE(faster_start.never);
  EXPECT_TRUE(std::isinf(faster_start.calls));
  EXPECT_NE(faster_start.explanation.find("first 10,000 calls"), std::string::npos) << faster_start.explanation;
  const auto same_start = breakeven_calls(0.0, -1e-6);  // no faster at start, slower warm
  EXPECT_TRUE(same_start.never);
  EXPECT_TRUE(std::isinf(same_start.calls));
  EXPECT_NE(same_start.explanation.find("never pays back"), std::string::npos) << same_start.explanation;
  EXPECT_THROW(breakeven_calls(std::numeric_limits<double>::infinity(), 1e-6), Error);
}

TEST(Breakeven, ReportNetEffectOverProcessLifetime) {
  const auto pays = breakeven_report(0.070, 12e-6, 10000);
  EXPECT_NEAR(pays.net_saving_per_process_s, 0.05, 1e-12);
  EXPECT_EQ(pays.verdict, "pays off");
  const auto loses = breakeven_report(0.070, 12e-6, 1000);
  EXPECT_NEAR(loses.net_saving_per_process_s, -0.058, 1e-12);
  EXPECT_EQ(loses.verdict, "does not pay off");
  EXPECT_FALSE(breakeven_report(0.070, 12e-6).has_calls_per_process);
}

}  // namespace
}  // namespace kqual::model
