// The lanes of kqual screen: worker sessions on the default device or on each --gpus device,
// --workers-per-gpu of them per device, and the gate each device's lanes share (screen_lanes.hpp).
#include "screen_lanes.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstdlib>

#include "kqual/core/error.hpp"
#include "kqual/pipeline/phases.hpp"

namespace kqual::pipeline {

namespace {

constexpr int kMaxWorkersPerGpu = 32;

// The device's first lane is `first`; the others are sessions like it, each with its own worker
// processes and its own reference processes (a reference process serves one caller at a time).
void add_device_lanes(Lanes& l, std::unique_ptr<worker::Session> first, int per_gpu) {
  const std::size_t device = l.gates.size();
  l.gates.push_back(std::make_unique<GpuGate>());
  worker::SessionOptions so = first->options();
  so.run_shared.reset();
  l.sessions.push_back(std::move(first));
  l.device_of.push_back(device);
  for (int k = 1; k < per_gpu; ++k) {
    l.sessions.push_back(std::make_unique<worker::Session>(so));
    l.device_of.push_back(device);
  }
}

}  // namespace

std::string Lanes::lane_name(std::size_t lane) const {
  const HostGpu* g = gpu_of(lane);
  std::string s = g ? fmt::format("GPU {}", g->ordinal) : std::string("the GPU");
  if (per_gpu > 1 && lane < device_of.size()) s += fmt::format(", worker {}", lane % std::size_t(per_gpu));
  return s;
}

std::vector<DeviceTally> tally_devices(const Lanes& l, const DispatchReport& d) {
  std::vector<DeviceTally> t(l.devices.size());
  for (std::size_t lane = 0; lane < l.sessions.size(); ++lane) {
    DeviceTally& x = t[l.device_of[lane]];
    if (lane < d.judged.size()) x.judged += d.judged[lane];
    if (lane < d.faults.size()) x.worker_faults += d.faults[lane];
    x.worker_processes_started += l.sessions[lane]->worker().processes_started();
    if (lane < d.retired.size() && !d.retired[lane].empty())
      x.retired += fmt::format("{}{}: {}", x.retired.empty() ? "" : "; ", l.per_gpu > 1 ? l.lane_name(lane) : std::string("lane"),
                               d.retired[lane]);
  }
  return t;
}

Lanes open_lanes(const ScreenOptions& o) {
  if (o.workers_per_gpu < 1 || o.workers_per_gpu > kMaxWorkersPerGpu)
    throw_error(ErrorKind::usage, fmt::format("--workers-per-gpu {}: must be 1 to {}", o.workers_per_gpu, kMaxWorkersPerGpu));
  Lanes l;
  l.per_gpu = o.workers_per_gpu;
  if (o.gpus.empty()) {
    Target tg = open_target({o.use_gpu, o.watchdog_seconds, o.arch});
    l.arch = tg.arch;
    l.why_no_gpu = tg.why_no_gpu;
    if (tg.gpu()) {
      l.devices.push_back(tg.device_json());
      add_device_lanes(l, std::move(tg.session), l.per_gpu);
    }
    return l;
  }
  if (!o.use_gpu)
    throw_error(ErrorKind::usage, fmt::format("--gpus {} and --no-gpu contradict each other: drop one", o.gpus));
  const HostGpus host = host_gpus(o.gpu_list_dir, std::getenv("CUDA_VISIBLE_DEVICES"));
  l.gpu_source = host.source;
  std::vector<std::string> silent;
  for (const HostGpu& g : select_gpus(o.gpus, host)) {
    worker::SessionOptions so;
    so.watchdog_seconds = o.watchdog_seconds;
    so.worker_env = pin_environment(g);
    auto s = std::make_unique<worker::Session>(so);
    const worker::DeviceFacts& d = s->device();
    if (!d.present) {  // this GPU does not answer: screen on the others, and say so
      silent.push_back(fmt::format("GPU {}: {}", g.ordinal, d.why_absent));
      l.unavailable.push_back(json{{"ordinal", g.ordinal}, {"pci_bus_id", g.pci_bus_id}, {"why", d.why_absent}});
      continue;
    }
    if (!l.arch.empty() && d.arch != l.arch)
      throw_error(ErrorKind::usage, fmt::format("--gpus {}: GPU {} is {} but GPU {} is {}; every candidate is built for one "
                                                "arch: screen each kind with its own --gpus LIST",
                                                o.gpus, l.gpus.front().ordinal, l.arch, g.ordinal, d.arch));
    l.arch = d.arch;
    l.devices.push_back(d.device);
    l.gpus.push_back(g);
    add_device_lanes(l, std::move(s), l.per_gpu);
  }
  if (l.sessions.empty())
    throw_error(ErrorKind::usage, fmt::format("--gpus {}: no selected GPU answered ({}); run with --no-gpu for the static "
                                              "phases only",
                                              o.gpus, fmt::join(silent, "; ")));
  if (!o.arch.empty() && o.arch != l.arch)
    throw_error(ErrorKind::usage, fmt::format("--arch {} given but the devices are {}", o.arch, l.arch));
  return l;
}

}  // namespace kqual::pipeline
