// The worker's timed samples (op "bench") and the device copy bandwidth (op "copy_bench").
//
// Every launch, warm-up and timed, is checked: its outputs are poisoned before it and hashed after
// it, outside the timed window, and the hash is copied to the host before anything of the
// candidate's runs again (a hash left in device memory until the end could be rewritten
// by a later launch). Inputs either come from the coordinator's files (two datasets alternating
// over two buffer sets) or, with fresh_inputs, are generated on the device before every launch
// from a seed no launch shares, so a kernel cannot keep one answer per dataset and pick it by
// reading an input word. The timed window itself is the timer's (src/worker/timers/: events, cupti,
// graph); a timer whose window holds several launches gives each its own poisoned output copy, and
// every copy is hashed: a kernel that does its work only while its output holds the poison does it
// in every launch or is caught.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <map>
#include <optional>
#include <span>
#include <thread>

#include "kqual/cuda/nvml.hpp"
#include "kqual/stats/stopping.hpp"
#include "server_internal.hpp"
#include "timers/timers.hpp"

namespace kqual::worker::detail {
namespace {

// Every launch's output hashes go into slots (64-bit words) of one device array and are read back
// to the host after every sample: one slot per output (kqual_hash), or one per chunk for outputs
// with chunk_elements (kqual_chunk_hash, combined on the host, comparable with a reference run's).
// A slot keeps the value it was read back with until the next sample hashes into it; just before
// that, its content is copied aside (a shadow word, read back with the new hashes): a slot that no
// longer holds the value read back was written by something other than kqual's hash kernels -- the
// candidate (reported as "harness_memory_written"). Read back after every sample, a rewritten slot
// cannot change a hash the coordinator judges; the shadow names the attempt.
struct OutputHasher {
  cuda::Function f;
  cuda::DeviceBuffer slots;  // [capacity slots | capacity shadows], 8 bytes each
  std::size_t capacity = 0;
  unsigned blocks = 1;
  std::vector<std::uint64_t> read_back;  // each slot's value when last read (slots 0..size-1)
  std::string written;                   // the first rewritten slot, described
  CUdeviceptr slot(std::size_t i) const { return slots.get() + i * 8; }
  // Before slots [first, first + n) are written again: their content copied to the shadows.
  void shadow(CUstream s, std::size_t first, std::size_t n) {
    if (first + n > capacity) throw_error(ErrorKind::internal, "output hash slots exhausted");
    const std::size_t watched = first < read_back.size() ? std::min(n, read_back.size() - first) : 0;
    if (watched) KQUAL_CU(cuMemcpyDtoDAsync, slot(capacity + first), slot(first), watched * 8, s);
  }
  void enqueue(CUstream s, CUdeviceptr view, std::size_t bytes, std::size_t at) {
    shadow(s, at, 1);
    CUdeviceptr out = slot(at);
    KQUAL_CU(cuMemsetD32Async, out, 0u, 2, s);
    // Whole 4-byte words covering the view (the partial words at its ends hold guard bytes).
    CUdeviceptr first = view & ~CUdeviceptr(3);
    unsigned long long words = (view + bytes - first + 3) / 4;
    void* args[] = {&first, &words, &out};
    cuda::launch(f, blocks, 1, 1, 256, 1, 1, 0, s, args);
  }
  // The n slots of this sample; `what` names the sample for a rewritten slot's description.
  std::vector<std::uint64_t> read(std::size_t n, const std::string& what) {
    std::vector<std::uint64_t> h(n), shadows(std::min(n, read_back.size()));
    if (n) KQUAL_CU(cuMemcpyDtoH, h.data(), slot(0), n * 8);
    if (!shadows.empty()) KQUAL_CU(cuMemcpyDtoH, shadows.data(), slot(capacity), shadows.size() * 8);
    for (std::size_t i = 0; i < shadows.size() && written.empty(); ++i)
      if (shadows[i] != read_back[i])
        written = fmt::format("kqual's output hash slot {} (device address 0x{:x}) held {:016x} when it was read back and {:016x} "
                              "before the hash of {} was taken: a kernel of the candidate wrote into kqual's own device memory",
                              i, slot(i), read_back[i], shadows[i], what);
    if (read_back.size() < n) read_back.resize(n);
    std::copy(h.begin(), h.end(), read_back.begin());
    return h;
  }
};

// The global of a candidate's module that receives the hash slots' address (give_hash_slots).
constexpr const char* kHashSlotsGlobal = "kqual_test_hash_slots";

// The timed buffer sets and their plans. Two datasets when the inputs come with a second one; then
// two buffer sets, so every reuse of an address brings other values (sample i: set i % 2, dataset
// (i / 2) % 2), both datasets resident on the device and copied into a set's inputs before a sample
// (untimed). Fresh inputs need neither: every launch has values no other launch had.
struct BenchSets {
  bool two = false;
  std::vector<std::vector<Guarded>> sets;
  std::vector<Plan> plans;
  std::map<std::string, std::array<cuda::DeviceBuffer, 2>> datasets;
};

BenchSets make_bench_sets(State& st, const BenchRequest& req) {
  BenchSets b;
  for (const auto& buf : req.buffers) b.two = b.two || (!req.fresh_inputs && buf.kind == BufferKind::input && !buf.alt_file.empty());
  for (int k = 0; k < (b.two ? 2 : 1); ++k) {
    harness_phase(st, "allocating the timed buffers");
    b.sets.push_back(allocate(req.buffers, req.guard_bytes));
    harness_phase(st, "");  // the plan is the candidate's
    b.plans.push_back(make_plan(st, req.module, req.launches, b.sets.back()));
    harness_phase(st, "uploading inputs and poisoning outputs");
    prepare(st, b.sets.back(), 0xFF, 0, req.generator_module);
  }
  if (b.two)
    for (const auto& g : b.sets[0]) {
      if (g.kind != BufferKind::input) continue;
      auto& d = b.datasets[g.name];
      d[0] = cuda::DeviceBuffer(g.bytes);
      d[0].upload(g.input->data(), g.bytes);
      d[1] = cuda::DeviceBuffer(g.bytes);
      d[1].upload((g.alt_input ? g.alt_input : g.input)->data(), g.bytes);
    }
  return b;
}

// The L2 flush before every sample (outside the timed window): a buffer twice the L2 size written
// ("write"), then read back so its dirty lines are written back ("clean"), or its lines discarded
// ("invalidate", PTX discard.global.L2, sm_80+).
class BenchL2Flush {
 public:
  BenchL2Flush(State& st, const BenchRequest& req)
      : on_(req.flush),
        clean_(on_ && req.flush_mode == "clean"),
        invalidate_(on_ && req.flush_mode == "invalidate"),
        bytes_(std::size_t(std::max(st.context().info().l2_bytes, 1 << 20)) * 2),
        buf_(on_ ? bytes_ : 0),
        clean_out_(clean_ ? 4 : 0),
        blocks_(unsigned(std::max(st.context().info().sms, 1)) * 8) {
    const auto& info = st.context().info();
    if (invalidate_ && info.cc_major < 8)
      throw_error(ErrorKind::cuda, fmt::format("L2 flush mode 'invalidate' needs sm_80 or newer (PTX discard.global.L2); this is {}",
                                               info.arch()));
    if (invalidate_) discard_fn_ = st.own("kqual_l2_discard");
    if (clean_) clean_fn_ = st.own("kqual_l2_clean");
  }
  void enqueue(CUstream s, std::uint32_t salt) {
    if (!on_) return;
    KQUAL_CU(cuMemsetD32Async, buf_.get(), 0x5A5A0000u + salt, bytes_ / 4, s);
    CUdeviceptr ptr = buf_.get(), out = clean_ ? clean_out_.get() : 0;
    std::uint64_t words = bytes_ / 4, lines = bytes_ / 128;
    void* clean_args[] = {&ptr, &words, &out};
    void* discard_args[] = {&ptr, &lines};
    if (clean_) cuda::launch(clean_fn_, blocks_, 1, 1, 256, 1, 1, 0, s, clean_args);
    if (invalidate_) cuda::launch(discard_fn_, blocks_, 1, 1, 256, 1, 1, 0, s, discard_args);
  }
  std::size_t bytes() const { return on_ ? bytes_ : 0; }

 private:
  bool on_, clean_, invalidate_;
  std::size_t bytes_;
  cuda::DeviceBuffer buf_, clean_out_;
  unsigned blocks_;
  cuda::Function clean_fn_, discard_fn_;
};

// The clock guard: the SM clock (NVML) read after every sample; a sample during which it fell below
// clock_share of the reference clock, or a power/thermal/hardware slowdown was active, is discarded
// and the worker backs off, until max_discards; then the rest are kept and flagged.
class BenchClockGuard {
 public:
  void open(const cuda::Context& ctx, const BenchRequest& req, BenchReply& reply) {
    req_ = &req;
    if (!req.clock_guard) {
      reply.clocks_note = "clocks not read: clock guard off";
      return;
    }
    std::string why = "the driver gave no PCI bus id for the device";
    if (!ctx.info().pci_bus_id.empty()) clocks_ = cuda::DeviceClocks::open(ctx.info().pci_bus_id, &why);
    if (!clocks_) reply.clocks_note = "clocks not read: " + why;
    else reply.reference_sm_mhz = clocks_->reference_sm_mhz();
  }
  // After sample attempt `attempt` (from 1): whether its sample is kept; the clocks and any event
  // go into the reply.
  bool keep(std::size_t attempt, BenchReply& reply) {
    if (!clocks_) return true;
    const cuda::ClockReading c = clocks_->read();
    reply.max_temperature_c = std::max(reply.max_temperature_c, c.temperature_c);
    const unsigned ref = clocks_->reference_sm_mhz();
    const bool slow = ref && c.sm_mhz && double(c.sm_mhz) < req_->clock_share * double(ref);
    const std::uint64_t throttling = c.reasons & cuda::clock_reason::throttling;
    bool kept = true;
    if (slow || throttling) {
      const bool discard = reply.discarded < req_->max_discards;
      if (reply.clock_events.size() < 20)
        reply.clock_events.push_back(fmt::format("sample attempt {}: SM {} MHz ({:.0f} % of {}){}{}; {}", attempt, c.sm_mhz,
                                                 ref ? 100.0 * c.sm_mhz / ref : 0.0, ref, throttling ? ", " : "",
                                                 cuda::describe_clock_reasons(throttling), discard ? "discarded" : "kept (guard exhausted)"));
      if (discard) {
        kept = false;
        ++reply.discarded;
        std::this_thread::sleep_for(std::chrono::milliseconds(std::max(req_->backoff_ms, 0)));
      } else {
        reply.clock_guard_exhausted = true;
      }
    }
    if (kept) {
      reply.sm_clock_mhz.push_back(c.sm_mhz);
      reply.mem_clock_mhz.push_back(c.mem_mhz);
    }
    return kept;
  }

 private:
  const BenchRequest* req_ = nullptr;
  std::unique_ptr<cuda::DeviceClocks> clocks_;
};

// One bench call: the buffer sets and their plans, the L2 flush, the timer, the clock guard, the
// output hash slots, and the reply they fill. op_bench runs its steps in order.
class BenchCall {
 public:
  BenchCall(State& st, const BenchRequest& req);
  void warm_up();
  void take_samples();
  void rerun_datasets();
  BenchReply finish();

 private:
  std::size_t set_of(std::size_t i) const { return sets_.two ? i % 2 : 0; }
  int dataset_of(std::size_t i) const { return sets_.two ? int((i / 2) % 2) : 0; }
  void size_hasher(std::size_t copies);
  double launch(std::uint32_t salt, std::size_t k, int d, const std::string& what);
  void record_hashes(std::size_t k, int d, std::uint64_t seed, const std::string& what);
  void save_outputs(std::size_t k);
  void return_dataset_outputs(int d);

  State& st_;
  const BenchRequest& req_;
  cuda::Context& ctx_;
  CUstream stream_;
  BenchSets sets_;
  BenchL2Flush flush_;
  std::vector<std::string> outputs_;
  std::size_t output_bytes_ = 0;
  bool checked_ = false;  // every launch's outputs poisoned before it and hashed after it
  BenchReply reply_;
  std::unique_ptr<Timer> timer_;
  BenchClockGuard clocks_;
  // kqual selftest only: where to hand the slots' address to a known-broken candidate that stands
  // for a kernel which found kqual's memory ([expect] given_hash_slots; its module's u64 global).
  CUdeviceptr slots_global_ = 0;
  OutputHasher hasher_;
  std::map<std::size_t, std::size_t> save_slot_;  // launch index -> position in save_files
  std::size_t launches_ = 0;  // checked launches so far (a timed window of several launches counts once)
  std::size_t i_all_ = 0;     // launches that chose a set and dataset so far
  std::vector<double> samples_;
  std::string stop_reason_;
};

BenchCall::BenchCall(State& st, const BenchRequest& req)
    : st_(st), req_(req), ctx_(st.context()), stream_(st.stream->get()), sets_(make_bench_sets(st, req)), flush_(st, req) {
  for (const auto& g : sets_.sets[0])
    if (g.kind == BufferKind::output) outputs_.push_back(g.name), output_bytes_ += g.bytes;
  checked_ = req.check_samples && !outputs_.empty();
  reply_.timer = req.timer;
  timer_ = make_timer(req.timer, TimedPlans{st, req, sets_.sets, sets_.plans, checked_, output_bytes_});
  timer_->set_up();
  clocks_.open(ctx_, req, reply_);
  if (req.give_hash_slots) {
    const std::optional<cuda::Module::Global> g = st.module(req.module).global(kHashSlotsGlobal);
    if (!g || g->bytes != 8)
      throw_error(ErrorKind::input, fmt::format("give_hash_slots: the candidate's module has no 8-byte global '{}'", kHashSlotsGlobal));
    slots_global_ = g->address;
  }
  size_hasher(1);
  for (std::size_t i = 0; i < req.save_launches.size(); ++i) save_slot_[req.save_launches[i]] = i;
  // From here the candidate's launches and kqual's checks of them interleave: a failure is not
  // told apart, and stays the candidate's.
  harness_phase(st, "");
}

// Slots for `copies` output copies per sample: one per chunk for chunk-hashed outputs, else one.
void BenchCall::size_hasher(std::size_t copies) {
  std::size_t words_per_copy = 0;
  for (const auto& g : sets_.sets[0])
    if (g.kind == BufferKind::output) words_per_copy += g.chunk_elements ? chunk_count(g) : 1;
  const std::size_t per_sample = words_per_copy * copies;
  if (!checked_ || per_sample <= hasher_.capacity) return;
  hasher_.f = st_.own("kqual_hash");
  hasher_.capacity = per_sample;
  hasher_.slots = cuda::DeviceBuffer(per_sample * 16);
  hasher_.read_back.clear();
  hasher_.blocks = unsigned(std::max(ctx_.info().sms, 1)) * 4;
  if (slots_global_) {
    const std::uint64_t address = hasher_.slots.get();
    KQUAL_CU(cuMemcpyHtoD, slots_global_, &address, 8);
  }
}

// One launch of set k on dataset d: inputs refreshed (two datasets) or generated (fresh), outputs
// and the timer's output copies poisoned, the L2 flushed, the timer's window, the outputs hashed;
// everything but the plan outside the window.
double BenchCall::launch(std::uint32_t salt, std::size_t k, int d, const std::string& what) {
  const bool fresh = req_.fresh_inputs;
  const std::uint64_t seed = fresh ? fresh_seed(req_.fresh_base, launches_) : 0;
  for (auto& g : sets_.sets[k]) {
    if (g.kind == BufferKind::input && fresh && g.gen_stream >= 0)
      generate_input(st_, g, seed, req_.generator_module);
    else if (g.kind == BufferKind::input && sets_.two)
      KQUAL_CU(cuMemcpyDtoDAsync, g.view(), sets_.datasets.at(g.name)[std::size_t(d)].get(), g.bytes, stream_);
    else if (g.kind == BufferKind::output && checked_)
      KQUAL_CU(cuMemsetD8Async, g.view(), 0xFF, g.bytes, stream_);
  }
  if (checked_)
    for (const auto& copy : timer_->output_copies(k))
      for (const auto& g : copy) KQUAL_CU(cuMemsetD8Async, g.view(), 0xFF, g.bytes, stream_);
  flush_.enqueue(stream_, salt);
  const double ms = timer_->time(k);
  if (checked_) record_hashes(k, d, seed, what);
  return ms;
}

// The hashes of one launch's output copies, in slots read back before the candidate runs again:
// chunk hashes combined (outputs with chunk_elements) or one kqual_hash.
void BenchCall::record_hashes(std::size_t k, int d, std::uint64_t seed, const std::string& what) {
  const std::span<const std::vector<Guarded>> more = timer_->output_copies(k);
  const std::size_t n_copies = 1 + more.size();
  struct Entry {
    std::string name;
    std::size_t first, n;
    bool chunked;
  };
  std::vector<Entry> entries;
  std::size_t next_slot = 0;
  for (std::size_t c = 0; c < n_copies; ++c) {
    const std::vector<Guarded>& bufs = c == 0 ? sets_.sets[k] : more[c - 1];
    for (const auto& g : bufs) {
      if (g.kind != BufferKind::output) continue;
      if (g.chunk_elements) {
        const std::size_t n = chunk_count(g);
        hasher_.shadow(stream_, next_slot, n);
        enqueue_chunk_hashes(st_, g, hasher_.slot(next_slot));
        entries.push_back({g.name, next_slot, n, true});
        next_slot += n;
      } else {
        hasher_.enqueue(stream_, g.view(), g.bytes, next_slot);
        entries.push_back({g.name, next_slot, 1, false});
        next_slot += 1;
      }
    }
    reply_.sample_datasets.push_back(d);
    reply_.launch_seeds.push_back(seed);
    reply_.hash_what.push_back(n_copies > 1 ? fmt::format("{}, launch {} of {} in the replay", what, c + 1, n_copies) : what);
  }
  if (next_slot) {
    st_.stream->synchronize();
    const std::vector<std::uint64_t> h = hasher_.read(next_slot, what);
    if (!hasher_.written.empty() && reply_.harness_memory_written.empty()) reply_.harness_memory_written = hasher_.written;
    for (const auto& e : entries)
      reply_.sample_hashes[e.name].push_back(
          e.chunked ? combine_chunk_hashes(std::vector<std::uint64_t>(h.begin() + std::ptrdiff_t(e.first), h.begin() + std::ptrdiff_t(e.first + e.n)))
                    : fmt::format("{:016x}", h[e.first]));
  }
  save_outputs(k);
  ++launches_;
}

// The outputs of this launch as files, when the coordinator chose it (save_launches).
void BenchCall::save_outputs(std::size_t k) {
  const auto slot = save_slot_.find(launches_);
  if (slot == save_slot_.end()) return;
  const std::size_t at = slot->second;
  for (const auto& g : sets_.sets[k]) {
    if (g.kind != BufferKind::output) continue;
    auto it = req_.save_files.find(g.name);
    if (it == req_.save_files.end() || at >= it->second.size())
      throw_error(ErrorKind::worker, fmt::format("worker protocol: 'bench' save_files has no path {} for output '{}'", at, g.name));
    MappedFile out = MappedFile::create(it->second[at], g.bytes);
    g.download_view(out.data());
  }
}

// The warm-up launches (times reported), then what the timer makes of a timed launch from here on.
void BenchCall::warm_up() {
  for (int i = 0; i < req_.warmup; ++i, ++i_all_)
    reply_.warmup_ms.push_back(launch(std::uint32_t(i), set_of(i_all_), dataset_of(i_all_), fmt::format("warm-up launch {}", i + 1)));
  // A launch the timer asks for (no warm-up to learn from) takes the set and dataset of the first
  // sample, which follows it.
  timer_->after_warmup(reply_.warmup_ms, [&](const std::string& what) { return launch(0, set_of(i_all_), dataset_of(i_all_), what); },
                       reply_);
  size_hasher(1 + timer_->output_copies(0).size());
}

// Timed samples until the stopping rule says enough; the clock guard discards throttled ones.
void BenchCall::take_samples() {
  const auto t0 = std::chrono::steady_clock::now();
  const stats::StoppingRule rule{req_.min_samples, req_.max_samples, req_.max_seconds, req_.target_rel_noise};
  std::size_t attempt = 0;
  while (stop_reason_.empty()) {
    const double v = launch(std::uint32_t(samples_.size() + 1000 + attempt), set_of(i_all_), dataset_of(i_all_),
                            fmt::format("sample attempt {}", attempt + 1));
    ++i_all_;
    ++attempt;
    if (clocks_.keep(attempt, reply_)) {
      samples_.push_back(v);
      timer_->sample_kept();
    }
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    stop_reason_ = samples_.empty() ? (elapsed > req_.max_seconds * 4 ? "time_cap" : "") : stats::stop_reason(rule, samples_, elapsed);
  }
  if (samples_.empty()) throw_error(ErrorKind::cuda, "every sample was discarded by the clock guard: " + reply_.clock_events.front());
  timer_->finish(samples_, reply_);
  st_.stream->synchronize();
}

// Each dataset once more, untimed, in set 0 (file datasets only): its output comes back as a file
// and/or a 64-bit host hash (the coordinator compares it with the reference: bit-exact contracts
// without moving it through files), and its device hash is the one every timed launch on that
// dataset must equal. With fresh inputs the coordinator checks every launch's hash (or a share of
// saved outputs) against the reference of its own seed instead.
void BenchCall::rerun_datasets() {
  for (int d = 0; d < (sets_.two ? 2 : 1) && !req_.fresh_inputs; ++d) {
    const std::size_t before = reply_.sample_datasets.size();
    launch(0xF00u + std::uint32_t(d), 0, d, fmt::format("untimed re-run of dataset {}", d == 0 ? "A" : "B"));
    if (checked_) {
      for (const auto& name : outputs_) {
        auto& h = reply_.sample_hashes[name];
        // The re-run's hashes move from the per-launch list to final_hashes (several copies: the first).
        reply_.final_hashes[name].push_back(h.at(before));
        h.resize(before);
      }
      reply_.sample_datasets.resize(before);
      reply_.launch_seeds.resize(before);
      reply_.hash_what.resize(before);
    }
    return_dataset_outputs(d);
  }
}

// Dataset d's outputs (set 0, after its re-run) as the files and host hashes the request asks for.
void BenchCall::return_dataset_outputs(int d) {
  const auto& files = d == 0 ? req_.out_files : req_.alt_out_files;
  auto& hashes = d == 0 ? reply_.out_hashes : reply_.alt_out_hashes;
  for (auto& g : sets_.sets[0]) {
    if (g.kind != BufferKind::output) continue;
    if (files.count(g.name)) {
      MappedFile out = MappedFile::create(files.at(g.name), g.bytes);
      g.download_view(out.data());
      if (req_.out_hashes) hashes[g.name] = fmt::format("{:016x}", fast_hash64(out.data(), g.bytes));
    } else if (req_.out_hashes) {
      std::vector<std::uint8_t> host(g.bytes);
      g.download_view(host.data());
      hashes[g.name] = fmt::format("{:016x}", fast_hash64(host.data(), g.bytes));
    }
  }
}

// The guards of every buffer (the sets', then the timer's output copies), and the reply.
BenchReply BenchCall::finish() {
  for (auto& bufs : sets_.sets)
    for (auto& g : bufs)
      for (auto& v : check_guards(g)) reply_.guard_violations.push_back(v);
  for (std::size_t k = 0; k < sets_.sets.size(); ++k)
    for (const auto& bufs : timer_->output_copies(k))
      for (const auto& g : bufs)
        for (auto& v : check_guards(g)) reply_.guard_violations.push_back(v);
  if (slots_global_) {  // the slots are freed with this call: the module keeps no stale address
    const std::uint64_t none = 0;
    KQUAL_CU(cuMemcpyHtoD, slots_global_, &none, 8);
  }
  reply_.samples_ms = std::move(samples_);
  reply_.flush_bytes = flush_.bytes();
  reply_.stop_reason = stop_reason_;
  return std::move(reply_);
}

}  // namespace

BenchReply op_bench(State& st, const BenchRequest& req) {
  BenchCall call(st, req);  // buffer sets and plans, L2 flush, the timer set up, clock guard, hash slots
  call.warm_up();           // warm-up launches, then the timer's own preparation (graph: the replays)
  call.take_samples();      // the sample loop, through the timer and the clock guard
  call.rerun_datasets();    // untimed re-runs of each dataset, whose outputs come back
  return call.finish();     // guards checked, the reply
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

}  // namespace kqual::worker::detail
