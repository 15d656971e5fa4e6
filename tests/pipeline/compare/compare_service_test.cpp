// The service view of kqual compare (docs/service-view.md): both sides through the same simulated
// service from their measured startups and warm samples; objectives per side, judged on their
// intervals: NEW certainly missing an objective OLD certainly meets is do not ship, an interval that
// contains the bound makes the verdict inconclusive. Small simulations: CPU only, about a second each.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>

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

// The profile's one objective: `pop`'s p`pct` at most `max_ms`.
decision::DeploymentProfile objective_profile(const char* pop, int pct, double max_ms) {
  return service_profile(
      fmt::format("[[objective]]\npopulation = \"{}\"\npercentile = {}\nmax_ms = {}\n", pop, pct, max_ms));
}

// The service view of `modes` and warm() under `p`, over `requests` simulated requests and `bootstrap`
// resamples; `d` is the verdict it may turn.
json simulate(const std::vector<compare::StartupMode>& modes, const decision::DeploymentProfile& p, decision::Decision& d,
              int requests, int bootstrap) {
  compare::ServiceViewOptions o;
  o.requests = requests;
  o.bootstrap = bootstrap;
  return compare::service_view(modes, warm(), p, d, o);
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
  decision::Decision d;
  d.verdict = decision::ShipVerdict::ship;
  const json sv = simulate(startups(), objective_profile("first_request", 50, 280), d, 20000, 30);
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
  decision::Decision d;
  d.verdict = decision::ShipVerdict::inconclusive;
  const json sv = simulate(startups(), objective_profile("all", 99, 400), d, 10000, 10);
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
  const json sv = simulate(startups(), p, d, 5000, 5);
  ASSERT_TRUE(sv.at("computed").get<bool>()) << sv.dump(2);
  EXPECT_EQ(sv.at("old").at("populations").at(0).at("from"), "start episodes in the simulated steady state");
  EXPECT_EQ(sv.at("old").at("populations").at(0).at("n").get<int>(), 500);
  EXPECT_GT(sv.at("inputs").at("replicas").get<int>(), 50);  // 13,889 requests/s of 4 ms at 70 %
  EXPECT_FALSE(sv.at("new").at("config").at("first_startup").is_null());
  // Without the profile's cache mode measured, nothing is simulated, and it says why.
  auto only_off = startups();
  only_off.erase(only_off.begin() + 1, only_off.end());
  const json none = simulate(only_off, p, d, 5000, 5);
  EXPECT_FALSE(none.at("computed").get<bool>());
  EXPECT_NE(none.at("reason").get<std::string>().find("'warm'"), std::string::npos);
}

namespace {

// Warm-cache starts as startups() has them (OLD ~230 ms, NEW ~230 ms), cold-cache ones 10 times as long.
std::vector<compare::StartupMode> cold_ten_times(double factor = 10) {
  auto modes = startups();
  for (auto& m : modes)
    if (m.cache == CacheMode::cold)
      for (int k = 0; k < 2; ++k) m.side[k].base_ms = spread(230 * factor, 20 * factor, 30);
  return modes;
}

// A warm-cache service of `replicas` at `arrival_rate` requests/s, restarted `starts_per_day` times.
std::string upgrade_profile(int starts_per_day, int arrival_rate, int replicas, bool driver_upgrade) {
  return fmt::format(R"(
name = "upgrade"
process_starts_per_day = {}
calls_per_process = 50
kernel_share = 0.5
jit_cache = "warm"
[service]
arrival_rate = {}
replicas = {}
driver_upgrade = {}
)",
                     starts_per_day, arrival_rate, replicas, driver_upgrade);
}

// The first-request p99 of `side` over 20000 requests (10 resamples) under the profile text `profile`.
double first_p99(const std::vector<compare::StartupMode>& modes, const std::string& profile, const char* side = "new") {
  decision::Decision d;
  const json sv = simulate(modes, decision::parse_profile(profile, "upgrade.toml"), d, 20000, 10);
  EXPECT_TRUE(sv.at("computed").get<bool>()) << sv.dump(2);
  return percentile(sv.at(side), "first_request", 99).at("value_ms").get<double>();
}

}  // namespace

// driver_upgrade = true: each replica's first start after the upgrade pays the cold-cache startup
// (2.3 s here, 10 times the warm one), later starts the profile's warm cache. With 20 replicas
// restarting ~30 times each over the run, 20 of ~600 first requests are cold (3 %): the first-request
// p99 moves from ~0.24 s to the cold startup; with driver_upgrade = false the cold samples are unused.
TEST(CompareService, DriverUpgradeMovesTheFirstRequestP99) {
  const std::string off_profile = upgrade_profile(129600, 50, 20, false);
  const std::string on_profile = upgrade_profile(129600, 50, 20, true);
  // first_p99 simulates 20000 requests, 400 s here: 1.5 starts/s, 600 starts, no start episodes.
  const double off = first_p99(cold_ten_times(), off_profile);
  const double off_same = first_p99(cold_ten_times(1), off_profile);
  const double on = first_p99(cold_ten_times(), on_profile);
  EXPECT_EQ(off, off_same);  // the cold-cache samples play no part without the upgrade
  EXPECT_LT(off, 300);
  EXPECT_GT(on, 2000);
  EXPECT_GT(first_p99(cold_ten_times(), on_profile, "old"), 2000);
}

// The same through start episodes (restarts too rare for the run: 20 expected, 500 episodes): the
// episodes draw the cold startup in the share the run would see — x = 5 restarts per replica, (1 -
// e^-5) / 5 = 20 % of the starts a replica's first — so the p99 moves here too.
TEST(CompareService, DriverUpgradeReachesStartEpisodes) {
  const std::string off_profile = upgrade_profile(1728, 20, 4, false);
  const std::string on_profile = upgrade_profile(1728, 20, 4, true);
  // first_p99 simulates 20000 requests, 1,000 s here.
  const double off = first_p99(cold_ten_times(), off_profile);
  const double on = first_p99(cold_ten_times(), on_profile);
  EXPECT_EQ(off, first_p99(cold_ten_times(1), off_profile));
  EXPECT_LT(off, 300);
  EXPECT_GT(on, 2000);
}

namespace {

struct Judged {
  json sv;
  decision::Decision d;
};

// The profile's first-request p50 objective at max_ms, the verdict before the service view `before`.
Judged judged(const std::vector<compare::StartupMode>& modes, double max_ms,
              decision::ShipVerdict before = decision::ShipVerdict::ship) {
  Judged j;
  j.d.verdict = before;
  j.d.headline = "speed rule";
  j.sv = simulate(modes, objective_profile("first_request", 50, max_ms), j.d, 20000, 30);
  EXPECT_TRUE(j.sv.at("computed").get<bool>()) << j.sv.dump(2);
  return j;
}

std::pair<double, double> ci(const json& sv, const char* side) {
  const json& e = percentile(sv.at(side), "first_request", 50).at("ci_ms");
  return {e.at(0).get<double>(), e.at(1).get<double>()};
}

bool said(const decision::Decision& d, const std::string& text) {
  for (const auto& r : d.reasons)
    if (r.find(text) != std::string::npos) return true;
  return false;
}

// OLD and NEW swapped: OLD ~310 ms, NEW ~230 ms in the cold cache.
std::vector<compare::StartupMode> swapped() {
  auto modes = startups();
  for (auto& m : modes) std::swap(m.side[0], m.side[1]);
  return modes;
}

}  // namespace

// The interval rule, NEW's side: a bound inside NEW's CI (OLD's wholly below it) is inconclusive
// with the reason, not do not ship; a bound below NEW's whole CI is do not ship; above it, both meet.
TEST(CompareService, AnObjectiveInsideNewsIntervalIsInconclusive) {
  const auto [lo, hi] = ci(judged(startups(), 1000).sv, "new");
  ASSERT_LT(lo, hi);
  ASSERT_GT(lo, 260);  // OLD's whole interval (~232 ms) lies below every bound tried here
  const double mid = std::round((lo + hi) / 2 * 10) / 10;
  ASSERT_GT(mid, lo);
  ASSERT_LT(mid, hi);

  const Judged open = judged(startups(), mid);
  EXPECT_EQ(open.d.verdict, decision::ShipVerdict::inconclusive) << open.d.headline;
  const std::string contains = fmt::format("contains the {:.4g} ms objective", mid);
  EXPECT_NE(open.d.headline.find(contains), std::string::npos) << open.d.headline;
  EXPECT_NE(open.d.headline.find("the p50 first-request CI ["), std::string::npos) << open.d.headline;
  EXPECT_TRUE(said(open.d, "inconclusive whether NEW misses p50 of first_request")) << open.d.reasons.back();
  const json& ob = open.sv.at("objectives").at(0);
  EXPECT_EQ(ob.at("effect"), "inconclusive");
  EXPECT_EQ(ob.at("new").at("standing"), "inconclusive");
  EXPECT_EQ(ob.at("old").at("standing"), "meets");
  // The point estimate alone would have said "misses" or "meets"; it is not what decides.
  EXPECT_NE(ob.at("new").at("standing_text").get<std::string>().find(contains), std::string::npos);

  const Judged miss = judged(startups(), std::floor(lo) - 1);
  EXPECT_EQ(miss.d.verdict, decision::ShipVerdict::do_not_ship);
  EXPECT_NE(miss.d.headline.find("lies above the"), std::string::npos) << miss.d.headline;
  EXPECT_EQ(miss.sv.at("objectives").at(0).at("effect"), "do_not_ship");

  const Judged meet = judged(startups(), std::ceil(hi) + 1);
  EXPECT_EQ(meet.d.verdict, decision::ShipVerdict::ship);
  EXPECT_EQ(meet.d.headline, "speed rule");
  EXPECT_TRUE(said(meet.d, "both meet p50 of first_request"));
  EXPECT_EQ(meet.sv.at("objectives").at(0).at("effect"), "none");

  // An open objective does not soften a do-not-ship the speed rule reached; it is stated.
  const Judged already = judged(startups(), mid, decision::ShipVerdict::do_not_ship);
  EXPECT_EQ(already.d.verdict, decision::ShipVerdict::do_not_ship);
  EXPECT_EQ(already.d.headline, "speed rule");
  // No difference in speed, but an objective that may now be missed: inconclusive.
  EXPECT_EQ(judged(startups(), mid, decision::ShipVerdict::no_difference).d.verdict, decision::ShipVerdict::inconclusive);
}

// The interval rule, OLD's side: NEW meets an objective OLD misses only when both intervals say so;
// OLD's interval containing the bound leaves NEW (wholly below it) meeting it with no turn, and NEW
// (wholly above it) possibly missing one OLD may meet: inconclusive.
TEST(CompareService, AnObjectiveInsideOldsIntervalTurnsOnlyWhereNewMayMiss) {
  const auto [lo, hi] = ci(judged(swapped(), 1000).sv, "old");  // OLD ~310 ms now
  const double mid = std::round((lo + hi) / 2 * 10) / 10;
  ASSERT_GT(mid, lo);
  ASSERT_LT(mid, hi);

  const Judged better = judged(swapped(), std::floor(lo) - 1);
  EXPECT_EQ(better.d.verdict, decision::ShipVerdict::ship);
  EXPECT_TRUE(said(better.d, "NEW meets p50 of first_request <= ")) << better.d.reasons.back();
  EXPECT_TRUE(said(better.d, "that OLD misses"));
  EXPECT_EQ(better.sv.at("objectives").at(0).at("old").at("standing"), "misses");

  const Judged open_old = judged(swapped(), mid);
  EXPECT_EQ(open_old.d.verdict, decision::ShipVerdict::ship);
  EXPECT_TRUE(said(open_old.d, "NEW meets p50 of first_request")) << open_old.d.reasons.back();
  EXPECT_TRUE(said(open_old.d, "OLD may or may not"));
  EXPECT_EQ(open_old.sv.at("objectives").at(0).at("effect"), "none");

  // Both sides near 310 ms (OLD's starts for NEW too): NEW's interval may lie above a bound OLD's
  // contains — OLD may meet it, so NEW may be worse: inconclusive, OLD's interval named.
  auto both_slow = swapped();
  for (auto& m : both_slow) m.side[1].base_ms = spread(330, 20, 30);
  const auto [nlo, nhi] = ci(judged(both_slow, 1000).sv, "new");
  const auto [olo, ohi] = ci(judged(both_slow, 1000).sv, "old");
  ASSERT_LT(ohi, nlo);
  const Judged worse = judged(both_slow, std::round((olo + ohi) / 2 * 10) / 10);
  EXPECT_EQ(worse.d.verdict, decision::ShipVerdict::inconclusive) << worse.d.headline;
  EXPECT_NE(worse.d.headline.find("OLD: the p50 first-request CI"), std::string::npos) << worse.d.headline;
  EXPECT_EQ(worse.sv.at("objectives").at(0).at("new").at("standing"), "misses");
  (void)nhi;
}
