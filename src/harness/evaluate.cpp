#include "kqual/harness/evaluate.hpp"

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

namespace kqual::harness {
namespace fs = std::filesystem;

json BuiltCandidate::to_json() const {
  json low = json::object();
  for (const auto& [k, v] : lowered) low[k] = v;
  return json{{"name", manifest.name},
              {"manifest", manifest.file.string()},
              {"contract", manifest.contract},
              {"source", manifest.source.string()},
              {"source_sha256", source_sha256},
              {"compiler", compiler},
              {"options", options},
              {"compile_ms", compile_ms},
              {"arch", arch},
              {"image", {{"kind", "cubin (native SASS)"}, {"sha256", image_sha256}, {"bytes", image_bytes}}},
              {"kernels_lowered", low},
              {"kernels", kernels},
              {"libraries", libraries},
              {"library_versions", library_versions}};
}

namespace {

// Library launches: the artifact identity is the library and its version (CUB's is fixed at build
// time; cuBLAS's is read in the worker by load_and_describe). Returns true when every launch is a
// library call, so there is no source to compile.
bool build_library_calls(const Manifest& m, BuiltCandidate& b) {
  std::set<std::string> libs;
  for (DType t : m.supports.dtypes)
    for (const auto& name : m.library_names(t)) {
      if (std::find(b.libraries.begin(), b.libraries.end(), name) == b.libraries.end()) b.libraries.push_back(name);
      libs.insert(std::string(cuda::find_library_routine(cuda::split_library_name(name).routine)->library));
    }
  if (libs.count("CUB")) b.library_versions["CUB"] = cuda::cub_version();
  if (libs.count("cuBLAS")) b.library_versions["cuBLAS"] = "loaded at run time (version read in the worker)";
  if (m.has_kernels()) return false;
  b.compiler = fmt::format("library: {}", fmt::join(b.libraries, ", "));
  std::string identity;
  for (const auto& l : b.libraries) identity += l + "\n";
  for (const auto& [k, v] : b.library_versions.items()) identity += k + "=" + v.get<std::string>() + "\n";
  b.image_sha256 = sha256_hex(identity);  // of the routine list and versions: no image of our own
  return true;
}

}  // namespace

BuiltCandidate build_candidate(const Manifest& m, const std::string& arch, const fs::path& out_dir) {
  BuiltCandidate b;
  b.manifest = m;
  b.arch = arch;
  if (build_library_calls(m, b)) return b;  // library-only: nothing to compile
  cuda::NvrtcRequest req;
  req.source = read_text_file(m.source);
  req.source_name = m.source.filename().string();
  req.arch = arch;
  req.options = m.nvrtc_options;
  req.include_dirs = {m.dir.string()};
  for (DType t : m.supports.dtypes)
    for (const auto& k : m.kernel_names(t))
      if (std::find(req.name_expressions.begin(), req.name_expressions.end(), k) == req.name_expressions.end())
        req.name_expressions.push_back(k);
  cuda::NvrtcResult r;
  try {
    r = cuda::nvrtc_compile(req);
  } catch (const Error& e) {
    throw Error(ErrorKind::nvrtc, fmt::format("{}: compiling {} failed: {}", m.file.string(), m.source.string(), e.what()));
  }
  for (const auto& [e, mangled] : r.lowered) b.lowered[e] = mangled;
  b.source_sha256 = sha256_hex(req.source);
  b.compiler = fmt::format("NVRTC {}.{}", r.nvrtc_major, r.nvrtc_minor);
  b.options = r.options_used;
  b.log = r.log;
  b.compile_ms = r.compile_ms;
  b.image_sha256 = sha256_hex(r.image.data(), r.image.size());
  b.image_bytes = r.image.size();
  b.image_path = out_dir / fmt::format("{}-{}.cubin", m.name, b.image_sha256.substr(0, 16));
  write_file(b.image_path, r.image.data(), r.image.size());
  return b;
}

std::string load_and_describe(Session& s, BuiltCandidate& b) {
  if (!b.libraries.empty()) {
    // The worker loads the libraries and reports their versions (cuBLAS: the .so dlopen finds).
    WorkerReply lr = s.worker().call(json{{"op", "library_info"}, {"libraries", b.libraries}});
    if (lr.status != WorkerReply::Status::ok) return fmt::format("loading the libraries failed: {}", lr.reason);
    for (const auto& [k, v] : lr.body.at("versions").items()) b.library_versions[k] = v;
  }
  b.kernels = json::object();
  if (b.lowered.empty()) return "";  // library-only
  json names = json::array();
  for (const auto& [e, mangled] : b.lowered) names.push_back(mangled);
  WorkerReply r = s.worker().call(json{{"op", "load"}, {"module", b.image_path.string()}, {"kernels", names}});
  if (r.status != WorkerReply::Status::ok) return fmt::format("loading the module failed: {}", r.reason);
  for (const auto& [e, mangled] : b.lowered) {
    json k = r.body.at("kernels").at(mangled);
    k["symbol"] = mangled;
    b.kernels[e] = k;
  }
  // The manifest's argument list must match the kernel's parameter sizes (driver's view).
  for (DType t : b.manifest.supports.dtypes) {
    for (std::size_t li = 0; li < b.manifest.launches.size(); ++li) {
      const auto& l = b.manifest.launches[li];
      if (!l.library.empty()) continue;  // library routines: arity checked at parse time
      std::string k = b.manifest.kernel_names(t).at(0);
      for (std::string kk = l.kernel; ; ) {
        for (std::size_t p; (p = kk.find("{T}")) != std::string::npos;) kk.replace(p, 3, cxx_type(t));
        k = kk;
        break;
      }
      const json& params = b.kernels.at(k).at("params");
      if (params.empty()) continue;  // driver without cuFuncGetParamInfo
      if (params.size() != l.args.size())
        return fmt::format("{}: launch[{}]: kernel {} takes {} parameters but args lists {}", b.manifest.file.string(), li, k,
                           params.size(), l.args.size());
      for (std::size_t j = 0; j < l.args.size(); ++j) {
        std::size_t want = l.args[j].kind == LaunchArg::dim ? scalar_size(l.args[j].type) : sizeof(void*);
        std::size_t got = params[j].at("size");
        if (want != got)
          return fmt::format("{}: launch[{}].args[{}] = \"{}\" passes {} bytes but parameter {} of {} is {} bytes",
                             b.manifest.file.string(), li, j, l.args[j].text, want, j, k, got);
      }
    }
  }
  return "";
}

namespace {

// {"library": "cub.exclusive_sum<float>", "args": [{"buffer": ...}, {"scalar": ..., "size": ...}]}
json resolve_library_launch(const Launch& l, DType t, const std::map<std::string, std::int64_t>& dims,
                            std::string* refusal) {
  std::string name = l.library;
  for (std::size_t q; (q = name.find("{T}")) != std::string::npos;) name.replace(q, 3, cxx_type(t));
  json args = json::array();
  for (const auto& a : l.args) {
    if (a.kind != LaunchArg::dim) {
      args.push_back({{"buffer", a.name}});
      continue;
    }
    std::int64_t v = dims.at(a.name);
    bool fits = a.type == ScalarType::i32 ? v >= INT32_MIN && v <= INT32_MAX
              : a.type == ScalarType::u32 ? v >= 0 && v <= std::int64_t(UINT32_MAX)
              : a.type == ScalarType::u64 ? v >= 0 : true;
    if (!fits) {
      *refusal = fmt::format("{} = {} does not fit the type {} takes ('{}')", a.name, v, name, a.text);
      return json();
    }
    args.push_back({{"scalar", v}, {"size", scalar_size(a.type)}});
  }
  return json{{"library", name}, {"args", args}};
}

}  // namespace

ResolvedPlan resolve_plan(const BuiltCandidate& b, DType t, const std::map<std::string, std::int64_t>& dims,
                          const DeviceFacts& dev) {
  ResolvedPlan p;
  std::map<std::string, std::int64_t> vars = dims;
  vars["sms"] = dev.sms;
  vars["esize"] = std::int64_t(dtype_size(t));
  vars["l2_bytes"] = dev.l2_bytes;
  vars["max_threads"] = dev.max_threads;
  try {
    for (const auto& sc : b.manifest.scratch) {
      std::int64_t bytes = sc.bytes.eval(vars);
      if (bytes < 0) {
        p.refusal = fmt::format("scratch '{}' evaluates to {} bytes", sc.name, bytes);
        return p;
      }
      p.scratch.push_back({{"name", sc.name}, {"bytes", bytes}});
    }
    for (std::size_t li = 0; li < b.manifest.launches.size(); ++li) {
      const auto& l = b.manifest.launches[li];
      if (!l.library.empty()) {
        p.launches.push_back(resolve_library_launch(l, t, dims, &p.refusal));
        if (!p.refusal.empty()) return p;
        continue;
      }
      std::string kname = l.kernel;
      for (std::size_t q; (q = kname.find("{T}")) != std::string::npos;) kname.replace(q, 3, cxx_type(t));
      auto it = b.lowered.find(kname);
      if (it == b.lowered.end()) throw_error(ErrorKind::internal, "kernel not lowered: " + kname);
      json grid = json::array(), block = json::array();
      const std::int64_t grid_max[3] = {2147483647, 65535, 65535}, block_max[3] = {1024, 1024, 64};
      std::int64_t threads = 1;
      for (int i = 0; i < 3; ++i) {
        std::int64_t g = l.grid[std::size_t(i)].eval(vars), bl = l.block[std::size_t(i)].eval(vars);
        if (g < 1 || g > grid_max[i]) {
          p.refusal = fmt::format("launch[{}].grid[{}] = '{}' evaluates to {} (allowed 1..{})", li, i,
                                  l.grid[std::size_t(i)].text(), g, grid_max[i]);
          return p;
        }
        if (bl < 1 || bl > block_max[i]) {
          p.refusal = fmt::format("launch[{}].block[{}] = '{}' evaluates to {} (allowed 1..{})", li, i,
                                  l.block[std::size_t(i)].text(), bl, block_max[i]);
          return p;
        }
        threads *= bl;
        grid.push_back(g);
        block.push_back(bl);
      }
      if (threads > dev.max_threads) {
        p.refusal = fmt::format("launch[{}]: {} threads per block exceed the device's {}", li, threads, dev.max_threads);
        return p;
      }
      std::int64_t shared = l.shared.eval(vars);
      if (shared < 0 || shared > dev.max_shared_optin) {
        p.refusal = fmt::format("launch[{}].shared = {} bytes (device allows 0..{})", li, shared, dev.max_shared_optin);
        return p;
      }
      json args = json::array();
      for (const auto& a : l.args) {
        if (a.kind == LaunchArg::dim) {
          std::int64_t v = dims.at(a.name);
          bool fits = true;
          switch (a.type) {
            case ScalarType::i32: fits = v >= INT32_MIN && v <= INT32_MAX; break;
            case ScalarType::u32: fits = v >= 0 && v <= std::int64_t(UINT32_MAX); break;
            case ScalarType::u64: fits = v >= 0; break;
            case ScalarType::i64: break;
          }
          if (!fits) {
            p.refusal = fmt::format("{} = {} does not fit the kernel's parameter type ('{}')", a.name, v, a.text);
            return p;
          }
          args.push_back({{"scalar", v}, {"size", scalar_size(a.type)}});
        } else {
          args.push_back({{"buffer", a.name}});
        }
      }
      p.launches.push_back({{"kernel", it->second}, {"grid", grid}, {"block", block}, {"shared", shared}, {"args", args}});
    }
  } catch (const Error& e) {
    p.refusal = e.what();
  }
  return p;
}

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
  json buffers = json::array();
  for (const auto& t : data.inputs) {
    fs::path f = dir / (t.name + ".in");
    write_file(f, t.bytes.data(), t.bytes.size());
    buffers.push_back({{"name", t.name}, {"kind", "input"}, {"bytes", t.bytes.size()}, {"file", f.string()}});
  }
  json out_files = json::object();
  for (const auto& t : g->raw_outputs) {
    std::size_t bytes = std::size_t(t.elements) * dtype_size(t.dtype);
    buffers.push_back({{"name", t.name}, {"kind", "output"}, {"bytes", bytes}});
    out_files[t.name] = {(dir / (t.name + ".ref0")).string(), (dir / (t.name + ".ref1")).string()};
  }
  json launches = json::array();
  for (const auto& l : g->launches) {
    json args = json::array();
    for (const auto& a : l.args) {
      if (!a.tensor.empty()) args.push_back({{"buffer", a.tensor}});
      else args.push_back({{"scalar", a.scalar}, {"size", a.scalar_bytes}});
    }
    launches.push_back({{"kernel", l.kernel},
                        {"grid", {l.grid[0], l.grid[1], l.grid[2]}},
                        {"block", {l.block[0], l.block[1], l.block[2]}},
                        {"shared", l.shared},
                        {"args", args}});
  }
  json request{{"op", "run"}, {"module", module.string()}, {"buffers", buffers}, {"launches", launches},
               {"poison", {0xFF, 0xFF}}, {"out_files", out_files}};
  WorkerReply r = s.reference_worker().call(request);
  auto cleanup = [&] {
    for (const auto& t : data.inputs) fs::remove(dir / (t.name + ".in"));
    for (const auto& t : g->raw_outputs) {
      fs::remove(dir / (t.name + ".ref0"));
      fs::remove(dir / (t.name + ".ref1"));
    }
  };
  if (r.status != WorkerReply::Status::ok) {
    cleanup();
    throw_error(ErrorKind::cuda, fmt::format("the fp64 GPU reference of {} failed: {}", c.name(), r.reason));
  }
  std::vector<contract::Tensor> raw = g->raw_outputs;
  for (auto& t : raw) {
    MappedFile f = MappedFile::open_read(out_files[t.name][0].get<std::string>());
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
  json buffers = json::array();
  for (const auto& t : data.inputs) {
    const std::size_t offset = offset_of(t);
    fs::path f = dir / (t.name + ".in");
    write_file(f, t.bytes.data(), t.bytes.size());
    buffers.push_back({{"name", t.name}, {"kind", "input"}, {"bytes", t.bytes.size()}, {"offset", offset}, {"file", f.string()}});
  }
  json out_files = json::object();
  const std::uint8_t poisons[2] = {0xFF, 0x7F};  // f32: NaN, then a large finite value; bf16 likewise
  for (const auto& t : expected) {
    buffers.push_back({{"name", t.name}, {"kind", "output"}, {"bytes", t.bytes.size()}, {"offset", offset_of(t)}});
    out_files[t.name] = {(dir / (t.name + ".out0")).string(), (dir / (t.name + ".out1")).string()};
  }
  for (const auto& sc : plan.scratch) buffers.push_back({{"name", sc.at("name")}, {"kind", "scratch"}, {"bytes", sc.at("bytes")}});
  json request{{"op", "run"},          {"module", b.image_path.string()}, {"buffers", buffers},
               {"launches", plan.launches}, {"poison", {poisons[0], poisons[1]}}, {"out_files", out_files}};
  WorkerReply r = s.worker().call(request);
  auto cleanup = [&] {
    std::error_code ec;
    fs::remove_all(dir, ec);
  };
  res.status = "fail";
  if (r.status != WorkerReply::Status::ok) {
    res.code = fault_code(r);
    res.detail = r.reason;
    cleanup();
    return res;
  }
  const json& runs = r.body.at("runs");
  res.kernel_ms = runs.at(0).value("kernel_ms", 0.0);
  for (const auto& run : runs) {
    if (!run.at("guard_violations").empty()) {
      const json& v = run.at("guard_violations").at(0);
      res.code = "out_of_bounds_write";
      res.detail = fmt::format("buffer '{}' was written {} its bounds: {} guard byte(s) changed, first at byte offset {} "
                               "from the view start",
                               v.at("buffer").get<std::string>(), v.at("side").get<std::string>(), v.at("bytes_changed").get<std::int64_t>(),
                               v.at("first_byte_offset").get<std::int64_t>());
      cleanup();
      return res;
    }
    for (const auto& in : run.at("inputs")) {
      if (in.at("first_changed_byte").get<std::int64_t>() >= 0) {
        res.code = "input_mutated";
        res.detail = fmt::format("input '{}' changed during the launch (hash {} -> {}), first at byte {}",
                                 in.at("name").get<std::string>(), in.at("hash_before").get<std::string>(),
                                 in.at("hash_after").get<std::string>(), in.at("first_changed_byte").get<std::int64_t>());
        cleanup();
        return res;
      }
    }
  }
  for (const auto& t : expected) {
    for (int k = 0; k < 2; ++k) {
      std::string code;
      std::string detail = verify_output_file(c, t, out_files[t.name][std::size_t(k)].get<std::string>(), poisons[k], &code);
      if (!detail.empty()) {
        res.code = code;
        res.detail = fmt::format("run {} (poison 0x{:02x}): {}", k + 1, poisons[k], detail);
        cleanup();
        return res;
      }
    }
    // Both runs correct: they must also agree bitwise (unless the contract allows otherwise).
    if (!c.deterministic()) continue;
    MappedFile a = MappedFile::open_read(out_files[t.name][0].get<std::string>());
    MappedFile bb = MappedFile::open_read(out_files[t.name][1].get<std::string>());
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

}  // namespace kqual::harness
