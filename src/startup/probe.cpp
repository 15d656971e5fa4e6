// Child side of `kqual startup`: one fresh process, one sample. Everything here may touch CUDA;
// nothing here may write to stdout except the final JSON line (the parent parses it).
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iterator>
#include <thread>

#include "kqual/core/error.hpp"
#include "kqual/cuda/driver.hpp"
#include "kqual/cuda/library.hpp"
#include "kqual/cuda/nvrtc.hpp"
#include "kqual/startup/startup.hpp"
#include "probe_internal.hpp"

namespace kqual::startup {
namespace detail {

bool timed_driver_init(json& out, json& phases) {
  const long long t = monotonic_ns();
  const std::string reason = cuda::driver_unavailable_reason();  // dlopen + lookup + cuInit
  if (!reason.empty()) {
    out["no_gpu"] = true;
    out["error"] = reason;
    return false;
  }
  phases["driver_init"] = ms_since(t);
  return true;
}

json device_record() {
  const cuda::DriverApi& api = cuda::driver();
  json device;
  CUdevice dev{};
  if (api.cuDeviceGet(&dev, 0) != CUDA_SUCCESS) return device;
  char name[256] = {};
  if (api.cuDeviceGetName(name, sizeof name, dev) == CUDA_SUCCESS) device["name"] = name;
  int major = 0, minor = 0, drv = 0;
  api.cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
  api.cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
  api.cuDriverGetVersion(&drv);
  device["arch"] = fmt::format("sm_{}{}", major, minor);
  device["driver_version"] = drv;
  return device;
}

}  // namespace detail

namespace {

using detail::monotonic_ns;
using detail::ms_since;

std::vector<std::uint8_t> read_image(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw_error(ErrorKind::io, fmt::format("cannot read {}", path));
  std::vector<std::uint8_t> v((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // PTX must be NUL-terminated for cuModuleLoadDataEx; a trailing NUL is harmless for ELF/fatbin.
  v.push_back(0);
  return v;
}

json compile_probe(const ProbeRequest& req) {
  json out{{"ok", false}, {"kind", "compile"}};
  std::ifstream in(req.compile_source, std::ios::binary);
  if (!in) {
    out["error"] = fmt::format("cannot read {}", req.compile_source);
    return out;
  }
  cuda::NvrtcRequest r;
  r.source.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  r.source_name = req.compile_source;
  r.arch = req.arch;
  const long long t0 = monotonic_ns();
  cuda::NvrtcResult res = cuda::nvrtc_compile(r);
  out["total_ms"] = ms_since(t0);
  out["nvrtc_ms"] = res.compile_ms;
  out["image_bytes"] = res.image.size();
  out["nvrtc_version"] = fmt::format("{}.{}", res.nvrtc_major, res.nvrtc_minor);
  out["ok"] = true;
  return out;
}

json load_probe(const ProbeRequest& req, long long t_main) {
  json out{{"ok", false}, {"kind", "load"}, {"no_gpu", false}};
  json phases = json::object();
  json skipped = json::array();
  if (req.spawn_ns > 0) phases["process_start"] = double(t_main - req.spawn_ns) * 1e-6;
  const std::vector<std::uint8_t> image = read_image(req.artifact);  // outside every timed phase

  if (!detail::timed_driver_init(out, phases)) return out;
  const cuda::DriverApi& api = cuda::driver();

  long long t = monotonic_ns();
  CUdevice dev{};
  CUcontext ctx{};
  KQUAL_CU(cuDeviceGet, &dev, 0);
  KQUAL_CU(cuDevicePrimaryCtxRetain, &ctx, dev);
  KQUAL_CU(cuCtxSetCurrent, ctx);
  phases["context"] = ms_since(t);

  // CU_JIT_WALL_TIME: the driver overwrites the option's value slot with a float [ms]. The slot
  // starts as all-zero bits and is decoded afterwards; it is never a pointer the driver could write
  // through. Zero bits afterwards = the driver reported nothing (no compilation took place).
  CUjit_option opts[1] = {CU_JIT_WALL_TIME};
  void* vals[1] = {nullptr};
  CUmodule mod{};
  t = monotonic_ns();
  KQUAL_CU(cuModuleLoadDataEx, &mod, image.data(), 1u, opts, vals);
  phases["module_load"] = ms_since(t);
  {
    std::uintptr_t bits = reinterpret_cast<std::uintptr_t>(vals[0]);
    if (bits != 0) {
      std::uint32_t low = std::uint32_t(bits & 0xffffffffu);
      float ms = 0;
      std::memcpy(&ms, &low, sizeof ms);
      out["jit_wall_reported"] = true;
      phases["jit_wall"] = double(ms);
    } else {
      out["jit_wall_reported"] = false;
    }
  }
  if (api.cuModuleGetLoadingMode) {
    CUmoduleLoadingMode lm{};
    if (api.cuModuleGetLoadingMode(&lm) == CUDA_SUCCESS)
      out["loading_mode_applied"] = lm == CU_MODULE_LAZY_LOADING ? "LAZY" : "EAGER";
  }

  double kernel_first_use = phases["module_load"].get<double>();
  bool first_use_complete = false;
  if (req.kernel.empty()) {
    skipped.push_back("function_lookup: no kernel named (--kernel)");
    skipped.push_back("first_launch: no kernel named (--kernel)");
  } else {
    CUfunction f{};
    t = monotonic_ns();
    KQUAL_CU(cuModuleGetFunction, &f, mod, req.kernel.c_str());
    phases["function_lookup"] = ms_since(t);
    kernel_first_use += phases["function_lookup"].get<double>();
    // Only kernels without parameters are launched: kqual does not know what an unknown kernel's
    // pointers should point at, and a guess could corrupt memory or hang the device.
    bool has_params = true;
    std::string why;
    if (!req.launch) {
      why = "first_launch: not requested (--launch-args none launches a zero-parameter kernel)";
    } else if (!api.cuFuncGetParamInfo) {
      why = "first_launch: the driver cannot report parameters (cuFuncGetParamInfo missing), so the kernel is not launched";
    } else {
      size_t off = 0, size = 0;
      const CUresult r = api.cuFuncGetParamInfo(f, 0, &off, &size);
      has_params = r == CUDA_SUCCESS;
      if (has_params) why = "first_launch: the kernel takes parameters; only zero-parameter kernels are launched";
    }
    if (!why.empty()) {
      skipped.push_back(why);
      skipped.push_back("steady_launch: see first_launch");
    } else {
      t = monotonic_ns();
      KQUAL_CU(cuLaunchKernel, f, req.grid, 1u, 1u, req.block, 1u, 1u, 0u, nullptr, nullptr, nullptr);
      KQUAL_CU(cuCtxSynchronize);
      phases["first_launch"] = ms_since(t);
      kernel_first_use += phases["first_launch"].get<double>();
      first_use_complete = true;
      std::vector<double> steady;
      for (int i = 0; i < req.steady_launches; ++i) {
        t = monotonic_ns();
        KQUAL_CU(cuLaunchKernel, f, req.grid, 1u, 1u, req.block, 1u, 1u, 0u, nullptr, nullptr, nullptr);
        KQUAL_CU(cuCtxSynchronize);
        steady.push_back(ms_since(t));
      }
      if (!steady.empty()) {
        std::sort(steady.begin(), steady.end());
        phases["steady_launch"] = steady[steady.size() / 2];
      }
    }
  }
  phases["kernel_first_use"] = kernel_first_use;
  if (first_use_complete)
    phases["first_use"] = phases["driver_init"].get<double>() + phases["context"].get<double>() + kernel_first_use;

  // Provenance, after every timed phase.
  out["device"] = detail::device_record();
  api.cuModuleUnload(mod);
  api.cuDevicePrimaryCtxRelease(dev);
  out["phases"] = phases;
  out["skipped"] = skipped;
  out["ok"] = true;
  return out;
}

}  // namespace

json run_probe(const ProbeRequest& req) {
  const long long t_main = monotonic_ns();
  if (req.simulate == "crash") std::raise(SIGSEGV);
  if (req.simulate == "hang")
    for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
  try {
    if (!req.library.empty()) return detail::library_probe(req, t_main);
    return req.compile_source.empty() ? load_probe(req, t_main) : compile_probe(req);
  } catch (const Error& e) {
    json out{{"ok", false}, {"no_gpu", false}, {"error", fmt::format("{} error: {}", to_string(e.kind()), e.what())}};
    if (!req.library.empty()) out["mapped"] = cuda::loaded_library_files("cublas");  // which build failed
    return out;
  } catch (const std::exception& e) {
    return json{{"ok", false}, {"no_gpu", false}, {"error", fmt::format("internal error: {}", e.what())}};
  }
}

}  // namespace kqual::startup
