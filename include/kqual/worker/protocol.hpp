#pragma once
// The worker protocol, typed: every request the coordinator sends and every reply it reads back.
// JSON exists only on the wire (one object per line, worker.hpp); both ends build and read these
// structs, so a field cannot be misspelled on one side. Parsing names the op and the field that is
// missing or malformed (Error(protocol)).
#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kqual/core/json.hpp"
#include "kqual/worker/timer.hpp"
#include "kqual/worker/worker.hpp"

namespace kqual::worker {

// The start of a worker error when an input could not be placed against an unmapped page (no
// virtual memory management on the platform): the check is reported as not run, never as the
// candidate's failure.
inline constexpr const char* kTrapUnavailable = "trap placement unavailable:";

// ---- Launch plans ----

enum class BufferKind { input, output, scratch };
const char* to_string(BufferKind k);

// The element size of a generated input's dtype code (Buffer::gen_dtype); 0 for a code kqual does not generate.
inline std::size_t generated_element_bytes(int code) { return code == 1 || code == 3 ? 2 : code == 0 || code == 2 ? 4 : 0; }

// A device buffer the worker allocates between two guard regions: [guard | offset | bytes | guard].
struct Buffer {
  Buffer() = default;
  Buffer(std::string name_, BufferKind kind_, std::size_t bytes_, std::size_t offset_ = 0, std::string file_ = {})
      : name(std::move(name_)), kind(kind_), bytes(bytes_), offset(offset_), file(std::move(file_)) {}
  std::string name;
  BufferKind kind = BufferKind::input;
  std::size_t bytes = 0;
  std::size_t offset = 0;  // [bytes] from the allocation's start to the view the kernel gets
  std::string file;        // inputs: the file holding exactly `bytes` bytes
  std::string alt_file;    // bench inputs: a second dataset of the same size (timed samples alternate)
  std::size_t align = 0;   // inputs placed against an unmapped page keep view % align == offset % align
  // Generated inputs (no file): filled on the device by RunRequest::generator_module's kqual_generate
  // (contract/generated.hpp) with this seed, stream and dtype code.
  int gen_stream = -1;     // >= 0: generated
  std::uint64_t gen_seed = 0;
  int gen_dtype = 0;       // contract::generated_dtype_code: 0 f32, 1 bf16, 2 i32, 3 f16
  // Outputs checked in windows: only these element ranges come back (concatenated, in order), and
  // the whole output is scanned on the device for elements still holding the poison.
  std::size_t elem_bytes = 0;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> windows;  // (first element, count)
  // Outputs verified on the device (large cases): nothing comes back but one position-
  // dependent 64-bit hash per chunk of this many elements (kqual_chunk_hash) and the poison scan; the
  // coordinator compares the hashes with those of a trusted reference kernel run in another process.
  std::uint64_t chunk_elements = 0;  // 0: off (needs elem_bytes)
  // An output run in place: the name of the input buffer whose view it is (the kernel gets the same
  // pointer for both). It has no allocation, guards or poison of its own: the input's guards surround
  // it, the input's bytes are uploaded before every run, and after the run the input's view comes
  // back as this output's file. That input's before/after check is left out (it is meant to change).
  // Needs the input's bytes and offset, and no windows or chunk hashes. "": an allocation of its own.
  std::string aliases;
  bool generated() const { return gen_stream >= 0; }
};

// Where a run places its inputs (RunRequest::placements).
//   guarded:     [guard | offset | bytes | guard] in one allocation (reads past the view see guard bytes)
//   trap_after:  the view ends where the mapping ends (up to align - 1 bytes earlier); the next page is unmapped
//   trap_before: the view starts where the mapping starts (plus offset % 256); the previous page is unmapped

// A launch argument: a buffer's view pointer, or a scalar of `size` bytes (little-endian).
struct Arg {
  std::string buffer;  // non-empty: a pointer to this buffer
  std::int64_t scalar = 0;
  int size = 8;        // 4 or 8
  static Arg pointer(std::string name) { return Arg{std::move(name), 0, 8}; }
  static Arg value(std::int64_t v, int bytes) { return Arg{"", v, bytes}; }
  bool operator==(const Arg&) const = default;
};

// A kernel of the module (by its symbol), or a library routine ("cub.exclusive_sum<float>").
struct Launch {
  std::string kernel;
  std::string library;
  std::array<std::int64_t, 3> grid{1, 1, 1}, block{1, 1, 1};
  std::int64_t shared = 0;  // [bytes] dynamic shared memory
  std::vector<Arg> args;
  bool operator==(const Launch&) const = default;
};

// ---- Requests ----

struct HelloRequest {};
struct LoadRequest {
  std::string module;
  std::vector<std::string> kernels;  // symbols
};
struct LibraryInfoRequest {
  std::vector<std::string> libraries;
};
// One launch plan run once per poison pattern; outputs come back as files (one per run).
struct RunRequest {
  std::string module;  // "" for library-only plans
  std::vector<Buffer> buffers;
  std::vector<Launch> launches;
  std::vector<std::uint8_t> poison{0xFF, 0x7F};
  std::map<std::string, std::vector<std::string>> out_files;  // output name → one path per poison
  std::size_t guard_bytes = 4096;
  std::vector<std::string> placements;  // per run: guarded (default), trap_after, trap_before (inputs only)
  std::vector<std::string> trap_only;   // non-empty: only these inputs are trapped; the rest stay guarded
  // Per run: a byte pattern written over every SM's shared memory before the launch, or -1 for none
  // (a kernel that reads shared memory it never wrote then sees different bytes in different runs).
  std::vector<int> scribble;
  std::string generator_module;  // cubin with kqual_generate, for generated inputs
  // Per run (empty: none): the seed every generated input of that run is generated with, in place
  // of its Buffer::gen_seed (a reference computed for many seeds in one request).
  std::vector<std::uint64_t> gen_seeds;
};
// One launch plan timed with events; the last run's outputs come back as files and/or hashes.
struct BenchRequest {
  std::string module;
  std::vector<Buffer> buffers;
  std::vector<Launch> launches;
  std::map<std::string, std::string> out_files;  // output name → path; empty: no file
  bool out_hashes = false;                       // 64-bit hash of each output's bytes
  bool flush = true;                             // write 2x the L2 before every sample
  // "write": a memset of 2x the L2 (it leaves the L2 full of dirty lines the timed kernel may have to
  // write back); "clean": the same memset, then a read pass over that buffer, so the write-backs
  // happen before the timed window and the kernel starts on a clean L2; "invalidate": the memset,
  // then PTX discard.global.L2 over that buffer, so its lines are invalid (neither dirty nor
  // valid: the state ncu --cache-control all leaves; sm_80+) (docs/statistics.md).
  std::string flush_mode = "write";
  int warmup = 3;
  int min_samples = 20, max_samples = 1000;
  double max_seconds = 5.0;
  double target_rel_noise = 0.005;
  std::size_t guard_bytes = 4096;
  // Every launch (warm-up and timed) is checked: outputs poisoned before it, their device hash taken
  // after it (outside the timed window). Inputs with an alt_file alternate between the two datasets
  // and two buffer sets (fresh addresses and fresh values for every reuse of an address); after the
  // loop each dataset runs once more untimed and its output comes back (out_files/out_hashes for the
  // first, alt_out_files/alt_out_hashes for the second).
  bool check_samples = true;
  std::map<std::string, std::string> alt_out_files;
  // What a sample is (kqual/worker/timer.hpp; docs/statistics.md, "What a timed sample is"):
  //   events: CUDA events around the plan (default);
  //   cupti:  the GPU's own start of the plan's first kernel to the end of its last (CUPTI activity
  //           records; any stream, library kernels included); the event interval of the same
  //           samples comes back as event_ms, the noise target is judged on it;
  //   graph:  the plan captured graph_launches times into one CUDA graph, replayed between the
  //           events, sample = interval / graph_launches (tiny kernels: no launch gaps; warm L2
  //           only, so flush must be false).
  TimerKind timer = TimerKind::events;
  int graph_launches = 0;  // 0: enough launches for ~1 ms per replay (from the warm-up), at most 10000
  // Clock guard: the SM clock (NVML) read after every sample; a sample during which the clock fell
  // below clock_share of the reference clock, or a power/thermal/hardware slowdown was active, is
  // discarded and the worker backs off for backoff_ms; after max_discards the rest are kept and
  // flagged. Off, or without NVML: clocks not read (clocks_note says why).
  bool clock_guard = true;
  double clock_share = 0.90;
  int max_discards = 20;
  int backoff_ms = 20;
  // Fresh inputs: every generated input (Buffer::generated) is generated again before
  // every launch, warm-up and timed, with seed fresh_seed(fresh_base, launch index): no two launches
  // see the same values. BenchReply::launch_seeds says which seed each hashed launch had; the
  // coordinator checks each against a reference of that seed. No untimed re-runs, no datasets.
  bool fresh_inputs = false;
  std::uint64_t fresh_base = 0;
  std::string generator_module;  // cubin with kqual_generate (fresh inputs)
  // Launches (index among checked launches, warm-up first; a graph replay counts once) whose outputs
  // come back as files: save_files[output][i] for save_launches[i]. Chosen by the coordinator where
  // the kernel cannot see the choice, so the share verified on the host cannot be predicted.
  std::vector<std::size_t> save_launches;
  std::map<std::string, std::vector<std::string>> save_files;
  // kqual selftest only: write the device address of the output hash slots into the module's u64
  // global kqual_test_hash_slots, so a known-broken candidate can stand for a kernel that found
  // kqual's memory ([expect] given_hash_slots, docs/contracts.md "Timing integrity").
  bool give_hash_slots = false;
};
// The seed of launch `index` of a bench call with fresh inputs (splitmix64 of base and index).
std::uint64_t fresh_seed(std::uint64_t base, std::uint64_t index);
// One hash of an output from its per-chunk hashes (kqual_chunk_hash), the same on both sides of a
// comparison between a candidate's bench launch and a reference run.
std::string combine_chunk_hashes(const std::vector<std::uint64_t>& chunks);
struct CopyBenchRequest {
  std::size_t bytes = 0;
  int samples = 30;
};

json to_json(const HelloRequest& r);
json to_json(const LoadRequest& r);
json to_json(const LibraryInfoRequest& r);
json to_json(const RunRequest& r);
json to_json(const BenchRequest& r);
json to_json(const CopyBenchRequest& r);
LoadRequest load_request_from_json(const json& j);
LibraryInfoRequest library_info_request_from_json(const json& j);
RunRequest run_request_from_json(const json& j);
BenchRequest bench_request_from_json(const json& j);
CopyBenchRequest copy_bench_request_from_json(const json& j);

// ---- Replies ----

struct GuardViolation {
  std::string buffer;
  std::string side;  // "before" or "after" the view
  std::int64_t bytes_changed = 0;
  std::int64_t first_byte_offset = 0;  // relative to the view's start
};
struct InputCheck {
  std::string name;
  std::string hash_before, hash_after;
  std::int64_t first_changed_byte = -1;  // -1: unchanged
};
// An output checked in windows: how many of its elements still hold the poison, and the first.
struct PoisonScan {
  std::string name;
  std::uint64_t poisoned = 0;
  std::int64_t first = -1;
};
struct RunResult {
  std::uint8_t poison = 0;
  double kernel_ms = 0;
  std::vector<GuardViolation> guard_violations;
  std::vector<InputCheck> inputs;
  std::vector<PoisonScan> poison_scans;
  std::map<std::string, std::vector<std::uint64_t>> chunk_hashes;  // per output with Buffer::chunk_elements
};
struct RunReply {
  std::vector<RunResult> runs;
};
struct BenchReply {
  std::vector<double> samples_ms, warmup_ms;
  std::size_t flush_bytes = 0;
  std::string stop_reason;  // "max_samples", "noise_target", "time_cap"
  std::vector<GuardViolation> guard_violations;
  std::map<std::string, std::string> out_hashes, alt_out_hashes;  // host hash of the final outputs
  // check_samples: per output, the device hash after every launch (warm-up first), the dataset each
  // launch used, and the device hash of each dataset's final (returned) output.
  std::map<std::string, std::vector<std::string>> sample_hashes;
  std::vector<int> sample_datasets;
  std::map<std::string, std::vector<std::string>> final_hashes;
  // Per entry of sample_hashes: the seed of its fresh inputs (0 without), and what it was ("warm-up
  // launch 2", "sample attempt 7, launch 3 of 40 in the replay").
  std::vector<std::uint64_t> launch_seeds;
  std::vector<std::string> hash_what;
  std::string graph_note;                  // timer "graph": why fewer launches per replay than asked
  TimerKind timer = TimerKind::events;
  std::vector<double> event_ms;            // timer "cupti": the event interval of each sample
  std::vector<int> kernels_per_sample;     // timer "cupti": kernels CUPTI saw in each sample
  int graph_launches = 0;                  // timer "graph": launches per replay
  // Clocks (NVML), per kept sample; empty with clocks_note saying why when not read.
  std::vector<double> sm_clock_mhz, mem_clock_mhz;
  unsigned reference_sm_mhz = 0, max_temperature_c = 0;
  std::string clocks_note;
  int discarded = 0;                       // samples discarded by the clock guard
  std::vector<std::string> clock_events;   // "sample 12: SM 1410 MHz (71 % of 1980), sw_power_cap"
  bool clock_guard_exhausted = false;      // more than max_discards: later samples kept, flagged
  // A hash slot that no longer held the value read back from it when the next sample's hash was
  // about to be taken: something of the candidate wrote into kqual's device memory (the first one).
  std::string harness_memory_written;
};
struct CopyBenchReply {
  std::vector<double> samples_ms;
  std::size_t bytes = 0;
};
struct LoadReply {
  json kernels;  // symbol → driver-reported attributes (registers, shared, local bytes, params)
};
struct LibraryInfoReply {
  std::map<std::string, std::string> versions;  // "CUB" / "cuBLAS" → version text
};
struct HelloReply {
  json device;  // name, arch, sms, l2_bytes, ...
};

json to_json(const RunReply& r);
json to_json(const BenchReply& r);
json to_json(const CopyBenchReply& r);
json to_json(const LoadReply& r);
json to_json(const LibraryInfoReply& r);
json to_json(const HelloReply& r);
RunReply run_reply_from_json(const json& j);
BenchReply bench_reply_from_json(const json& j);
CopyBenchReply copy_bench_reply_from_json(const json& j);
LoadReply load_reply_from_json(const json& j);
LibraryInfoReply library_info_reply_from_json(const json& j);
std::string describe(const GuardViolation& v);  // "buffer 'y' ... after its bounds: 4 byte(s) ..."

// A typed call: the raw outcome (status, reason for faults) and, when ok, the parsed reply.
template <class Reply>
struct Answer {
  WorkerReply raw;
  std::optional<Reply> reply;
  bool ok() const { return reply.has_value(); }
};
Answer<RunReply> call(WorkerClient& w, const RunRequest& r, double timeout_s = 0);
Answer<BenchReply> call(WorkerClient& w, const BenchRequest& r, double timeout_s = 0);
Answer<CopyBenchReply> call(WorkerClient& w, const CopyBenchRequest& r, double timeout_s = 0);
Answer<LoadReply> call(WorkerClient& w, const LoadRequest& r, double timeout_s = 0);
Answer<LibraryInfoReply> call(WorkerClient& w, const LibraryInfoRequest& r, double timeout_s = 0);

}  // namespace kqual::worker
