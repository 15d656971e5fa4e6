// The worker process: owns the CUDA context, every allocation and every launch.
#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <thread>

#include "kqual/core/error.hpp"
#include "kqual/core/files.hpp"
#include "kqual/core/sha256.hpp"
#include "kqual/cuda/cupti.hpp"
#include "kqual/cuda/library.hpp"
#include "kqual/cuda/nvml.hpp"
#include "kqual/cuda/nvrtc.hpp"
#include "kqual/cuda/objects.hpp"
#include "kqual/stats/stopping.hpp"
#include "kqual/stats/summary.hpp"
#include "kqual/worker/protocol.hpp"
#include "kqual/worker/worker.hpp"
#include "worker_kernels.hpp"

namespace kqual::worker {
namespace {

constexpr std::uint8_t kGuardByte = 0xA5;


struct State {
  std::unique_ptr<cuda::Context> ctx;
  std::unique_ptr<cuda::Module> own_module;  // kWorkerKernelsSource, compiled on first use
  std::map<std::string, std::shared_ptr<cuda::Module>> modules;  // by path
  std::unique_ptr<cuda::Stream> stream;

  cuda::Context& context() {
    if (!ctx) {
      ctx = std::make_unique<cuda::Context>(0);
      stream = std::make_unique<cuda::Stream>();
    }
    return *ctx;
  }
  cuda::Function own(const char* name) {
    if (!own_module) {
      cuda::NvrtcRequest nr;
      nr.source = kWorkerKernelsSource;
      nr.source_name = "kqual_worker_kernels.cu";
      nr.arch = context().info().arch();
      const cuda::NvrtcResult built = cuda::nvrtc_compile(nr);
      own_module = std::make_unique<cuda::Module>(std::span<const std::uint8_t>(built.image));
    }
    return own_module->function(name);
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

// One buffer. Guarded placement: [guard | offset | view (bytes) | guard] in one allocation. Trap
// placements (inputs): the view against an unmapped page (cuda::TrappedAllocation), no guards.
struct Guarded {
  std::string name, kind;
  std::size_t bytes = 0, offset = 0, guard = 0;
  cuda::DeviceBuffer mem;
  cuda::TrappedAllocation trap;
  CUdeviceptr trap_view = 0;
  std::shared_ptr<MappedFile> input, alt_input;  // host data for inputs (shared by buffer sets)
  int gen_stream = -1, gen_dtype = 0;             // generated inputs (no host data)
  std::uint64_t gen_seed = 0;
  std::size_t elem_bytes = 0;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> windows;
  std::uint64_t chunk_elements = 0;  // Buffer::chunk_elements
  bool trapped() const { return trap_view != 0; }
  CUdeviceptr view() const { return trapped() ? trap_view : mem.get() + guard + offset; }
  std::size_t total() const { return guard + offset + bytes + guard; }
  void download_view(void* dst) const {
    if (bytes) KQUAL_CU(cuMemcpyDtoH, dst, view(), bytes);
  }
};

std::vector<Guarded> allocate(const std::vector<Buffer>& buffers, std::size_t guard, const std::string& placement = "guarded",
                              const std::vector<std::string>& trap_only = {}) {
  std::vector<Guarded> bufs;
  for (const auto& b : buffers) {
    Guarded g;
    g.name = b.name;
    g.kind = to_string(b.kind);
    g.bytes = b.bytes;
    g.offset = b.offset;
    g.guard = guard;
    const bool trap = b.kind == BufferKind::input && placement != "guarded" &&
                      (trap_only.empty() || std::find(trap_only.begin(), trap_only.end(), b.name) != trap_only.end());
    if (trap) {
      const std::size_t align = std::max<std::size_t>(b.align, 1);
      // A platform without virtual memory management (or out of address space) cannot place an
      // input against an unmapped page: that check is not run, and the coordinator must not take
      // the failure for the candidate's (kTrapUnavailable names it in the reply).
      try {
        if (placement == "trap_after") {
          g.trap = cuda::TrappedAllocation(b.bytes + align, cuda::TrappedAllocation::Side::after);
          CUdeviceptr start = g.trap.mapped_end() - b.bytes;
          start -= (start - b.offset) % align;  // keep the view's alignment class
          g.trap_view = start;
        } else {
          g.trap = cuda::TrappedAllocation(b.bytes + 256, cuda::TrappedAllocation::Side::before);
          g.trap_view = g.trap.mapped() + b.offset % 256;
        }
      } catch (const cuda::CudaError& e) {
        if (e.sticky()) throw;
        throw_error(ErrorKind::unsupported, fmt::format("{} input '{}': {}", kTrapUnavailable, b.name, e.what()));
      } catch (const Error& e) {
        throw_error(ErrorKind::unsupported, fmt::format("{} input '{}': {}", kTrapUnavailable, b.name, e.what()));
      }
    } else {
      g.mem = cuda::DeviceBuffer(g.total());
    }
    g.gen_stream = b.gen_stream;
    g.gen_seed = b.gen_seed;
    g.gen_dtype = b.gen_dtype;
    g.elem_bytes = b.elem_bytes;
    g.windows = b.windows;
    g.chunk_elements = b.chunk_elements;
    if (b.kind == BufferKind::input && !b.generated()) {
      auto open = [&](const std::string& file) {
        auto f = std::make_shared<MappedFile>(MappedFile::open_read(file));
        if (f->size() != g.bytes)
          throw_error(ErrorKind::internal, fmt::format("input file for '{}' has {} bytes, expected {}", g.name, f->size(), g.bytes));
        return f;
      };
      g.input = open(b.file);
      if (!b.alt_file.empty()) g.alt_input = open(b.alt_file);
    }
    bufs.push_back(std::move(g));
  }
  return bufs;
}

// Guard everything, upload (or generate) inputs (dataset 0 or 1), poison outputs and scratch.
void prepare(State& st, std::vector<Guarded>& bufs, std::uint8_t poison, int dataset = 0, const std::string& generator = "") {
  for (auto& g : bufs) {
    if (!g.trapped()) {
      KQUAL_CU(cuMemsetD8Async, g.mem.get(), kGuardByte, g.total(), st.stream->get());
      st.stream->synchronize();
    }
    if (g.kind == "input" && g.gen_stream >= 0) {
      if (generator.empty()) throw_error(ErrorKind::internal, "generated input without a generator module");
      cuda::Function f = st.module(generator).function("kqual_generate");
      CUdeviceptr p = g.view();
      const std::size_t es = g.gen_dtype == 1 ? 2 : 4;
      unsigned long long n = g.bytes / es, seed = g.gen_seed;
      int stream = g.gen_stream, dtype = g.gen_dtype;
      void* args[] = {&p, &n, &seed, &stream, &dtype};
      cuda::launch(f, unsigned(std::max(st.context().info().sms, 1)) * 16, 1, 1, 256, 1, 1, 0, st.stream->get(), args);
    } else if (g.kind == "input") {
      const MappedFile& f = dataset == 1 && g.alt_input ? *g.alt_input : *g.input;
      if (g.bytes) KQUAL_CU(cuMemcpyHtoD, g.view(), f.data(), g.bytes);
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
  if (g.trapped() || g.guard == 0) return v;
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

// The order-independent device hash (kqual_hash) of a buffer's view, as 16 hex digits.
std::string device_hash(State& st, const Guarded& g) {
  cuda::DeviceBuffer out(8);
  KQUAL_CU(cuMemsetD32Async, out.get(), 0u, 2, st.stream->get());
  CUdeviceptr first = g.view() & ~CUdeviceptr(3), o = out.get();
  unsigned long long words = (g.view() + g.bytes - first + 3) / 4;
  void* args[] = {&first, &words, &o};
  cuda::launch(st.own("kqual_hash"), unsigned(std::max(st.context().info().sms, 1)) * 4, 1, 1, 256, 1, 1, 0, st.stream->get(), args);
  std::uint64_t h = 0;
  st.stream->synchronize();
  out.download(&h, 8);
  return fmt::format("{:016x}", h);
}

// Per-chunk hashes of an output view (Buffer::chunk_elements), read back as one array.
std::vector<std::uint64_t> chunk_hashes(State& st, const Guarded& g) {
  const std::uint64_t esize = std::max<std::size_t>(g.elem_bytes, 1), n = g.bytes / esize, chunk = g.chunk_elements;
  if (chunk == 0 || chunk % 32 != 0) throw_error(ErrorKind::worker, fmt::format("chunk_elements {} is not a multiple of 32", chunk));
  if (g.view() % esize != 0) throw_error(ErrorKind::worker, fmt::format("output '{}' view is not aligned to its elements", g.name));
  const std::size_t chunks = std::size_t((n + chunk - 1) / chunk);
  std::vector<std::uint64_t> h(chunks, 0);
  if (!chunks) return h;
  cuda::DeviceBuffer out(chunks * 8);
  KQUAL_CU(cuMemsetD8Async, out.get(), 0, chunks * 8, st.stream->get());
  CUdeviceptr v = g.view(), o = out.get();
  unsigned long long nn = n, cc = chunk;
  unsigned int es = unsigned(esize);
  void* args[] = {&v, &nn, &es, &cc, &o};
  cuda::launch(st.own("kqual_chunk_hash"), unsigned(std::max(st.context().info().sms, 1)) * 8, 1, 1, 256, 1, 1, 0,
               st.stream->get(), args);
  st.stream->synchronize();
  out.download(h.data(), chunks * 8);
  return h;
}

// Elements of an output still holding the poison byte in every byte.
PoisonScan scan_poison(State& st, const Guarded& g, std::uint8_t poison) {
  PoisonScan p;
  p.name = g.name;
  cuda::DeviceBuffer out(16);
  std::uint64_t init[2] = {0, ~std::uint64_t(0)};
  out.upload(init, 16);
  CUdeviceptr v = g.view(), count = out.get(), first = out.get() + 8;
  unsigned long long n = g.bytes / std::max<std::size_t>(g.elem_bytes, 1);
  unsigned int esize = unsigned(std::max<std::size_t>(g.elem_bytes, 1)), pat = poison;
  void* args[] = {&v, &n, &esize, &pat, &count, &first};
  cuda::launch(st.own("kqual_count_poison"), unsigned(std::max(st.context().info().sms, 1)) * 8, 1, 1, 256, 1, 1, 0,
               st.stream->get(), args);
  st.stream->synchronize();
  std::uint64_t res[2];
  out.download(res, 16);
  p.poisoned = res[0];
  p.first = res[0] ? std::int64_t(res[1]) : -1;
  return p;
}

// Fills every SM's shared memory with `pattern` (one block of the largest opt-in size per SM, twice
// over), so a kernel reading shared memory it never wrote sees these bytes.
void scribble_shared(State& st, std::uint8_t pattern) {
  const cuda::DeviceInfo& d = st.context().info();
  cuda::Function f = st.own("kqual_smem_scribble");
  const int bytes = std::max(d.max_shared_per_block_optin, 48 * 1024);
  if (bytes > 48 * 1024) f.set_max_dynamic_shared(bytes);
  unsigned int words = unsigned(bytes / 4), word = 0x01010101u * pattern;
  void* args[] = {&words, &word};
  cuda::launch(f, unsigned(std::max(d.sms, 1)) * 2, 1, 1, 1024, 1, 1, unsigned(bytes), st.stream->get(), args);
}

RunReply op_run(State& st, const RunRequest& req) {
  st.context();
  RunReply reply;
  std::vector<Guarded> bufs;
  Plan plan;
  std::string placed;  // the placement bufs were allocated for
  for (std::size_t r = 0; r < req.poison.size(); ++r) {
    const std::uint8_t poison = req.poison[r];
    const std::string placement = req.placements.empty() ? "guarded" : req.placements[r];
    if (bufs.empty() || placement != placed) {
      plan = Plan{};
      bufs.clear();
      bufs = allocate(req.buffers, req.guard_bytes, placement, req.trap_only);
      plan = make_plan(st, req.module, req.launches, bufs);
      placed = placement;
    }
    prepare(st, bufs, poison, 0, req.generator_module);
    // Generated inputs are hashed on the device before and after the launch (no host copy).
    std::map<std::string, std::string> gen_before;
    for (const auto& g : bufs)
      if (g.kind == "input" && g.gen_stream >= 0) gen_before[g.name] = device_hash(st, g);
    if (!req.scribble.empty() && req.scribble[r] >= 0) scribble_shared(st, std::uint8_t(req.scribble[r]));
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
      if (g.kind == "input" && g.gen_stream >= 0) {
        const std::string before = gen_before.at(g.name), after = device_hash(st, g);
        run.inputs.push_back({g.name, before, after, before == after ? -1 : 0});
      } else if (g.kind == "output" && !g.windows.empty()) {
        std::size_t total = 0;
        for (const auto& [w0, wn] : g.windows) total += std::size_t(wn) * g.elem_bytes;
        MappedFile out = MappedFile::create(req.out_files.at(g.name).at(r), total);
        std::size_t at = 0;
        for (const auto& [w0, wn] : g.windows) {
          const std::size_t nb = std::size_t(wn) * g.elem_bytes;
          if (nb) KQUAL_CU(cuMemcpyDtoH, out.data() + at, g.view() + std::size_t(w0) * g.elem_bytes, nb);
          at += nb;
        }
        run.poison_scans.push_back(scan_poison(st, g, poison));
      } else if (g.kind == "output" && g.chunk_elements) {
        run.chunk_hashes[g.name] = chunk_hashes(st, g);
        run.poison_scans.push_back(scan_poison(st, g, poison));
      } else if (g.kind == "input") {
        std::vector<std::uint8_t> after(g.bytes);
        g.download_view(after.data());
        const std::uint8_t* before = g.input->data();
        std::uint64_t hb = fast_hash64(before, g.bytes), ha = fast_hash64(after.data(), g.bytes);
        std::int64_t first = -1;
        if (hb != ha || std::memcmp(after.data(), before, g.bytes) != 0) {
          for (std::size_t i = 0; i < g.bytes; ++i)
            if (after[i] != before[i]) { first = std::int64_t(i); break; }
        }
        run.inputs.push_back({g.name, fmt::format("{:016x}", hb), fmt::format("{:016x}", ha), first});
      } else if (g.kind == "output") {
        MappedFile out = MappedFile::create(req.out_files.at(g.name).at(r), g.bytes);
        g.download_view(out.data());
      }
    }
    reply.runs.push_back(std::move(run));
  }
  return reply;
}

// Device hashes of outputs, written into slots of a device array (read back once at the end).
struct OutputHasher {
  cuda::Function f;
  cuda::DeviceBuffer slots;
  std::size_t capacity = 0;
  unsigned blocks = 1;
  void enqueue(CUstream s, const Guarded& g, std::size_t slot) {
    if (slot >= capacity) throw_error(ErrorKind::internal, "output hash slots exhausted");
    CUdeviceptr out = slots.get() + slot * 8;
    KQUAL_CU(cuMemsetD32Async, out, 0u, 2, s);
    // Whole 4-byte words covering the view (the partial words at its ends hold guard bytes).
    CUdeviceptr first = g.view() & ~CUdeviceptr(3);
    unsigned long long words = (g.view() + g.bytes - first + 3) / 4;
    void* args[] = {&first, &words, &out};
    cuda::launch(f, blocks, 1, 1, 256, 1, 1, 0, s, args);
  }
  std::vector<std::string> read(std::size_t n) const {
    std::vector<std::uint64_t> h(n);
    if (n) KQUAL_CU(cuMemcpyDtoH, h.data(), slots.get(), n * 8);
    std::vector<std::string> out;
    for (auto x : h) out.push_back(fmt::format("{:016x}", x));
    return out;
  }
};

BenchReply op_bench(State& st, const BenchRequest& req) {
  cuda::Context& ctx = st.context();
  CUstream stream = st.stream->get();
  // Two datasets when the inputs come with a second one; then two buffer sets, so every reuse of an
  // address brings other values (sample i: set i % 2, dataset (i / 2) % 2).
  bool two = false;
  for (const auto& b : req.buffers) two = two || (b.kind == BufferKind::input && !b.alt_file.empty());
  std::vector<std::vector<Guarded>> sets;
  std::vector<Plan> plans;
  for (int k = 0; k < (two ? 2 : 1); ++k) {
    sets.push_back(allocate(req.buffers, req.guard_bytes));
    plans.push_back(make_plan(st, req.module, req.launches, sets.back()));
    prepare(st, sets.back(), 0xFF);
  }
  // Both datasets resident on the device; copied into a set's inputs before a sample (untimed).
  std::map<std::string, std::array<cuda::DeviceBuffer, 2>> datasets;
  if (two)
    for (const auto& g : sets[0]) {
      if (g.kind != "input") continue;
      auto& d = datasets[g.name];
      d[0] = cuda::DeviceBuffer(g.bytes);
      d[0].upload(g.input->data(), g.bytes);
      d[1] = cuda::DeviceBuffer(g.bytes);
      d[1].upload((g.alt_input ? g.alt_input : g.input)->data(), g.bytes);
    }
  const bool flush = req.flush;
  // An L2 flush: write a buffer twice the L2 size before every sample (outside the timed region).
  std::size_t flush_bytes = std::size_t(std::max(ctx.info().l2_bytes, 1 << 20)) * 2;
  cuda::DeviceBuffer flush_buf(flush ? flush_bytes : 0);
  const bool clean = flush && req.flush_mode == "clean";
  const bool invalidate = flush && req.flush_mode == "invalidate";
  if (invalidate && ctx.info().cc_major < 8)
    throw_error(ErrorKind::cuda, fmt::format("L2 flush mode 'invalidate' needs sm_80 or newer (PTX discard.global.L2); this is {}",
                                             ctx.info().arch()));
  cuda::Function clean_fn, discard_fn;
  cuda::DeviceBuffer clean_out(clean ? 4 : 0);
  std::uint64_t clean_words = flush_bytes / 4, discard_lines = flush_bytes / 128;
  CUdeviceptr flush_ptr = flush ? flush_buf.get() : 0, clean_out_ptr = clean ? clean_out.get() : 0;
  void* clean_args[] = {&flush_ptr, &clean_words, &clean_out_ptr};
  void* discard_args[] = {&flush_ptr, &discard_lines};
  const unsigned clean_blocks = unsigned(std::max(ctx.info().sms, 1)) * 8;
  if (invalidate) discard_fn = st.own("kqual_l2_discard");
  if (clean) clean_fn = st.own("kqual_l2_clean");
  std::vector<std::string> outputs;
  for (const auto& g : sets[0])
    if (g.kind == "output") outputs.push_back(g.name);
  const int warmup = req.warmup, min_samples = req.min_samples, max_samples = req.max_samples;
  OutputHasher hasher;
  const bool checked = req.check_samples && !outputs.empty();
  if (checked) {
    hasher.f = st.own("kqual_hash");
    hasher.capacity = (std::size_t(std::max(warmup, 0) + std::max(max_samples, 1) + std::max(req.max_discards, 0)) + 2) * outputs.size();
    hasher.slots = cuda::DeviceBuffer(hasher.capacity * 8);
    hasher.blocks = unsigned(std::max(ctx.info().sms, 1)) * 4;
  }
  const double max_seconds = req.max_seconds, target_noise = req.target_rel_noise;
  cuda::Event start, stop;
  std::size_t launches = 0;
  std::vector<int> launch_dataset;
  BenchReply reply;
  reply.timer = req.timer;
  // The timer: CUPTI's kernel records, or a CUDA graph of the plan (captured after the warm-up).
  std::unique_ptr<cuda::KernelActivity> activity;
  if (req.timer == "cupti") {
    std::string why;
    activity = cuda::KernelActivity::start(&why);
    if (!activity) throw_error(ErrorKind::cuda, "timer 'cupti' is not available: " + why);
  }
  const bool graph = req.timer == "graph";
  std::vector<cuda::GraphExec> graphs;
  int per_replay = 1;
  // The clock guard (NVML).
  std::unique_ptr<cuda::DeviceClocks> clocks;
  if (req.clock_guard) {
    std::string why = "the driver gave no PCI bus id for the device";
    if (!ctx.info().pci_bus_id.empty()) clocks = cuda::DeviceClocks::open(ctx.info().pci_bus_id, &why);
    if (!clocks) reply.clocks_note = "clocks not read: " + why;
    else reply.reference_sm_mhz = clocks->reference_sm_mhz();
  } else {
    reply.clocks_note = "clocks not read: clock guard off";
  }
  std::uint64_t next_id = 0, last_id = 0;
  // One launch of set `k` on dataset `d`: inputs refreshed (two datasets), outputs poisoned, the L2
  // flushed, the plan timed, the outputs hashed; everything but the plan outside the events.
  auto one = [&](std::uint32_t salt, std::size_t k, int d, bool hash) {
    std::vector<Guarded>& bufs = sets[k];
    for (auto& g : bufs) {
      if (g.kind == "input" && two)
        KQUAL_CU(cuMemcpyDtoDAsync, g.view(), datasets.at(g.name)[std::size_t(d)].get(), g.bytes, stream);
      else if (g.kind == "output" && checked)
        KQUAL_CU(cuMemsetD8Async, g.view(), 0xFF, g.bytes, stream);
    }
    if (flush) KQUAL_CU(cuMemsetD32Async, flush_buf.get(), 0x5A5A0000u + salt, flush_bytes / 4, stream);
    if (clean) cuda::launch(clean_fn, clean_blocks, 1, 1, 256, 1, 1, 0, stream, clean_args);
    if (invalidate) cuda::launch(discard_fn, clean_blocks, 1, 1, 256, 1, 1, 0, stream, discard_args);
    start.record(stream);
    if (graph && !graphs.empty()) {
      graphs[k].launch(stream);
    } else {
      last_id = ++next_id;
      if (activity) activity->push(last_id);
      enqueue(st, plans[k]);
      if (activity) activity->pop();
    }
    stop.record(stream);
    if (hash && checked) {
      std::size_t o = 0;
      for (const auto& g : bufs)
        if (g.kind == "output") hasher.enqueue(stream, g, launches * outputs.size() + o++);
      launch_dataset.push_back(d);
      ++launches;
    }
    stop.synchronize();
    return double(cuda::Event::elapsed_ms(start, stop)) / (graph && !graphs.empty() ? per_replay : 1);
  };
  auto set_of = [&](std::size_t i) { return two ? i % 2 : 0; };
  auto dataset_of = [&](std::size_t i) { return two ? int((i / 2) % 2) : 0; };
  std::size_t i_all = 0;
  for (int i = 0; i < warmup; ++i, ++i_all) reply.warmup_ms.push_back(one(std::uint32_t(i), set_of(i_all), dataset_of(i_all), true));
  if (graph) {
    // Enough launches per replay for about 1 ms (a launch's time from the warm-up, or one more run).
    double t = reply.warmup_ms.empty() ? one(0, set_of(i_all), dataset_of(i_all), false) : stats::median(reply.warmup_ms);
    per_replay = req.graph_launches > 0 ? req.graph_launches : int(std::clamp(std::ceil(1.0 / std::max(t, 1e-4)), 1.0, 10000.0));
    for (std::size_t k = 0; k < plans.size(); ++k)
      graphs.push_back(cuda::GraphExec::capture(stream, [&] {
        for (int l = 0; l < per_replay; ++l) enqueue(st, plans[k]);
      }));
    reply.graph_launches = per_replay;
  }
  std::vector<double> samples;
  std::vector<std::uint64_t> sample_ids;
  auto t0 = std::chrono::steady_clock::now();
  const stats::StoppingRule rule{min_samples, max_samples, max_seconds, target_noise};
  std::string stop_reason;
  std::size_t attempt = 0;
  while (stop_reason.empty()) {
    const double v = one(std::uint32_t(samples.size() + 1000 + attempt), set_of(i_all), dataset_of(i_all), true);
    ++i_all;
    ++attempt;
    bool keep = true;
    if (clocks) {
      const cuda::ClockReading c = clocks->read();
      reply.max_temperature_c = std::max(reply.max_temperature_c, c.temperature_c);
      const unsigned ref = clocks->reference_sm_mhz();
      const bool slow = ref && c.sm_mhz && double(c.sm_mhz) < req.clock_share * double(ref);
      const std::uint64_t throttling = c.reasons & cuda::clock_reason::throttling;
      if (slow || throttling) {
        const bool discard = reply.discarded < req.max_discards;
        if (reply.clock_events.size() < 20)
          reply.clock_events.push_back(fmt::format("sample attempt {}: SM {} MHz ({:.0f} % of {}){}{}; {}", attempt, c.sm_mhz,
                                                   ref ? 100.0 * c.sm_mhz / ref : 0.0, ref, throttling ? ", " : "",
                                                   cuda::describe_clock_reasons(throttling), discard ? "discarded" : "kept (guard exhausted)"));
        if (discard) {
          keep = false;
          ++reply.discarded;
          std::this_thread::sleep_for(std::chrono::milliseconds(std::max(req.backoff_ms, 0)));
        } else {
          reply.clock_guard_exhausted = true;
        }
      }
      if (keep) {
        reply.sm_clock_mhz.push_back(c.sm_mhz);
        reply.mem_clock_mhz.push_back(c.mem_mhz);
      }
    }
    if (keep) {
      samples.push_back(v);
      sample_ids.push_back(last_id);
    }
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    stop_reason = samples.empty() ? (elapsed > max_seconds * 4 ? "time_cap" : "") : stats::stop_reason(rule, samples, elapsed);
  }
  if (samples.empty()) throw_error(ErrorKind::cuda, "every sample was discarded by the clock guard: " + reply.clock_events.front());
  if (activity) {
    // The kernels' own start and end (CUPTI) replace the event intervals; those are kept beside.
    const auto spans = activity->collect();
    reply.event_ms = samples;
    for (std::size_t i = 0; i < samples.size(); ++i) {
      auto it = spans.find(sample_ids[i]);
      if (it == spans.end())
        throw_error(ErrorKind::cuda, fmt::format("timer 'cupti': no kernel record for sample {} (a plan without kernels, or "
                                                 "CUPTI lost records)", i + 1));
      samples[i] = it->second.ms();
      reply.kernels_per_sample.push_back(it->second.kernels);
    }
    activity.reset();
  }
  st.stream->synchronize();
  if (checked) {
    std::vector<std::string> all = hasher.read(launches * outputs.size());
    for (std::size_t o = 0; o < outputs.size(); ++o)
      for (std::size_t l = 0; l < launches; ++l) reply.sample_hashes[outputs[o]].push_back(all[l * outputs.size() + o]);
    reply.sample_datasets = launch_dataset;
  }
  // Each dataset once more, untimed, in set 0: its output comes back as a file and/or a 64-bit
  // host hash (the coordinator compares it with the reference: bit-exact contracts without moving
  // it through files), and its device hash is the one every timed launch on that dataset must equal.
  for (int d = 0; d < (two ? 2 : 1); ++d) {
    const std::size_t before = launches;
    one(0xF00u + std::uint32_t(d), 0, d, true);
    st.stream->synchronize();
    if (checked) {
      std::vector<std::string> fin = hasher.read(launches * outputs.size());
      for (std::size_t o = 0; o < outputs.size(); ++o) reply.final_hashes[outputs[o]].push_back(fin[before * outputs.size() + o]);
    }
    const auto& files = d == 0 ? req.out_files : req.alt_out_files;
    auto& hashes = d == 0 ? reply.out_hashes : reply.alt_out_hashes;
    for (auto& g : sets[0]) {
      if (g.kind != "output") continue;
      if (files.count(g.name)) {
        MappedFile out = MappedFile::create(files.at(g.name), g.bytes);
        g.download_view(out.data());
        if (req.out_hashes) hashes[g.name] = fmt::format("{:016x}", fast_hash64(out.data(), g.bytes));
      } else if (req.out_hashes) {
        std::vector<std::uint8_t> host(g.bytes);
        g.download_view(host.data());
        hashes[g.name] = fmt::format("{:016x}", fast_hash64(host.data(), g.bytes));
      }
    }
  }
  for (auto& bufs : sets)
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
