#include "kqual/cuda/nvrtc.hpp"

#include <fmt/format.h>
#include <nvrtc.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <string_view>

#include "kqual/core/error.hpp"

namespace kqual::cuda {
namespace {

void nvrtc_check(nvrtcResult r, const char* call, const std::string& log = {}) {
  if (r == NVRTC_SUCCESS) return;
  std::string msg = fmt::format("{} failed: {}", call, nvrtcGetErrorString(r));
  if (!log.empty()) msg += "\n--- NVRTC log ---\n" + log;
  throw_error(ErrorKind::nvrtc, msg);
}

struct ProgramDeleter {
  void operator()(nvrtcProgram* p) const {
    if (p && *p) nvrtcDestroyProgram(p);
    delete p;
  }
};

}  // namespace

std::string NvrtcResult::lowered_name(const std::string& expr) const {
  for (const auto& [e, m] : lowered)
    if (e == expr) return m;
  throw_error(ErrorKind::internal, "kernel name '" + expr + "' was not registered for lowering");
}

std::vector<int> nvrtc_supported_archs() {
  int n = 0;
  if (nvrtcGetNumSupportedArchs(&n) != NVRTC_SUCCESS || n <= 0) return {};
  std::vector<int> archs(static_cast<std::size_t>(n));
  if (nvrtcGetSupportedArchs(archs.data()) != NVRTC_SUCCESS) return {};
  return archs;
}

std::string nvrtc_target_problem(const std::string& target) {
  const std::vector<int> archs = nvrtc_supported_archs();
  std::string digits = target;
  for (const char* prefix : {"sm_", "compute_"})
    if (target.rfind(prefix, 0) == 0) digits = target.substr(std::string_view(prefix).size());
  if (!digits.empty() && (digits.back() == 'a' || digits.back() == 'f')) digits.pop_back();
  const bool numeric = digits != target && digits.size() >= 2 && digits.size() <= 3 &&
                       digits.find_first_not_of("0123456789") == std::string::npos;
  if (numeric && (archs.empty() || std::find(archs.begin(), archs.end(), std::stoi(digits)) != archs.end())) return {};
  std::string known;
  for (int a : archs) known += fmt::format("{}{}", known.empty() ? "" : ", ", a);
  return fmt::format("'{}' is not a target NVRTC {} compiles for: write sm_XX for native SASS (e.g. sm_90, sm_90a) or "
                     "compute_XX for PTX the driver compiles at load (e.g. compute_90), XX one of {}",
                     target, nvrtc_version(), known.empty() ? std::string("its supported architectures") : known);
}

std::string nvrtc_version() {
  int major = 0, minor = 0;
  nvrtcVersion(&major, &minor);
  return fmt::format("{}.{}", major, minor);
}

NvrtcResult nvrtc_compile(const NvrtcRequest& req) {
  if (const std::string problem = nvrtc_target_problem(req.arch); !problem.empty()) throw_error(ErrorKind::usage, problem);
  NvrtcResult res;
  nvrtcVersion(&res.nvrtc_major, &res.nvrtc_minor);
  std::unique_ptr<nvrtcProgram, ProgramDeleter> prog(new nvrtcProgram{});
  nvrtc_check(nvrtcCreateProgram(prog.get(), req.source.c_str(), req.source_name.c_str(), 0, nullptr, nullptr),
              "nvrtcCreateProgram");
  for (const auto& e : req.name_expressions) nvrtc_check(nvrtcAddNameExpression(*prog, e.c_str()), "nvrtcAddNameExpression");

  res.options_used.push_back("--gpu-architecture=" + req.arch);
  res.options_used.push_back("-std=c++17");
  for (const auto& d : req.include_dirs) res.options_used.push_back("-I" + d);
  res.options_used.push_back(std::string("-I") + KQUAL_CUDA_INCLUDE_DIR);
  for (const auto& o : req.options) res.options_used.push_back(o);
  std::vector<const char*> argv;
  for (const auto& o : res.options_used) argv.push_back(o.c_str());

  auto t0 = std::chrono::steady_clock::now();
  nvrtcResult cr = nvrtcCompileProgram(*prog, int(argv.size()), argv.data());
  res.compile_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::size_t log_size = 0;
  nvrtcGetProgramLogSize(*prog, &log_size);
  if (log_size > 1) {
    res.log.resize(log_size);
    nvrtcGetProgramLog(*prog, res.log.data());
    res.log.resize(log_size - 1);
  }
  if (cr != NVRTC_SUCCESS)
    nvrtc_check(cr, fmt::format("nvrtcCompileProgram({}, {})", req.source_name, req.arch).c_str(), res.log);

  for (const auto& e : req.name_expressions) {
    const char* lowered = nullptr;
    nvrtc_check(nvrtcGetLoweredName(*prog, e.c_str(), &lowered), "nvrtcGetLoweredName");
    res.lowered.emplace_back(e, lowered);
  }
  res.is_cubin = req.arch.rfind("sm_", 0) == 0;
  std::size_t ptx_size = 0;
  if (nvrtcGetPTXSize(*prog, &ptx_size) == NVRTC_SUCCESS && ptx_size > 1) {
    res.ptx.resize(ptx_size);
    nvrtc_check(nvrtcGetPTX(*prog, res.ptx.data()), "nvrtcGetPTX");
    res.ptx.resize(ptx_size - 1);
  }
  if (res.is_cubin) {
    std::size_t n = 0;
    nvrtc_check(nvrtcGetCUBINSize(*prog, &n), "nvrtcGetCUBINSize");
    res.image.resize(n);
    nvrtc_check(nvrtcGetCUBIN(*prog, reinterpret_cast<char*>(res.image.data())), "nvrtcGetCUBIN");
  } else {
    res.image.assign(res.ptx.begin(), res.ptx.end());
    res.image.push_back(0);
  }
  return res;
}

}  // namespace kqual::cuda
