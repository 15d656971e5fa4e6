// The one place that decides how a reference runs: on the CPU in this process (built-in
// contracts), in the run's Python reference process (declared contracts: the session's
// ReferenceHost), or as the fp64 GPU reference in the session's reference worker (never a
// candidate's) when the contract prefers it for the case's size and a device is present.
#include "kqual/check/evaluate.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <set>

#include "internal.hpp"
#include "kqual/contract/reference_host.hpp"
#include "kqual/core/error.hpp"
#include "kqual/core/files.hpp"
#include "kqual/core/sha256.hpp"
#include "kqual/cuda/nvrtc.hpp"
#include "kqual/worker/protocol.hpp"

namespace kqual::check {
namespace fs = std::filesystem;

namespace detail {

std::string reference_module(Session& s, const std::string& source, const std::string& name) {
  const DeviceFacts& dev = s.device();
  if (!dev.present) throw_error(ErrorKind::cuda, "the GPU reference needs a GPU: " + dev.why_absent);
  // Compiled once per source and arch, cached in the session's scratch directory.
  std::string key = sha256_hex(source + dev.arch).substr(0, 16);
  fs::path dir = s.scratch() / "reference";
  fs::create_directories(dir);
  fs::path module = dir / (key + ".cubin");
  if (!fs::exists(module)) {
    cuda::NvrtcRequest req;
    req.source = source;
    req.source_name = name + "_reference.cu";
    req.arch = dev.arch;
    cuda::NvrtcResult r = cuda::nvrtc_compile(req);
    write_file_atomic(module, std::string(r.image.begin(), r.image.end()));
  }
  return module.string();
}

std::vector<worker::Launch> worker_launches(const contract::GpuReference& g) {
  std::vector<worker::Launch> out;
  for (const auto& l : g.launches) {
    worker::Launch wl;
    wl.kernel = l.kernel;
    for (std::size_t i = 0; i < 3; ++i) {
      wl.grid[i] = l.grid[i];
      wl.block[i] = l.block[i];
    }
    wl.shared = l.shared;
    for (const auto& a : l.args)
      wl.args.push_back(!a.tensor.empty() ? worker::Arg::pointer(a.tensor) : worker::Arg::value(a.scalar, a.scalar_bytes));
    out.push_back(std::move(wl));
  }
  return out;
}

}  // namespace detail

std::vector<contract::Tensor> gpu_reference(Session& s, const contract::Contract& c, const contract::CaseData& data) {
  std::optional<contract::GpuReference> g = c.gpu_reference(data);
  if (!g) throw_error(ErrorKind::internal, fmt::format("contract {} has no GPU reference", c.name()));
  const fs::path dir = s.scratch() / "reference";
  worker::RunRequest request;
  request.module = detail::reference_module(s, g->source, c.name());
  request.poison = {0xFF, 0xFF};
  for (const auto& t : data.inputs) {
    fs::path f = dir / (t.name + ".in");
    write_file(f, t.bytes.data(), t.bytes.size());
    request.buffers.push_back({t.name, worker::BufferKind::input, t.bytes.size(), 0, f.string()});
  }
  for (const auto& t : g->raw_outputs) {
    std::size_t bytes = std::size_t(t.elements) * dtype_size(t.dtype);
    request.buffers.push_back({t.name, worker::BufferKind::output, bytes, 0, ""});
    request.out_files[t.name] = {(dir / (t.name + ".ref0")).string(), (dir / (t.name + ".ref1")).string()};
  }
  request.launches = detail::worker_launches(*g);
  auto r = worker::call(s.reference_worker(), request);
  auto cleanup = [&] {
    for (const auto& t : data.inputs) fs::remove(dir / (t.name + ".in"));
    for (const auto& t : g->raw_outputs) {
      fs::remove(dir / (t.name + ".ref0"));
      fs::remove(dir / (t.name + ".ref1"));
    }
  };
  if (!r.ok()) {
    cleanup();
    throw_error(ErrorKind::cuda, fmt::format("the fp64 GPU reference of {} failed: {}", c.name(), r.raw.reason));
  }
  std::vector<contract::Tensor> raw = g->raw_outputs;
  for (auto& t : raw) {
    MappedFile f = MappedFile::open_read(request.out_files.at(t.name).at(0));
    t.bytes.assign(f.data(), f.data() + f.size());
  }
  cleanup();
  return c.reference_from_gpu(data, raw);
}

contract::ReferenceHost& reference_host(Session& s) {
  worker::RunShared& run = s.run_shared();
  std::lock_guard<std::mutex> lock(run.mu);
  if (!run.references) run.references = std::make_shared<contract::ReferenceHost>();
  return *std::static_pointer_cast<contract::ReferenceHost>(run.references);
}

std::vector<contract::Tensor> compute_reference(Session& s, const contract::Contract& c, const contract::CaseData& data,
                                                std::string* which) {
  if (c.prefers_gpu_reference(data.dims) && s.options().use_gpu && s.device().present) {
    if (which) *which = "gpu-fp64";
    return gpu_reference(s, c, data);
  }
  if (which) *which = "cpu";
  return c.reference(data, reference_host(s));
}

namespace detail {

std::vector<contract::Tensor> window_reference(Session& s, const contract::Contract& c, const contract::CaseSpec& big,
                                               const contract::OutputWindow& w) {
  return c.window_reference(big, w, reference_host(s));
}

}  // namespace detail

}  // namespace kqual::check
