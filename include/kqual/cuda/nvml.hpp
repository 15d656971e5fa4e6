#pragma once
// NVML, loaded at run time (dlopen libnvidia-ml.so.1), for the clocks and clock-event reasons of
// the device a measurement runs on. The few entry points kqual uses are declared here from NVML's
// public reference (nvml.h is not part of the CUDA toolkit on every machine). Never throws: a
// machine without NVML gets a reason instead of clocks.
#include <cstdint>
#include <memory>
#include <string>

namespace kqual::cuda {

struct ClockReading {
  unsigned sm_mhz = 0;                 // current SM clock
  unsigned mem_mhz = 0;                // current memory clock
  std::uint64_t reasons = 0;           // nvmlClocksEventReason* bits active now
  unsigned temperature_c = 0;
  unsigned power_mw = 0;
};

// Clock-event reason bits (NVML's nvmlClocksEventReason* values).
namespace clock_reason {
inline constexpr std::uint64_t gpu_idle = 0x1, applications_clocks = 0x2, sw_power_cap = 0x4, hw_slowdown = 0x8,
                               sync_boost = 0x10, sw_thermal = 0x20, hw_thermal = 0x40, hw_power_brake = 0x80,
                               display_clock = 0x100;
// Reasons that mean the clock is held below what the board could run (power, thermal, hardware).
inline constexpr std::uint64_t throttling = sw_power_cap | hw_slowdown | sw_thermal | hw_thermal | hw_power_brake;
}  // namespace clock_reason
// "sw_power_cap+hw_thermal" (empty for none); unknown bits as hex.
std::string describe_clock_reasons(std::uint64_t reasons);

class DeviceClocks {
 public:
  // The device with this PCI bus id ("0000:19:00.0", from the CUDA driver). nullptr, with *why set,
  // when NVML or the device is not available.
  static std::unique_ptr<DeviceClocks> open(const std::string& pci_bus_id, std::string* why);
  ~DeviceClocks();
  DeviceClocks(const DeviceClocks&) = delete;
  DeviceClocks& operator=(const DeviceClocks&) = delete;
  ClockReading read() const;           // fields NVML cannot give stay 0
  unsigned max_sm_mhz() const { return max_sm_mhz_; }
  unsigned default_sm_mhz() const { return default_sm_mhz_; }  // default applications clock (0: unknown)
  // What a sample's clock is judged against: the default applications clock, else the maximum.
  unsigned reference_sm_mhz() const { return default_sm_mhz_ ? default_sm_mhz_ : max_sm_mhz_; }

 private:
  DeviceClocks() = default;
  void* device_ = nullptr;
  unsigned max_sm_mhz_ = 0, default_sm_mhz_ = 0;
};

}  // namespace kqual::cuda
