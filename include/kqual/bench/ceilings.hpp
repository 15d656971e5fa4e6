#pragma once
// Device ceilings measured on the live GPU, through a worker process (the caller never touches CUDA).
#include <string>

#include "kqual/core/json.hpp"

namespace kqual::bench {

struct DeviceCeilings {
  std::string device;               // e.g. "NVIDIA H200"
  std::string arch;                 // e.g. "sm_90"
  int sms = 0;
  double copy_bytes_per_s = 0;      // [B/s] device-to-device copy, bytes read + written
  double fp32_fma_flops_per_s = 0;  // [FLOP/s] FMA-bound kernel, 2 FLOP per FMA
  json raw;                         // samples and method, for the report
};

// Spawns a worker (watchdog in seconds); throws Error(cuda|worker) when no GPU can be used.
DeviceCeilings measure_device_ceilings(double watchdog_seconds = 60.0);

}  // namespace kqual::bench
