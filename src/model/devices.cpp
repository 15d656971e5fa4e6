// The datasheet table of `kqual model roofline --device`. Each number's source is in the entry and
// in docs/models.md ("Device table"); change both together. Rates are per GPU, at boost clock,
// dense (NVIDIA's tensor-core headline figures include 2:4 sparsity and are halved here).
#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "kqual/core/error.hpp"
#include "kqual/model/roofline.hpp"

namespace kqual::model {

const std::vector<DeviceSpec>& known_devices() {
  static const std::vector<DeviceSpec> table = {
      // NVIDIA H100 Tensor Core GPU datasheet, SXM5 80GB column: 3.35 TB/s HBM3, FP32 67 TFLOPS,
      // FP64 34 TFLOPS, BF16 Tensor Core 1,979 TFLOPS "with sparsity" -> 989.5 dense. 132 SMs:
      // NVIDIA H100 whitepaper ("NVIDIA H100 Tensor Core GPU Architecture"), SXM5 configuration.
      {"h100", "NVIDIA H100 SXM5 80GB", "sm_90", 132, 3.35e12, 67e12, 989.5e12, 34e12,
       "NVIDIA H100 Tensor Core GPU datasheet (https://www.nvidia.com/en-us/data-center/h100/), SXM5 column; "
       "SM count from the NVIDIA H100 architecture whitepaper",
       "BF16 = 1,979 TFLOPS sparse / 2; the PCIe card is slower (2.0 TB/s, 51 TFLOPS FP32)"},
      // NVIDIA H200 datasheet, SXM column: 4.8 TB/s HBM3e, FP32 67 TFLOPS, FP64 34 TFLOPS,
      // BF16 Tensor Core 1,979 TFLOPS with sparsity -> 989.5 dense. Same GH100 die as H100 SXM: 132 SMs.
      {"h200", "NVIDIA H200 SXM 141GB", "sm_90", 132, 4.8e12, 67e12, 989.5e12, 34e12,
       "NVIDIA H200 Tensor Core GPU datasheet (https://www.nvidia.com/en-us/data-center/h200/), SXM column",
       "BF16 = 1,979 TFLOPS sparse / 2; a D2D copy measured 4.25 TB/s here (docs/gpu-runs.md), 88 % of the datasheet"},
      // NVIDIA A100 Tensor Core GPU datasheet, A100 80GB SXM column: 2,039 GB/s HBM2e, FP32 19.5 TFLOPS,
      // FP64 9.7 TFLOPS, BF16 Tensor Core 312 TFLOPS (624 with sparsity). 108 SMs: A100 whitepaper.
      {"a100", "NVIDIA A100 SXM4 80GB", "sm_80", 108, 2.039e12, 19.5e12, 312e12, 9.7e12,
       "NVIDIA A100 Tensor Core GPU datasheet (https://www.nvidia.com/en-us/data-center/a100/), 80GB SXM column; "
       "SM count from the NVIDIA A100 Tensor Core GPU architecture whitepaper",
       "the 40GB SXM part has 1,555 GB/s"},
      // NVIDIA L40S datasheet: 864 GB/s GDDR6, FP32 91.6 TFLOPS, BF16 Tensor Core 362.05 TFLOPS
      // (733 with sparsity), 142 RT cores = 142 SMs. FP64 is not in the datasheet: Ada runs FP64 at
      // 1/64 of FP32 (CUDA C++ Programming Guide, arithmetic instruction throughput table, cc 8.9).
      {"l40s", "NVIDIA L40S", "sm_89", 142, 864e9, 91.6e12, 362.05e12, 91.6e12 / 64.0,
       "NVIDIA L40S datasheet (https://www.nvidia.com/en-us/data-center/l40s/); FP64 derived from the CUDA C++ "
       "Programming Guide throughput table (cc 8.9: FP64 = FP32/64)",
       "FP64 is derived (1.43 TFLOPS), not a datasheet number"},
      // NVIDIA HGX B200 platform specifications (8 GPUs, 1000 W each): FP32 600 TFLOPS, FP64 296 TFLOPS,
      // FP16/BF16 Tensor Core 36 PFLOPS with sparsity; per GPU: /8, and /2 for dense. 8 TB/s HBM3e per GPU.
      // 148 SMs: device attribute reported by B200 systems (cudaDevAttrMultiProcessorCount).
      {"b200", "NVIDIA B200 (HGX, 1000 W)", "sm_100", 148, 8.0e12, 75e12, 2250e12, 37e12,
       "NVIDIA HGX platform specifications (https://www.nvidia.com/en-us/data-center/hgx/), HGX B200 column, "
       "divided by 8 GPUs; SM count as reported by the CUDA driver on B200",
       "per-GPU figures are platform totals / 8; BF16 = 4.5 PFLOPS sparse / 2"},
  };
  return table;
}

const DeviceSpec& find_device(std::string_view key) {
  std::string k(key);
  std::transform(k.begin(), k.end(), k.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  for (const auto& d : known_devices())
    if (d.key == k) return d;
  std::string names;
  for (const auto& d : known_devices()) names += (names.empty() ? "" : ", ") + d.key;
  throw_error(ErrorKind::usage, fmt::format("--device '{}': unknown device; known devices: {}", key, names));
}

}  // namespace kqual::model
