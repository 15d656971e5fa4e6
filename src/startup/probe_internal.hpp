#pragma once
// Internal to src/startup/: what the two probe kinds (probe.cpp: a module load; library_probe.cpp:
// a library's first calls) share. Not a public header.
#include <ctime>

#include "kqual/core/json.hpp"
#include "kqual/startup/startup.hpp"

namespace kqual::startup::detail {

inline long long monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);  // the same clock in parent and child: spawn → main is measurable
  return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

inline double ms_since(long long t0) { return double(monotonic_ns() - t0) * 1e-6; }

// The driver's dlopen + entry points + cuInit, timed into phases["driver_init"]. False, with out's
// "no_gpu" and "error" set, when there is no usable driver.
bool timed_driver_init(json& out, json& phases);

// Name, arch and driver version of device 0, after every timed phase (the driver is initialised).
json device_record();

// The library probe (library_probe.cpp): dlopen the named library, create its handle, make the first
// call of each shape and a few steady calls, in this fresh process.
json library_probe(const ProbeRequest& req, long long t_main);

}  // namespace kqual::startup::detail
