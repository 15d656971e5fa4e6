#pragma once
// Roofline model (docs/models.md, "Roofline"): arithmetic intensity against a device's bandwidth and
// arithmetic ceilings. Ceilings come from the datasheet table below or from a live measurement
// (kqual::bench::measure_device_ceilings); either way they are plain numbers here.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kqual/core/json.hpp"

namespace kqual::model {

enum class Precision { fp32, bf16, fp64 };
std::string_view to_string(Precision p);
Precision parse_precision(std::string_view flag, std::string_view text);  // throws Error(usage)

// Datasheet ceilings of one GPU. Every number is peak (boost clock, dense: no 2:4 sparsity); the
// `*_source` strings say where it was published. Measured ceilings are lower (a copy reaches
// ~88 % of the H200's 4.8 TB/s here: docs/gpu-runs.md).
struct DeviceSpec {
  std::string key;    // "h200": what --device takes
  std::string name;   // "NVIDIA H200 SXM 141GB"
  std::string arch;   // "sm_90": selects the per-SM limits of the occupancy model
  int sms = 0;
  double mem_bytes_per_s = 0;     // [B/s] peak DRAM bandwidth
  double fp32_flops_per_s = 0;    // [FLOP/s] non-tensor FP32 (FMA = 2 FLOP)
  double bf16_flops_per_s = 0;    // [FLOP/s] BF16 tensor core, dense, FP32 accumulate
  double fp64_flops_per_s = 0;    // [FLOP/s] non-tensor FP64
  std::string source;             // where the numbers come from (URL + document name)
  std::string note;               // caveats: derived numbers, variant chosen
};
const std::vector<DeviceSpec>& known_devices();
// Case-insensitive lookup by key; throws Error(usage) listing the known keys.
const DeviceSpec& find_device(std::string_view key);

struct Ceilings {
  std::string device;       // what the ceilings describe, e.g. "NVIDIA H200 SXM 141GB (datasheet)"
  std::string precision;    // "fp32", ...
  double bytes_per_s = 0;   // [B/s]
  double flops_per_s = 0;   // [FLOP/s]
  std::string source;       // datasheet citation or "measured on <device>"
};
Ceilings ceilings_for(const DeviceSpec& d, Precision p);

struct RooflineInput {
  double flops = 0;   // [FLOP] total arithmetic of the operation
  double bytes = 0;   // [B] minimum DRAM traffic (each input read once, each output written once)
  Ceilings ceilings;
  std::optional<double> measured_s;  // [s] a measured kernel time, to place it against the floor
};

struct RooflineResult {
  double arithmetic_intensity = 0;  // [FLOP/B] flops / bytes (+inf when bytes == 0)
  double ridge_point = 0;           // [FLOP/B] flops_per_s / bytes_per_s: where the two roofs meet
  std::string bound;                // "memory" or "compute"
  double memory_time_s = 0;         // [s] bytes / bandwidth
  double compute_time_s = 0;        // [s] flops / arithmetic rate
  double floor_s = 0;               // [s] max of the two: no implementation can be faster
  double attainable_flops_per_s = 0;  // [FLOP/s] min(rate, intensity * bandwidth)
  std::optional<double> measured_s;
  std::optional<double> fraction_of_floor;       // floor / measured: 1 = at the roof
  std::optional<double> achieved_bytes_per_s;    // bytes / measured
  std::optional<double> achieved_flops_per_s;    // flops / measured
  std::string explanation;
};
// Throws Error(usage) for negative or non-finite counts, both counts zero, non-positive ceilings or
// a non-positive measured time.
RooflineResult roofline(const RooflineInput& in);

json to_json(const DeviceSpec& d);
json to_json(const Ceilings& c);
json to_json(const RooflineResult& r);

}  // namespace kqual::model
