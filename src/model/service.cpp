// The service simulation itself (docs/service-view.md, "The simulation"): generator, distributions,
// the event loop over one FCFS queue and `replicas` processes, and the closed forms it is checked
// against. Parsing lives in service_parse.cpp, percentiles with intervals in service_report.cpp.
#include "kqual/model/service.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <queue>

#include "kqual/core/enum_names.hpp"
#include "kqual/core/error.hpp"
#include "kqual/model/units.hpp"

namespace kqual::model::service {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr EnumNames<Population, 3> kPopulationNames{
    {{{Population::first_request, "first_request"}, {Population::first_k, "first_k"}, {Population::all, "all"}}}};

}  // namespace

Rng::Rng(std::uint64_t seed) : g_(seed) {}

std::uint64_t Rng::next() { return g_.next(); }

double Rng::uniform() {
  // 53 random bits, shifted by half a step: never exactly 0 or 1.
  return (double(next() >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

double Rng::exponential(double mean) { return -mean * std::log(uniform()); }

double Rng::gamma(double shape, double scale) {
  if (shape < 1.0) {
    // Boost: X(shape) = X(shape + 1) · U^(1/shape).
    const double u = uniform();
    return gamma(shape + 1.0, scale) * std::pow(u, 1.0 / shape);
  }
  const double d = shape - 1.0 / 3.0, c = 1.0 / std::sqrt(9.0 * d);
  for (;;) {
    double x = 0, v = 0;
    do {
      // Standard normal by Box-Muller (one of the pair is enough here).
      x = std::sqrt(-2.0 * std::log(uniform())) * std::cos(6.283185307179586 * uniform());
      v = 1.0 + c * x;
    } while (v <= 0);
    v = v * v * v;
    const double u = uniform();
    if (std::log(u) < 0.5 * x * x + d - d * v + d * std::log(v)) return d * v * scale;
  }
}

std::size_t Rng::index(std::size_t n) { return std::size_t(uniform() * double(n)) % n; }

double Distribution::draw(Rng& r) const {
  double x = 0;
  switch (kind) {
    case Kind::none: return 0;
    case Kind::constant: x = value_s; break;
    case Kind::exponential: x = r.exponential(value_s); break;
    case Kind::empirical: x = samples_s[r.index(samples_s.size())]; break;
  }
  return offset_s + scale * x;
}

double Distribution::mean() const {
  double m = 0;
  switch (kind) {
    case Kind::none: return 0;
    case Kind::constant:
    case Kind::exponential: m = value_s; break;
    case Kind::empirical:
      for (double v : samples_s) m += v;
      m /= double(samples_s.size());
      break;
  }
  return offset_s + scale * m;
}

double Distribution::second_moment() const {
  // E[(a + bX)²] = a² + 2ab E[X] + b² E[X²].
  double m1 = 0, m2 = 0;
  switch (kind) {
    case Kind::none: return 0;
    case Kind::constant: m1 = value_s, m2 = value_s * value_s; break;
    case Kind::exponential: m1 = value_s, m2 = 2 * value_s * value_s; break;
    case Kind::empirical:
      for (double v : samples_s) m1 += v, m2 += v * v;
      m1 /= double(samples_s.size());
      m2 /= double(samples_s.size());
      break;
  }
  return offset_s * offset_s + 2 * offset_s * scale * m1 + scale * scale * m2;
}

std::string Distribution::describe() const {
  std::string s = source;
  if (s.empty()) {
    switch (kind) {
      case Kind::none: s = "none"; break;
      case Kind::constant: s = "const:" + format_seconds(value_s); break;
      case Kind::exponential: s = "exp:" + format_seconds(value_s); break;
      case Kind::empirical: s = fmt::format("{} measured samples", samples_s.size()); break;
    }
  }
  if (scale != 1) s += fmt::format(" x {:.4g}", scale);
  if (offset_s != 0) s += " + " + format_seconds(offset_s);
  return s;
}

Distribution empirical(std::vector<double> samples_s, std::string source) {
  if (samples_s.empty()) throw_error(ErrorKind::input, "an empirical distribution needs at least one sample (" + source + ")");
  for (double v : samples_s)
    if (!std::isfinite(v) || v < 0)
      throw_error(ErrorKind::input, fmt::format("{}: sample {} is not a finite duration >= 0", source, v));
  Distribution d;
  d.kind = Distribution::Kind::empirical;
  d.samples_s = std::move(samples_s);
  d.source = std::move(source);
  return d;
}

Arrivals scaled(const Arrivals& a, double factor) {
  Arrivals b = a;
  b.rate_per_s = a.rate_per_s * factor;
  for (double& t : b.trace_s) t /= factor;
  return b;
}

const char* to_string(Population p) { return kPopulationNames.name(p, "?"); }

std::optional<Population> population_from_string(std::string_view s) {
  if (const auto p = kPopulationNames.parse(s)) return p;
  // Shorter and dashed spellings people type on the command line.
  if (s == "first" || s == "first-request") return Population::first_request;
  if (s == "first-k") return Population::first_k;
  return std::nullopt;
}

std::string Objective::text() const {
  return fmt::format("p{:g} of {} <= {}", percentile, to_string(population), format_seconds(max_s));
}

void validate(const ServiceConfig& c) {
  auto bad = [](const std::string& what) { throw_error(ErrorKind::usage, "service model: " + what); };
  if (c.replicas < 1) bad(fmt::format("replicas must be >= 1, got {}", c.replicas));
  if (c.requests < 1) bad(fmt::format("requests must be >= 1, got {}", c.requests));
  if (c.first_k < 1) bad(fmt::format("first K must be >= 1, got {}", c.first_k));
  if (!(c.restart_rate_per_s >= 0) || !std::isfinite(c.restart_rate_per_s)) bad("the restart rate must be finite and >= 0");
  if (!(c.start_failure_share >= 0 && c.start_failure_share < 1))
    bad(fmt::format("the share of failed starts must lie in [0, 1), got {}", c.start_failure_share));
  if (c.timeout_s && !(*c.timeout_s > 0)) bad("the timeout must be positive");
  if (c.idle_stop_s && !(*c.idle_stop_s >= 0 && std::isfinite(*c.idle_stop_s)))
    bad("the idle time before a replica stops must be finite and >= 0");
  if (c.service.kind == Distribution::Kind::none) bad("a service time distribution is required");
  for (const Distribution* d : {&c.service, &c.startup, c.first_startup ? &*c.first_startup : nullptr}) {
    if (!d) continue;
    if (d->kind == Distribution::Kind::empirical && d->samples_s.empty()) bad("an empirical distribution has no samples");
    if (d->mean() < 0 || !std::isfinite(d->mean())) bad("a distribution has a negative or non-finite mean: " + d->describe());
  }
  if (c.arrivals.kind == Arrivals::Kind::trace) {
    if (c.arrivals.trace_s.empty()) bad("the arrival trace is empty");
  } else if (!(c.arrivals.rate_per_s > 0) || !std::isfinite(c.arrivals.rate_per_s)) {
    bad("the arrival rate must be a finite number > 0");
  } else if (c.arrivals.kind == Arrivals::Kind::gamma && !(c.arrivals.burstiness > 0)) {
    bad("the burstiness factor must be > 0");
  }
}

namespace {

// One replica: its current process and when it can take the next request.
struct Replica {
  double free_at = 0;         // [s] done with its last request (or, preloading, with its startup)
  double next_restart = kInf; // [s] the next process start event of this replica
  bool fresh = true;          // the process has served nothing yet
  bool first_process = true;  // the replica's first process start of the run (first_startup applies)
  bool on_demand = false;     // stopped when idle: the next request waits for the startup, even with preload
  std::int64_t served = 0;    // by the current process
};

// Independent streams, so that e.g. resampled startups leave arrivals and service draws unchanged
// (common random numbers across bootstrap replicates and the two sides of a comparison).
struct Streams {
  Rng arrivals, service, startup, restarts, failures;
  explicit Streams(std::uint64_t seed)
      : arrivals(seed * 5 + 1), service(seed * 5 + 2), startup(seed * 5 + 3), restarts(seed * 5 + 4), failures(seed * 5 + 5) {}
};

}  // namespace

SimResult simulate(const ServiceConfig& c) {
  validate(c);
  Streams rng(c.seed);
  SimResult out;
  const bool trace = c.arrivals.kind == Arrivals::Kind::trace;
  const std::int64_t n = trace ? std::min<std::int64_t>(c.requests, std::int64_t(c.arrivals.trace_s.size())) : c.requests;
  out.all_s.reserve(std::size_t(n));
  std::vector<Replica> reps(std::size_t(c.replicas));
  double busy = 0;  // [s] replica time serving or starting
  auto draw_startup = [&](Replica& r) {
    const Distribution& d = r.first_process && c.first_startup ? *c.first_startup : c.startup;
    r.first_process = false;
    return d.draw(rng.startup);
  };
  auto start_fails = [&] { return c.start_failure_share > 0 && rng.failures.uniform() < c.start_failure_share; };
  auto schedule_restart = [&](Replica& r, double from) {
    r.next_restart = c.restart_rate_per_s > 0 ? from + rng.restarts.exponential(1.0 / c.restart_rate_per_s) : kInf;
  };
  // Preloading: a new process takes traffic only once started; a failed start starts again.
  auto preload_start = [&](Replica& r, double t0) {
    double t = t0;
    for (;;) {
      ++out.starts;
      const double s = draw_startup(r);
      busy += s;
      t += s;
      if (!start_fails()) break;
      ++out.failed_starts;
    }
    r.free_at = t;
    r.fresh = true;
    r.on_demand = false;
    r.served = 0;
  };
  // A process runs once it has started: preloaded, or (lazy) once it has served its first request.
  auto running = [&](const Replica& r) { return c.preload ? !r.on_demand : !(r.fresh && r.served == 0); };
  for (auto& r : reps) {
    schedule_restart(r, 0.0);
    if (!c.cold_fleet) {
      // Long past its first requests. Its process predates the run, so first_startup (an empty JIT
      // cache after a driver upgrade) falls on the replica's first restart.
      r.fresh = false;
      r.served = c.first_k;
    } else if (c.preload) {
      preload_start(r, 0.0);
    } else {
      ++out.starts;
    }
  }
  // Replicas ordered by when they can take the next request (ties: lowest index, so runs repeat).
  using Slot = std::pair<double, std::size_t>;
  std::priority_queue<Slot, std::vector<Slot>, std::greater<>> ready;
  for (std::size_t i = 0; i < reps.size(); ++i) ready.push({reps[i].free_at, i});

  double t_arrival = 0, wait_sum = 0, first_arrival = 0;
  const double mean_gap = trace ? 0 : 1.0 / c.arrivals.rate_per_s;
  for (std::int64_t i = 0; i < n; ++i) {
    if (trace) {
      t_arrival = c.arrivals.trace_s[std::size_t(i)];
    } else if (c.arrivals.kind == Arrivals::Kind::gamma) {
      t_arrival += rng.arrivals.gamma(c.arrivals.burstiness, mean_gap / c.arrivals.burstiness);
    } else {
      t_arrival += rng.arrivals.exponential(mean_gap);
    }
    if (i == 0) first_arrival = t_arrival;
    // The replica that can start this request first, after applying its restarts due by then.
    std::size_t k = 0;
    double start = 0;
    for (;;) {
      const auto [free_at, idx] = ready.top();
      ready.pop();
      Replica& r = reps[idx];
      const double begin = std::max(t_arrival, free_at);
      if (r.next_restart <= begin) {
        // A restart drains: the new process starts once the last request is done.
        const double t0 = std::max(r.next_restart, r.free_at);
        schedule_restart(r, r.next_restart);
        if (c.preload) {
          preload_start(r, t0);
        } else {
          ++out.starts;
          r.fresh = true;
          r.served = 0;
          r.free_at = t0;
        }
        ready.push({r.free_at, idx});
        continue;
      }
      k = idx;
      start = begin;
      break;
    }
    Replica& r = reps[k];
    if (c.idle_stop_s && running(r) && t_arrival > r.free_at + *c.idle_stop_s) {
      // Scaled to zero: the process stopped idle_stop_s after its last request; this one starts a new one.
      ++out.starts;
      r.fresh = true;
      r.served = 0;
      r.on_demand = true;
    }
    double service = c.service.draw(rng.service);
    bool failed = false;
    if ((!c.preload || r.on_demand) && r.fresh && r.served == 0) {
      // The first request of a new process pays its startup on the request path.
      const double s = draw_startup(r);
      if (start_fails()) {
        // The start fails after its startup time: this request fails, and the process starts again.
        ++out.failed_starts;
        ++out.starts;
        failed = true;
        service = s;
        r.fresh = true;
      } else {
        service += s;
      }
    }
    const double finish = start + service;
    busy += service;
    wait_sum += start - t_arrival;
    out.wait_s.push_back(start - t_arrival);
    r.free_at = finish;
    double latency = finish - t_arrival;
    if (failed) {
      ++out.failures;
      latency = kInf;
    } else if (c.timeout_s && latency > *c.timeout_s) {
      ++out.timeouts;
      latency = kInf;
    }
    if (!failed) {
      if (r.served == 0) out.first_s.push_back(latency);
      if (r.served < c.first_k) out.first_k_s.push_back(latency);
      ++r.served;
      r.fresh = false;
      r.on_demand = false;
    } else {
      out.first_s.push_back(kInf);
      out.first_k_s.push_back(kInf);
    }
    out.all_s.push_back(latency);
    ready.push({r.free_at, k});
  }
  out.requests = n;
  out.span_s = t_arrival - first_arrival;
  out.mean_wait_s = n > 0 ? wait_sum / double(n) : 0;
  const double horizon = std::max(out.span_s, 1e-12) * double(c.replicas);
  out.busy_share = busy / horizon;
  return out;
}

double mm1_mean_sojourn_s(double lambda, double mu) {
  if (!(lambda > 0 && mu > lambda)) throw_error(ErrorKind::usage, "M/M/1 needs 0 < lambda < mu");
  return 1.0 / (mu - lambda);
}

double mm1_sojourn_percentile_s(double lambda, double mu, double percentile) {
  if (!(percentile > 0 && percentile < 100)) throw_error(ErrorKind::usage, "percentile must lie in (0, 100)");
  return -std::log(1.0 - percentile / 100.0) * mm1_mean_sojourn_s(lambda, mu);
}

double pk_mean_wait_s(double lambda, double mean_s, double second_moment_s2) {
  const double rho = lambda * mean_s;
  if (!(lambda > 0 && rho < 1)) throw_error(ErrorKind::usage, "Pollaczek-Khinchine needs lambda > 0 and rho = lambda E[S] < 1");
  return lambda * second_moment_s2 / (2.0 * (1.0 - rho));
}

double setup_mean_wait_s(double lambda, double mean_b_s, double second_moment_b_s2, double mean_setup_s,
                         double second_moment_setup_s2) {
  if (!(mean_setup_s >= 0 && second_moment_setup_s2 >= mean_setup_s * mean_setup_s))
    throw_error(ErrorKind::usage, "a setup time needs E[S] >= 0 and E[S²] >= E[S]²");
  // The M/G/1 wait of the requests queued behind a service, plus what the setups add: an arrival
  // finds the server idle with probability (1 - rho) / (1 + lambda E[S]) and waits a whole setup, or
  // in setup with probability (1 - rho) lambda E[S] / (1 + lambda E[S]) and waits its residual.
  const double setup = (2.0 * mean_setup_s + lambda * second_moment_setup_s2) / (2.0 * (1.0 + lambda * mean_setup_s));
  return pk_mean_wait_s(lambda, mean_b_s, second_moment_b_s2) + setup;
}

double percentile_of(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return percentile_of_sorted(v, p);
}

double percentile_of_sorted(const std::vector<double>& v, double p) {
  if (v.empty()) return std::nan("");
  const double h = double(v.size() - 1) * p / 100.0;
  const std::size_t lo = std::size_t(std::floor(h));
  if (lo + 1 >= v.size()) return v.back();
  const double frac = h - double(lo);
  if (std::isinf(v[lo + 1])) return frac > 0 ? kInf : v[lo];
  return v[lo] + frac * (v[lo + 1] - v[lo]);
}

std::int64_t samples_needed(double percentile) {
  if (!(percentile > 0 && percentile < 100)) return 1;
  return std::int64_t(std::ceil(std::log(0.01) / std::log(percentile / 100.0)));
}

}  // namespace kqual::model::service
