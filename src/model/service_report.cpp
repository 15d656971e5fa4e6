// Percentiles with bootstrap intervals, objectives, goodput and warnings over service simulations
// (docs/service-view.md, "What is reported").
#include "kqual/model/service_report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <exception>
#include <mutex>
#include <thread>

#include "kqual/core/enum_names.hpp"
#include "kqual/core/error.hpp"
#include "kqual/model/units.hpp"

namespace kqual::model::service {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr Population kPops[3] = {Population::first_request, Population::first_k, Population::all};

std::vector<double>& latencies(SimResult& s, Population p) {
  switch (p) {
    case Population::first_request: return s.first_s;
    case Population::first_k: return s.first_k_s;
    case Population::all: return s.all_s;
  }
  return s.all_s;
}

// The percentiles asked for each population: the report's, plus every objective's on it.
std::array<std::vector<double>, 3> wanted(const ReportOptions& o) {
  std::array<std::vector<double>, 3> w;
  for (int i = 0; i < 3; ++i) {
    w[std::size_t(i)] = o.percentiles;
    for (const auto& ob : o.objectives)
      if (ob.population == kPops[i]) w[std::size_t(i)].push_back(ob.percentile);
    auto& v = w[std::size_t(i)];
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
  }
  return w;
}

Distribution resampled(const Distribution& d, Rng& r) {
  if (d.kind != Distribution::Kind::empirical) return d;
  Distribution x = d;
  for (double& v : x.samples_s) v = d.samples_s[r.index(d.samples_s.size())];
  return x;
}

bool startup_measured(const ServiceConfig& c) {
  return c.startup.kind == Distribution::Kind::empirical ||
         (c.first_startup && c.first_startup->kind == Distribution::Kind::empirical);
}

std::string ms(double s) { return std::isinf(s) ? std::string("a miss") : format_seconds(s); }

// A bare number of milliseconds for "CI [380, 420] ms"; "a miss" for +infinity.
std::string bare_ms(double s) { return std::isinf(s) ? std::string("a miss") : fmt::format("{:.4g}", s * 1e3); }

// The population in a sentence ("the p99 first-request latency").
constexpr EnumNames<Population, 3> kPopulationWords{
    {{{Population::first_request, "first-request"}, {Population::first_k, "first-K"}, {Population::all, "all-request"}}}};
constexpr EnumNames<Standing, 3> kStandingNames{
    {{{Standing::meets, "meets"}, {Standing::misses, "misses"}, {Standing::inconclusive, "inconclusive"}}}};

// The interval rule (docs/service-view.md, "Objectives"): the point estimate alone never decides.
void judge_on_interval(ObjectiveResult& res, std::int64_t n) {
  const Objective& ob = res.objective;
  const std::string what = fmt::format("the p{:g} {}", ob.percentile, kPopulationWords.name(ob.population, "?"));
  const std::string bound = fmt::format("the {} ms objective", bare_ms(ob.max_s));
  res.standing = Standing::inconclusive;
  if (n == 0) {
    res.standing_text = fmt::format("{} was not simulated (no request in the population)", what);
  } else if (!res.ci_lo_s || !res.ci_hi_s) {
    res.standing_text = fmt::format("{} has no interval (no replicates over measured startups) to judge {} on", what, bound);
  } else {
    const std::string ci = fmt::format("{} CI [{}, {}] ms", what, bare_ms(*res.ci_lo_s), bare_ms(*res.ci_hi_s));
    if (*res.ci_hi_s <= ob.max_s) {
      res.standing = Standing::meets;
      res.standing_text = fmt::format("{} lies within {}", ci, bound);
    } else if (*res.ci_lo_s > ob.max_s) {
      res.standing = Standing::misses;
      res.standing_text = fmt::format("{} lies above {}", ci, bound);
    } else {
      res.standing_text = fmt::format("{} contains {}", ci, bound);
    }
  }
}

json ms_or_null(double s) { return std::isfinite(s) ? json(s * 1e3) : json(nullptr); }

double share_within(const std::vector<double>& v, double bound) {
  if (v.empty()) return 0;
  std::size_t good = 0;
  for (double x : v) good += x <= bound ? 1 : 0;
  return double(good) / double(v.size());
}

void search_max_rate(const ServiceConfig& c, const ReportOptions& o, Goodput& g) {
  ServiceConfig s = c;
  s.requests = o.search_requests > 0 ? o.search_requests : std::max<std::int64_t>(1000, c.requests / 2);
  auto ok = [&](double factor) {
    s.arrivals = scaled(c.arrivals, factor);
    return share_within(simulate(s).all_s, g.bound_s) >= g.share;
  };
  double lo = 0, hi = 1;
  if (ok(1.0)) {
    lo = 1;
    hi = 2;
    while (hi < 1024 && ok(hi)) lo = hi, hi *= 2;
    if (hi >= 1024 && lo == 512) {
      g.max_rate_per_s = lo * c.arrivals.rate_per_s;
      g.note = "met at every rate tried, up to 512 times the simulated rate";
      return;
    }
  }
  for (int i = 0; i < 10; ++i) {
    const double mid = lo > 0 ? std::sqrt(lo * hi) : hi / 2;
    (ok(mid) ? lo : hi) = mid;
    if (lo == 0 && hi < 1e-3) break;
  }
  g.max_rate_per_s = lo * c.arrivals.rate_per_s;
  if (lo == 0)
    g.note = fmt::format("not met even at {:.3g} requests/s: the misses do not come from load (e.g. every first request is over "
                         "the bound)",
                         hi * c.arrivals.rate_per_s);
  else
    g.note = fmt::format("highest rate found by bisection to within {:.1f} % ({} requests per step)",
                         (hi / lo - 1) * 100, s.requests);
}

// Start episodes (ReportOptions::min_starts): a rare start landing in the simulated steady state.
bool use_episodes(const ServiceConfig& c, const ReportOptions& o, const SimResult& s) {
  return o.min_starts > 0 && std::int64_t(s.first_s.size()) < o.min_starts && !s.wait_s.empty() &&
         (c.startup.kind != Distribution::Kind::none || c.first_startup);
}

// The share of the run's process starts that are a replica's first one (first_startup applies), as
// expected over the run's span: per replica x = restart rate × span restarts; a cold fleet adds the
// start at time 0 (1 first of 1 + x starts), a warm fleet's first start is its first restart
// (1 - e^-x of x). A short run after a driver upgrade sees only first starts: 1.
double first_start_share(const ServiceConfig& c, double span_s) {
  const double x = c.restart_rate_per_s * span_s;
  if (c.cold_fleet) return 1.0 / (1.0 + x);
  return x > 1e-12 ? -std::expm1(-x) / x : 1.0;
}

void episodes(const ServiceConfig& c, const ReportOptions& o, SimResult& s) {
  Rng r(c.seed * 0x2545f4914f6cdd1dull + 0xe915);
  s.first_s.clear();
  const double first_share = c.first_startup ? first_start_share(c, s.span_s) : 0.0;
  for (std::int64_t i = 0; i < o.min_starts; ++i) {
    const double wait = s.wait_s[r.index(s.wait_s.size())];
    // A uniform only where there is a choice, so that runs without first_startup draw as before.
    const bool first = c.first_startup && r.uniform() < first_share;
    const double start = (first ? *c.first_startup : c.startup).draw(r), serve = c.service.draw(r);
    const bool failed = c.start_failure_share > 0 && r.uniform() < c.start_failure_share;
    double latency = c.preload ? wait + serve : wait + start + serve;
    if (failed || (c.timeout_s && latency > *c.timeout_s)) latency = kInf;
    s.first_s.push_back(latency);
  }
}

// An objective against its population's percentile: the point estimate, by how much, and the
// standing on the interval.
ObjectiveResult objective_result(const Objective& ob, const PopulationReport& pr) {
  ObjectiveResult res;
  res.objective = ob;
  for (const auto& e : pr.percentiles)
    if (e.percentile == ob.percentile) {
      res.value_s = e.value_s;
      res.ci_lo_s = e.ci_lo_s;
      res.ci_hi_s = e.ci_hi_s;
    }
  res.meets = res.value_s <= ob.max_s;
  res.by_s = res.value_s - ob.max_s;
  res.certain = res.ci_lo_s && res.ci_hi_s ? (res.meets ? *res.ci_hi_s <= ob.max_s : *res.ci_lo_s > ob.max_s) : false;
  judge_on_interval(res, pr.n);
  const std::string ci = res.ci_lo_s ? fmt::format(" [{}, {}]", ms(*res.ci_lo_s), ms(*res.ci_hi_s)) : std::string();
  if (pr.n == 0) {
    res.meets = false;
    res.text = fmt::format("not evaluated: no request in {} was simulated", to_string(ob.population));
  } else if (res.meets) {
    res.text = fmt::format("meets {}: {}{} ({} to spare{})", ob.text(), ms(res.value_s), ci, format_seconds(-res.by_s),
                           res.ci_hi_s && !res.certain ? "; the interval reaches past the bound" : "");
  } else {
    res.text = fmt::format("misses {}: {}{} ({}{})", ob.text(), ms(res.value_s), ci,
                           std::isinf(res.by_s) ? std::string("the percentile falls on failed or timed-out requests")
                                                : "over by " + format_seconds(res.by_s),
                           res.ci_lo_s && !res.certain ? "; the interval reaches below the bound" : "");
  }
  return res;
}

}  // namespace

const char* to_string(Standing s) { return kStandingNames.name(s, "?"); }

const PopulationReport& population(const ServiceReport& r, Population p) {
  for (const auto& x : r.populations)
    if (x.population == p) return x;
  return r.populations[2];
}

ServiceReport analyse(const ServiceConfig& c, const ReportOptions& o) {
  ServiceReport r;
  r.config = c;
  SimResult base = simulate(c);
  const bool by_episodes = use_episodes(c, o, base);
  if (by_episodes) episodes(c, o, base);
  const auto want = wanted(o);

  // Replicates: each resamples the measured startup samples, with everything else drawn alike.
  const bool resample = startup_measured(c) && o.bootstrap > 0;
  std::vector<std::array<std::vector<double>, 3>> reps;  // [b][population][percentile]
  if (resample) {
    r.bootstrap = o.bootstrap;
    r.measured_startup_samples = std::int64_t(c.startup.kind == Distribution::Kind::empirical ? c.startup.samples_s.size()
                                                                                              : c.first_startup->samples_s.size());
    reps.resize(std::size_t(o.bootstrap));
    auto run = [&](std::size_t b) {
      Rng rng(c.seed * 0x9e3779b97f4a7c15ull + 0xb0075 + b);
      ServiceConfig x = c;
      x.startup = resampled(c.startup, rng);
      if (c.first_startup) x.first_startup = resampled(*c.first_startup, rng);
      SimResult s = simulate(x);
      if (by_episodes) episodes(x, o, s);
      for (std::size_t i = 0; i < 3; ++i) {
        std::vector<double>& v = latencies(s, kPops[i]);
        std::sort(v.begin(), v.end());
        for (double p : want[i]) reps[b][i].push_back(percentile_of_sorted(v, p));
      }
    };
    const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
    const std::size_t threads = std::size_t(std::clamp(o.threads > 0 ? unsigned(o.threads) : std::min(hw, 8u), 1u, 64u));
    std::vector<std::thread> pool;
    std::exception_ptr failure;
    std::mutex m;
    for (std::size_t t = 0; t < threads; ++t)
      pool.emplace_back([&, t] {
        try {
          for (std::size_t b = t; b < reps.size(); b += threads) run(b);
        } catch (...) {
          std::lock_guard<std::mutex> lock(m);
          failure = std::current_exception();
        }
      });
    for (auto& th : pool) th.join();
    if (failure) std::rethrow_exception(failure);
  }

  const double lo_q = (1 - o.confidence) / 2 * 100, hi_q = (1 + o.confidence) / 2 * 100;
  for (std::size_t i = 0; i < 3; ++i) {
    PopulationReport& pr = r.populations[i];
    pr.population = kPops[i];
    pr.episodes = by_episodes && kPops[i] == Population::first_request;
    std::vector<double>& v = latencies(base, kPops[i]);
    std::sort(v.begin(), v.end());
    for (double q : {1.0, 5.0, 10.0, 25.0, 50.0, 75.0, 90.0, 95.0, 99.0, 99.9})
      if (!v.empty()) pr.distribution.emplace_back(q, percentile_of_sorted(v, q));
    pr.n = std::int64_t(v.size());
    double sum = 0;
    for (double x : v) (std::isinf(x) ? (void)++pr.misses : (void)(sum += x));
    pr.mean_s = pr.n > pr.misses ? sum / double(pr.n - pr.misses) : std::nan("");
    for (std::size_t k = 0; k < want[i].size(); ++k) {
      PercentileEstimate e;
      e.percentile = want[i][k];
      e.value_s = percentile_of_sorted(v, e.percentile);
      e.n = pr.n;
      e.needed = samples_needed(e.percentile);
      e.too_few = e.n < e.needed;
      if (resample) {
        std::vector<double> at;
        for (const auto& rep : reps) at.push_back(rep[i][k]);
        e.ci_lo_s = percentile_of(at, lo_q);
        e.ci_hi_s = percentile_of(at, hi_q);
      }
      pr.percentiles.push_back(e);
    }
  }

  // Warnings: percentiles that rest on too few samples, simulated or measured. Without a startup
  // cost or restarts the first requests are ordinary requests: nothing to warn about there.
  const bool starts_matter = c.startup.kind != Distribution::Kind::none || c.first_startup || c.restart_rate_per_s > 0;
  for (const auto& pr : r.populations)
    for (const auto& e : pr.percentiles) {
      if (!starts_matter && pr.population != Population::all) continue;
      if (e.too_few && e.percentile >= 90)
        r.warnings.push_back(fmt::format("p{:g} of {} rests on {} simulated requests; {} are needed for an interval with an "
                                         "upper bound: simulate more requests (or more process starts)",
                                         e.percentile, to_string(pr.population), e.n, e.needed));
      if (r.measured_startup_samples > 0 && pr.population != Population::all && e.percentile >= 90 &&
          r.measured_startup_samples < e.needed)
        r.warnings.push_back(fmt::format(
            "p{:g} of {} rests on {} measured process starts ({} needed): it can only be extrapolated — resampling never "
            "draws a startup slower than the slowest one measured",
            e.percentile, to_string(pr.population), r.measured_startup_samples, e.needed));
    }
  if (by_episodes)
    r.warnings.push_back(fmt::format(
        "the run saw {} process start(s): the first-request numbers come from {} start episodes in the simulated steady "
        "state (waiting time resampled from the run, plus a startup and a service draw{})",
        base.starts, o.min_starts,
        c.first_startup ? fmt::format("; {:.3g} % of them a replica's first start, drawn from the first-start distribution",
                                      first_start_share(c, base.span_s) * 100)
                        : std::string()));
  if (base.busy_share > 0.95)
    r.warnings.push_back(fmt::format("the replicas are busy {:.0f} % of the time: near or over capacity, the queue and the "
                                     "percentiles grow with the length of the run",
                                     base.busy_share * 100));
  if (base.requests < c.requests)
    r.warnings.push_back(fmt::format("the arrival trace holds {} requests: {} asked for", base.requests, c.requests));

  // Objectives.
  for (const Objective& ob : o.objectives) r.objectives.push_back(objective_result(ob, r.populations[std::size_t(ob.population)]));

  // Goodput in both definitions.
  Goodput& g = r.goodput;
  std::optional<double> bound = o.goodput_bound_s, share = o.goodput_share;
  for (const Objective& ob : o.objectives)
    if (ob.population == Population::all && !bound) {
      bound = ob.max_s;
      if (!share) share = ob.percentile / 100;
    }
  if (bound) {
    g.computed = true;
    g.bound_s = *bound;
    g.share = share.value_or(0.9);
    g.rate_per_s = base.span_s > 0 ? double(base.requests - 1) / base.span_s : c.arrivals.rate_per_s;
    g.good_share = share_within(base.all_s, g.bound_s);
    g.good_per_s = g.good_share * g.rate_per_s;
    if (o.search_max_rate) search_max_rate(c, o, g);
  } else {
    g.note = "no latency bound for all requests: give an objective on all requests (e.g. all:p99<=50ms) or a goodput bound";
  }

  base.all_s.clear();
  base.first_s.clear();
  base.first_k_s.clear();
  base.wait_s.clear();
  r.counts = base;
  return r;
}

json to_json(const ServiceReport& r) {
  const ServiceConfig& c = r.config;
  json j;
  j["config"] = {{"arrivals", c.arrivals.source},
                 {"arrival_rate_per_s", c.arrivals.rate_per_s},
                 {"burstiness", c.arrivals.kind == Arrivals::Kind::gamma ? json(c.arrivals.burstiness) : json(nullptr)},
                 {"service", c.service.describe()},
                 {"service_mean_ms", c.service.mean() * 1e3},
                 {"startup", c.startup.describe()},
                 {"startup_mean_ms", c.startup.mean() * 1e3},
                 {"first_startup", c.first_startup ? json(c.first_startup->describe()) : json(nullptr)},
                 {"startup_paid", c.preload ? "before taking traffic (preload)" : "by the first request of each process"},
                 {"fleet_at_start", c.cold_fleet ? "every replica a new process (a deploy)" : "warm"},
                 {"start_failure_share", c.start_failure_share},
                 {"replicas", c.replicas},
                 {"restart_rate_per_replica_per_h", c.restart_rate_per_s * 3600},
                 {"requests", c.requests},
                 {"first_k", c.first_k},
                 {"timeout_ms", c.timeout_s ? json(*c.timeout_s * 1e3) : json(nullptr)},
                 {"seed", c.seed}};
  const SimResult& s = r.counts;
  j["counts"] = {{"requests", s.requests},        {"process_starts", s.starts}, {"failed_starts", s.failed_starts},
                 {"failures", s.failures},        {"timeouts", s.timeouts},     {"span_s", s.span_s},
                 {"mean_wait_ms", s.mean_wait_s * 1e3}, {"busy_share", s.busy_share}};
  j["populations"] = json::array();
  for (const auto& pr : r.populations) {
    json ps = json::array();
    for (const auto& e : pr.percentiles)
      ps.push_back({{"percentile", e.percentile},
                    {"value_ms", ms_or_null(e.value_s)},
                    {"miss", std::isinf(e.value_s)},
                    {"ci_ms", e.ci_lo_s ? json::array({ms_or_null(*e.ci_lo_s), ms_or_null(*e.ci_hi_s)}) : json(nullptr)},
                    {"n", e.n},
                    {"needed", e.needed},
                    {"too_few", e.too_few}});
    json dist = json::array();
    for (const auto& [q, v] : pr.distribution) dist.push_back(json::array({q, ms_or_null(v)}));
    j["populations"].push_back({{"population", to_string(pr.population)},
                                {"from", pr.episodes ? "start episodes in the simulated steady state" : "the simulation"},
                                {"n", pr.n},
                                {"misses", pr.misses},
                                {"mean_ms", ms_or_null(pr.mean_s)},
                                {"percentiles", ps},
                                {"distribution_ms", dist}});
  }
  j["objectives"] = json::array();
  for (const auto& o : r.objectives)
    j["objectives"].push_back({{"objective", o.objective.text()},
                               {"population", to_string(o.objective.population)},
                               {"percentile", o.objective.percentile},
                               {"max_ms", o.objective.max_s * 1e3},
                               {"value_ms", ms_or_null(o.value_s)},
                               {"ci_ms", o.ci_lo_s ? json::array({ms_or_null(*o.ci_lo_s), ms_or_null(*o.ci_hi_s)}) : json(nullptr)},
                               {"meets", o.meets},
                               {"certain", o.certain},
                               {"standing", to_string(o.standing)},
                               {"standing_text", o.standing_text},
                               {"by_ms", ms_or_null(o.by_s)},
                               {"text", o.text}});
  const Goodput& g = r.goodput;
  j["goodput"] = {{"computed", g.computed},
                  {"bound_ms", g.computed ? json(g.bound_s * 1e3) : json(nullptr)},
                  {"share", g.computed ? json(g.share) : json(nullptr)},
                  {"rate_per_s", g.rate_per_s},
                  {"good_per_s", g.good_per_s},
                  {"good_share", g.good_share},
                  {"max_rate_per_s", g.max_rate_per_s ? json(*g.max_rate_per_s) : json(nullptr)},
                  {"note", g.note}};
  j["bootstrap"] = {{"replicates", r.bootstrap},
                    {"over", r.bootstrap > 0 ? "the measured startup samples, resampled with replacement" : "nothing resampled"},
                    {"measured_startup_samples", r.measured_startup_samples}};
  j["warnings"] = r.warnings;
  return j;
}

}  // namespace kqual::model::service
