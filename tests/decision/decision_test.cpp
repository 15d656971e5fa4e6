#include "kqual/decision/decision.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>

#include "kqual/core/error.hpp"

using namespace kqual::decision;
using kqual::stats::Verdict;

namespace {

// The reference pair: a PTX-only new build whose kernel is 20 % faster warm. JIT cost on the first
// request in cold and cache-off modes (+70 ms: 350 → 420 ms from process start), none with a warm cache; warm 1.0 ms → 0.8 ms per call.
DecisionInput ptx_only_but_faster() {
  DecisionInput in;
  in.cold.push_back({CacheMode::off, 0.350, 0.420, 0.070, {0.060, 0.080}, Verdict::slower, {}});
  in.cold.push_back({CacheMode::cold, 0.350, 0.420, 0.070, {0.060, 0.080}, Verdict::slower, {}});
  in.cold.push_back({CacheMode::warm, 0.350, 0.3501, 0.0001, {-0.0002, 0.0004}, Verdict::no_difference, {}});
  in.warm = {1.0e-3, 0.8e-3, -0.2e-3, {-0.22e-3, -0.18e-3}, Verdict::faster, {}};
  in.new_uses_ptx_jit = true;
  return in;
}

DeploymentProfile long_lived() {
  DeploymentProfile p;
  p.name = "server";
  p.process_starts_per_day = 6;
  p.calls_per_process = 2e8;
  p.first_request_budget_ms = 30000;
  p.kernel_share = 0.25;
  return p;
}

DeploymentProfile cold_start_heavy() {
  DeploymentProfile p;
  p.name = "burst";
  p.process_starts_per_day = 20000;
  p.calls_per_process = 50;
  p.first_request_budget_ms = 400;
  p.kernel_share = 0.6;
  return p;
}

bool any_contains(const std::vector<std::string>& v, const std::string& part) {
  for (const auto& s : v)
    if (s.find(part) != std::string::npos) return true;
  return false;
}

}  // namespace

TEST(ShipDecision, SamePairShipsForServerNotForColdStartHeavy) {
  const DecisionInput in = ptx_only_but_faster();
  const Decision server = decide(in, long_lived());
  EXPECT_EQ(server.verdict, ShipVerdict::ship) << server.headline;
  const Decision burst = decide(in, cold_start_heavy());
  EXPECT_EQ(burst.verdict, ShipVerdict::do_not_ship) << burst.headline;
  EXPECT_STREQ(to_string(burst.verdict), "do_not_ship");

  // Break-even: 70 ms / 0.2 ms = 350 calls; over the intervals 60/0.22 .. 80/0.18.
  EXPECT_NEAR(server.breakeven_calls, 350, 1e-6);
  EXPECT_NEAR(server.breakeven_calls_optimistic, 0.060 / 0.22e-3, 1e-6);
  EXPECT_NEAR(server.breakeven_calls_conservative, 0.080 / 0.18e-3, 1e-6);
  EXPECT_TRUE(any_contains(server.would_reverse, "fewer than 350 calls")) << server.would_reverse.front();
  // Amdahl: kernel 1.25x with 25 % share → 1 / (0.75 + 0.2) = 1.0526x.
  ASSERT_TRUE(server.end_to_end_speedup.has_value());
  EXPECT_NEAR(*server.kernel_speedup, 1.25, 1e-9);
  EXPECT_NEAR(*server.end_to_end_speedup, 1.0 / 0.95, 1e-9);
  EXPECT_NEAR(server.amdahl_ceiling, 4.0 / 3.0, 1e-9);
}

TEST(ShipDecision, ColdStartHeavyFailsTheBudgetAndMitigationsFixIt) {
  const Decision d = decide(ptx_only_but_faster(), cold_start_heavy());
  EXPECT_NE(d.reasons.front().find("budget"), std::string::npos) << d.reasons.front();
  ASSERT_EQ(d.mitigations.size(), 3u);
  EXPECT_EQ(d.mitigations[0].name, "ship native SASS");
  EXPECT_EQ(d.mitigations[0].verdict_after, ShipVerdict::ship);
  EXPECT_EQ(d.mitigations[1].name, "ship a warm JIT cache");
  EXPECT_EQ(d.mitigations[1].verdict_after, ShipVerdict::ship);
  // Pre-loading takes the JIT off the first request, but 50 calls × 0.2 ms never repay 70 ms.
  EXPECT_EQ(d.mitigations[2].name, "pre-load at start-up");
  EXPECT_EQ(d.mitigations[2].verdict_after, ShipVerdict::do_not_ship);
  EXPECT_TRUE(any_contains(d.would_reverse, "'warm'")) << d.would_reverse.size();
}

TEST(ShipDecision, WithoutBudgetTheNetCostStillDecides) {
  DeploymentProfile p = cold_start_heavy();
  p.first_request_budget_ms.reset();
  const Decision d = decide(ptx_only_but_faster(), p);
  EXPECT_EQ(d.verdict, ShipVerdict::do_not_ship);
  EXPECT_NEAR(d.net_cost_per_process_s, 0.070 - 50 * 0.2e-3, 1e-12);
  EXPECT_NEAR(d.net_cost_per_day_s, 20000 * (0.070 - 50 * 0.2e-3), 1e-9);
  EXPECT_TRUE(any_contains(d.would_reverse, "more than 350 calls"));
}

TEST(ShipDecision, WarmCacheProfileShipsEvenWhenColdStartHeavy) {
  DeploymentProfile p = cold_start_heavy();
  p.jit_cache = CacheMode::warm;
  const Decision d = decide(ptx_only_but_faster(), p);
  EXPECT_EQ(d.verdict, ShipVerdict::ship) << d.headline;
  EXPECT_EQ(d.extra_cold_s, 0);  // warm-mode delta was "no difference": counted as 0
}

TEST(ShipDecision, BothNoDifferenceIsNoDifference) {
  DecisionInput in;
  in.cold.push_back({CacheMode::cold, 0.26, 0.2601, 0.0001, {-0.0003, 0.0004}, Verdict::no_difference, {}});
  in.warm = {1e-3, 1.001e-3, 1e-6, {-5e-6, 6e-6}, Verdict::no_difference, {}};
  EXPECT_EQ(decide(in, long_lived()).verdict, ShipVerdict::no_difference);
  EXPECT_EQ(decide(in, cold_start_heavy()).verdict, ShipVerdict::no_difference);
}

TEST(ShipDecision, ExtraColdCostWithoutWarmGainNeverPays) {
  DecisionInput in;
  in.cold.push_back({CacheMode::cold, 0.26, 0.33, 0.07, {0.06, 0.08}, Verdict::slower, {}});
  in.warm = {1e-3, 1.001e-3, 1e-6, {-5e-6, 6e-6}, Verdict::no_difference, {}};
  const Decision d = decide(in, long_lived());
  EXPECT_EQ(d.verdict, ShipVerdict::do_not_ship);
  EXPECT_TRUE(std::isinf(d.breakeven_calls));
  EXPECT_TRUE(to_json(d)["breakeven_never"].get<bool>());
  EXPECT_TRUE(to_json(d)["breakeven_calls"].is_null());
}

TEST(ShipDecision, InconclusiveWarmGivesInconclusive) {
  DecisionInput in;
  in.cold.push_back({CacheMode::cold, 0.26, 0.2601, 0.0001, {-0.0003, 0.0004}, Verdict::no_difference, {}});
  in.warm = {1e-3, 0.99e-3, -1e-5, {-4e-5, 2e-5}, Verdict::inconclusive, {}};
  EXPECT_EQ(decide(in, long_lived()).verdict, ShipVerdict::inconclusive);
}

TEST(ShipDecision, MissingModeFallsBackToWorstMeasured) {
  DecisionInput in = ptx_only_but_faster();
  in.cold.erase(in.cold.begin() + 1);  // no "cold" measurement
  const Decision d = decide(in, cold_start_heavy());
  EXPECT_EQ(d.cache_mode, CacheMode::off);
  EXPECT_TRUE(any_contains(d.reasons, "stands in"));
  in.cold.clear();
  EXPECT_THROW(decide(in, long_lived()), kqual::Error);
}

// NEW failed every probe in the profile's mode: that mode was measured, and no other stands in for
// a failure (kqual decide said "not measured; the worst measured mode stands in" and no_difference).
TEST(ShipDecision, AProfileModeInWhichASideFailedIsIncomplete) {
  DecisionInput in = ptx_only_but_faster();
  in.cold.erase(in.cold.begin() + 1);  // "cold": NEW's probes all failed
  in.failed_modes.emplace_back(CacheMode::cold, "every startup probe of NEW failed in it");
  const Decision d = decide(in, cold_start_heavy());
  EXPECT_EQ(d.verdict, ShipVerdict::incomplete) << d.headline;
  EXPECT_EQ(d.cache_mode, CacheMode::cold);
  EXPECT_NE(d.headline.find("NEW failed"), std::string::npos) << d.headline;
  EXPECT_FALSE(any_contains(d.reasons, "stands in for it.") && any_contains(d.reasons, "worst measured"));
  // A profile deciding in a mode measured on both sides is decided as before.
  DeploymentProfile warm = cold_start_heavy();
  warm.jit_cache = CacheMode::warm;
  EXPECT_NE(decide(in, warm).verdict, ShipVerdict::incomplete);
}

TEST(ShipDecision, BuildersFromSamples) {
  std::mt19937_64 g(7);
  std::normal_distribution<double> n(0, 1);
  std::vector<double> old_load(30), new_load(30), old_call(30), new_call(30);
  for (std::size_t i = 0; i < 30; ++i) {
    old_load[i] = 0.0001 + 0.00001 * std::fabs(n(g));
    new_load[i] = 0.070 + 0.002 * n(g);
    old_call[i] = 1.0e-3 + 1e-6 * n(g);
    new_call[i] = 0.8e-3 + 1e-6 * n(g);
  }
  kqual::stats::DecisionOptions o;
  o.test.bootstrap.resamples = 2000;
  const ColdStartDelta c = cold_start_delta(CacheMode::cold, old_load, new_load, old_load, new_load, o);
  EXPECT_EQ(c.verdict, Verdict::slower);
  EXPECT_NEAR(c.delta_s, 0.0699, 0.002);
  EXPECT_GT(c.delta_ci_s.lo, 0.06);
  const WarmDelta w = warm_delta(old_call, new_call, o);
  EXPECT_EQ(w.verdict, Verdict::faster);
  EXPECT_NEAR(w.delta_s, -0.2e-3, 2e-6);
  DecisionInput in;
  in.cold = {c};
  in.warm = w;
  EXPECT_EQ(decide(in, long_lived()).verdict, ShipVerdict::ship);
  EXPECT_EQ(decide(in, cold_start_heavy()).verdict, ShipVerdict::do_not_ship);
  const auto j = to_json(decide(in, cold_start_heavy()));
  EXPECT_EQ(j["verdict"], "do_not_ship");
  EXPECT_FALSE(to_markdown(decide(in, long_lived())).empty());
}
