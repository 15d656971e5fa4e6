// The service view of kqual compare (docs/service-view.md): both sides through the same simulated
// service from their measured startups and warm samples; objectives per side; NEW missing an
// objective OLD meets is do not ship. Small simulations: CPU only, well under a second each.
#include <gtest/gtest.h>

#include <cmath>

#include "kqual/decision/decision.hpp"
#include "kqual/decision/profile.hpp"
#include "kqual/pipeline/compare.hpp"

using namespace kqual;
using decision::CacheMode;

namespace {

std::vector<double> spread(double center, double width, int n) {
  std::vector<double> v;
  for (int i = 0; i < n; ++i) v.push_back(center + width * (double(i) / double(n - 1) - 0.5));
  return v;
}

// OLD starts in ~230 ms, NEW (PTX JIT) in ~310 ms in every cache mode but warm; warm 1.00 → 0.90 ms.
std::vector<compare::StartupMode> startups(int runs = 30) {
  std::vector<compare::StartupMode> out;
  for (CacheMode c : {CacheMode::off, CacheMode::cold, CacheMode::warm}) {
    compare::StartupMode m;
    m.cache = c;
    for (int k = 0; k < 2; ++k) m.side[k].base_ms = spread(k == 1 && c != CacheMode::warm ? 310 : 230, 20, runs);
    out.push_back(m);
  }
  return out;
}

compare::WarmShape warm() {
  compare::WarmShape w;
  w.shape = "n=268435456";
  w.side[0].pooled = spread(1.0, 0.02, 60);
  w.side[1].pooled = spread(0.9, 0.02, 60);
  return w;
}

decision::DeploymentProfile service_profile(const std::string& extra) {
  return decision::parse_profile(R"(
name = "svc"
process_starts_per_day = 20000
calls_per_process = 50
kernel_share = 0.5
jit_cache = "cold"
)" + extra,
                                 "svc.toml");
}

const json& percentile(const json& side, const char* pop, double p) {
  for (const auto& x : side.at("populations"))
    if (x.at("population") == pop)
      for (const auto& e : x.at("percentiles"))
        if (e.at("percentile").get<double>() == p) return e;
  static const json none;
  return none;
}

}  // namespace

TEST(CompareService, ObjectiveNewMissesAndOldMeetsIsDoNotShip) {
  const auto p = service_profile(R"(
[[objective]]
population = "first_request"
percentile = 50
max_ms = 280
)");
  decision::Decision d;
  d.verdict = decision::ShipVerdict::ship;
  compare::ServiceViewOptions o;
  o.requests = 20000;
  o.bootstrap = 30;
  const json sv = compare::service_view(startups(), warm(), p, d, o);
  ASSERT_TRUE(sv.at("computed").get<bool>()) << sv.dump(2);
  // First request = startup + a request of 2 ms (1 ms kernel at share 0.5) + any wait: medians ~232 and ~312 ms.
  // Its tail is longer: a restart soon after another finds the queue its predecessor's startup built.
  const double old_p50 = percentile(sv.at("old"), "first_request", 50).at("value_ms").get<double>();
  const double new_p50 = percentile(sv.at("new"), "first_request", 50).at("value_ms").get<double>();
  EXPECT_NEAR(old_p50, 232, 6);
  EXPECT_NEAR(new_p50, 312, 6);
  const double old_p99 = percentile(sv.at("old"), "first_request", 99).at("value_ms").get<double>();
  const double new_p99 = percentile(sv.at("new"), "first_request", 99).at("value_ms").get<double>();
  EXPECT_GT(old_p99, old_p50);
  EXPECT_GT(new_p99, old_p99 + 60);
  // The whole request is twice the kernel: all-request medians 2.0 and 1.9 ms.
  EXPECT_NEAR(percentile(sv.at("old"), "all", 50).at("value_ms").get<double>(), 2.0, 0.1);
  EXPECT_NEAR(percentile(sv.at("new"), "all", 50).at("value_ms").get<double>(), 1.9, 0.1);
  ASSERT_EQ(sv.at("objectives").size(), 1u);
  EXPECT_TRUE(sv.at("objectives").at(0).at("old").at("meets").get<bool>());
  EXPECT_FALSE(sv.at("objectives").at(0).at("new").at("meets").get<bool>());
  EXPECT_NEAR(sv.at("objectives").at(0).at("new").at("by_ms").get<double>(), new_p50 - 280, 1e-6);
  EXPECT_EQ(d.verdict, decision::ShipVerdict::do_not_ship);
  EXPECT_NE(d.headline.find("NEW misses"), std::string::npos) << d.headline;
  bool said = false;
  for (const auto& r : d.reasons) said = said || r.find("NEW misses p50 of first_request <= 280 ms") != std::string::npos;
  EXPECT_TRUE(said);
  // 30 measured starts cannot carry a p99 interval: said, per side.
  EXPECT_FALSE(sv.at("warnings").empty());
  // Intervals over the measured startups bracket the estimate.
  const json& e = percentile(sv.at("new"), "first_request", 50);
  EXPECT_LE(e.at("ci_ms").at(0).get<double>(), e.at("value_ms").get<double>());
  EXPECT_GE(e.at("ci_ms").at(1).get<double>(), e.at("value_ms").get<double>());
}

TEST(CompareService, BothMeetLeavesTheVerdictAndGoodputIsReported) {
  const auto p = service_profile(R"(
[[objective]]
population = "all"
percentile = 99
max_ms = 400
)");
  decision::Decision d;
  d.verdict = decision::ShipVerdict::inconclusive;
  compare::ServiceViewOptions o;
  o.requests = 10000;
  o.bootstrap = 10;
  const json sv = compare::service_view(startups(), warm(), p, d, o);
  EXPECT_EQ(d.verdict, decision::ShipVerdict::inconclusive);
  EXPECT_NE(sv.at("objectives").at(0).at("verdict").get<std::string>().find("both meet"), std::string::npos);
  for (const char* side : {"old", "new"}) {
    const json& g = sv.at(side).at("goodput");
    EXPECT_TRUE(g.at("computed").get<bool>());
    EXPECT_GT(g.at("good_per_s").get<double>(), 0);
    EXPECT_GT(g.at("max_rate_per_s").get<double>(), g.at("rate_per_s").get<double>());
  }
  // Arrival rate from the profile: 50 calls × 20000 starts / 86400 s.
  EXPECT_NEAR(sv.at("inputs").at("arrival_rate_per_s").get<double>(), 50.0 * 20000 / 86400, 1e-9);
}

// Rare restarts (a long-lived server): the first-request numbers come from start episodes, and
// a driver upgrade makes each replica's first start pay the cold cache.
TEST(CompareService, RareStartsUseEpisodesAndDriverUpgradeIsCold) {
  auto p = decision::parse_profile(R"(
name = "server"
process_starts_per_day = 6
calls_per_process = 2e8
kernel_share = 0.25
jit_cache = "warm"
[service]
driver_upgrade = true
)",
                                   "server.toml");
  decision::Decision d;
  compare::ServiceViewOptions o;
  o.requests = 5000;
  o.bootstrap = 5;
  const json sv = compare::service_view(startups(), warm(), p, d, o);
  ASSERT_TRUE(sv.at("computed").get<bool>()) << sv.dump(2);
  EXPECT_EQ(sv.at("old").at("populations").at(0).at("from"), "start episodes in the simulated steady state");
  EXPECT_EQ(sv.at("old").at("populations").at(0).at("n").get<int>(), 500);
  EXPECT_GT(sv.at("inputs").at("replicas").get<int>(), 50);  // 13,889 requests/s of 4 ms at 70 %
  EXPECT_FALSE(sv.at("new").at("config").at("first_startup").is_null());
  // Without the profile's cache mode measured, nothing is simulated, and it says why.
  auto only_off = startups();
  only_off.erase(only_off.begin() + 1, only_off.end());
  const json none = compare::service_view(only_off, warm(), p, d, o);
  EXPECT_FALSE(none.at("computed").get<bool>());
  EXPECT_NE(none.at("reason").get<std::string>().find("'warm'"), std::string::npos);
}
