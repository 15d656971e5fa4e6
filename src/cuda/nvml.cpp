#include "kqual/cuda/nvml.hpp"

#include <dlfcn.h>
#include <fmt/format.h>

#include <mutex>

namespace kqual::cuda {
namespace {

// NVML's types as its reference defines them: nvmlReturn_t is an enum (0 = success), nvmlDevice_t
// an opaque pointer, nvmlClockType_t 0 graphics / 1 SM / 2 memory, sensor 0 = the GPU die.
using Ret = int;
using Dev = void*;
constexpr int kClockSm = 1, kClockMem = 2, kSensorGpu = 0;

struct Nvml {
  Ret (*init)() = nullptr;
  Ret (*by_pci)(const char*, Dev*) = nullptr;
  Ret (*clock)(Dev, int, unsigned*) = nullptr;
  Ret (*max_clock)(Dev, int, unsigned*) = nullptr;
  Ret (*default_app_clock)(Dev, int, unsigned*) = nullptr;
  Ret (*reasons)(Dev, unsigned long long*) = nullptr;
  Ret (*temperature)(Dev, int, unsigned*) = nullptr;
  Ret (*power)(Dev, unsigned*) = nullptr;
  const char* (*error_string)(Ret) = nullptr;
  std::string unavailable;
};

const Nvml& nvml() {
  static Nvml n;
  static std::once_flag once;
  std::call_once(once, [] {
    void* h = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      const char* e = dlerror();
      n.unavailable = fmt::format("NVML not found (dlopen libnvidia-ml.so.1: {})", e ? e : "?");
      return;
    }
    auto sym = [&](const char* name) { return dlsym(h, name); };
    n.init = reinterpret_cast<Ret (*)()>(sym("nvmlInit_v2"));
    n.by_pci = reinterpret_cast<Ret (*)(const char*, Dev*)>(sym("nvmlDeviceGetHandleByPciBusId_v2"));
    n.clock = reinterpret_cast<Ret (*)(Dev, int, unsigned*)>(sym("nvmlDeviceGetClockInfo"));
    n.max_clock = reinterpret_cast<Ret (*)(Dev, int, unsigned*)>(sym("nvmlDeviceGetMaxClockInfo"));
    n.default_app_clock = reinterpret_cast<Ret (*)(Dev, int, unsigned*)>(sym("nvmlDeviceGetDefaultApplicationsClock"));
    n.reasons = reinterpret_cast<Ret (*)(Dev, unsigned long long*)>(sym("nvmlDeviceGetCurrentClocksEventReasons"));
    if (!n.reasons) n.reasons = reinterpret_cast<Ret (*)(Dev, unsigned long long*)>(sym("nvmlDeviceGetCurrentClocksThrottleReasons"));
    n.temperature = reinterpret_cast<Ret (*)(Dev, int, unsigned*)>(sym("nvmlDeviceGetTemperature"));
    n.power = reinterpret_cast<Ret (*)(Dev, unsigned*)>(sym("nvmlDeviceGetPowerUsage"));
    n.error_string = reinterpret_cast<const char* (*)(Ret)>(sym("nvmlErrorString"));
    if (!n.init || !n.by_pci || !n.clock) {
      n.unavailable = "libnvidia-ml.so.1 lacks nvmlInit_v2 / nvmlDeviceGetHandleByPciBusId_v2 / nvmlDeviceGetClockInfo";
      return;
    }
    if (Ret r = n.init(); r != 0)
      n.unavailable = fmt::format("nvmlInit_v2 failed: {}", n.error_string ? n.error_string(r) : std::to_string(r));
  });
  return n;
}

}  // namespace

std::string describe_clock_reasons(std::uint64_t reasons) {
  static const std::pair<std::uint64_t, const char*> names[] = {
      {clock_reason::gpu_idle, "gpu_idle"},         {clock_reason::applications_clocks, "applications_clocks"},
      {clock_reason::sw_power_cap, "sw_power_cap"}, {clock_reason::hw_slowdown, "hw_slowdown"},
      {clock_reason::sync_boost, "sync_boost"},     {clock_reason::sw_thermal, "sw_thermal"},
      {clock_reason::hw_thermal, "hw_thermal"},     {clock_reason::hw_power_brake, "hw_power_brake"},
      {clock_reason::display_clock, "display_clock"}};
  std::string s;
  std::uint64_t known = 0;
  for (const auto& [bit, name] : names) {
    known |= bit;
    if (reasons & bit) s += (s.empty() ? "" : "+") + std::string(name);
  }
  if (reasons & ~known) s += fmt::format("{}0x{:x}", s.empty() ? "" : "+", reasons & ~known);
  return s;
}

std::unique_ptr<DeviceClocks> DeviceClocks::open(const std::string& pci_bus_id, std::string* why) {
  const Nvml& n = nvml();
  if (!n.unavailable.empty()) {
    if (why) *why = n.unavailable;
    return nullptr;
  }
  Dev d = nullptr;
  if (Ret r = n.by_pci(pci_bus_id.c_str(), &d); r != 0 || !d) {
    if (why) *why = fmt::format("NVML has no device at PCI bus id {}: {}", pci_bus_id, n.error_string ? n.error_string(r) : std::to_string(r));
    return nullptr;
  }
  std::unique_ptr<DeviceClocks> c(new DeviceClocks());
  c->device_ = d;
  if (n.max_clock) n.max_clock(d, kClockSm, &c->max_sm_mhz_);
  if (n.default_app_clock && n.default_app_clock(d, kClockSm, &c->default_sm_mhz_) != 0) c->default_sm_mhz_ = 0;
  return c;
}

DeviceClocks::~DeviceClocks() = default;  // nvmlShutdown is left to process exit (other users may share NVML)

ClockReading DeviceClocks::read() const {
  const Nvml& n = nvml();
  ClockReading r;
  Dev d = device_;
  if (n.clock(d, kClockSm, &r.sm_mhz) != 0) r.sm_mhz = 0;
  if (n.clock(d, kClockMem, &r.mem_mhz) != 0) r.mem_mhz = 0;
  unsigned long long reasons = 0;
  if (n.reasons && n.reasons(d, &reasons) == 0) r.reasons = reasons;
  if (n.temperature && n.temperature(d, kSensorGpu, &r.temperature_c) != 0) r.temperature_c = 0;
  if (n.power && n.power(d, &r.power_mw) != 0) r.power_mw = 0;
  return r;
}

}  // namespace kqual::cuda
