// Cases past 2^31 / 2^32 elements: inputs generated on the device, outputs checked in windows.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <set>
#include <utility>

#include "internal.hpp"
#include "kqual/check/labels.hpp"
#include "kqual/core/error.hpp"
#include "kqual/core/files.hpp"
#include "kqual/core/sha256.hpp"
#include "kqual/cuda/nvrtc.hpp"
#include "kqual/worker/protocol.hpp"

namespace kqual::check {
namespace fs = std::filesystem;

namespace detail {

// The generator module (contract/generated.hpp's kqual_generate) for this device, compiled once per
// session and kept in its scratch folder.
std::string generator_module(Session& s) {
  const fs::path dir = s.scratch() / "reference";
  fs::create_directories(dir);
  const fs::path module = dir / fmt::format("generator-{}.cubin", s.device().arch);
  if (!fs::exists(module)) {
    cuda::NvrtcRequest req;
    req.source = contract::generated_kernel_source();
    req.source_name = "kqual_generate.cu";
    req.arch = s.device().arch;
    cuda::NvrtcResult r = cuda::nvrtc_compile(req);
    write_file_atomic(module, std::string(r.image.begin(), r.image.end()));
  }
  return module.string();
}

std::string device_too_small(Session& s, const contract::Contract& c, const contract::CaseSpec& spec, const ResolvedPlan& plan) {
  const DeviceFacts& dev = s.device();
  std::size_t need = 0;
  for (const auto& t : c.tensors())
    need += std::size_t(c.tensor_elements(t.name, spec.dims)) * dtype_size(c.tensor_dtype(t.name, spec.dtype)) + 8192;
  for (const auto& sc : plan.scratch) need += sc.bytes + 8192;
  const std::size_t have = dev.device.value("total_memory_bytes", std::size_t(0));
  if (!have || double(need) <= 0.92 * double(have)) return "";
  return fmt::format("needs {:.1f} GiB of device memory; the {} has {:.1f} GiB: not run (the case is not checked on this device)",
                     double(need) / (1 << 30), dev.device.value("name", std::string("device")), double(have) / (1 << 30));
}

// The worker buffers of a generated case: inputs generated (stream = position among the inputs),
// outputs hashed per chunk (or read back in windows when `windows` names them).
std::vector<worker::Buffer> generated_buffers(const contract::Contract& c, const contract::CaseSpec& spec,
                                              const std::vector<contract::Tensor>* outputs,
                                              const std::map<std::string, std::vector<std::pair<std::uint64_t, std::uint64_t>>>* windows) {
  std::vector<worker::Buffer> out;
  int stream = 0;
  for (const auto& t : c.tensors()) {
    if (t.role != contract::Role::input) continue;
    const DType dt = c.tensor_dtype(t.name, spec.dtype);
    worker::Buffer buf(t.name, worker::BufferKind::input, std::size_t(c.tensor_elements(t.name, spec.dims)) * dtype_size(dt));
    buf.gen_stream = stream++;
    buf.gen_seed = spec.seed;
    buf.gen_dtype = contract::generated_dtype_code(dt);
    out.push_back(buf);
  }
  auto add_output = [&](const std::string& name, DType dt, std::int64_t elements) {
    worker::Buffer buf(name, worker::BufferKind::output, std::size_t(elements) * dtype_size(dt));
    buf.elem_bytes = dtype_size(dt);
    if (windows && windows->count(name)) buf.windows = windows->at(name);
    else buf.chunk_elements = kChunkElements;
    out.push_back(buf);
  };
  if (outputs) {
    for (const auto& t : *outputs) add_output(t.name, t.dtype, t.elements);
  } else {
    for (const auto& t : c.tensors())
      if (t.role == contract::Role::output)
        add_output(t.name, c.tensor_dtype(t.name, spec.dtype), c.tensor_elements(t.name, spec.dims));
  }
  return out;
}

worker::RunRequest generated_request(Session& s, const BuiltCandidate& b, const ResolvedPlan& plan, std::vector<worker::Buffer> buffers) {
  worker::RunRequest request;
  request.module = b.image_path.string();
  request.launches = plan.launches;
  request.poison = {0xFF, 0x7F};
  // Run 2's poison must be finite in the outputs' dtype (second_poison_byte); only the widths are
  // known here, and 0x7B.. is finite in every float dtype, bf16 and f32 included.
  for (const auto& buf : buffers)
    if (buf.kind == worker::BufferKind::output && buf.elem_bytes > 0 && buf.elem_bytes < 4) request.poison[1] = 0x7B;
  request.placements = {"guarded", "guarded"};
  request.generator_module = generator_module(s);
  request.buffers = std::move(buffers);
  for (const auto& sc : plan.scratch) request.buffers.push_back(sc);
  return request;
}

std::optional<ResolvedPlan> admit_generated(Session& s, const BuiltCandidate& b, const contract::Contract& c,
                                            const contract::CaseSpec& spec, std::string reference, CaseResult& res) {
  res.spec = spec;
  res.reference = std::move(reference);
  std::optional<ResolvedPlan> admitted = admit_case(s, b, c, spec, res);
  if (!admitted) return std::nullopt;
  if (std::string why = device_too_small(s, c, spec, *admitted); !why.empty()) {
    res.status = CaseStatus::skipped;
    res.code = "device_too_small";
    res.detail = why;
    return std::nullopt;
  }
  return admitted;
}

bool generated_runs_clean(const worker::Answer<worker::RunReply>& r, CaseResult& res) {
  if (!r.ok()) {
    res.code = fault_code(r.raw);
    res.detail = fault_detail(r.raw);
    res.debug = fault_debug(r.raw);
    return false;
  }
  for (const auto& run : r.reply->runs) {
    if (!run.guard_violations.empty()) {
      res.code = "out_of_bounds_write";
      res.detail = worker::describe(run.guard_violations.front());
      return false;
    }
    for (const auto& in : run.inputs)
      if (in.hash_before != in.hash_after) {
        res.code = "input_mutated";
        res.detail = fmt::format("input '{}' changed during the launch (device hash {} -> {})", in.name, in.hash_before, in.hash_after);
        return false;
      }
  }
  return true;
}

ReadBackWindow read_back_window(Session& s, const contract::Contract& c, const contract::CaseSpec& spec, const contract::OutputWindow& w,
                                const worker::RunRequest& request, std::map<std::string, std::size_t>& next_at) {
  ReadBackWindow out;
  const std::vector<contract::Tensor> exp = window_reference(s, c, spec, w);
  auto it = std::find_if(exp.begin(), exp.end(), [&](const contract::Tensor& t) { return t.name == w.tensor; });
  if (it == exp.end()) throw_error(ErrorKind::internal, fmt::format("window {}: the reference has no '{}'", w.why, w.tensor));
  out.expected = *it;
  const std::size_t at = next_at[w.tensor], size = out.expected.bytes.size();
  next_at[w.tensor] += size;
  for (std::size_t k = 0; k < request.poison.size(); ++k) {
    MappedFile f = MappedFile::open_read(request.out_files.at(w.tensor).at(k));
    if (at + size > f.size()) throw_error(ErrorKind::internal, "window file shorter than its windows");
    contract::Comparison cmp = c.compare(out.expected, f.data() + at, request.poison[k]);
    if (!cmp.ok) {
      out.rejected_run = k;
      out.rejection = std::move(cmp);
      break;
    }
    out.runs.emplace_back(f.data() + at, f.data() + at + size);
  }
  return out;
}

// A case past 2^31 elements: inputs generated on the device, the whole output scanned for poison,
// windows of it compared with the contract's reference on the sub-case they depend on.
CaseResult run_generated_case(Session& s, const BuiltCandidate& b, const contract::Contract& c, const contract::CaseSpec& spec,
                              double timeout_s) {
  CaseResult res;
  std::optional<ResolvedPlan> admitted = admit_generated(s, b, c, spec, "cpu (windows)", res);
  if (!admitted) return res;
  const ResolvedPlan& plan = *admitted;
  const std::vector<contract::OutputWindow> windows = c.index_case_windows(spec);
  fs::path dir = s.scratch() / "case-generated";
  fs::create_directories(dir);
  std::map<std::string, std::vector<std::pair<std::uint64_t, std::uint64_t>>> out_windows;
  for (const auto& w : windows) out_windows[w.tensor].push_back({std::uint64_t(w.begin), std::uint64_t(w.count)});
  for (auto& [name, ws] : out_windows) std::sort(ws.begin(), ws.end());  // the order the comparison reads them back in
  worker::RunRequest request = generated_request(s, b, plan, generated_buffers(c, spec, nullptr, &out_windows));
  for (const auto& [name, ws] : out_windows)
    request.out_files[name] = {(dir / (name + ".win0")).string(), (dir / (name + ".win1")).string()};
  auto cleanup = [&] {
    std::error_code ec;
    fs::remove_all(dir, ec);
  };
  res.status = CaseStatus::fail;
  auto r = worker::call(s.worker(), request, timeout_s);
  if (!generated_runs_clean(r, res)) {
    cleanup();
    return res;
  }
  // Elements still holding the poison: unwritten when the same element holds it after both runs
  // (a computed value can equal one pattern by chance, not both: integer outputs take every value).
  {
    const auto& runs = r.reply->runs;
    for (std::size_t k = 0; runs.size() == 2 && k < runs[0].poison_scans.size() && k < runs[1].poison_scans.size(); ++k) {
      const auto& a = runs[0].poison_scans[k];
      const auto& bb = runs[1].poison_scans[k];
      if (a.poisoned && bb.poisoned && a.first == bb.first) {
        res.code = "unwritten_output";
        res.detail = fmt::format("element {} of '{}' still holds the poison after both runs (0x{:02x}: {} element(s), 0x{:02x}: {})",
                                 a.first, a.name, runs[0].poison, a.poisoned, runs[1].poison, bb.poisoned);
        cleanup();
        return res;
      }
    }
  }
  res.kernel_ms = r.reply->runs.empty() ? 0.0 : r.reply->runs.front().kernel_ms;
  RunToRun r2r;  // the two runs' difference over every window, judged after all windows were compared
  r2r.policy = run_to_run_policy(c, b.manifest.supports, spec.dtype);
  // Windows, in the order the worker concatenated them (sorted by start per tensor).
  std::map<std::string, std::size_t> next_at;
  std::vector<contract::OutputWindow> sorted = windows;
  std::stable_sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& bb) { return a.begin < bb.begin; });
  for (const auto& w : sorted) {
    const ReadBackWindow got = read_back_window(s, c, spec, w, request, next_at);
    if (got.rejected_run) {
      const std::size_t k = *got.rejected_run;
      res.code = got.rejection.code;
      res.detail = fmt::format("run {} (poison 0x{:02x}), window {} (element offsets relative to element {}): {}", k + 1,
                               request.poison[k], w.why, w.begin, got.rejection.detail);
      cleanup();
      return res;
    }
    if (got.runs.size() == 2 && !same_bytes(got.expected, got.runs[0].data(), got.runs[1].data())) {
      // Measured against the window's bounds; windows of one output fold into one difference.
      OutputDifference d = measure_difference(got.expected, got.runs[0].data(), got.runs[1].data());
      d.worst_index += d.worst_index >= 0 ? w.begin : 0;
      auto o = std::find_if(r2r.outputs.begin(), r2r.outputs.end(), [&](const OutputDifference& x) { return x.name == d.name; });
      if (o == r2r.outputs.end()) r2r.outputs.push_back(d);
      else o->merge(d);
    }
  }
  cleanup();
  res.status = CaseStatus::pass;
  if (r2r.differs()) {
    res.run_to_run = r2r.to_json();
    if (r2r.rejects()) {
      res.status = CaseStatus::fail;
      res.code = "nondeterministic";
      res.detail = r2r.rejection() + " (in the windows read back)";
    } else {
      res.note = r2r.note() + " (in the windows read back)";
    }
  }
  return res;
}

}  // namespace detail
}  // namespace kqual::check
