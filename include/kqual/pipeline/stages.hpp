#pragma once
// The phases every kqual pipeline runs, in this order (docs/architecture.md):
//   target → build → load → check → time → decide → write
// qualify, check and bench (pipeline/qualify.cpp), selftest (pipeline/selftest.cpp), compare (pipeline/compare/) and
// screen (pipeline/screen/) run them through the helpers here and one candidate's build, load, check
// and time through phases.hpp; the work of each phase lives in its module (build/, check/, bench/,
// startup/, decision/, report/), the order lives here.
#include <filesystem>
#include <memory>
#include <string>

#include <vector>

#include "kqual/core/dtype.hpp"
#include "kqual/core/json.hpp"
#include "kqual/worker/session.hpp"

namespace kqual::pipeline {

struct TargetOptions {
  bool use_gpu = true;
  double watchdog_seconds = 60;
  std::string arch;  // --arch: the target without a device; must match the device when there is one
};

// Phase "target": a session (scratch folder + worker; the device is probed through the worker,
// never in this process) and the arch every build is made for.
struct Target {
  std::unique_ptr<worker::Session> session;
  const worker::DeviceFacts* device = nullptr;
  std::string arch;         // "sm_90"
  std::string arch_source;  // "device 0", "--arch", "default (no device)"
  std::string why_no_gpu;   // "" when the device is present
  bool gpu() const { return device->present; }
  json device_json() const { return device->present ? device->device : json(); }
};
// Error(usage) when --arch disagrees with the device.
Target open_target(const TargetOptions& o);

// The dtype a candidate is timed at: `asked` (--dtype) when the candidate claims it, or, when
// nothing was asked ("" ), the first dtype it claims. A candidate is never timed at a dtype it does
// not claim: it would refuse every shape, and that refusal is not its failure. Error(usage) for an
// unknown dtype or one the candidate does not claim, naming `who` and its claims.
DType timing_dtype(const std::string& asked, const std::vector<DType>& claimed, const std::string& who);

// Phase "write": results.json and memo.md into dir, both complete before either appears under its
// final name (a run that stops half-way leaves the previous pair untouched).
struct Written {
  std::filesystem::path results, memo;
};
Written write_results(const std::filesystem::path& dir, const json& results, const std::string& memo);

}  // namespace kqual::pipeline
