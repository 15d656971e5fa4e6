#pragma once
// What the service view reports from simulations (docs/service-view.md, "What is reported"):
// p50 / p99 / p99.9 of the first request after a start, of the first K requests and of all
// requests, each with a bootstrap interval over the measured startup samples; goodput in both
// definitions in use; latency objectives met or missed and by how much; warnings where a
// percentile rests on fewer samples than it needs. Pure CPU code over model::service::simulate.
#include <array>
#include <optional>
#include <utility>
#include <string>
#include <vector>

#include "kqual/core/json.hpp"
#include "kqual/model/service.hpp"

namespace kqual::model::service {

struct ReportOptions {
  std::vector<double> percentiles{50, 99, 99.9};
  // Replicates of the whole simulation, each with the measured startup samples resampled with
  // replacement (arrivals and service draws unchanged): the interval of every percentile. 0 = none;
  // only empirical startup distributions are resampled.
  int bootstrap = 200;
  double confidence = 0.95;
  std::vector<Objective> objectives;
  // Goodput: good requests per second at the simulated rate, and the highest rate at which at
  // least `goodput_share` of all requests take at most `goodput_bound_s` (DistServe). Both default
  // to the first objective on all requests (its bound, its percentile as the share).
  std::optional<double> goodput_bound_s;
  std::optional<double> goodput_share;
  bool search_max_rate = true;
  std::int64_t search_requests = 0;  // requests per search step (0: half the simulated requests)
  int threads = 0;                   // for the replicates (0: up to 8, as the machine has cores)
  // Start episodes: when the run sees fewer process starts than this (rare restarts, e.g. a few a
  // day), the first-request population is built from this many episodes instead — a start landing
  // in the steady state the run simulated: a waiting time resampled from the run's requests, plus a
  // startup draw, plus a service draw (a failed start or a timeout is a miss). Assumes starts are
  // too rare to change the load. 0 = never.
  std::int64_t min_starts = 0;
};

struct PercentileEstimate {
  double percentile = 50;
  double value_s = 0;                  // +infinity: the percentile falls on misses
  std::optional<double> ci_lo_s, ci_hi_s;
  std::int64_t n = 0;                  // simulated requests in the population
  std::int64_t needed = 0;             // samples_needed(percentile)
  bool too_few = false;                // n < needed
};

struct PopulationReport {
  Population population = Population::all;
  bool episodes = false;               // first_request: built from start episodes (ReportOptions::min_starts)
  std::int64_t n = 0, misses = 0;
  double mean_s = 0;                   // over the requests that did not miss
  std::vector<PercentileEstimate> percentiles;
  std::vector<std::pair<double, double>> distribution;  // (percentile, latency [s]) at 1 5 10 25 50 75 90 95 99 99.9: the plot
};

// An objective judged on the interval of its percentile: meets only when the whole interval lies at
// or below the bound, misses only when it lies wholly above it; otherwise (or without an interval)
// the evidence cannot tell.
enum class Standing { meets, misses, inconclusive };
const char* to_string(Standing s);  // "meets", "misses", "inconclusive"

struct ObjectiveResult {
  Objective objective;
  double value_s = 0;                  // the simulated percentile
  std::optional<double> ci_lo_s, ci_hi_s;
  bool meets = false;                  // value <= bound (the point estimate)
  bool certain = false;                // the whole interval is on the same side of the bound
  Standing standing = Standing::inconclusive;  // judged on the interval: what a verdict may turn on
  std::string standing_text;           // why, e.g. "the p99 first-request CI [380, 420] ms contains the 400 ms objective"
  double by_s = 0;                     // value - bound: > 0 misses by this much, < 0 meets with this margin
  std::string text;                    // "meets: p99 of first_request 312 ms [290 ms, 340 ms] <= 400 ms (88 ms to spare)"
};

struct Goodput {
  bool computed = false;
  double bound_s = 0, share = 0;
  double rate_per_s = 0;               // the simulated arrival rate
  double good_per_s = 0;               // requests per second within the bound, at that rate
  double good_share = 0;               // their share of all requests
  std::optional<double> max_rate_per_s;  // highest rate with >= share within the bound (0: not even at low rates)
  std::string note;
};

struct ServiceReport {
  ServiceConfig config;
  SimResult counts;                    // the base run (latency vectors emptied; counts kept)
  std::array<PopulationReport, 3> populations;  // first_request, first_k, all
  std::vector<ObjectiveResult> objectives;
  Goodput goodput;
  int bootstrap = 0;                   // replicates run
  std::int64_t measured_startup_samples = 0;  // 0 when the startup is not measured samples
  std::vector<std::string> warnings;
};

// The base simulation, the replicates and the goodput search. Deterministic for a given seed
// whatever the thread count.
ServiceReport analyse(const ServiceConfig& c, const ReportOptions& o);

const PopulationReport& population(const ServiceReport& r, Population p);
json to_json(const ServiceReport& r);

}  // namespace kqual::model::service
