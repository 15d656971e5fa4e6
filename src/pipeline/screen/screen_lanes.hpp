#pragma once
// Internal to src/pipeline/screen/: the lanes a screen's GPU checks run in (screen_lanes.cpp; used
// by screen.cpp). A lane is one worker session; a device holds --workers-per-gpu lanes, which check
// side by side and time alone (GpuGate). Not a public header.
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "kqual/core/json.hpp"
#include "kqual/pipeline/screen.hpp"
#include "kqual/pipeline/screen_gpus.hpp"
#include "kqual/worker/session.hpp"

namespace kqual::pipeline {

struct Lanes {
  std::vector<std::unique_ptr<worker::Session>> sessions;  // one per lane (none without a GPU)
  std::vector<std::size_t> device_of;                      // per lane: its device (index into `devices`)
  std::vector<HostGpu> gpus;                               // with --gpus, per device: which GPU it is
  std::vector<json> devices;                               // per device: its first worker's "hello"
  std::vector<std::unique_ptr<GpuGate>> gates;             // per device
  int per_gpu = 1;                                         // lanes per device
  std::string arch, why_no_gpu, gpu_source;
  json unavailable = json::array();                        // --gpus devices that did not answer
  bool gpu() const { return !sessions.empty(); }
  // The --gpus GPU of `lane` (null on the default device, or for npos).
  const HostGpu* gpu_of(std::size_t lane) const {
    return lane < device_of.size() && device_of[lane] < gpus.size() ? &gpus[device_of[lane]] : nullptr;
  }
  GpuGate& gate_of(std::size_t lane) { return *gates[device_of[lane]]; }
  // "GPU 2, worker 1" / "the GPU" for progress lines.
  std::string lane_name(std::size_t lane) const;
};

// Per device, what its lanes did.
struct DeviceTally {
  std::size_t judged = 0;
  int worker_faults = 0;
  int worker_processes_started = 0;
  std::string retired;  // "" when no lane of the device was retired; else each retired lane and why
};
std::vector<DeviceTally> tally_devices(const Lanes& l, const DispatchReport& d);

// One worker session on the default device, or one per --gpus device; --workers-per-gpu of each.
// Error(usage) for contradictory options or when no selected GPU answers.
Lanes open_lanes(const ScreenOptions& o);

}  // namespace kqual::pipeline
