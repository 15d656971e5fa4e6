#pragma once
// Deployment profile: how the service that runs the kernel lives (docs/statistics.md, "Deployment
// profile"; examples in profiles/). The same measured pair can deserve different verdicts for a
// long-lived server and for a service that starts cold often — the profile says which one this is.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kqual/core/jit_cache.hpp"
#include "kqual/core/json.hpp"
#include "kqual/model/service.hpp"

namespace kqual::decision {

// The JIT cache state a fresh process of the service finds (core/jit_cache.hpp).
using kqual::CacheMode;
using kqual::cache_mode_from_string;
using kqual::to_string;

// How the service is simulated for the service view (docs/service-view.md, "Profiles"): the
// `[service]` table. Every key is optional; what is left out is derived from the profile.
struct ServiceProfile {
  std::optional<double> arrival_rate_per_s;  // [requests/s] default: calls_per_process × process_starts_per_day
                                             // / 86400 / kernel calls per request
  double burstiness = 1;                     // gamma shape of inter-arrival times; 1 = Poisson
  std::optional<int> replicas;               // default: enough for 70 % utilisation on OLD's numbers
  std::optional<double> request_time_ms;     // [ms] warm request time on OLD; default: OLD's kernel time / kernel_share
  int first_k = 10;                          // the first K requests of each process
  std::optional<double> timeout_ms;          // [ms] slower requests are misses
  double other_startup_ms = 0;               // [ms] the service's own start (framework, model load), added to every start
  bool driver_upgrade = false;               // the JIT cache starts empty: each replica's first start is cold
  bool preload = false;                      // startup paid before taking traffic, not by the first request
};

struct DeploymentProfile {
  std::string name = "default";
  std::string description;
  std::string source;                          // file it came from ("" for built-in defaults)
  double process_starts_per_day = 1;           // [1/day] fresh processes that pay the cold start
  double calls_per_process = 1e6;              // [calls] kernel calls one process serves in its life
  std::optional<double> first_request_budget_ms;  // [ms] limit on process start → first kernel result
  double kernel_share = 1.0;                   // [0..1] share of request time spent in this kernel
  CacheMode jit_cache = CacheMode::cold;       // cache state a fresh process of the service finds
  ServiceProfile service;                      // [service]
  // [[objective]] population = "first_request" | "first_k" | "all", percentile = 99, max_ms = 400:
  // the service view says which side meets each, and NEW missing one OLD meets is do not ship.
  std::vector<model::service::Objective> objectives;
  // [[shape]] shape = "n=4096", calls = 5e5: the deployment's shape mix, calls per shape (only their
  // ratios matter). Empty: every timed shape is called equally often (docs/decision.md).
  std::vector<std::pair<std::string, double>> shape_calls;
  // [decision] margin = 0.03, margin_us = 0.5, regression_limit = 0.10: the speed rule's practical
  // margin and regression limit for this deployment (the command line's --margin and
  // --regression-limit override them; unset: kqual's defaults).
  std::optional<double> margin_relative;
  std::optional<double> margin_absolute_us;
  std::optional<double> regression_limit;
};

// Parses a profile (TOML, flat keys; see profiles/*.toml). Every problem throws Error(input) naming
// the file, the key and the value: unknown key, wrong type, negative or non-finite number,
// kernel_share outside [0, 1], unknown jit_cache, a bad [service] or [[objective]] entry, TOML
// syntax (with line and column).
DeploymentProfile parse_profile(std::string_view toml_text, const std::string& source_name);
// Reads and parses a file; a missing or unreadable file throws Error(input) naming it.
DeploymentProfile load_profile(const std::string& path);
// Each file (--profile, repeatable) in order; none → one profile of the built-in defaults named "default".
std::vector<DeploymentProfile> load_profiles_or_default(const std::vector<std::string>& paths);

json to_json(const DeploymentProfile& p);
// Reads what to_json wrote (a profile recorded in a results document); Error(input) naming the field.
DeploymentProfile profile_from_json(const json& j);

}  // namespace kqual::decision
