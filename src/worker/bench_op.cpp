// The worker's timed samples (op "bench") and the device copy bandwidth (op "copy_bench").
//
// Every launch, warm-up and timed, is checked: its outputs are poisoned before it and hashed after
// it, outside the timed window, and the hash is copied to the host before anything of the
// candidate's runs again (a hash left in device memory until the end could be rewritten
// by a later launch). Inputs either come from the coordinator's files (two datasets alternating
// over two buffer sets) or, with fresh_inputs, are generated on the device before every launch
// from a seed no launch shares, so a kernel cannot keep one answer per dataset and pick it by
// reading an input word. Under the graph timer every launch of a replay writes its own poisoned
// output copy, and every copy is hashed: a kernel that does its work only while its output holds
// the poison does it in every launch or is caught.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <set>
#include <thread>

#include "kqual/cuda/cupti.hpp"
#include "kqual/cuda/nvml.hpp"
#include "kqual/stats/stopping.hpp"
#include "kqual/stats/summary.hpp"
#include "server_internal.hpp"

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

// The most bytes of output copies a graph replay may hold (timer "graph": one copy per launch).
constexpr std::size_t kGraphCopyBytes = std::size_t(2) << 30;

// The global of a candidate's module that receives the hash slots' address (give_hash_slots).
constexpr const char* kHashSlotsGlobal = "kqual_test_hash_slots";

}  // namespace

BenchReply op_bench(State& st, const BenchRequest& req) {
  cuda::Context& ctx = st.context();
  CUstream stream = st.stream->get();
  const bool fresh = req.fresh_inputs;
  // Two datasets when the inputs come with a second one; then two buffer sets, so every reuse of an
  // address brings other values (sample i: set i % 2, dataset (i / 2) % 2). Fresh inputs need
  // neither: every launch has values no other launch had.
  bool two = false;
  for (const auto& b : req.buffers) two = two || (!fresh && b.kind == BufferKind::input && !b.alt_file.empty());
  std::vector<std::vector<Guarded>> sets;
  std::vector<Plan> plans;
  for (int k = 0; k < (two ? 2 : 1); ++k) {
    harness_phase(st, "allocating the timed buffers");
    sets.push_back(allocate(req.buffers, req.guard_bytes));
    harness_phase(st, "");  // the plan is the candidate's
    plans.push_back(make_plan(st, req.module, req.launches, sets.back()));
    harness_phase(st, "uploading inputs and poisoning outputs");
    prepare(st, sets.back(), 0xFF, 0, req.generator_module);
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
  std::size_t output_bytes = 0;
  for (const auto& g : sets[0])
    if (g.kind == "output") outputs.push_back(g.name), output_bytes += g.bytes;
  const int warmup = req.warmup, min_samples = req.min_samples, max_samples = req.max_samples;
  const bool checked = req.check_samples && !outputs.empty();
  const double max_seconds = req.max_seconds, target_noise = req.target_rel_noise;
  cuda::Event start, stop;
  BenchReply reply;
  reply.timer = req.timer;
  // The timer: CUPTI's kernel records, or a CUDA graph of the plan (captured after the warm-up).
  std::unique_ptr<cuda::KernelActivity> activity;
  if (req.timer == "cupti") {
    std::string why;
    harness_phase(st, "starting CUPTI for the timer 'cupti'");
    activity = cuda::KernelActivity::start(&why);
    if (!activity) throw_error(ErrorKind::cuda, "timer 'cupti' is not available: " + why);
  }
  const bool graph = req.timer == "graph";
  std::vector<cuda::GraphExec> graphs;
  int per_replay = 1;
  // Timer "graph": the output copies of launches 2..N of a replay, per buffer set (launch 1 writes
  // the set's own outputs), and the plans bound to them.
  std::vector<std::vector<std::vector<Guarded>>> copies;  // [set][launch - 1]
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
  // kqual selftest only: where to hand the slots' address to a known-broken candidate that stands
  // for a kernel which found kqual's memory ([expect] given_hash_slots; its module's u64 global).
  CUdeviceptr slots_global = 0;
  if (req.give_hash_slots) {
    const std::optional<cuda::Module::Global> g = st.module(req.module).global(kHashSlotsGlobal);
    if (!g || g->bytes != 8)
      throw_error(ErrorKind::input, fmt::format("give_hash_slots: the candidate's module has no 8-byte global '{}'", kHashSlotsGlobal));
    slots_global = g->address;
  }
  OutputHasher hasher;
  auto size_hasher = [&](std::size_t per_sample) {
    if (!checked || per_sample <= hasher.capacity) return;
    hasher.f = st.own("kqual_hash");
    hasher.capacity = per_sample;
    hasher.slots = cuda::DeviceBuffer(per_sample * 16);
    hasher.read_back.clear();
    hasher.blocks = unsigned(std::max(ctx.info().sms, 1)) * 4;
    if (slots_global) {
      const std::uint64_t address = hasher.slots.get();
      KQUAL_CU(cuMemcpyHtoD, slots_global, &address, 8);
    }
  };
  // Slots per output copy: one per chunk for chunk-hashed outputs, else one.
  std::size_t words_per_copy = 0;
  for (const auto& g : sets[0])
    if (g.kind == "output") words_per_copy += g.chunk_elements ? chunk_count(g) : 1;
  size_hasher(words_per_copy);
  // From here the candidate's launches and kqual's checks of them interleave: a failure is not
  // told apart, and stays the candidate's.
  harness_phase(st, "");
  const std::set<std::size_t> save(req.save_launches.begin(), req.save_launches.end());
  std::map<std::size_t, std::size_t> save_slot;  // launch index -> position in save_files
  for (std::size_t i = 0; i < req.save_launches.size(); ++i) save_slot[req.save_launches[i]] = i;
  std::uint64_t next_id = 0, last_id = 0;
  std::size_t launches = 0;  // checked launches so far (a graph replay counts once)
  // The hashes of one launch's output copies, in slots read back before the candidate runs again:
  // chunk hashes combined (outputs with chunk_elements) or one kqual_hash.
  auto record_hashes = [&](std::size_t k, int d, std::uint64_t seed, const std::string& what) {
    const std::size_t n_copies = graph && !graphs.empty() ? std::size_t(per_replay) : 1;
    struct Entry {
      std::string name;
      std::size_t first, n;
      bool chunked;
    };
    std::vector<Entry> entries;
    std::size_t next_slot = 0;
    for (std::size_t c = 0; c < n_copies; ++c) {
      const std::vector<Guarded>& bufs = c == 0 ? sets[k] : copies[k][c - 1];
      for (const auto& g : bufs) {
        if (g.kind != "output") continue;
        if (g.chunk_elements) {
          const std::size_t n = chunk_count(g);
          hasher.shadow(stream, next_slot, n);
          enqueue_chunk_hashes(st, g, hasher.slot(next_slot));
          entries.push_back({g.name, next_slot, n, true});
          next_slot += n;
        } else {
          hasher.enqueue(stream, g.view(), g.bytes, next_slot);
          entries.push_back({g.name, next_slot, 1, false});
          next_slot += 1;
        }
      }
      reply.sample_datasets.push_back(d);
      reply.launch_seeds.push_back(seed);
      reply.hash_what.push_back(n_copies > 1 ? fmt::format("{}, launch {} of {} in the replay", what, c + 1, n_copies) : what);
    }
    if (next_slot) {
      st.stream->synchronize();
      const std::vector<std::uint64_t> h = hasher.read(next_slot, what);
      if (!hasher.written.empty() && reply.harness_memory_written.empty()) reply.harness_memory_written = hasher.written;
      for (const auto& e : entries)
        reply.sample_hashes[e.name].push_back(
            e.chunked ? combine_chunk_hashes(std::vector<std::uint64_t>(h.begin() + std::ptrdiff_t(e.first), h.begin() + std::ptrdiff_t(e.first + e.n)))
                      : fmt::format("{:016x}", h[e.first]));
    }
    if (save.count(launches)) {
      const std::size_t at = save_slot.at(launches);
      for (const auto& g : sets[k]) {
        if (g.kind != "output") continue;
        auto it = req.save_files.find(g.name);
        if (it == req.save_files.end() || at >= it->second.size())
          throw_error(ErrorKind::worker, fmt::format("worker protocol: 'bench' save_files has no path {} for output '{}'", at, g.name));
        MappedFile out = MappedFile::create(it->second[at], g.bytes);
        g.download_view(out.data());
      }
    }
    ++launches;
  };
  // One launch of set `k` on dataset `d`: inputs refreshed (two datasets) or generated (fresh),
  // outputs poisoned, the L2 flushed, the plan timed, the outputs hashed; everything but the plan
  // outside the events.
  auto one = [&](std::uint32_t salt, std::size_t k, int d, bool hash, const std::string& what) {
    std::vector<Guarded>& bufs = sets[k];
    const std::uint64_t seed = fresh ? fresh_seed(req.fresh_base, launches) : 0;
    for (auto& g : bufs) {
      if (g.kind == "input" && fresh && g.gen_stream >= 0)
        generate_input(st, g, seed, req.generator_module);
      else if (g.kind == "input" && two)
        KQUAL_CU(cuMemcpyDtoDAsync, g.view(), datasets.at(g.name)[std::size_t(d)].get(), g.bytes, stream);
      else if (g.kind == "output" && checked)
        KQUAL_CU(cuMemsetD8Async, g.view(), 0xFF, g.bytes, stream);
    }
    if (checked && graph && !graphs.empty())
      for (auto& copy : copies[k])
        for (auto& g : copy) KQUAL_CU(cuMemsetD8Async, g.view(), 0xFF, g.bytes, stream);
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
    stop.synchronize();
    const double ms = double(cuda::Event::elapsed_ms(start, stop)) / (graph && !graphs.empty() ? per_replay : 1);
    if (hash && checked) record_hashes(k, d, seed, what);
    return ms;
  };
  auto set_of = [&](std::size_t i) { return two ? i % 2 : 0; };
  auto dataset_of = [&](std::size_t i) { return two ? int((i / 2) % 2) : 0; };
  std::size_t i_all = 0;
  for (int i = 0; i < warmup; ++i, ++i_all)
    reply.warmup_ms.push_back(one(std::uint32_t(i), set_of(i_all), dataset_of(i_all), true, fmt::format("warm-up launch {}", i + 1)));
  if (graph) {
    // Enough launches per replay for about 1 ms (a launch's time from the warm-up, or one more run),
    // as many as the output copies allow.
    double t = reply.warmup_ms.empty() ? one(0, set_of(i_all), dataset_of(i_all), true, "graph sizing launch")
                                       : stats::median(reply.warmup_ms);
    per_replay = req.graph_launches > 0 ? req.graph_launches : int(std::clamp(std::ceil(1.0 / std::max(t, 1e-4)), 1.0, 10000.0));
    if (checked && output_bytes) {
      const std::size_t fit = std::max<std::size_t>(1, kGraphCopyBytes / output_bytes);
      if (std::size_t(per_replay) > fit) {
        reply.graph_note = fmt::format("{} launches per replay asked; {} fit in {} GiB of output copies (one per launch)", per_replay,
                                       fit, kGraphCopyBytes >> 30);
        per_replay = int(fit);
      }
    }
    std::vector<Buffer> out_buffers;
    for (const auto& b : req.buffers)
      if (b.kind == BufferKind::output) out_buffers.push_back(b);
    for (std::size_t k = 0; k < plans.size(); ++k) {
      std::vector<Plan> bound;  // launch l of a replay bound to output copy l
      copies.emplace_back();
      for (int l = 1; l < per_replay && checked; ++l) {
        copies[k].push_back(allocate(out_buffers, req.guard_bytes));
        prepare(st, copies[k].back(), 0xFF);
        std::map<std::string, CUdeviceptr> views;
        for (const auto& g : copies[k].back()) views[g.name] = g.view();
        bound.push_back(make_plan(st, req.module, req.launches, sets[k], &views));
      }
      graphs.push_back(cuda::GraphExec::capture(stream, [&] {
        enqueue(st, plans[k]);
        for (int l = 1; l < per_replay; ++l) enqueue(st, checked ? bound[std::size_t(l - 1)] : plans[k]);
      }));
    }
    reply.graph_launches = per_replay;
    size_hasher(words_per_copy * std::size_t(per_replay));
  }
  std::vector<double> samples;
  std::vector<std::uint64_t> sample_ids;
  auto t0 = std::chrono::steady_clock::now();
  const stats::StoppingRule rule{min_samples, max_samples, max_seconds, target_noise};
  std::string stop_reason;
  std::size_t attempt = 0;
  while (stop_reason.empty()) {
    const double v = one(std::uint32_t(samples.size() + 1000 + attempt), set_of(i_all), dataset_of(i_all), true,
                         fmt::format("sample attempt {}", attempt + 1));
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
  // Each dataset once more, untimed, in set 0 (file datasets only): its output comes back as a file
  // and/or a 64-bit host hash (the coordinator compares it with the reference: bit-exact contracts
  // without moving it through files), and its device hash is the one every timed launch on that
  // dataset must equal. With fresh inputs the coordinator checks every launch's hash (or a share of
  // saved outputs) against the reference of its own seed instead.
  for (int d = 0; d < (two ? 2 : 1) && !fresh; ++d) {
    const std::size_t before = reply.sample_datasets.size();
    one(0xF00u + std::uint32_t(d), 0, d, true, fmt::format("untimed re-run of dataset {}", d == 0 ? "A" : "B"));
    if (checked)
      for (const auto& name : outputs) {
        auto& h = reply.sample_hashes[name];
        // The re-run's hashes move from the per-launch list to final_hashes (graph: its first copy).
        reply.final_hashes[name].push_back(h.at(before));
        h.resize(before);
      }
    if (checked) {
      reply.sample_datasets.resize(before);
      reply.launch_seeds.resize(before);
      reply.hash_what.resize(before);
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
  for (auto& per_set : copies)
    for (auto& bufs : per_set)
      for (auto& g : bufs)
        for (auto& v : check_guards(g)) reply.guard_violations.push_back(v);
  if (slots_global) {  // the slots are freed with this call: the module keeps no stale address
    const std::uint64_t none = 0;
    KQUAL_CU(cuMemcpyHtoD, slots_global, &none, 8);
  }
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

}  // namespace kqual::worker::detail
