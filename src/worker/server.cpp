// The worker process: owns the CUDA context, every allocation and every launch.
#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <thread>

#include "kqual/core/error.hpp"
#include "kqual/core/files.hpp"
#include "kqual/core/sha256.hpp"
#include "kqual/cuda/library.hpp"
#include "kqual/cuda/nvrtc.hpp"
#include "kqual/cuda/objects.hpp"
#include "kqual/stats/stopping.hpp"
#include "kqual/worker/protocol.hpp"
#include "kqual/worker/worker.hpp"

namespace kqual::worker {
namespace {

constexpr std::uint8_t kGuardByte = 0xA5;

// The read pass of the "clean" L2 flush: every 4-byte word of the flush buffer is loaded through
// L2; the result is stored only if it equals a value it cannot take in practice, so the loads stay.
constexpr const char* kL2CleanSource = R"CUDA(
extern "C" __global__ void kqual_l2_clean(const unsigned int* __restrict__ p, unsigned long long n, unsigned int* out) {
  unsigned int acc = 0;
  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
       i += (unsigned long long)gridDim.x * blockDim.x)
    acc ^= __ldcg(p + i);
  if (acc == 0x9E3779B9u) out[0] = acc;
}
)CUDA";

struct State {
  std::unique_ptr<cuda::Context> ctx;
  std::unique_ptr<cuda::Module> l2_clean_module;  // compiled on first use of flush_mode "clean"
  std::map<std::string, std::shared_ptr<cuda::Module>> modules;  // by path
  std::unique_ptr<cuda::Stream> stream;

  cuda::Context& context() {
    if (!ctx) {
      ctx = std::make_unique<cuda::Context>(0);
      stream = std::make_unique<cuda::Stream>();
    }
    return *ctx;
  }
  cuda::Module& module(const std::string& path) {
    context();
    auto it = modules.find(path);
    if (it != modules.end()) return *it->second;
    if (modules.size() > 64) modules.clear();  // bound memory across many candidates
    auto m = std::make_shared<cuda::Module>(cuda::Module::from_file(path));
    modules[path] = m;
    return *m;
  }
};

json device_json(const cuda::DeviceInfo& d) {
  return json{{"name", d.name},
              {"arch", d.arch()},
              {"sms", d.sms},
              {"l2_bytes", d.l2_bytes},
              {"max_persisting_l2_bytes", d.max_persisting_l2_bytes},
              {"max_threads_per_block", d.max_threads_per_block},
              {"max_shared_per_block_optin", d.max_shared_per_block_optin},
              {"sm_clock_khz", d.clock_khz},
              {"memory_clock_khz", d.memory_clock_khz},
              {"memory_bus_bits", d.memory_bus_bits},
              {"total_memory_bytes", d.total_memory},
              {"driver_version", d.driver_version}};
}

json attributes_json(const cuda::Function& f) {
  auto a = f.attributes();
  json params = json::array();
  for (const auto& p : f.params()) params.push_back({{"offset", p.offset}, {"size", p.size}});
  return json{{"registers", a.registers},
              {"static_shared_bytes", a.static_shared_bytes},
              {"local_bytes", a.local_bytes},
              {"const_bytes", a.const_bytes},
              {"max_threads_per_block", a.max_threads_per_block},
              {"binary_version", a.binary_version},
              {"ptx_version", a.ptx_version},
              {"params", params}};
}

// One buffer with guard regions: [guard | offset | view (bytes) | guard].
struct Guarded {
  std::string name, kind;
  std::size_t bytes = 0, offset = 0, guard = 0;
  cuda::DeviceBuffer mem;
  MappedFile input;  // host data for inputs
  CUdeviceptr view() const { return mem.get() + guard + offset; }
  std::size_t total() const { return guard + offset + bytes + guard; }
};

std::vector<Guarded> allocate(const std::vector<Buffer>& buffers, std::size_t guard) {
  std::vector<Guarded> bufs;
  for (const auto& b : buffers) {
    Guarded g;
    g.name = b.name;
    g.kind = to_string(b.kind);
    g.bytes = b.bytes;
    g.offset = b.offset;
    g.guard = guard;
    g.mem = cuda::DeviceBuffer(g.total());
    if (b.kind == BufferKind::input) {
      g.input = MappedFile::open_read(b.file);
      if (g.input.size() != g.bytes)
        throw_error(ErrorKind::internal, fmt::format("input file for '{}' has {} bytes, expected {}", g.name, g.input.size(), g.bytes));
    }
    bufs.push_back(std::move(g));
  }
  return bufs;
}

// Guard everything, upload inputs, poison outputs and scratch.
void prepare(State& st, std::vector<Guarded>& bufs, std::uint8_t poison) {
  for (auto& g : bufs) {
    KQUAL_CU(cuMemsetD8Async, g.mem.get(), kGuardByte, g.total(), st.stream->get());
    st.stream->synchronize();
    if (g.kind == "input") {
      g.mem.upload(g.input.data(), g.bytes, g.guard + g.offset);
    } else {
      KQUAL_CU(cuMemsetD8Async, g.view(), poison, g.bytes, st.stream->get());
    }
  }
  st.stream->synchronize();
}

struct Plan {
  struct L {
    cuda::Function f;
    unsigned grid[3], block[3], shared;
    std::vector<std::vector<std::uint8_t>> storage;
    std::vector<void*> ptrs;
    std::unique_ptr<cuda::LibraryCall> library;  // set for a library launch (then f is unused)
  };
  std::vector<L> launches;
};

// A library launch: arguments bound and temporary storage (CUB temp bytes, cuBLAS workspace)
// allocated here, at plan time, so that the timed region is exactly the library call.
CUdeviceptr view_of(const std::vector<Guarded>& bufs, const std::string& name) {
  auto it = std::find_if(bufs.begin(), bufs.end(), [&](const Guarded& g) { return g.name == name; });
  if (it == bufs.end()) throw_error(ErrorKind::internal, "launch argument names unknown buffer '" + name + "'");
  return it->view();
}

std::unique_ptr<cuda::LibraryCall> make_library_call(State& st, const Launch& l, const std::vector<Guarded>& bufs) {
  std::vector<CUdeviceptr> ptrs;
  std::vector<std::int64_t> scalars;
  for (const auto& a : l.args) {
    if (!a.buffer.empty()) ptrs.push_back(view_of(bufs, a.buffer));
    else scalars.push_back(a.scalar);
  }
  st.context();  // cudart and cuBLAS use the primary context, current on this thread
  return std::make_unique<cuda::LibraryCall>(l.library, std::move(ptrs), std::move(scalars), st.stream->get());
}

Plan make_plan(State& st, const std::string& module, const std::vector<Launch>& launches, const std::vector<Guarded>& bufs) {
  Plan p;
  cuda::Module* m = nullptr;  // library-only plans have no module
  for (const auto& l : launches) {
    Plan::L x;
    if (!l.library.empty()) {
      x.library = make_library_call(st, l, bufs);
      p.launches.push_back(std::move(x));
      continue;
    }
    if (!m) m = &st.module(module);
    x.f = m->function(l.kernel);
    for (std::size_t i = 0; i < 3; ++i) {
      if (l.grid[i] < 1 || l.grid[i] > 0x7fffffff || l.block[i] < 1 || l.block[i] > 1024)
        throw_error(ErrorKind::internal, fmt::format("launch of {}: grid/block dimension {} out of range", l.kernel, i));
      x.grid[i] = unsigned(l.grid[i]);
      x.block[i] = unsigned(l.block[i]);
    }
    if (l.shared < 0) throw_error(ErrorKind::internal, fmt::format("launch of {}: negative shared bytes", l.kernel));
    x.shared = unsigned(l.shared);
    if (x.shared > 48 * 1024) x.f.set_max_dynamic_shared(int(x.shared));
    for (const auto& a : l.args) {
      std::vector<std::uint8_t> s;
      if (!a.buffer.empty()) {
        CUdeviceptr v = view_of(bufs, a.buffer);
        s.resize(sizeof v);
        std::memcpy(s.data(), &v, sizeof v);
      } else {
        if (a.size != 4 && a.size != 8) throw_error(ErrorKind::internal, fmt::format("scalar argument of {} bytes", a.size));
        s.resize(std::size_t(a.size));
        std::memcpy(s.data(), &a.scalar, s.size());  // little-endian: the low bytes of the value
      }
      x.storage.push_back(std::move(s));
    }
    for (auto& s : x.storage) x.ptrs.push_back(s.data());
    p.launches.push_back(std::move(x));
  }
  return p;
}

void enqueue(State& st, Plan& p) {
  for (auto& l : p.launches)
    if (l.library) l.library->enqueue(st.stream->get());
    else cuda::launch(l.f, l.grid[0], l.grid[1], l.grid[2], l.block[0], l.block[1], l.block[2], l.shared, st.stream->get(),
                 l.ptrs.data());
}

std::vector<GuardViolation> check_guards(const Guarded& g) {
  std::vector<GuardViolation> v;
  std::vector<std::uint8_t> pre(g.guard + g.offset), post(g.guard);
  g.mem.download(pre.data(), pre.size(), 0);
  g.mem.download(post.data(), post.size(), g.guard + g.offset + g.bytes);
  auto scan = [&](const std::vector<std::uint8_t>& r, const char* side, std::int64_t base) {
    std::int64_t count = 0, first = -1;
    for (std::size_t i = 0; i < r.size(); ++i)
      if (r[i] != kGuardByte) {
        if (first < 0) first = std::int64_t(i);
        ++count;
      }
    if (count) v.push_back({g.name, side, count, base + first});  // offset relative to the view start
  };
  scan(pre, "before", -std::int64_t(pre.size()));
  scan(post, "after", std::int64_t(g.bytes));
  return v;
}

RunReply op_run(State& st, const RunRequest& req) {
  st.context();
  auto bufs = allocate(req.buffers, req.guard_bytes);
  Plan plan = make_plan(st, req.module, req.launches, bufs);
  RunReply reply;
  for (std::size_t r = 0; r < req.poison.size(); ++r) {
    const std::uint8_t poison = req.poison[r];
    prepare(st, bufs, poison);
    cuda::Event start, stop;
    start.record(st.stream->get());
    enqueue(st, plan);
    stop.record(st.stream->get());
    st.stream->synchronize();
    RunResult run;
    run.poison = poison;
    run.kernel_ms = cuda::Event::elapsed_ms(start, stop);
    for (auto& g : bufs) {
      for (auto& v : check_guards(g)) run.guard_violations.push_back(v);
      if (g.kind == "input") {
        std::vector<std::uint8_t> after(g.bytes);
        g.mem.download(after.data(), g.bytes, g.guard + g.offset);
        std::uint64_t hb = fast_hash64(g.input.data(), g.bytes), ha = fast_hash64(after.data(), g.bytes);
        std::int64_t first = -1;
        if (hb != ha || std::memcmp(after.data(), g.input.data(), g.bytes) != 0) {
          for (std::size_t i = 0; i < g.bytes; ++i)
            if (after[i] != g.input.data()[i]) { first = std::int64_t(i); break; }
        }
        run.inputs.push_back({g.name, fmt::format("{:016x}", hb), fmt::format("{:016x}", ha), first});
      } else if (g.kind == "output") {
        MappedFile out = MappedFile::create(req.out_files.at(g.name).at(r), g.bytes);
        g.mem.download(out.data(), g.bytes, g.guard + g.offset);
      }
    }
    reply.runs.push_back(std::move(run));
  }
  return reply;
}

BenchReply op_bench(State& st, const BenchRequest& req) {
  cuda::Context& ctx = st.context();
  auto bufs = allocate(req.buffers, req.guard_bytes);
  Plan plan = make_plan(st, req.module, req.launches, bufs);
  prepare(st, bufs, 0xFF);
  const bool flush = req.flush;
  // An L2 flush: write a buffer twice the L2 size before every sample (outside the timed region).
  std::size_t flush_bytes = std::size_t(std::max(ctx.info().l2_bytes, 1 << 20)) * 2;
  cuda::DeviceBuffer flush_buf(flush ? flush_bytes : 0);
  const bool clean = flush && req.flush_mode == "clean";
  cuda::Function clean_fn;
  cuda::DeviceBuffer clean_out(clean ? 4 : 0);
  std::uint64_t clean_words = flush_bytes / 4;
  CUdeviceptr flush_ptr = flush ? flush_buf.get() : 0, clean_out_ptr = clean ? clean_out.get() : 0;
  void* clean_args[] = {&flush_ptr, &clean_words, &clean_out_ptr};
  const unsigned clean_blocks = unsigned(std::max(ctx.info().sms, 1)) * 8;
  if (clean) {
    if (!st.l2_clean_module) {
      cuda::NvrtcRequest nr;
      nr.source = kL2CleanSource;
      nr.source_name = "kqual_l2_clean.cu";
      nr.arch = ctx.info().arch();
      const cuda::NvrtcResult built = cuda::nvrtc_compile(nr);
      st.l2_clean_module = std::make_unique<cuda::Module>(std::span<const std::uint8_t>(built.image));
    }
    clean_fn = st.l2_clean_module->function("kqual_l2_clean");
  }
  const int warmup = req.warmup, min_samples = req.min_samples, max_samples = req.max_samples;
  const double max_seconds = req.max_seconds, target_noise = req.target_rel_noise;
  cuda::Event start, stop;
  auto one = [&](std::uint32_t salt) {
    if (flush) KQUAL_CU(cuMemsetD32Async, flush_buf.get(), 0x5A5A0000u + salt, flush_bytes / 4, st.stream->get());
    if (clean) cuda::launch(clean_fn, clean_blocks, 1, 1, 256, 1, 1, 0, st.stream->get(), clean_args);
    start.record(st.stream->get());
    enqueue(st, plan);
    stop.record(st.stream->get());
    stop.synchronize();
    return double(cuda::Event::elapsed_ms(start, stop));
  };
  BenchReply reply;
  for (int i = 0; i < warmup; ++i) reply.warmup_ms.push_back(one(std::uint32_t(i)));
  std::vector<double> samples;
  auto t0 = std::chrono::steady_clock::now();
  const stats::StoppingRule rule{min_samples, max_samples, max_seconds, target_noise};
  std::string stop_reason;
  while (stop_reason.empty()) {
    samples.push_back(one(std::uint32_t(samples.size() + 1000)));
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    stop_reason = stats::stop_reason(rule, samples, elapsed);
  }
  // The last timed output goes back as a file (full comparison in the coordinator) and/or as a
  // 64-bit hash of its bytes (the coordinator compares it with the expected bytes' hash: bit-exact
  // contracts re-check a timed output without moving it through files).
  for (auto& g : bufs) {
    if (g.kind != "output") continue;
    if (req.out_files.count(g.name)) {
      MappedFile out = MappedFile::create(req.out_files.at(g.name), g.bytes);
      g.mem.download(out.data(), g.bytes, g.guard + g.offset);
      if (req.out_hashes) reply.out_hashes[g.name] = fmt::format("{:016x}", fast_hash64(out.data(), g.bytes));
    } else if (req.out_hashes) {
      std::vector<std::uint8_t> host(g.bytes);
      g.mem.download(host.data(), g.bytes, g.guard + g.offset);
      reply.out_hashes[g.name] = fmt::format("{:016x}", fast_hash64(host.data(), g.bytes));
    }
  }
  for (auto& g : bufs)
    for (auto& v : check_guards(g)) reply.guard_violations.push_back(v);
  reply.samples_ms = std::move(samples);
  reply.flush_bytes = flush ? flush_bytes : 0;
  reply.stop_reason = stop_reason;
  return reply;
}

CopyBenchReply op_copy_bench(State& st, const CopyBenchRequest& req) {
  cuda::Context& ctx = st.context();
  const std::size_t bytes = req.bytes;
  const int samples = req.samples;
  cuda::DeviceBuffer a(bytes), b(bytes);
  KQUAL_CU(cuMemsetD8Async, a.get(), 0x3C, bytes, st.stream->get());
  std::size_t flush_bytes = std::size_t(std::max(ctx.info().l2_bytes, 1 << 20)) * 2;
  cuda::DeviceBuffer flush_buf(flush_bytes);
  cuda::Event start, stop;
  CopyBenchReply reply;
  reply.bytes = bytes;
  for (int i = -3; i < samples; ++i) {
    KQUAL_CU(cuMemsetD32Async, flush_buf.get(), std::uint32_t(i), flush_bytes / 4, st.stream->get());
    start.record(st.stream->get());
    KQUAL_CU(cuMemcpyDtoDAsync, b.get(), a.get(), bytes, st.stream->get());
    stop.record(st.stream->get());
    stop.synchronize();
    if (i >= 0) reply.samples_ms.push_back(cuda::Event::elapsed_ms(start, stop));
  }
  return reply;
}

// The crash and hang ops exist for the coordinator's fault-handling tests only: a worker honours
// them when its environment sets KQUAL_WORKER_TEST_HOOKS=1 (tests/worker sets it), never otherwise.
bool test_hooks_enabled() {
  const char* e = std::getenv("KQUAL_WORKER_TEST_HOOKS");
  return e && std::string(e) == "1";
}

json handle(State& st, const json& req) {
  std::string op = req.at("op");
  if (op == "ping") return json{{"ok", true}, {"pid", getpid()}};
  if (test_hooks_enabled()) {
    if (op == "crash") {  // the coordinator must survive a dying worker
      std::fflush(stderr);
      raise(SIGSEGV);
    }
    if (op == "hang") {  // the watchdog must fire
      for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
    }
  }
  if (op == "hello") {
    std::string why = cuda::driver_unavailable_reason();
    if (!why.empty()) return json{{"ok", false}, {"error", why}, {"no_device", true}};
    return to_json(HelloReply{device_json(st.context().info())});
  }
  if (op == "load") {
    const LoadRequest r = load_request_from_json(req);
    cuda::Module& m = st.module(r.module);
    LoadReply reply{json::object()};
    for (const auto& name : r.kernels) reply.kernels[name] = attributes_json(m.function(name));
    return to_json(reply);
  }
  if (op == "library_info") {  // load the libraries a candidate calls; report their versions
    st.context();
    LibraryInfoReply reply;
    for (const auto& name : library_info_request_from_json(req).libraries) {
      auto* r = cuda::find_library_routine(cuda::split_library_name(name).routine);
      if (!r) throw_error(ErrorKind::input, "unknown library routine '" + name + "'");
      if (r->library == "CUB") reply.versions["CUB"] = cuda::cub_version();
      if (r->library == "cuBLAS") reply.versions["cuBLAS"] = cuda::cublas_version();
    }
    return to_json(reply);
  }
  if (op == "run") return to_json(op_run(st, run_request_from_json(req)));
  if (op == "bench") return to_json(op_bench(st, bench_request_from_json(req)));
  if (op == "copy_bench") return to_json(op_copy_bench(st, copy_bench_request_from_json(req)));
  throw_error(ErrorKind::internal, "unknown worker op '" + op + "'");
}

bool write_all(int fd, const std::string& s) {
  for (std::size_t off = 0; off < s.size();) {
    ssize_t n = ::write(fd, s.data() + off, s.size() - off);
    if (n <= 0) return false;
    off += std::size_t(n);
  }
  return true;
}

}  // namespace

int run_worker(int in_fd, int out_fd) {
  State st;
  std::string buf;
  char chunk[65536];
  for (;;) {
    auto nl = buf.find('\n');
    if (nl == std::string::npos) {
      ssize_t n = ::read(in_fd, chunk, sizeof chunk);
      if (n <= 0) return 0;  // coordinator closed the pipe
      buf.append(chunk, std::size_t(n));
      continue;
    }
    std::string line = buf.substr(0, nl);
    buf.erase(0, nl + 1);
    json reply;
    bool exit_after = false;
    try {
      json req = json::parse(line);
      if (req.value("op", "") == "exit") return 0;
      reply = handle(st, req);
    } catch (const cuda::CudaError& e) {
      reply = json{{"ok", false}, {"error", e.what()}, {"kind", "cuda"}, {"cuda_error", cuda::error_name(e.code())},
                   {"sticky", e.sticky()}};
      exit_after = e.sticky();
    } catch (const Error& e) {
      reply = json{{"ok", false}, {"error", e.what()}, {"kind", to_string(e.kind())}};
    } catch (const std::exception& e) {
      reply = json{{"ok", false}, {"error", e.what()}, {"kind", "internal"}};
    }
    if (!write_all(out_fd, reply.dump() + "\n")) return 1;
    if (exit_after) _exit(3);  // the context is unusable; skip destructors that would call into it
  }
}

}  // namespace kqual::worker
