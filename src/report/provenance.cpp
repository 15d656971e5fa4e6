#include "kqual/report/provenance.hpp"

#include <cuda.h>
#include <fmt/format.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <chrono>
#include <ctime>

#include "kqual/core/version.hpp"
#include "kqual/cuda/nvrtc.hpp"

namespace kqual::report {

json provenance(const std::string& command_line, const json& device) {
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  utsname u{};
  uname(&u);
  std::time_t now = std::time(nullptr);
  char ts[64];
  std::strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  json p{{"kqual_version", kVersion},
         {"git_revision", git_revision()},
         {"command_line", command_line},
         {"timestamp_utc", ts},
         {"host", host},
         {"os", fmt::format("{} {} {}", u.sysname, u.release, u.machine)},
         {"toolkit", {{"cuda_headers", fmt::format("{}.{}", CUDA_VERSION / 1000, (CUDA_VERSION % 1000) / 10)},
                      {"nvrtc", cuda::nvrtc_version()}}}};
  if (device.is_null()) {
    p["gpu"] = nullptr;
    p["driver"] = nullptr;
  } else {
    p["gpu"] = device;
    int v = device.value("driver_version", 0);
    p["driver"] = {{"cuda_driver_api_version", fmt::format("{}.{}", v / 1000, (v % 1000) / 10)}};
  }
  return p;
}

}  // namespace kqual::report
