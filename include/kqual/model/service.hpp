#pragma once
// The service view (docs/service-view.md): a discrete-event simulation of a service built from
// measured evidence. Requests arrive (Poisson, gamma with a burstiness factor, or a trace of
// timestamps), wait in one FCFS queue for one of `replicas` processes, and are served with times
// drawn from a distribution (measured warm samples in `kqual compare`). Every process start pays a
// startup drawn — resampled, never fitted — from the measured startup distribution of its JIT
// cache state, either on its first request (default: scale from zero, lazy loading) or before it
// takes traffic (--preload). Pure CPU code; deterministic for a given seed on every platform.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kqual/core/xoshiro.hpp"

namespace kqual::model::service {

// A small portable generator (xoshiro256**, seeded through splitmix64): the standard library's
// distributions differ between implementations, so a seed would not give the same run everywhere.
class Rng {
 public:
  explicit Rng(std::uint64_t seed);
  std::uint64_t next();
  double uniform();                         // in (0, 1), never 0 or 1
  double exponential(double mean);          // mean > 0
  double gamma(double shape, double scale); // Marsaglia-Tsang; shape > 0
  std::size_t index(std::size_t n);         // uniform in [0, n), n > 0

 private:
  Xoshiro256 g_;
};

// A distribution of durations [s]: offset + scale × X, X constant, exponential or resampled from
// measured samples (every sample equally likely, nothing fitted).
struct Distribution {
  enum class Kind { none, constant, exponential, empirical };
  Kind kind = Kind::none;           // none: always 0 (e.g. no startup cost)
  double value_s = 0;               // constant: the value; exponential: the mean
  std::vector<double> samples_s;    // empirical
  double scale = 1, offset_s = 0;   // applied to every draw
  std::string source;               // as given ("exp:10ms", "file:x.txt (30 samples)")

  double draw(Rng& r) const;
  double mean() const;
  double second_moment() const;     // E[X²], for Pollaczek-Khinchine
  std::string describe() const;
};
Distribution empirical(std::vector<double> samples_s, std::string source);

// "none", "const:10ms", "exp:10ms" (the mean) or "file:PATH": whitespace- or comma-separated
// durations, one sample each; a bare number is in milliseconds, a unit may be given per value
// (12us, 0.3s); '#' starts a comment. Error(usage) naming the flag for anything else.
Distribution parse_distribution(std::string_view flag, std::string_view text);

struct Arrivals {
  enum class Kind { poisson, gamma, trace };
  Kind kind = Kind::poisson;
  double rate_per_s = 1;           // [requests/s]; a trace's own rate (requests / span)
  double burstiness = 1;           // gamma shape: 1 = Poisson, < 1 burstier, > 1 more regular (vLLM's factor)
  std::vector<double> trace_s;     // trace: arrival times from 0, ascending
  std::string source;
};
// "poisson:RATE", "gamma:RATE:BURSTINESS" (RATE in requests per second, e.g. 50 or 2.5k) or
// "trace:PATH" (timestamps, one per value, bare numbers in seconds; shifted to start at 0, sorted).
Arrivals parse_arrivals(std::string_view flag, std::string_view text);
// The same arrivals at `factor` times the rate (a trace is compressed in time).
Arrivals scaled(const Arrivals& a, double factor);

// "6/h", "0.5/s", "20000/day", "3/min", "0" → events per second.
double parse_rate(std::string_view flag, std::string_view text);

// The requests a percentile is taken over.
enum class Population {
  first_request,  // the first request each process serves
  first_k,        // the first K requests each process serves
  all,            // every request
};
const char* to_string(Population p);  // "first_request", "first_k", "all"
std::optional<Population> population_from_string(std::string_view s);  // also "first", "first-k"

// A latency objective: the percentile of a population must not exceed max_s.
struct Objective {
  Population population = Population::all;
  double percentile = 99;   // (0, 100)
  double max_s = 0;         // > 0
  std::string text() const; // "p99 of first_request <= 400 ms"
};
// "first_request:p99<=400ms", "all:p99.9<=50ms", "first_k:p50<=20ms".
Objective parse_objective(std::string_view flag, std::string_view text);

struct ServiceConfig {
  Arrivals arrivals;
  Distribution service;                      // warm service time of one request
  Distribution startup;                      // paid by every process start
  std::optional<Distribution> first_startup; // each replica's first process start of the run instead (after
                                             // a driver upgrade emptied the JIT cache): in a cold fleet the
                                             // one at time 0, in a warm fleet the replica's first restart
  double start_failure_share = 0;            // [0, 1) share of process starts that fail: the request
                                             // it would serve fails (a miss), the process starts again
  int replicas = 1;
  double restart_rate_per_s = 0;             // process starts per replica per second (restarts, scale-out)
  bool preload = false;                      // startup paid before taking traffic, not by the first request
  bool cold_fleet = true;                    // every replica is a new process at time 0 (a deploy); false: the
                                             // fleet is already warm, new processes come from the restart rate
  std::int64_t requests = 200000;
  int first_k = 10;
  std::optional<double> timeout_s;           // a request slower than this is a miss
  std::optional<double> idle_stop_s;         // [s] scale to zero: a replica idle longer than this stops its
                                             // process, and the next request it takes starts a new one and
                                             // waits for that startup (with preload too: nothing runs to
                                             // preload). 0: a startup at the start of every busy period
  std::uint64_t seed = 1;
};
// Throws Error(usage) naming the problem for a config the simulation cannot run.
void validate(const ServiceConfig& c);

// Latencies [s] per population; +infinity marks a miss (failed start or timeout): it sorts above
// every latency, so a percentile that reaches it is a miss, never left out.
struct SimResult {
  std::vector<double> all_s, first_s, first_k_s;
  std::vector<double> wait_s;  // queueing delay of every request (arrival to start of service)
  std::int64_t requests = 0, starts = 0, failed_starts = 0, failures = 0, timeouts = 0;
  double span_s = 0;        // [s] first to last arrival
  double mean_wait_s = 0;   // [s] mean queueing delay (arrival to start of service)
  double busy_share = 0;    // replica time spent serving or starting / (replicas × span)
};
SimResult simulate(const ServiceConfig& c);

// ---- Closed forms the simulation is validated against (tests/model/service_test.cpp) ----
// M/M/1 with arrival rate lambda and service rate mu (lambda < mu): the sojourn time is exponential
// with rate mu - lambda.
double mm1_mean_sojourn_s(double lambda, double mu);
double mm1_sojourn_percentile_s(double lambda, double mu, double percentile);
// M/G/1 mean waiting time by Pollaczek-Khinchine: lambda E[S²] / (2 (1 - rho)), rho = lambda E[S];
// for M/D/1 (constant S) this is rho S / (2 (1 - rho)).
double pk_mean_wait_s(double lambda, double mean_s, double second_moment_s2);

// M/G/1 with a setup time S at the start of every busy period (a server that stops when it runs out
// of work and starts again for the next arrival: idle_stop_s = 0; Welch 1964, exceptional first
// service). Mean wait, the setup counted as waiting: lambda E[B²] / (2 (1 - rho)) + (2 E[S] +
// lambda E[S²]) / (2 (1 + lambda E[S])), rho = lambda E[B] < 1. Derived in docs/service-view.md.
double setup_mean_wait_s(double lambda, double mean_b_s, double second_moment_b_s2, double mean_setup_s,
                         double second_moment_setup_s2);

// Type-7 percentile (as stats::percentile) of a sample that may hold +infinity.
double percentile_of(std::vector<double> v, double p);
double percentile_of_sorted(const std::vector<double>& ascending, double p);
// The fewest samples for which the sample maximum exceeds the true p-th percentile with 99 %
// probability: ceil(ln 0.01 / ln(p / 100)). Fewer, and an interval for that percentile has no
// upper bound inside the data (459 for p99, 4603 for p99.9).
std::int64_t samples_needed(double percentile);

}  // namespace kqual::model::service
