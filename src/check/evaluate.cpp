#include "kqual/check/evaluate.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <deque>
#include <memory>
#include <mutex>
#include <unistd.h>
#include <chrono>
#include <cstring>
#include <set>

#include "kqual/contract/compare.hpp"
#include "kqual/core/error.hpp"
#include "kqual/core/files.hpp"
#include "kqual/core/sha256.hpp"
#include "kqual/cuda/library.hpp"
#include "kqual/cuda/nvrtc.hpp"
#include "kqual/worker/protocol.hpp"
#include "kqual/worker/sanitizer.hpp"

namespace kqual::check {
using build::BuiltCandidate;
using worker::DeviceFacts;
using worker::Session;
using worker::WorkerReply;
namespace fs = std::filesystem;

std::string CorrectnessReport::primary_code() const {
  std::string best;
  int n = 0;
  for (const auto& [c, k] : failure_codes)
    if (k > n) { best = c; n = k; }
  return best;
}

json CorrectnessReport::to_json(bool all_cases) const {
  json codes = json::object();
  for (const auto& [c, k] : failure_codes) codes[c] = k;
  json cs = json::array();
  for (const auto& r : results) {
    if (!all_cases && r.status == "pass") continue;
    cs.push_back({{"id", r.spec.id}, {"status", r.status}, {"code", r.code}, {"detail", r.detail}, {"dims", r.spec.dims},
                  {"dtype", to_string(r.spec.dtype)}, {"family", r.spec.family}, {"offset_elements", r.spec.offset_elements},
                  {"seed", r.spec.seed}, {"reference", r.reference}, {"wall_ms", r.wall_ms}});
    if (!r.degenerate.empty()) cs.back()["degenerate"] = r.degenerate;
  }
  std::vector<const CaseResult*> by_time;
  for (const auto& r : results) by_time.push_back(&r);
  std::sort(by_time.begin(), by_time.end(), [](auto* a, auto* b) { return a->wall_ms > b->wall_ms; });
  json slowest = json::array();
  for (std::size_t i = 0; i < std::min<std::size_t>(3, by_time.size()); ++i)
    slowest.push_back({{"id", by_time[i]->spec.id}, {"wall_ms", by_time[i]->wall_ms}});
  return json{{"candidate", candidate},
              {"verdict", accepted() ? "accepted" : "rejected"},
              {"slowest_cases", slowest},
              {"primary_reason", primary_code()},
              {"cases", cases},
              {"passed", passed},
              {"evidence", evidence},
              {"skipped", skipped},
              {"wall_ms", wall_ms},
              {"failed", failed},
              {"refused", refused},
              {"failure_codes", codes},
              {"sanitizer", sanitizer.is_null() ? json{{"status", "not_run"}, {"why", "not asked for"}} : sanitizer},
              {all_cases ? "case_results" : "failing_cases", cs}};
}

std::string verify_output_file(const contract::Contract& c, const contract::Tensor& expected, const fs::path& file,
                               std::uint8_t poison, std::string* code) {
  MappedFile out = MappedFile::open_read(file);
  if (out.size() != expected.bytes.size()) {
    *code = "internal";
    return fmt::format("output file has {} bytes, expected {}", out.size(), expected.bytes.size());
  }
  contract::Comparison cmp = c.compare(expected, out.data(), poison);
  *code = cmp.code;
  return cmp.ok ? "" : cmp.detail;
}

namespace {

std::string fault_code(const WorkerReply& r) {
  switch (r.status) {
    case WorkerReply::Status::crashed: return "crash";
    case WorkerReply::Status::hung: return "hang";
    case WorkerReply::Status::sticky_error: return "device_fault";
    case WorkerReply::Status::protocol_error: return "worker_protocol";
    case WorkerReply::Status::error: return "launch_error";
    case WorkerReply::Status::ok: return "";
  }
  return "?";
}

}  // namespace

std::vector<contract::Tensor> gpu_reference(Session& s, const contract::Contract& c, const contract::CaseData& data) {
  std::optional<contract::GpuReference> g = c.gpu_reference(data);
  if (!g) throw_error(ErrorKind::internal, fmt::format("contract {} has no GPU reference", c.name()));
  const DeviceFacts& dev = s.device();
  if (!dev.present) throw_error(ErrorKind::cuda, "the GPU reference needs a GPU: " + dev.why_absent);
  // Compiled once per source and arch, cached in the session's scratch directory.
  std::string key = sha256_hex(g->source + dev.arch).substr(0, 16);
  fs::path dir = s.scratch() / "reference";
  fs::create_directories(dir);
  fs::path module = dir / (key + ".cubin");
  if (!fs::exists(module)) {
    cuda::NvrtcRequest req;
    req.source = g->source;
    req.source_name = c.name() + "_reference.cu";
    req.arch = dev.arch;
    cuda::NvrtcResult r = cuda::nvrtc_compile(req);
    write_file_atomic(module, std::string(r.image.begin(), r.image.end()));
  }
  worker::RunRequest request;
  request.module = module.string();
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
  for (const auto& l : g->launches) {
    worker::Launch wl;
    wl.kernel = l.kernel;
    for (std::size_t i = 0; i < 3; ++i) {
      wl.grid[i] = l.grid[i];
      wl.block[i] = l.block[i];
    }
    wl.shared = l.shared;
    for (const auto& a : l.args)
      wl.args.push_back(!a.tensor.empty() ? worker::Arg::pointer(a.tensor) : worker::Arg::value(a.scalar, a.scalar_bytes));
    request.launches.push_back(std::move(wl));
  }
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

std::vector<contract::Tensor> compute_reference(Session& s, const contract::Contract& c, const contract::CaseData& data,
                                                std::string* which) {
  if (c.prefers_gpu_reference(data.dims) && s.options().use_gpu && s.device().present) {
    if (which) *which = "gpu-fp64";
    return gpu_reference(s, c, data);
  }
  if (which) *which = "cpu";
  return c.reference(data);
}

namespace {

// Inputs and expected outputs of recent cases, shared by every implementation checked in this
// process (selftest and qualify check many implementations on the same cases: generating the data
// and the reference once saves most of the CPU time). Bounded in bytes, oldest evicted first.
class CaseCache {
 public:
  std::shared_ptr<const PreparedCase> find(const std::string& key) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = map_.find(key);
    return it == map_.end() ? nullptr : it->second;
  }
  void put(const std::string& key, std::shared_ptr<const PreparedCase> v, std::size_t bytes) {
    std::lock_guard<std::mutex> lock(mu_);
    if (bytes > limit() || map_.count(key)) return;  // another thread prepared the same case first
    while (!order_.empty() && used_ + bytes > limit()) {
      auto& [k, b] = order_.front();
      map_.erase(k);
      used_ -= b;
      order_.pop_front();
    }
    map_[key] = std::move(v);
    order_.emplace_back(key, bytes);
    used_ += bytes;
  }

 private:
  static std::size_t limit() {
    static const std::size_t l = [] {
      if (const char* e = std::getenv("KQUAL_CASE_CACHE_MB")) return std::size_t(std::strtoull(e, nullptr, 10)) << 20;
      // A quarter of physical memory, at most 8 GiB.
      long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
      std::size_t phys = pages > 0 && page > 0 ? std::size_t(pages) * std::size_t(page) : 0;
      return std::min<std::size_t>(phys / 4, std::size_t(8) << 30);
    }();
    return l;
  }
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<const PreparedCase>> map_;
  std::deque<std::pair<std::string, std::size_t>> order_;
  std::size_t used_ = 0;
};

CaseCache& case_cache() {
  static CaseCache c;
  return c;
}

}  // namespace

std::shared_ptr<const PreparedCase> prepare_case(Session& s, const contract::Contract& c, const contract::CaseSpec& spec) {
  std::string key = fmt::format("{}|{}|{}|{}|{}|{}", c.name(), spec.id, to_string(spec.dtype), contract::format_dims(spec.dims),
                                spec.family, spec.seed);
  if (auto hit = case_cache().find(key)) return hit;
  auto p = std::make_shared<PreparedCase>();
  p->data = c.make_case(spec);
  p->expected = compute_reference(s, c, p->data, &p->reference);
  std::vector<std::string> why;
  for (const auto& t : p->expected) {
    std::string d = contract::degenerate_reason(t);
    if (d.empty()) {
      why.clear();
      break;
    }
    why.push_back(d);
  }
  if (!why.empty()) p->degenerate = fmt::format("{}", fmt::join(why, "; "));
  std::size_t bytes = 0;
  for (const auto& t : p->data.inputs) bytes += t.bytes.size();
  for (const auto& t : p->expected) bytes += t.bytes.size() + 8 * (t.ref.size() + t.bound.size());
  case_cache().put(key, p, bytes);
  return p;
}

namespace {

// What one worker request says about a case: "" when every run was right; otherwise res.code and
// res.detail are set.
bool judge_runs(const contract::Contract& c, const worker::Answer<worker::RunReply>& r, const worker::RunRequest& request,
                const std::vector<contract::Tensor>& expected, CaseResult& res) {
  if (!r.ok()) {
    res.code = fault_code(r.raw);
    res.detail = r.raw.reason;
    return false;
  }
  const std::vector<worker::RunResult>& runs = r.reply->runs;
  res.kernel_ms = runs.empty() ? 0.0 : runs.front().kernel_ms;
  for (const auto& run : runs) {
    if (!run.guard_violations.empty()) {
      res.code = "out_of_bounds_write";
      res.detail = worker::describe(run.guard_violations.front());
      return false;
    }
    for (const auto& in : run.inputs) {
      if (in.first_changed_byte >= 0) {
        res.code = "input_mutated";
        res.detail = fmt::format("input '{}' changed during the launch (hash {} -> {}), first at byte {}", in.name,
                                 in.hash_before, in.hash_after, in.first_changed_byte);
        return false;
      }
    }
  }
  for (const auto& t : expected) {
    const auto& files = request.out_files.at(t.name);
    for (std::size_t k = 0; k < files.size(); ++k) {
      std::string code;
      std::string detail = verify_output_file(c, t, files[k], request.poison[k], &code);
      if (!detail.empty()) {
        res.code = code;
        res.detail = fmt::format("run {} (poison 0x{:02x}): {}", k + 1, request.poison[k], detail);
        return false;
      }
    }
    // Every run correct: they must also agree bitwise (unless the contract allows otherwise).
    if (!c.deterministic() || files.size() < 2) continue;
    MappedFile a = MappedFile::open_read(files.at(0));
    MappedFile bb = MappedFile::open_read(files.at(1));
    if (std::memcmp(a.data(), bb.data(), a.size()) != 0) {
      std::size_t i = 0;
      while (a.data()[i] == bb.data()[i]) ++i;
      res.code = "nondeterministic";
      res.detail = fmt::format("output '{}' differs between two runs on the same inputs at byte {}", t.name, i);
      return false;
    }
  }
  return true;
}

bool is_fault(const std::string& code) { return code == "crash" || code == "device_fault" || code == "launch_error"; }
bool is_value_failure(const std::string& code) {
  return code == "wrong_result" || code == "nondeterministic" || code == "nan_policy" || code == "unwritten_output";
}

}  // namespace

namespace {

// The candidate's claims and its launch plan admit the case: the resolved plan, or nullopt with
// res refused (the contract's refusal code, or launch_plan).
std::optional<ResolvedPlan> admit_case(Session& s, const BuiltCandidate& b, const contract::Contract& c,
                                       const contract::CaseSpec& spec, CaseResult& res) {
  const contract::Request req = c.request(spec.dtype, spec.dims, spec.offset_elements);
  if (auto refusal = c.validate(req, b.manifest.supports)) {
    res.status = "refused";
    res.code = refusal->code;
    res.detail = refusal->reason;
    return std::nullopt;
  }
  ResolvedPlan plan = resolve_plan(b, spec.dtype, spec.dims, s.device());
  if (!plan.refusal.empty()) {
    res.status = "refused";
    res.code = "launch_plan";
    res.detail = plan.refusal;
    return std::nullopt;
  }
  return plan;
}

// How a case is run: the default (inputs against unmapped pages, shared memory scribbled, failures
// diagnosed), or the sanitizer pass's (one run, every buffer its own exact-size allocation).
struct RunStyle {
  bool traps = true;
  bool scribble = true;
  bool diagnose = true;
  int* diagnoses_left = nullptr;  // shared by a candidate's cases: failures diagnosed at most this often
  std::size_t guard_bytes = 4096;
  int runs = 2;
};

CaseResult run_case_styled(Session& s, const BuiltCandidate& b, const contract::Contract& c, const contract::CaseSpec& spec,
                           const RunStyle& style) {
  CaseResult res;
  res.spec = spec;
  std::optional<ResolvedPlan> admitted = admit_case(s, b, c, spec, res);
  if (!admitted) return res;
  const ResolvedPlan& plan = *admitted;
  std::shared_ptr<const PreparedCase> prepared = prepare_case(s, c, spec);
  const contract::CaseData& data = prepared->data;
  const std::vector<contract::Tensor>& expected = prepared->expected;
  res.reference = prepared->reference;
  res.degenerate = prepared->degenerate;
  fs::path dir = s.scratch() / "case";
  fs::create_directories(dir);
  auto offset_of = [&](const contract::Tensor& t) { return std::size_t(spec.offset_elements) * dtype_size(t.dtype); };
  // Two runs. Run 1: outputs poisoned with 0xFF (f32/bf16 NaN), each input's last byte at the end of
  // a mapping whose next page is unmapped (up to its claimed alignment less one byte earlier), every
  // SM's shared memory filled with 0xA5. Run 2: poison 0x7F (a large finite value), each input's
  // first byte at the start of a mapping after an unmapped page, shared memory 0x5A. Reads past an
  // input fault; outputs keep guard regions, which see writes.
  worker::RunRequest request;
  request.module = b.image_path.string();
  request.launches = plan.launches;
  request.poison = {0xFF, 0x7F};
  request.placements = {"trap_after", "trap_before"};
  request.scribble = {0xA5, 0x5A};
  request.guard_bytes = style.guard_bytes;
  if (!style.traps) request.placements = {"guarded", "guarded"};
  if (!style.scribble) request.scribble.clear();
  if (style.runs == 1) {
    request.poison.resize(1);
    request.placements.resize(1);
    if (!request.scribble.empty()) request.scribble.resize(1);
  }
  const std::size_t claimed_align = std::size_t(std::max<std::int64_t>(b.manifest.supports.min_alignment_bytes, 1));
  for (const auto& t : data.inputs) {
    fs::path f = dir / (t.name + ".in");
    write_file(f, t.bytes.data(), t.bytes.size());
    worker::Buffer buf{t.name, worker::BufferKind::input, t.bytes.size(), offset_of(t), f.string()};
    buf.align = std::max(claimed_align, dtype_size(t.dtype));
    request.buffers.push_back(buf);
  }
  for (const auto& t : expected) {
    request.buffers.push_back({t.name, worker::BufferKind::output, t.bytes.size(), offset_of(t), ""});
    request.out_files[t.name] = {(dir / (t.name + ".out0")).string(), (dir / (t.name + ".out1")).string()};
    request.out_files[t.name].resize(request.poison.size());
  }
  for (const auto& sc : plan.scratch) request.buffers.push_back(sc);
  auto cleanup = [&] {
    std::error_code ec;
    fs::remove_all(dir, ec);
  };
  res.status = "fail";
  if (judge_runs(c, worker::call(s.worker(), request), request, expected, res)) {
    cleanup();
    res.status = "pass";
    return res;
  }
  // Both runs right but not the same bytes: the two placements put the inputs at different
  // alignments (mod 256), and a kernel may sum in another order on another path (vector loads when
  // aligned). Run the first placement again: a deterministic kernel repeats its own bytes.
  if (res.code == "nondeterministic" && request.poison.size() == 2 && request.placements.size() == 2 &&
      request.placements[0] != request.placements[1]) {
    worker::RunRequest again = request;
    again.placements = {request.placements[0], request.placements[0]};
    if (!again.scribble.empty()) again.scribble = {request.scribble[0], request.scribble[1]};
    CaseResult a;
    if (judge_runs(c, worker::call(s.worker(), again), again, expected, a)) {
      cleanup();
      res = CaseResult{};
      res.spec = spec;
      res.reference = prepared->reference;
      res.degenerate = prepared->degenerate;
      res.status = "pass";
      return res;
    }
  }
  // A failure is diagnosed when the case is small enough for a few more runs to be cheap.
  std::int64_t elements = 0;
  for (const auto& t : data.inputs) elements += t.elements;
  if (!style.diagnose || elements > (std::int64_t(1) << 24) || (style.diagnoses_left && *style.diagnoses_left <= 0)) {
    cleanup();
    return res;
  }
  if (style.diagnoses_left) --*style.diagnoses_left;
  if (is_fault(res.code)) {
    // A fault with inputs against unmapped pages: does the same case run with guarded inputs?
    worker::RunRequest guarded = request;
    guarded.placements = {"guarded", "guarded"};
    CaseResult g;
    const bool guarded_ok = judge_runs(c, worker::call(s.worker(), guarded), guarded, expected, g);
    if (!guarded_ok && !is_fault(g.code) && g.code != "hang") {
      // Wrong in the guarded placement too (e.g. a write past an output): that is the finding; the
      // fault says it also reads past an input.
      res.code = g.code;
      res.detail = g.detail + "; it also reads outside an input (it faults when the inputs lie against unmapped pages)";
    } else if (!is_fault(g.code)) {
      // Then an input is read outside its bounds: find which input and which side.
      std::string found;
      for (const auto& t : data.inputs) {
        for (const char* side : {"trap_after", "trap_before"}) {
          worker::RunRequest one = request;
          one.poison = {0xFF};
          one.placements = {side};
          one.scribble = {0xA5};
          one.trap_only = {t.name};
          for (auto& [name, files] : one.out_files) files.resize(1);
          CaseResult x;
          judge_runs(c, worker::call(s.worker(), one), one, expected, x);
          if (is_fault(x.code)) {
            found = std::string(side) == "trap_after"
                        ? fmt::format("input '{}' ({} bytes) is read past its last byte: with the input ending where its mapping "
                                      "ends (the next page unmapped) the kernel faults; with guard bytes after it, it does not",
                                      t.name, t.bytes.size())
                        : fmt::format("input '{}' is read before its first byte: with the input starting where its mapping "
                                      "starts (the previous page unmapped) the kernel faults; with guard bytes before it, it does not",
                                      t.name);
            break;
          }
        }
        if (!found.empty()) break;
      }
      res.code = "out_of_bounds_read";
      res.detail = found.empty() ? fmt::format("the kernel faults only when every input lies against an unmapped page ({})", res.detail)
                                 : found;
    }
  } else if (is_value_failure(res.code)) {
    // Wrong with shared memory scribbled: right when it holds zeros?
    worker::RunRequest zeros = request;
    zeros.scribble = {0x00, 0x00};
    CaseResult z, again;
    if (judge_runs(c, worker::call(s.worker(), zeros), zeros, expected, z) &&
        !judge_runs(c, worker::call(s.worker(), request), request, expected, again)) {
      res.detail = fmt::format("the output depends on what shared memory held before the launch: right when it holds zeros, "
                               "wrong when it holds 0xA5/0x5A bytes ({}: {})",
                               res.code, res.detail);
      res.code = "uninitialized_shared";
    }
  }
  cleanup();
  return res;
}

}  // namespace

CaseResult run_case(Session& s, const BuiltCandidate& b, const contract::Contract& c, const contract::CaseSpec& spec) {
  return run_case_styled(s, b, c, spec, RunStyle{});
}

namespace {

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

// A case past 2^31 elements: inputs generated on the device, the whole output scanned for poison,
// windows of it compared with the contract's reference on the sub-case they depend on.
CaseResult run_generated_case(Session& s, const BuiltCandidate& b, const contract::Contract& c, const contract::CaseSpec& spec,
                              double timeout_s) {
  CaseResult res;
  res.spec = spec;
  res.reference = "cpu (windows)";
  std::optional<ResolvedPlan> admitted = admit_case(s, b, c, spec, res);
  if (!admitted) return res;
  const ResolvedPlan& plan = *admitted;
  const DeviceFacts& dev = s.device();
  const std::vector<contract::OutputWindow> windows = c.index_case_windows(spec);
  // Does the device hold it?
  std::size_t need = 0;
  for (const auto& t : c.tensors())
    need += std::size_t(c.tensor_elements(t.name, spec.dims)) * dtype_size(c.tensor_dtype(t.name, spec.dtype)) + 8192;
  for (const auto& sc : plan.scratch) need += sc.bytes + 8192;
  const std::size_t have = dev.device.value("total_memory_bytes", std::size_t(0));
  if (have && double(need) > 0.92 * double(have)) {
    res.status = "skipped";
    res.code = "device_too_small";
    res.detail = fmt::format("needs {:.1f} GiB of device memory; the {} has {:.1f} GiB: not run (the claim past 2^31 elements "
                             "is not checked on this device)",
                             double(need) / (1 << 30), dev.device.value("name", std::string("device")), double(have) / (1 << 30));
    return res;
  }
  fs::path dir = s.scratch() / "case-generated";
  fs::create_directories(dir);
  worker::RunRequest request;
  request.module = b.image_path.string();
  request.launches = plan.launches;
  request.poison = {0xFF, 0x7F};
  request.placements = {"guarded", "guarded"};
  request.generator_module = generator_module(s);
  int stream = 0;
  std::map<std::string, std::vector<std::pair<std::uint64_t, std::uint64_t>>> out_windows;
  for (const auto& w : windows) out_windows[w.tensor].push_back({std::uint64_t(w.begin), std::uint64_t(w.count)});
  for (auto& [name, ws] : out_windows) std::sort(ws.begin(), ws.end());  // the order the comparison reads them back in
  for (const auto& t : c.tensors()) {
    const DType dt = c.tensor_dtype(t.name, spec.dtype);
    const std::size_t bytes = std::size_t(c.tensor_elements(t.name, spec.dims)) * dtype_size(dt);
    worker::Buffer buf(t.name, t.role == contract::Role::input ? worker::BufferKind::input : worker::BufferKind::output, bytes);
    if (t.role == contract::Role::input) {
      buf.gen_stream = stream++;
      buf.gen_seed = spec.seed;
      buf.gen_dtype = contract::generated_dtype_code(dt);
    } else {
      buf.elem_bytes = dtype_size(dt);
      buf.windows = out_windows[t.name];
      request.out_files[t.name] = {(dir / (t.name + ".win0")).string(), (dir / (t.name + ".win1")).string()};
    }
    request.buffers.push_back(buf);
  }
  for (const auto& sc : plan.scratch) request.buffers.push_back(sc);
  auto cleanup = [&] {
    std::error_code ec;
    fs::remove_all(dir, ec);
  };
  res.status = "fail";
  auto r = worker::call(s.worker(), request, timeout_s);
  if (!r.ok()) {
    res.code = fault_code(r.raw);
    res.detail = r.raw.reason;
    cleanup();
    return res;
  }
  for (const auto& run : r.reply->runs) {
    if (!run.guard_violations.empty()) {
      res.code = "out_of_bounds_write";
      res.detail = worker::describe(run.guard_violations.front());
      cleanup();
      return res;
    }
    for (const auto& in : run.inputs)
      if (in.hash_before != in.hash_after) {
        res.code = "input_mutated";
        res.detail = fmt::format("input '{}' changed during the launch (device hash {} -> {})", in.name, in.hash_before, in.hash_after);
        cleanup();
        return res;
      }
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
  // Windows, in the order the worker concatenated them (sorted by start per tensor).
  std::map<std::string, std::size_t> offset;
  std::vector<contract::OutputWindow> sorted = windows;
  std::stable_sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& bb) { return a.begin < bb.begin; });
  for (const auto& w : sorted) {
    const std::vector<contract::Tensor> exp = c.window_reference(spec, w);
    auto it = std::find_if(exp.begin(), exp.end(), [&](const contract::Tensor& t) { return t.name == w.tensor; });
    if (it == exp.end()) throw_error(ErrorKind::internal, fmt::format("window {}: the reference has no '{}'", w.why, w.tensor));
    const std::size_t at = offset[w.tensor];
    offset[w.tensor] += it->bytes.size();
    std::vector<std::vector<std::uint8_t>> got;
    for (std::size_t k = 0; k < request.poison.size(); ++k) {
      MappedFile f = MappedFile::open_read(request.out_files.at(w.tensor).at(k));
      if (at + it->bytes.size() > f.size()) throw_error(ErrorKind::internal, "window file shorter than its windows");
      contract::Comparison cmp = c.compare(*it, f.data() + at, request.poison[k]);
      if (!cmp.ok) {
        res.code = cmp.code;
        res.detail = fmt::format("run {} (poison 0x{:02x}), window {} (element offsets relative to element {}): {}", k + 1,
                                 request.poison[k], w.why, w.begin, cmp.detail);
        cleanup();
        return res;
      }
      got.emplace_back(f.data() + at, f.data() + at + it->bytes.size());
    }
    if (c.deterministic() && got.size() == 2 && got[0] != got[1]) {
      res.code = "nondeterministic";
      res.detail = fmt::format("window {} differs between two runs on the same inputs", w.why);
      cleanup();
      return res;
    }
  }
  cleanup();
  res.status = "pass";
  return res;
}

std::int64_t case_elements(const contract::Contract& c, const contract::CaseSpec& spec) {
  std::int64_t total = 0;
  for (const auto& t : c.tensors()) total += c.tensor_elements(t.name, spec.dims);
  return total;
}

// Small passed cases, odd sizes and offsets first (their tails are where over-reads hide), one per
// size, dtype and offset.
std::vector<contract::CaseSpec> sanitizer_picks(const contract::Contract& c, const CheckOptions& o, const CorrectnessReport& rep) {
  std::vector<const CaseResult*> pool;
  for (const auto& r : rep.results)
    if (r.status == "pass" && r.spec.family != contract::kGeneratedFamily && case_elements(c, r.spec) <= o.sanitizer_max_elements)
      pool.push_back(&r);
  std::stable_sort(pool.begin(), pool.end(), [&](const CaseResult* a, const CaseResult* bb) {
    auto odd = [&](const CaseResult* x) { return (case_elements(c, x->spec) % 8) != 0 || x->spec.offset_elements != 0; };
    if (odd(a) != odd(bb)) return odd(a);
    return case_elements(c, a->spec) > case_elements(c, bb->spec);
  });
  std::vector<contract::CaseSpec> picks;
  std::set<std::string> sizes;
  for (const CaseResult* r : pool) {
    const std::string key = contract::format_dims(r->spec.dims) + "/" + std::to_string(int(r->spec.dtype)) + "/" +
                            std::to_string(r->spec.offset_elements);
    if (!sizes.insert(key).second) continue;
    picks.push_back(r->spec);
    if (int(picks.size()) >= o.sanitizer_cases) break;
  }
  return picks;
}

// Cases run again in a worker under compute-sanitizer, one worker per tool: memcheck with every
// buffer its own exact-size allocation (so a read one byte past a tensor is reported), racecheck
// (shared-memory hazards between threads of a block). Findings become failing results.
void sanitizer_pass(Session& s, const BuiltCandidate& b, const contract::Contract& c, const std::vector<contract::CaseSpec>& picks,
                    const std::vector<std::string>& tools, CorrectnessReport& rep) {
  json& out = rep.sanitizer;
  std::optional<std::string> tool = worker::find_compute_sanitizer();
  if (!tool) {
    out = {{"status", "not_run"},
           {"why", "compute-sanitizer not found (PATH, /usr/local/cuda/bin; or set KQUAL_COMPUTE_SANITIZER): reads past a "
                   "tensor within its last aligned vector and shared-memory races were not looked for"}};
    return;
  }
  out = {{"status", "clean"}, {"path", *tool}, {"cases", json::array()}, {"tools", json::array()}};
  for (const auto& p : picks) out["cases"].push_back(p.id);
  if (picks.empty()) {
    out["status"] = "not_run";
    out["why"] = "no passed case small enough for the sanitizer";
    return;
  }
  for (const std::string& name_s : tools) {
    const char* name = name_s.c_str();
    const auto t0 = std::chrono::steady_clock::now();
    const fs::path log = s.scratch() / fmt::format("sanitizer-{}-{}.log", b.manifest.name, name);
    std::error_code ec;
    fs::remove(log, ec);
    worker::SessionOptions so = s.options();
    so.watchdog_seconds = std::max(so.watchdog_seconds, 300.0);
    so.worker_wrapper = {*tool, "--tool", name, "--log-file", log.string(), "--print-limit", "10"};
    json tj{{"tool", name}};
    std::vector<CaseResult> runs;
    {
      worker::Session ss(so);
      if (!ss.device().present) {
        tj["status"] = "not_run";
        tj["why"] = "the worker did not start under compute-sanitizer: " + ss.device().why_absent;
        out["tools"].push_back(tj);
        out["status"] = "incomplete";
        continue;
      }
      RunStyle style;
      style.traps = false;
      style.scribble = false;
      style.diagnose = false;
      style.guard_bytes = 0;
      style.runs = 1;
      for (const auto& spec : picks) runs.push_back(run_case_styled(ss, b, c, spec, style));
    }  // the worker exits here; the sanitizer writes its summary
    const worker::SanitizerLog sl = worker::read_sanitizer_log(log);
    tj["log"] = sl.to_json();
    tj["wall_ms"] = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    const worker::SanitizerFinding* first = nullptr;
    for (const auto& f : sl.findings)
      if (f.code != "race_warning") {
        first = &f;
        break;
      }
    // Errors counted but none parsed (a format this reader does not know): reported as such; only
    // racecheck's warnings, and nothing else: not a failure (they stay in the log's JSON).
    if (first || (sl.errors > 0 && sl.findings.empty())) {
      CaseResult r;
      r.spec.id = fmt::format("sanitizer/{}", name);
      r.spec.family = name;
      r.status = "fail";
      r.code = first ? first->code : "sanitizer_error";
      std::string where;
      if (first) {
        for (const auto& ctx : first->context) where += (where.empty() ? "" : "; ") + ctx;
        // Name the tensor: the allocation the tool names is exactly one buffer's offset + bytes.
        std::set<std::string> names;
        for (const auto& p : picks)
          for (const auto& t : c.tensors()) {
            const std::size_t es = dtype_size(c.tensor_dtype(t.name, p.dtype));
            const std::size_t bytes = std::size_t(c.tensor_elements(t.name, p.dims)) * es + std::size_t(p.offset_elements) * es;
            if (first->allocation_bytes && bytes == first->allocation_bytes) names.insert(t.name);
          }
        if (!names.empty()) where += fmt::format("; the allocation is tensor '{}'", fmt::join(names, "' or '"));
      }
      r.detail = fmt::format("compute-sanitizer {} on {} small case(s) ({}): {}{}{}", name, picks.size(),
                             fmt::join(out["cases"].get<std::vector<std::string>>(), ", "),
                             first ? first->headline : fmt::format("{} error(s)", sl.errors), where.empty() ? "" : " — ", where);
      rep.results.push_back(r);
      ++rep.cases;
      ++rep.failed;
      ++rep.failure_codes[r.code];
      tj["status"] = "findings";
      out["status"] = "findings";
    } else if (!sl.written || sl.errors < 0) {
      tj["status"] = "incomplete";
      tj["why"] = sl.written ? "the sanitizer log has no ERROR SUMMARY (the worker died?)" : "no sanitizer log was written";
      if (out["status"] == "clean") out["status"] = "incomplete";
    } else {
      tj["status"] = "clean";
    }
    for (const auto& r : runs)
      if (r.status == "fail" && !first) tj["case_failure"] = r.code + ": " + r.detail;
    out["tools"].push_back(tj);
  }
}

}  // namespace

CorrectnessReport check_correctness(Session& s, const BuiltCandidate& b, const CheckOptions& o) {
  const contract::Contract& c = contract::find_contract(b.manifest.contract);
  CorrectnessReport rep;
  rep.candidate = b.manifest.name;
  bool stopped_on_fault = false;
  int diagnoses = 4;  // failing cases diagnosed (out-of-bounds read? leftover shared memory?) per candidate
  for (const auto& spec : c.correctness_cases(b.manifest.supports, o.seed, o.include_large)) {
    if (o.max_case_elements > 0) {
      std::int64_t total = 0;
      for (const auto& t : c.tensors()) total += c.tensor_elements(t.name, spec.dims);
      if (total > o.max_case_elements) {
        ++rep.skipped;
        continue;
      }
    }
    auto t0 = std::chrono::steady_clock::now();
    RunStyle style;
    style.diagnoses_left = &diagnoses;
    CaseResult r = run_case_styled(s, b, c, spec, style);
    r.wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    rep.wall_ms += r.wall_ms;
    ++rep.cases;
    if (r.status == "pass") {
      ++rep.passed;
      if (r.degenerate.empty()) ++rep.evidence;
    }
    else if (r.status == "refused") ++rep.refused;
    else {
      ++rep.failed;
      ++rep.failure_codes[r.code];
    }
    rep.results.push_back(r);
    if (o.stop_on_fault && (r.code == "crash" || r.code == "hang" || r.code == "device_fault" || r.code == "worker_protocol" ||
                            r.code == "out_of_bounds_read")) {
      stopped_on_fault = true;
      break;
    }
  }
  // Past 2^31 elements, when the claims reach there: generated on the device, checked in windows.
  // A failure there while every smaller case passed is 32-bit index arithmetic (or its like).
  if (o.index_cases && s.device().present && !(o.stop_on_fault && rep.failed && stopped_on_fault))
    for (const auto& spec : c.index_cases(b.manifest.supports, o.seed)) {
      const bool clean_before = rep.failed == 0;
      auto t0 = std::chrono::steady_clock::now();
      CaseResult r = run_generated_case(s, b, c, spec, o.index_case_timeout_s);
      r.wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      rep.wall_ms += r.wall_ms;
      if (r.status == "skipped") {
        ++rep.skipped;
        rep.results.push_back(r);
        continue;
      }
      ++rep.cases;
      if (r.status == "pass") {
        ++rep.passed;
        ++rep.evidence;
      } else if (r.status == "refused") {
        ++rep.refused;
      } else {
        if (clean_before) {
          r.detail = fmt::format("fails past {} elements while every smaller case passed — 32-bit index arithmetic (or an "
                                 "offset of that width) breaks there; {}: {}",
                                 spec.id.find("2^32") != std::string::npos ? "2^32" : "2^31", r.code, r.detail);
          r.code = "index_overflow";
        }
        ++rep.failed;
        ++rep.failure_codes[r.code];
      }
      rep.results.push_back(r);
      if (r.status == "fail" && (r.code == "index_overflow" || is_fault(r.code) || r.code == "hang")) break;
    }
  if (o.sanitizer_pass && rep.failed == 0 && s.device().present) {
    sanitizer_pass(s, b, c, sanitizer_picks(c, o, rep), {"memcheck", "racecheck"}, rep);
  } else if (o.sanitizer_pass && s.device().present) {
    // Wrong outputs: is a shared-memory race the cause? racecheck sees a hazard whether or not it
    // changed the values that time: two small passed cases and the smallest wrong one.
    const CaseResult* smallest = nullptr;
    for (const auto& r : rep.results)
      if (r.status == "fail" && is_value_failure(r.code) && r.spec.family != contract::kGeneratedFamily &&
          case_elements(c, r.spec) <= (std::int64_t(1) << 22) && (!smallest || case_elements(c, r.spec) < case_elements(c, smallest->spec)))
        smallest = &r;
    if (smallest) {
      CheckOptions small = o;
      small.sanitizer_cases = 2;
      std::vector<contract::CaseSpec> picks = sanitizer_picks(c, small, rep);
      picks.push_back(smallest->spec);
      sanitizer_pass(s, b, c, picks, {"racecheck"}, rep);
    } else {
      rep.sanitizer = {{"status", "not_run"}, {"why", "the candidate already failed (no wrong case small enough for racecheck)"}};
    }
  } else if (o.sanitizer_pass) {
    rep.sanitizer = {{"status", "not_run"}, {"why", "no GPU"}};
  }
  return rep;
}

}  // namespace kqual::check
