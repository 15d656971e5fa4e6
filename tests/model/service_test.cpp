// The service simulation against closed-form queueing results, and its startup, failure,
// bootstrap and goodput rules (docs/service-view.md). Seeded runs; tolerances are stated per test
// and are several standard errors of a run of that length wide.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "kqual/core/error.hpp"
#include "kqual/model/service.hpp"
#include "kqual/model/service_report.hpp"

namespace kqual::model::service {
namespace {

double mean_of(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return s / double(v.size());
}

ServiceConfig textbook(const char* arrivals, const char* service, std::int64_t requests = 200000) {
  ServiceConfig c;
  c.arrivals = parse_arrivals("--arrivals", arrivals);
  c.service = parse_distribution("--service", service);
  c.requests = requests;
  c.seed = 1;
  return c;
}

// M/M/1, lambda 50/s, mu 100/s (rho 0.5): sojourn ~ Exp(50/s), mean 20 ms, p50 13.9 ms, p99 92.1 ms,
// p99.9 138 ms. Tolerance: 3 % on the mean, 5 % on p50/p99, 8 % on p99.9 (200,000 requests).
TEST(ServiceModel, MM1SojournMeanAndPercentiles) {
  const SimResult r = simulate(textbook("poisson:50", "exp:10ms"));
  ASSERT_EQ(r.requests, 200000);
  const double lambda = 50, mu = 100;
  EXPECT_NEAR(mean_of(r.all_s), mm1_mean_sojourn_s(lambda, mu), 0.03 * 0.020);
  for (auto [p, tol] : {std::pair{50.0, 0.05}, {99.0, 0.05}, {99.9, 0.08}}) {
    const double want = mm1_sojourn_percentile_s(lambda, mu, p);
    EXPECT_NEAR(percentile_of(r.all_s, p), want, tol * want) << "p" << p;
  }
  EXPECT_NEAR(r.busy_share, 0.5, 0.02);
}

// The same at rho 0.8 (mean 50 ms): heavier autocorrelation, so 6 % on the mean and p99.
TEST(ServiceModel, MM1AtHighLoad) {
  const SimResult r = simulate(textbook("poisson:80", "exp:10ms"));
  EXPECT_NEAR(mean_of(r.all_s), mm1_mean_sojourn_s(80, 100), 0.06 * 0.050);
  EXPECT_NEAR(percentile_of(r.all_s, 99), mm1_sojourn_percentile_s(80, 100, 99), 0.06 * 0.2303);
}

// M/D/1, lambda 50/s, D 10 ms: Pollaczek-Khinchine mean wait rho D / (2 (1 - rho)) = 5 ms. 3 %.
TEST(ServiceModel, MD1MeanWaitPollaczekKhinchine) {
  ServiceConfig c = textbook("poisson:50", "const:10ms");
  const SimResult r = simulate(c);
  const double w = pk_mean_wait_s(50, 0.010, c.service.second_moment());
  EXPECT_NEAR(w, 0.005, 1e-12);
  EXPECT_NEAR(r.mean_wait_s, w, 0.03 * w);
  EXPECT_NEAR(mean_of(r.all_s), w + 0.010, 0.03 * (w + 0.010));
  // Every request takes at least its service time; none less.
  EXPECT_GE(*std::min_element(r.all_s.begin(), r.all_s.end()), 0.010 - 1e-12);
}

// M/M/2 (several replicas on one queue), lambda 150/s, mu 100/s: Erlang C gives P(wait) = 9/14 and a
// mean wait of P(wait) / (2 mu - lambda) = 12.86 ms. 5 %.
TEST(ServiceModel, MM2MeanWaitErlangC) {
  ServiceConfig c = textbook("poisson:150", "exp:10ms");
  c.replicas = 2;
  const SimResult r = simulate(c);
  const double want = (9.0 / 14.0) / (200.0 - 150.0);
  EXPECT_NEAR(r.mean_wait_s, want, 0.05 * want);
}

// M/G/1 with a setup at the start of every busy period (idle_stop_s = 0: the process stops when the
// queue empties and the next arrival starts a new one, paying its startup). Welch (1964), derived in
// docs/service-view.md: mean wait, setup included, W = lambda E[B²] / (2 (1 - rho)) + (2 E[S] +
// lambda E[S²]) / (2 (1 + lambda E[S])); the mean response time is W + E[B]. A share (1 - rho) /
// (1 + lambda E[S]) of arrivals find the server stopped (PASTA): each starts a process.
// Tolerance 1.5 % on the mean response (seeds 1-6 land within 0.44 %), 2 % on the share of starts
// (200,000 requests, seed 1).
TEST(ServiceModel, SetupPerBusyPeriodWelch) {
  struct Case {
    const char *service, *setup;
    double want_response_s, want_start_share;
  };
  // lambda 50/s. D = 10 ms, S = 50 ms: W = 5 ms + (0.1 + 0.125) / 7 s = 37.14 ms, response 47.14 ms,
  // starts 0.5 / 3.5 = 14.29 %. B ~ Exp(10 ms), S ~ Exp(20 ms): W = 10 + (0.04 + 0.04) / 4 s = 30 ms,
  // response 40 ms, starts 0.5 / 2 = 25 %.
  for (const Case& k : {Case{"const:10ms", "const:50ms", 0.047142857, 0.5 / 3.5}, Case{"exp:10ms", "exp:20ms", 0.040, 0.25}}) {
    ServiceConfig c = textbook("poisson:50", k.service);
    c.startup = parse_distribution("--startup", k.setup);
    c.cold_fleet = false;  // the first arrival finds the server stopped, like every other that finds it idle
    c.idle_stop_s = 0.0;
    const double w = setup_mean_wait_s(50, c.service.mean(), c.service.second_moment(), c.startup.mean(),
                                       c.startup.second_moment());
    EXPECT_NEAR(w + c.service.mean(), k.want_response_s, 1e-6) << k.setup;
    const SimResult r = simulate(c);
    EXPECT_NEAR(mean_of(r.all_s), k.want_response_s, 0.015 * k.want_response_s) << k.service << " " << k.setup;
    EXPECT_NEAR(double(r.starts) / double(r.requests), k.want_start_share, 0.02 * k.want_start_share) << k.setup;
    EXPECT_EQ(std::int64_t(r.first_s.size()), r.starts);  // every start is a first request
  }
  // Without a setup the formula is Pollaczek-Khinchine's.
  EXPECT_DOUBLE_EQ(setup_mean_wait_s(50, 0.010, 1e-4, 0, 0), pk_mean_wait_s(50, 0.010, 1e-4));
}

// Stopped when idle, a process starts on demand: the request waits for it, preloading or not (there
// is nothing to preload before a request comes). An idle time under the stop time keeps the process.
TEST(ServiceModel, IdleStopStartsOnDemand) {
  ServiceConfig c = textbook("poisson:50", "const:10ms", 20000);
  c.startup = parse_distribution("--startup", "const:50ms");
  c.cold_fleet = false;
  c.idle_stop_s = 0.0;
  const SimResult lazy = simulate(c);
  c.preload = true;
  const SimResult pre = simulate(c);
  EXPECT_EQ(lazy.all_s, pre.all_s);
  EXPECT_EQ(lazy.starts, pre.starts);
  c.preload = false;
  c.idle_stop_s = 0.2;  // P(gap > 200 ms) = e^-10 at 50 requests/s: a handful of stops
  const SimResult rare = simulate(c);
  EXPECT_LT(rare.starts, 10);
  EXPECT_GT(lazy.starts, 100 * std::max<std::int64_t>(rare.starts, 1));
}

// Gamma arrivals keep their rate; a burstiness below 1 makes the queue longer than Poisson's.
TEST(ServiceModel, GammaBurstinessKeepsRateAndRaisesWait) {
  const SimResult poisson = simulate(textbook("poisson:50", "const:10ms", 100000));
  const SimResult bursty = simulate(textbook("gamma:50:0.25", "const:10ms", 100000));
  const SimResult regular = simulate(textbook("gamma:50:4", "const:10ms", 100000));
  EXPECT_NEAR(double(bursty.requests - 1) / bursty.span_s, 50, 1.5);
  EXPECT_GT(bursty.mean_wait_s, 2 * poisson.mean_wait_s);
  EXPECT_LT(regular.mean_wait_s, 0.5 * poisson.mean_wait_s);
}

TEST(ServiceModel, DeterministicPerSeed) {
  ServiceConfig c = textbook("poisson:50", "exp:10ms", 20000);
  c.startup = empirical({0.2, 0.25, 0.4, 1.1}, "four starts");
  c.restart_rate_per_s = 0.5;
  const SimResult a = simulate(c), b = simulate(c);
  EXPECT_EQ(a.all_s, b.all_s);
  EXPECT_EQ(a.starts, b.starts);
  c.seed = 2;
  EXPECT_NE(simulate(c).all_s, a.all_s);
}

// The first request of each process pays its startup on the request path; preloaded, it does not.
TEST(ServiceModel, StartupOnTheFirstRequestOrPreloaded) {
  ServiceConfig c = textbook("poisson:1", "const:1ms", 10000);
  c.startup = parse_distribution("--startup", "const:300ms");
  c.restart_rate_per_s = 0.1;
  const SimResult lazy = simulate(c);
  EXPECT_GT(lazy.starts, 500);  // ~10,000 s simulated at 0.1 starts/s
  // A process restarted again before its first request serves none.
  EXPECT_LE(std::int64_t(lazy.first_s.size()), lazy.starts);
  EXPECT_GE(double(lazy.first_s.size()), 0.85 * double(lazy.starts));  // P(restart first) = 0.1 / 1.1
  for (double x : lazy.first_s) EXPECT_GE(x, 0.301 - 1e-12);
  EXPECT_NEAR(percentile_of(lazy.first_s, 50), 0.301, 0.002);
  EXPECT_NEAR(percentile_of(lazy.all_s, 50), 0.001, 1e-6);
  c.preload = true;
  const SimResult pre = simulate(c);
  // At 1 request/s most processes (74 %) finish starting before their first request arrives.
  EXPECT_LT(percentile_of(pre.first_s, 50), 0.01);
  EXPECT_GT(percentile_of(pre.first_s, 99), 0.01);  // some arrive mid-start and wait
}

// Three replicas after a driver upgrade: startups of 10 ms, the first one after the upgrade 500 ms.
ServiceConfig upgraded_replicas() {
  ServiceConfig c = textbook("poisson:5", "const:1ms", 5000);
  c.replicas = 3;
  c.startup = parse_distribution("--startup", "const:10ms");
  c.first_startup = parse_distribution("--first-startup", "const:500ms");
  c.restart_rate_per_s = 0.05;
  return c;
}

// Of `r`'s first requests, those that waited on a first startup of 500 ms.
int slow_first_requests(const SimResult& r) {
  int slow = 0;
  for (double x : r.first_s) slow += x >= 0.5 ? 1 : 0;
  return slow;
}

// A driver upgrade empties the JIT cache: each replica's first process pays the cold startup.
TEST(ServiceModel, FirstStartupAppliesOncePerReplica) {
  const SimResult r = simulate(upgraded_replicas());
  EXPECT_EQ(slow_first_requests(r), 3);
  EXPECT_GT(r.first_s.size(), 10u);
}

// In a warm fleet (the processes predate the run) first_startup falls on each replica's first
// restart: a driver upgrade installed at time 0 reaches a replica when its process next starts.
TEST(ServiceModel, FirstStartupOnTheFirstRestartOfAWarmFleet) {
  ServiceConfig c = upgraded_replicas();
  c.cold_fleet = false;
  const SimResult r = simulate(c);
  EXPECT_EQ(slow_first_requests(r), 3);
  EXPECT_GT(r.first_s.size(), 10u);
  c.first_startup.reset();
  for (double x : simulate(c).first_s) EXPECT_LT(x, 0.5);
}

// Start episodes (rare restarts) keep first_startup in the share the run would see: a run short
// beside the restart interval sees only first starts after the upgrade, a long one mostly later ones.
TEST(ServiceReport, EpisodesDrawFirstStartupsInTheRunsShare) {
  ServiceConfig c = textbook("poisson:20", "const:1ms", 2000);  // ~100 s
  c.replicas = 2;
  c.cold_fleet = false;
  c.startup = empirical({0.20, 0.21, 0.22, 0.23}, "warm starts");
  c.first_startup = empirical({2.0, 2.1, 2.2, 2.3}, "cold starts");
  ReportOptions o;
  o.bootstrap = 0;
  o.min_starts = 500;
  auto cold_points = [&](double restart_rate) {
    c.restart_rate_per_s = restart_rate;
    const ServiceReport r = analyse(c, o);
    EXPECT_TRUE(population(r, Population::first_request).episodes);
    const auto& d = population(r, Population::first_request).distribution;
    int cold = 0;  // quantile points of the plot at or above 2 s
    for (const auto& [q, v] : d) cold += v >= 2.0 ? 1 : 0;
    return cold;
  };
  EXPECT_EQ(cold_points(1e-6), 10);  // x = 1e-4: every start is a replica's first (all ten plot points cold)
  // x = 0.5 restarts per replica over the run: (1 - e^-0.5) / 0.5 = 79 % cold: p25 and above.
  EXPECT_EQ(cold_points(0.005), 7);
  // x = 50: 2 % cold, so only p99 and p99.9 fall on them.
  EXPECT_EQ(cold_points(0.5), 2);
}

// Failed starts and timeouts are misses: +infinity in the percentiles, never dropped.
TEST(ServiceModel, FailuresAndTimeoutsAreMisses) {
  ServiceConfig c = textbook("poisson:2", "const:1ms", 20000);
  c.startup = parse_distribution("--startup", "const:100ms");
  c.restart_rate_per_s = 0.2;
  c.start_failure_share = 0.2;
  const SimResult r = simulate(c);
  EXPECT_EQ(std::int64_t(r.all_s.size()), r.requests);
  EXPECT_GT(r.failures, 0);
  EXPECT_EQ(r.failures, r.failed_starts);
  EXPECT_TRUE(std::isinf(percentile_of(r.first_s, 99)));
  EXPECT_NEAR(double(r.failed_starts) / double(r.starts), 0.2, 0.03);
  c.start_failure_share = 0;
  c.timeout_s = 0.050;
  const SimResult t = simulate(c);
  // Every first request (100 ms startup) times out, and some requests queued behind one.
  EXPECT_GE(t.timeouts, std::int64_t(t.first_s.size()));
  EXPECT_LT(t.timeouts, 2 * std::int64_t(t.first_s.size()));
  EXPECT_TRUE(std::isinf(percentile_of(t.first_s, 50)));
}

TEST(ServiceModel, SamplesNeededForAnUpperBound) {
  EXPECT_EQ(samples_needed(99), 459);
  EXPECT_EQ(samples_needed(99.9), 4603);
  EXPECT_EQ(samples_needed(50), 7);
}

// Intervals over the measured startup samples: they bracket the estimate, and the same seed gives
// the same intervals whatever the thread count.
TEST(ServiceReport, BootstrapIntervalsOverMeasuredStartups) {
  ServiceConfig c = textbook("poisson:4", "const:2ms", 8000);
  std::vector<double> starts;
  for (int i = 0; i < 30; ++i) starts.push_back(0.200 + 0.004 * i + (i % 7 == 0 ? 0.15 : 0.0));
  c.startup = empirical(starts, "30 measured starts");
  c.restart_rate_per_s = 0.4;
  ReportOptions o;
  o.bootstrap = 60;
  o.threads = 1;
  o.objectives = {parse_objective("--objective", "first_request:p99<=600ms"),
                  parse_objective("--objective", "first_request:p50<=100ms")};
  const ServiceReport one = analyse(c, o);
  o.threads = 3;
  const ServiceReport three = analyse(c, o);
  const auto& first = population(one, Population::first_request);
  ASSERT_GT(first.n, 459);
  for (const auto& e : first.percentiles) {
    ASSERT_TRUE(e.ci_lo_s && e.ci_hi_s) << e.percentile;
    EXPECT_LE(*e.ci_lo_s, e.value_s + 1e-9);
    EXPECT_GE(*e.ci_hi_s, e.value_s - 1e-9);
    EXPECT_GT(e.value_s, 0.2);
  }
  EXPECT_LT(*first.percentiles[0].ci_lo_s, *first.percentiles[0].ci_hi_s);
  EXPECT_EQ(to_json(one).dump(), to_json(three).dump());
  // 30 measured starts cannot carry a p99: said.
  bool warned = false;
  for (const auto& w : one.warnings) warned = warned || w.find("30 measured process starts") != std::string::npos;
  EXPECT_TRUE(warned);
  ASSERT_EQ(one.objectives.size(), 2u);
  EXPECT_TRUE(one.objectives[0].meets) << one.objectives[0].text;
  EXPECT_FALSE(one.objectives[1].meets);
  EXPECT_TRUE(one.objectives[1].certain);
  EXPECT_GT(one.objectives[1].by_s, 0.1);
  EXPECT_NE(one.objectives[1].text.find("misses"), std::string::npos);
}

// Goodput: good requests per second at the rate, and the highest rate keeping 90 % within 30 ms.
// For M/D/1 with D = 10 ms, P(sojourn <= 30 ms) >= 0.9 needs rho around 0.7: the search must land
// between 50 and 95 requests/s, and the simulation must agree at the rate it found.
TEST(ServiceReport, GoodputBothDefinitions) {
  ServiceConfig c = textbook("poisson:50", "const:10ms", 40000);
  ReportOptions o;
  o.bootstrap = 0;
  o.objectives = {parse_objective("--objective", "all:p90<=30ms")};
  const ServiceReport r = analyse(c, o);
  ASSERT_TRUE(r.goodput.computed);
  EXPECT_DOUBLE_EQ(r.goodput.share, 0.9);
  EXPECT_NEAR(r.goodput.good_per_s, 50 * r.goodput.good_share, 1.0);
  EXPECT_GT(r.goodput.good_share, 0.9);
  ASSERT_TRUE(r.goodput.max_rate_per_s);
  EXPECT_GT(*r.goodput.max_rate_per_s, 50);
  EXPECT_LT(*r.goodput.max_rate_per_s, 95);
  ServiceConfig at = c;
  at.arrivals = scaled(c.arrivals, *r.goodput.max_rate_per_s / 50);
  at.requests = 20000;
  const SimResult s = simulate(at);
  std::size_t good = 0;
  for (double x : s.all_s) good += x <= 0.030 ? 1 : 0;
  EXPECT_NEAR(double(good) / double(s.all_s.size()), 0.9, 0.03);
}

TEST(ServiceModel, ParsingNamesTheFlag) {
  auto usage = [](auto f) {
    try {
      f();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(usage([] { parse_arrivals("--arrivals", "poisson"); }).find("--arrivals"), std::string::npos);
  EXPECT_NE(usage([] { parse_arrivals("--arrivals", "gamma:50"); }).find("BURSTINESS"), std::string::npos);
  EXPECT_NE(usage([] { parse_distribution("--service", "exp:10"); }).find("unit"), std::string::npos);
  EXPECT_NE(usage([] { parse_distribution("--service", "lognormal:3ms"); }).find("--service"), std::string::npos);
  EXPECT_NE(usage([] { parse_rate("--restart-rate", "6"); }).find("6/h"), std::string::npos);
  EXPECT_NE(usage([] { parse_objective("--objective", "all:p100<=5ms"); }).find("percentile"), std::string::npos);
  EXPECT_NE(usage([] { parse_objective("--objective", "some:p99<=5ms"); }).find("population"), std::string::npos);
  EXPECT_DOUBLE_EQ(parse_rate("--restart-rate", "6/h"), 6.0 / 3600);
  EXPECT_DOUBLE_EQ(parse_rate("--restart-rate", "20000/day"), 20000.0 / 86400);
  const Objective o = parse_objective("--objective", "first_request:p99.9<=400ms");
  EXPECT_EQ(o.population, Population::first_request);
  EXPECT_DOUBLE_EQ(o.percentile, 99.9);
  EXPECT_DOUBLE_EQ(o.max_s, 0.4);
}

TEST(ServiceModel, SampleAndTraceFiles) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("kqual_service_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "s.txt") << "# measured\n10, 20\n30 1us\n";
  std::ofstream(dir / "t.txt") << "100.0\n100.5\n101.0 101.5\n";
  const Distribution d = parse_distribution("--service", "file:" + (dir / "s.txt").string());
  ASSERT_EQ(d.samples_s.size(), 4u);
  EXPECT_DOUBLE_EQ(d.samples_s[0], 0.010);
  EXPECT_DOUBLE_EQ(d.samples_s[3], 1e-6);
  const Arrivals a = parse_arrivals("--arrivals", "trace:" + (dir / "t.txt").string());
  EXPECT_DOUBLE_EQ(a.rate_per_s, 2.0);
  EXPECT_DOUBLE_EQ(a.trace_s.back(), 1.5);
  ServiceConfig c;
  c.arrivals = a;
  c.service = d;
  c.requests = 100;
  EXPECT_EQ(simulate(c).requests, 4);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace kqual::model::service
