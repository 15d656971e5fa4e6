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

CaseResult run_case(Session& s, const BuiltCandidate& b, const contract::Contract& c, const contract::CaseSpec& spec) {
  CaseResult res;
  res.spec = spec;
  const contract::Request req = c.request(spec.dtype, spec.dims, spec.offset_elements);
  if (auto refusal = c.validate(req, b.manifest.supports)) {
    res.status = "refused";
    res.code = refusal->code;
    res.detail = refusal->reason;
    return res;
  }
  const DeviceFacts& dev = s.device();
  ResolvedPlan plan = resolve_plan(b, spec.dtype, spec.dims, dev);
  if (!plan.refusal.empty()) {
    res.status = "refused";
    res.code = "launch_plan";
    res.detail = plan.refusal;
    return res;
  }
  std::shared_ptr<const PreparedCase> prepared = prepare_case(s, c, spec);
  const contract::CaseData& data = prepared->data;
  const std::vector<contract::Tensor>& expected = prepared->expected;
  res.reference = prepared->reference;
  res.degenerate = prepared->degenerate;
  fs::path dir = s.scratch() / "case";
  fs::create_directories(dir);
  auto offset_of = [&](const contract::Tensor& t) { return std::size_t(spec.offset_elements) * dtype_size(t.dtype); };
  worker::RunRequest request;
  request.module = b.image_path.string();
  request.launches = plan.launches;
  const std::uint8_t poisons[2] = {0xFF, 0x7F};  // f32: NaN, then a large finite value; bf16 likewise
  request.poison = {poisons[0], poisons[1]};
  for (const auto& t : data.inputs) {
    fs::path f = dir / (t.name + ".in");
    write_file(f, t.bytes.data(), t.bytes.size());
    request.buffers.push_back({t.name, worker::BufferKind::input, t.bytes.size(), offset_of(t), f.string()});
  }
  for (const auto& t : expected) {
    request.buffers.push_back({t.name, worker::BufferKind::output, t.bytes.size(), offset_of(t), ""});
    request.out_files[t.name] = {(dir / (t.name + ".out0")).string(), (dir / (t.name + ".out1")).string()};
  }
  for (const auto& sc : plan.scratch) request.buffers.push_back(sc);
  auto r = worker::call(s.worker(), request);
  auto cleanup = [&] {
    std::error_code ec;
    fs::remove_all(dir, ec);
  };
  res.status = "fail";
  if (!r.ok()) {
    res.code = fault_code(r.raw);
    res.detail = r.raw.reason;
    cleanup();
    return res;
  }
  const std::vector<worker::RunResult>& runs = r.reply->runs;
  res.kernel_ms = runs.empty() ? 0.0 : runs.front().kernel_ms;
  for (const auto& run : runs) {
    if (!run.guard_violations.empty()) {
      res.code = "out_of_bounds_write";
      res.detail = worker::describe(run.guard_violations.front());
      cleanup();
      return res;
    }
    for (const auto& in : run.inputs) {
      if (in.first_changed_byte >= 0) {
        res.code = "input_mutated";
        res.detail = fmt::format("input '{}' changed during the launch (hash {} -> {}), first at byte {}", in.name,
                                 in.hash_before, in.hash_after, in.first_changed_byte);
        cleanup();
        return res;
      }
    }
  }
  for (const auto& t : expected) {
    for (int k = 0; k < 2; ++k) {
      std::string code;
      std::string detail = verify_output_file(c, t, request.out_files.at(t.name).at(std::size_t(k)), poisons[k], &code);
      if (!detail.empty()) {
        res.code = code;
        res.detail = fmt::format("run {} (poison 0x{:02x}): {}", k + 1, poisons[k], detail);
        cleanup();
        return res;
      }
    }
    // Both runs correct: they must also agree bitwise (unless the contract allows otherwise).
    if (!c.deterministic()) continue;
    MappedFile a = MappedFile::open_read(request.out_files.at(t.name).at(0));
    MappedFile bb = MappedFile::open_read(request.out_files.at(t.name).at(1));
    if (std::memcmp(a.data(), bb.data(), a.size()) != 0) {
      std::size_t i = 0;
      while (a.data()[i] == bb.data()[i]) ++i;
      res.code = "nondeterministic";
      res.detail = fmt::format("output '{}' differs between two runs on the same inputs at byte {}", t.name, i);
      cleanup();
      return res;
    }
  }
  cleanup();
  res.status = "pass";
  return res;
}

CorrectnessReport check_correctness(Session& s, const BuiltCandidate& b, const CheckOptions& o) {
  const contract::Contract& c = contract::find_contract(b.manifest.contract);
  CorrectnessReport rep;
  rep.candidate = b.manifest.name;
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
    CaseResult r = run_case(s, b, c, spec);
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
    if (o.stop_on_fault && (r.code == "crash" || r.code == "hang" || r.code == "device_fault" || r.code == "worker_protocol"))
      break;
  }
  return rep;
}

}  // namespace kqual::check
