// `kqual model service`: the service view from the command line (docs/service-view.md). A thin
// command over kqual::model::service; registered by model_cmd.cpp. CPU only.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "kqual/core/error.hpp"
#include "kqual/core/json.hpp"
#include "kqual/model/service.hpp"
#include "kqual/model/service_report.hpp"
#include "kqual/model/units.hpp"
#include "kqual/run/cli.hpp"
#include "model_cmd_internal.hpp"

namespace kqual::run {

namespace ms = kqual::model::service;

namespace {

std::string ms_text(const std::optional<double>& s) {
  if (!s) return "—";
  return std::isinf(*s) ? std::string("miss") : model::format_seconds(*s);
}

void print_text(const ms::ServiceReport& r, const json& closed) {
  const ms::ServiceConfig& c = r.config;
  fmt::print("Arrivals {} ({:.4g} requests/s), service {}, {} replica(s), startup {}{}\n", c.arrivals.source,
             c.arrivals.rate_per_s, c.service.describe(), c.replicas, c.startup.describe(),
             c.preload ? " (preloaded)" : " (paid by the first request)");
  fmt::print("{} requests, {} process starts ({} failed), {} failures, {} timeouts; replicas busy {:.1f} %\n",
             r.counts.requests, r.counts.starts, r.counts.failed_starts, r.counts.failures, r.counts.timeouts,
             r.counts.busy_share * 100);
  for (const auto& pr : r.populations) {
    fmt::print("\n{:<14} n={:<9} misses={:<6} mean {}\n", ms::to_string(pr.population), pr.n, pr.misses,
               std::isfinite(pr.mean_s) ? model::format_seconds(pr.mean_s) : std::string("—"));
    for (const auto& e : pr.percentiles)
      fmt::print("  p{:<6g} {:>10}  {}{}\n", e.percentile, ms_text(e.value_s),
                 e.ci_lo_s ? fmt::format("[{}, {}]", ms_text(e.ci_lo_s), ms_text(e.ci_hi_s)) : std::string(),
                 e.too_few ? fmt::format("  (rests on {} of {} needed)", e.n, e.needed) : std::string());
  }
  if (!closed.is_null()) {
    fmt::print("\nClosed form ({}):", closed.at("model").get<std::string>());
    for (const auto& [k, v] : closed.at("sojourn_ms").items())
      fmt::print(" {} {:.4g} ms (simulated {:.4g} ms);", k, v.get<double>(), closed.at("simulated_ms").at(k).get<double>());
    fmt::print("\n");
  }
  for (const auto& o : r.objectives) fmt::print("\nobjective: {}", o.text);
  if (!r.objectives.empty()) fmt::print("\n");
  if (r.goodput.computed) {
    fmt::print("\ngoodput: {:.4g} good requests/s of {:.4g} ({:.2f} % within {})", r.goodput.good_per_s, r.goodput.rate_per_s,
               r.goodput.good_share * 100, model::format_seconds(r.goodput.bound_s));
    if (r.goodput.max_rate_per_s)
      fmt::print("; highest rate with {:.1f} % within it: {:.4g} requests/s ({})", r.goodput.share * 100,
                 *r.goodput.max_rate_per_s, r.goodput.note);
    fmt::print("\n");
  }
  for (const auto& w : r.warnings) fmt::print("warning: {}\n", w);
}

// The textbook answer where one exists: Poisson arrivals into one replica with no startup.
json closed_form(const ms::ServiceReport& r, const json& sim_all) {
  const ms::ServiceConfig& c = r.config;
  if (c.arrivals.kind != ms::Arrivals::Kind::poisson || c.replicas != 1 || c.startup.kind != ms::Distribution::Kind::none ||
      (c.first_startup && c.first_startup->kind != ms::Distribution::Kind::none) || c.timeout_s || c.start_failure_share > 0)
    return nullptr;
  const double lambda = c.arrivals.rate_per_s, es = c.service.mean();
  if (lambda * es >= 1) return nullptr;
  json j;
  json sim = {{"mean", sim_all.at("mean_ms")}};
  if (c.service.kind == ms::Distribution::Kind::exponential && c.service.offset_s == 0) {
    const double mu = 1.0 / es;
    j["model"] = "M/M/1: sojourn time exponential with rate mu - lambda";
    j["sojourn_ms"]["mean"] = ms::mm1_mean_sojourn_s(lambda, mu) * 1e3;
    for (const auto& e : sim_all.at("percentiles")) {
      const double p = e.at("percentile").get<double>();
      if (e.at("value_ms").is_null()) continue;
      const std::string key = fmt::format("p{:g}", p);
      j["sojourn_ms"][key] = ms::mm1_sojourn_percentile_s(lambda, mu, p) * 1e3;
      sim[key] = e.at("value_ms");
    }
  } else {
    j["model"] = c.service.kind == ms::Distribution::Kind::constant ? "M/D/1: mean waiting by Pollaczek-Khinchine"
                                                                    : "M/G/1: mean waiting by Pollaczek-Khinchine";
    const double w = ms::pk_mean_wait_s(lambda, es, c.service.second_moment());
    j["sojourn_ms"]["mean"] = (w + es) * 1e3;
    j["sojourn_ms"]["mean_wait"] = w * 1e3;
    sim["mean_wait"] = r.counts.mean_wait_s * 1e3;
  }
  j["simulated_ms"] = sim;
  j["utilisation"] = lambda * es;
  return j;
}

}  // namespace

void add_model_service_command(CLI::App* model, GlobalOptions& g, int* /*exit_code*/) {
  struct Opts {
    std::string arrivals = "poisson:50", service = "exp:10ms", startup = "none", first_startup, restart_rate = "0",
                timeout, goodput_bound;
    std::vector<std::string> objectives;
    int replicas = 1, first_k = 10, bootstrap = 200;
    std::int64_t requests = 200000;
    std::uint64_t seed = 1;
    double start_failures = 0, goodput_share = 0;
    bool preload = false, no_search = false, warm_fleet = false;
    std::int64_t episodes = 0;
    std::vector<double> percentiles{50, 99, 99.9};
  };
  auto o = std::make_shared<Opts>();
  CLI::App* s = model_cli::subcommand(
      model, "service",
      "Discrete-event simulation of a service: latency percentiles of first and all requests, goodput, objectives "
      "(docs/service-view.md)");
  s->add_option("--arrivals", o->arrivals,
                "poisson:RATE, gamma:RATE:BURSTINESS (1 = Poisson, below 1 burstier) or trace:PATH (timestamps, bare "
                "numbers in seconds); RATE in requests per second (default poisson:50)");
  s->add_option("--service", o->service,
                "Warm service time per request: const:DURATION, exp:MEAN or file:PATH of measured samples (bare numbers in "
                "ms; default exp:10ms)");
  s->add_option("--startup", o->startup,
                "Startup every new process pays: none (default), const:, exp: or file:PATH of measured samples, resampled "
                "(never fitted)");
  s->add_option("--first-startup", o->first_startup,
                "Startup of each replica's first process instead of --startup, e.g. the cold-cache samples after a driver "
                "upgrade emptied the JIT cache");
  s->add_option("--replicas", o->replicas, "Processes serving one FCFS queue (default 1)");
  s->add_option("--restart-rate", o->restart_rate,
                "Process starts per replica (restarts, scale-out), e.g. 6/h, 0.5/s, 20000/day (default 0: only the "
                "initial start)");
  s->add_flag("--preload", o->preload, "Pay the startup before taking traffic instead of on the first request");
  s->add_flag("--warm-fleet", o->warm_fleet,
              "Start with every replica already warm (steady state) instead of a deploy of new processes at time 0");
  s->add_option("--start-episodes", o->episodes,
                "When the run sees fewer process starts than this, take the first-request numbers from this many start "
                "episodes in the simulated steady state (default 0: never)");
  s->add_option("--start-failures", o->start_failures,
                "Share of process starts that fail (0..1); the request it would serve is a miss");
  s->add_option("--timeout", o->timeout, "Requests slower than this are misses, e.g. 5s (default: none)");
  s->add_option("--requests", o->requests, "Requests to simulate (default 200000)");
  s->add_option("--first-k", o->first_k, "K of the first-K population: the first K requests of each process (default 10)");
  s->add_option("--percentiles", o->percentiles, "Percentiles to report (default 50 99 99.9)")->delimiter(',');
  s->add_option("--objective", o->objectives,
                "Latency objective POPULATION:pP<=DURATION, e.g. first_request:p99<=400ms, all:p99<=50ms (repeatable)");
  s->add_option("--goodput-bound", o->goodput_bound,
                "Latency bound for goodput (default: the first objective on all requests)");
  s->add_option("--goodput-share", o->goodput_share,
                "Share of requests that must meet the bound for the highest-rate goodput (default: that objective's "
                "percentile, else 0.9)");
  s->add_flag("--no-rate-search", o->no_search, "Skip the search for the highest rate that meets the goodput bound");
  s->add_option("--bootstrap", o->bootstrap,
                "Replicates over measured startup samples for the intervals (default 200; 0 = none)");
  s->add_option("--seed", o->seed, "Random seed; the same seed gives the same numbers (default 1)");
  s->callback([o, &g] {
    ms::ServiceConfig c;
    c.arrivals = ms::parse_arrivals("--arrivals", o->arrivals);
    c.service = ms::parse_distribution("--service", o->service);
    if (c.service.kind == ms::Distribution::Kind::none)
      throw_error(ErrorKind::usage, "--service none: a request needs a service time");
    c.startup = ms::parse_distribution("--startup", o->startup);
    if (!o->first_startup.empty()) c.first_startup = ms::parse_distribution("--first-startup", o->first_startup);
    c.replicas = o->replicas;
    c.restart_rate_per_s = ms::parse_rate("--restart-rate", o->restart_rate);
    c.preload = o->preload;
    c.cold_fleet = !o->warm_fleet;
    c.start_failure_share = o->start_failures;
    if (!o->timeout.empty()) c.timeout_s = model::parse_duration("--timeout", o->timeout);
    c.requests = o->requests;
    c.first_k = o->first_k;
    c.seed = o->seed;
    ms::validate(c);
    ms::ReportOptions ro;
    ro.percentiles = o->percentiles;
    for (double p : ro.percentiles)
      if (!(p > 0 && p < 100)) throw_error(ErrorKind::usage, fmt::format("--percentiles: {} is not in (0, 100)", p));
    for (const auto& t : o->objectives) ro.objectives.push_back(ms::parse_objective("--objective", t));
    if (!o->goodput_bound.empty()) ro.goodput_bound_s = model::parse_duration("--goodput-bound", o->goodput_bound);
    if (o->goodput_share != 0) {
      if (!(o->goodput_share > 0 && o->goodput_share <= 1))
        throw_error(ErrorKind::usage, fmt::format("--goodput-share {}: must lie in (0, 1]", o->goodput_share));
      ro.goodput_share = o->goodput_share;
    }
    if (o->bootstrap < 0) throw_error(ErrorKind::usage, "--bootstrap must be >= 0");
    ro.bootstrap = o->bootstrap;
    ro.search_max_rate = !o->no_search;
    if (o->episodes < 0) throw_error(ErrorKind::usage, "--start-episodes must be >= 0");
    ro.min_starts = o->episodes;
    const ms::ServiceReport r = ms::analyse(c, ro);
    json result = ms::to_json(r);
    // The sojourn time of every request, the textbook quantity.
    const json& all = result.at("populations").at(2);
    json sojourn = {{"mean", all.at("mean_ms")}};
    for (const auto& e : all.at("percentiles")) sojourn[fmt::format("p{:g}", e.at("percentile").get<double>())] = e.at("value_ms");
    result["sojourn_ms"] = sojourn;
    const json closed = closed_form(r, all);
    result["closed_form"] = closed;
    if (g.json) return model_cli::print_result(g, "model service", std::move(result));
    print_text(r, closed);
  });
}

}  // namespace kqual::run
