#pragma once
// NVRTC: compile CUDA C++ device code to a cubin (native SASS) or PTX without running any host code.
#include <cstdint>
#include <string>
#include <vector>

namespace kqual::cuda {

struct NvrtcRequest {
  std::string source;                    // CUDA C++ (device code only)
  std::string source_name = "kernel.cu"; // shown in diagnostics
  std::string arch = "sm_90";            // sm_XX → cubin; compute_XX → PTX only
  std::vector<std::string> options;      // extra NVRTC options (e.g. -O3, -DVEC=4)
  std::vector<std::string> include_dirs; // -I
  std::vector<std::string> name_expressions;  // C++ names to lower ("add_relu<float>")
};

struct NvrtcResult {
  std::vector<std::uint8_t> image;  // cubin (for sm_XX) or NUL-terminated PTX (for compute_XX)
  bool is_cubin = false;
  std::string ptx;                  // PTX text when it was produced
  std::string log;                  // full compiler log, warnings included
  std::vector<std::string> options_used;
  std::vector<std::pair<std::string, std::string>> lowered;  // C++ name → mangled symbol
  double compile_ms = 0;            // [ms] wall time of nvrtcCompileProgram
  int nvrtc_major = 0, nvrtc_minor = 0;
  std::string lowered_name(const std::string& expr) const;  // throws if not lowered
};

// Throws Error(nvrtc) carrying the log when compilation fails, and Error(usage) naming the targets
// this NVRTC compiles for when req.arch is none of them (nvrtc_target_problem).
NvrtcResult nvrtc_compile(const NvrtcRequest& req);
std::string nvrtc_version();
// The architectures this NVRTC compiles for, as numbers (75, 80, ..., 120).
std::vector<int> nvrtc_supported_archs();
// "" when `target` is sm_XX[a|f] or compute_XX[a|f] for an XX this NVRTC compiles for; otherwise
// what is wrong and the targets it takes (the --arch message, not NVRTC_ERROR_INVALID_OPTION).
std::string nvrtc_target_problem(const std::string& target);

}  // namespace kqual::cuda
