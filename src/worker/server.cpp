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
#include <set>
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
#include "server_internal.hpp"
#include "worker_kernels.hpp"

namespace kqual::worker::detail {



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


bool write_all(int fd, const std::string& s);

void harness_phase(State& st, const std::string& what) {
  if (st.harness == what) return;
  st.harness = what;
  if (st.out_fd >= 0) (void)write_all(st.out_fd, json{{"phase", what}}.dump() + "\n");
}

std::vector<Guarded> allocate(const std::vector<Buffer>& buffers, std::size_t guard, const std::string& placement,
                              const std::vector<std::string>& trap_only) {
  std::vector<Guarded> bufs;
  for (const auto& b : buffers) {
    Guarded g(b, guard);
    if (g.aliased()) {  // its input's view, set below once every buffer has its memory
      bufs.push_back(std::move(g));
      continue;
    }
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
  for (auto& g : bufs) {
    if (!g.aliased()) continue;
    auto in = std::find_if(bufs.begin(), bufs.end(), [&](const Guarded& x) { return x.name == g.aliases && !x.aliased(); });
    if (in == bufs.end() || in->kind != BufferKind::input || in->bytes != g.bytes)
      throw_error(ErrorKind::internal, fmt::format("output '{}' aliases '{}', which is not an input of its size", g.name, g.aliases));
    g.alias_view = in->view();
  }
  return bufs;
}

// The inputs an output of the request aliases: meant to change during the launch.
std::set<std::string> aliased_inputs(const std::vector<Guarded>& bufs) {
  std::set<std::string> names;
  for (const auto& g : bufs)
    if (g.aliased()) names.insert(g.aliases);
  return names;
}

void generate_input(State& st, const Guarded& g, std::uint64_t seed, const std::string& generator) {
  if (generator.empty()) throw_error(ErrorKind::internal, "generated input without a generator module");
  cuda::Function f = st.module(generator).function("kqual_generate");
  CUdeviceptr p = g.view();
  const std::size_t es = generated_element_bytes(g.gen_dtype);
  unsigned long long n = g.bytes / es, sd = seed;
  int stream = g.gen_stream, dtype = g.gen_dtype;
  void* args[] = {&p, &n, &sd, &stream, &dtype};
  cuda::launch(f, unsigned(std::max(st.context().info().sms, 1)) * 16, 1, 1, 256, 1, 1, 0, st.stream->get(), args);
}

void prepare(State& st, std::vector<Guarded>& bufs, std::uint8_t poison, int dataset, const std::string& generator) {
  for (auto& g : bufs) {
    if (g.aliased()) continue;  // its input is uploaded (and guarded) below; poisoning it would erase the input
    if (!g.trapped()) {
      KQUAL_CU(cuMemsetD8Async, g.mem.get(), kGuardByte, g.total(), st.stream->get());
      st.stream->synchronize();
    }
    if (g.kind == BufferKind::input && g.gen_stream >= 0) {
      generate_input(st, g, g.gen_seed, generator);
    } else if (g.kind == BufferKind::input) {
      const MappedFile& f = dataset == 1 && g.alt_input ? *g.alt_input : *g.input;
      if (g.bytes) KQUAL_CU(cuMemcpyHtoD, g.view(), f.data(), g.bytes);
    } else {
      KQUAL_CU(cuMemsetD8Async, g.view(), poison, g.bytes, st.stream->get());
    }
  }
  st.stream->synchronize();
  // cuMemcpyHtoD from pageable memory returns once the bytes are staged, before the DMA has landed,
  // and it runs on the legacy stream, which the candidate's non-blocking stream does not wait for:
  // a kernel launched next could read the inputs before they arrive (seen on the H200 with several
  // workers sharing the GPU: inputs read as zeros). The context waits for the copies here.
  KQUAL_CU(cuCtxSynchronize);
}

// A library launch: arguments bound and temporary storage (CUB temp bytes, cuBLAS workspace)
// allocated here, at plan time, so that the timed region is exactly the library call.
CUdeviceptr view_of(const std::vector<Guarded>& bufs, const std::string& name,
                    const std::map<std::string, CUdeviceptr>* views = nullptr) {
  if (views)
    if (auto v = views->find(name); v != views->end()) return v->second;
  auto it = std::find_if(bufs.begin(), bufs.end(), [&](const Guarded& g) { return g.name == name; });
  if (it == bufs.end()) throw_error(ErrorKind::internal, "launch argument names unknown buffer '" + name + "'");
  return it->view();
}

std::unique_ptr<cuda::LibraryCall> make_library_call(State& st, const Launch& l, const std::vector<Guarded>& bufs,
                                                     const std::map<std::string, CUdeviceptr>* views) {
  std::vector<CUdeviceptr> ptrs;
  std::vector<std::int64_t> scalars;
  for (const auto& a : l.args) {
    if (!a.buffer.empty()) ptrs.push_back(view_of(bufs, a.buffer, views));
    else scalars.push_back(a.scalar);
  }
  st.context();  // cudart and cuBLAS use the primary context, current on this thread
  return std::make_unique<cuda::LibraryCall>(l.library, std::move(ptrs), std::move(scalars), st.stream->get());
}

Plan make_plan(State& st, const std::string& module, const std::vector<Launch>& launches, const std::vector<Guarded>& bufs,
               const std::map<std::string, CUdeviceptr>* views) {
  Plan p;
  cuda::Module* m = nullptr;  // library-only plans have no module
  for (const auto& l : launches) {
    Plan::L x;
    if (!l.library.empty()) {
      x.library = make_library_call(st, l, bufs, views);
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
        CUdeviceptr v = view_of(bufs, a.buffer, views);
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
  if (g.aliased() || g.trapped() || g.guard == 0) return v;  // an aliased output lies inside its input's guards
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

// The number of chunk hashes of an output view (Buffer::chunk_elements).
std::size_t chunk_count(const Guarded& g) {
  const std::uint64_t esize = std::max<std::size_t>(g.elem_bytes, 1), n = g.bytes / esize, chunk = g.chunk_elements;
  if (chunk == 0 || chunk % 32 != 0) throw_error(ErrorKind::worker, fmt::format("chunk_elements {} is not a multiple of 32", chunk));
  return std::size_t((n + chunk - 1) / chunk);
}

void enqueue_chunk_hashes(State& st, const Guarded& g, CUdeviceptr out) {
  const std::uint64_t esize = std::max<std::size_t>(g.elem_bytes, 1), n = g.bytes / esize, chunk = g.chunk_elements;
  const std::size_t chunks = chunk_count(g);
  if (g.view() % esize != 0) throw_error(ErrorKind::worker, fmt::format("output '{}' view is not aligned to its elements", g.name));
  if (!chunks) return;
  KQUAL_CU(cuMemsetD8Async, out, 0, chunks * 8, st.stream->get());
  CUdeviceptr v = g.view(), o = out;
  unsigned long long nn = n, cc = chunk;
  unsigned int es = unsigned(esize);
  void* args[] = {&v, &nn, &es, &cc, &o};
  cuda::launch(st.own("kqual_chunk_hash"), unsigned(std::max(st.context().info().sms, 1)) * 8, 1, 1, 256, 1, 1, 0,
               st.stream->get(), args);
}

// Per-chunk hashes of an output view, read back as one array.
std::vector<std::uint64_t> chunk_hashes(State& st, const Guarded& g) {
  const std::size_t chunks = chunk_count(g);
  std::vector<std::uint64_t> h(chunks, 0);
  if (!chunks) return h;
  cuda::DeviceBuffer out(chunks * 8);
  enqueue_chunk_hashes(st, g, out.get());
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
      harness_phase(st, "allocating the case's buffers");
      bufs = allocate(req.buffers, req.guard_bytes, placement, req.trap_only);
      harness_phase(st, "");  // the plan is the candidate's: its launch dimensions and shared memory
      plan = make_plan(st, req.module, req.launches, bufs);
      placed = placement;
    }
    if (!req.gen_seeds.empty())
      for (auto& g : bufs)
        if (g.gen_stream >= 0) g.gen_seed = req.gen_seeds[r];
    harness_phase(st, "uploading inputs and poisoning outputs");
    prepare(st, bufs, poison, 0, req.generator_module);
    // Generated inputs are hashed on the device before and after the launch (no host copy).
    std::map<std::string, std::string> gen_before;
    for (const auto& g : bufs)
      if (g.kind == BufferKind::input && g.gen_stream >= 0) gen_before[g.name] = device_hash(st, g);
    if (!req.scribble.empty() && req.scribble[r] >= 0) scribble_shared(st, std::uint8_t(req.scribble[r]));
    harness_phase(st, "");
    cuda::Event start, stop;
    start.record(st.stream->get());
    enqueue(st, plan);
    stop.record(st.stream->get());
    st.stream->synchronize();
    RunResult run;
    run.poison = poison;
    run.kernel_ms = cuda::Event::elapsed_ms(start, stop);
    // The candidate's launches have finished (a fault of theirs surfaced at the synchronise above).
    harness_phase(st, "reading the outputs back");
    const std::set<std::string> in_place = aliased_inputs(bufs);
    for (auto& g : bufs) {
      for (auto& v : check_guards(g)) run.guard_violations.push_back(v);
      if (g.kind == BufferKind::input && g.gen_stream >= 0) {
        const std::string before = gen_before.at(g.name), after = device_hash(st, g);
        run.inputs.push_back({g.name, before, after, before == after ? -1 : 0});
      } else if (g.kind == BufferKind::output && !g.windows.empty()) {
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
      } else if (g.kind == BufferKind::output && g.chunk_elements) {
        run.chunk_hashes[g.name] = chunk_hashes(st, g);
        run.poison_scans.push_back(scan_poison(st, g, poison));
      } else if (g.kind == BufferKind::input && in_place.count(g.name)) {
        continue;  // overwritten on purpose: its bytes come back as the output that aliases it
      } else if (g.kind == BufferKind::input) {
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
      } else if (g.kind == BufferKind::output) {
        MappedFile out = MappedFile::create(req.out_files.at(g.name).at(r), g.bytes);
        g.download_view(out.data());
      }
    }
    reply.runs.push_back(std::move(run));
  }
  harness_phase(st, "");
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
  st.harness.clear();  // each op starts unmarked; the client forgets the last call's phase too
  if (op == "ping") return json{{"ok", true}, {"pid", getpid()}};
  if (test_hooks_enabled()) {
    if (op == "crash_in_harness") {  // a worker lost during kqual's own work (the upload)
      harness_phase(st, "uploading inputs and poisoning outputs");
      std::fflush(stderr);
      raise(SIGSEGV);
    }
    if (op == "fail_in_harness") {  // kqual's own allocation failing (out of memory)
      harness_phase(st, "allocating the case's buffers");
      throw cuda::CudaError(CUDA_ERROR_OUT_OF_MEMORY, "cuMemAlloc(1 TiB) failed: CUDA_ERROR_OUT_OF_MEMORY (test hook)");
    }
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
      if (r->library == "cuBLASLt") reply.versions["cuBLASLt"] = cuda::cublaslt_version();
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

}  // namespace kqual::worker::detail

namespace kqual::worker {

int run_worker(int in_fd, int out_fd) {
  using namespace detail;
  State st;
  st.out_fd = out_fd;
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
      // A request kqual wrote that this worker cannot take (the protocol's checks): kqual's failure, never
      // the candidate's, which has not run.
      if (e.kind() == ErrorKind::worker) reply["harness"] = "reading kqual's request";
    } catch (const std::exception& e) {
      reply = json{{"ok", false}, {"error", e.what()}, {"kind", "internal"}};
    }
    // A sticky error is the device's state after the candidate ran, wherever it surfaced: only a
    // recoverable one during kqual's own work (an allocation, a copy) is kqual's.
    if (!st.harness.empty() && !reply.value("ok", true) && !exit_after) reply["harness"] = st.harness;
    if (!write_all(out_fd, reply.dump() + "\n")) return 1;
    if (exit_after) _exit(3);  // the context is unusable; skip destructors that would call into it
  }
}

}  // namespace kqual::worker
