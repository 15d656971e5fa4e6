#pragma once
// Internal to src/worker/: the worker process's state, its buffers and launch plans, shared by
// server.cpp (the protocol loop, runs), bench_op.cpp (timed samples) and the timers
// (timers/timers.hpp). Not a public header.
#include <fmt/format.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kqual/core/error.hpp"
#include "kqual/core/files.hpp"
#include "kqual/cuda/library.hpp"
#include "kqual/cuda/nvrtc.hpp"
#include "kqual/cuda/objects.hpp"
#include "kqual/worker/protocol.hpp"
#include "worker_kernels.hpp"

namespace kqual::worker::detail {

constexpr std::uint8_t kGuardByte = 0xA5;

struct State {
  // What kqual's own work in this op is doing ("" while the candidate's plan is built, launched and
  // synchronised): a failure while it is set is kqual's (harness_error), never the candidate's.
  std::string harness;
  int out_fd = -1;  // the reply descriptor: phase lines go there too (harness_phase)
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

// One buffer, allocated as the request describes it (the Buffer: name, kind, bytes, offset, generation,
// windows, chunk hashes; gen_seed may change per run). Guarded placement: [guard | offset | view
// (bytes) | guard] in one allocation. Trap placements (inputs): the view against an unmapped page
// (cuda::TrappedAllocation), no guards.
struct Guarded : Buffer {
  Guarded(const Buffer& b, std::size_t guard_bytes) : Buffer(b), guard(guard_bytes) {}
  std::size_t guard = 0;
  cuda::DeviceBuffer mem;
  cuda::TrappedAllocation trap;
  CUdeviceptr trap_view = 0;
  CUdeviceptr alias_view = 0;  // an output in place (Buffer::aliases): its input's view, no memory of its own
  std::shared_ptr<MappedFile> input, alt_input;  // host data for inputs (shared by buffer sets)
  bool trapped() const { return trap_view != 0; }
  bool aliased() const { return !aliases.empty(); }
  CUdeviceptr view() const { return aliased() ? alias_view : trapped() ? trap_view : mem.get() + guard + offset; }
  std::size_t total() const { return aliased() ? 0 : guard + offset + bytes + guard; }
  void download_view(void* dst) const {
    if (bytes) KQUAL_CU(cuMemcpyDtoH, dst, view(), bytes);
  }
};

// Marks the start of kqual's own work (`what`: "allocating and filling buffers") or, with "", of the
// candidate's part. The coordinator is told by a phase line on the reply descriptor, so a worker lost
// while kqual's own work ran is kqual's failure even though no reply comes.
void harness_phase(State& st, const std::string& what);

std::vector<Guarded> allocate(const std::vector<Buffer>& buffers, std::size_t guard, const std::string& placement = "guarded",
                              const std::vector<std::string>& trap_only = {});
// Guard everything, upload (or generate) inputs (dataset 0 or 1), poison outputs and scratch.
void prepare(State& st, std::vector<Guarded>& bufs, std::uint8_t poison, int dataset = 0, const std::string& generator = "");
// Fills a generated input (Guarded::gen_stream >= 0) with kqual_generate under `seed`, on the stream.
void generate_input(State& st, const Guarded& g, std::uint64_t seed, const std::string& generator);

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

// `views` replaces the pointer of the buffers it names (a plan bound to other output copies).
Plan make_plan(State& st, const std::string& module, const std::vector<Launch>& launches, const std::vector<Guarded>& bufs,
               const std::map<std::string, CUdeviceptr>* views = nullptr);
void enqueue(State& st, Plan& p);
std::vector<GuardViolation> check_guards(const Guarded& g);
// The order-independent device hash (kqual_hash) of a buffer's view, as 16 hex digits.
std::string device_hash(State& st, const Guarded& g);
// Per-chunk hashes of an output view (Buffer::chunk_elements), read back as one array.
std::vector<std::uint64_t> chunk_hashes(State& st, const Guarded& g);
// The number of chunk hashes of an output with chunk_elements, and the kernel that writes them into
// `out` (chunk_count words, zeroed first) on the worker's stream.
std::size_t chunk_count(const Guarded& g);
void enqueue_chunk_hashes(State& st, const Guarded& g, CUdeviceptr out);

// bench_op.cpp
BenchReply op_bench(State& st, const BenchRequest& req);
CopyBenchReply op_copy_bench(State& st, const CopyBenchRequest& req);

}  // namespace kqual::worker::detail
