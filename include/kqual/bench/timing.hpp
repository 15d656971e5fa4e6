#pragma once
// Warm timing, first version: device events around exactly the launch plan, warm-up excluded and
// reported, L2 flushed before every sample, implementations interleaved in rounds, raw samples kept,
// timed outputs re-checked against the reference.
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "kqual/core/json.hpp"
#include "kqual/check/evaluate.hpp"
#include "kqual/core/progress.hpp"
#include "kqual/stats/compare.hpp"
#include "kqual/stats/summary.hpp"
#include "kqual/worker/timer.hpp"

namespace kqual::bench {

struct TimingOptions {
  DType dtype = DType::f32;
  std::vector<contract::Dims> shapes;  // empty: the contract's benchmark shapes
  int rounds = 3;                    // implementations interleaved, order rotated every round
  int samples_per_round = 10;        // so >= 30 samples per implementation
  int warmup = 5;                    // excluded, reported
  bool flush_l2 = true;              // false: warm L2 (flush_mode "none")
  std::string flush_mode = "write";  // "write", "clean" or "none" (worker::BenchRequest::flush_mode)
  worker::TimerKind timer = worker::TimerKind::events;  // what a sample is (worker::BenchRequest::timer)
  int graph_launches = 0;            // timer "graph": launches per replay (0: ~1 ms per replay)
  bool clock_guard = true;           // NVML clock per sample; throttled samples discarded
  bool measure_copy = true;          // device-to-device copy at the largest size, same run
  double equivalence_margin = 0.02;  // relative: |ratio - 1| below this is "no difference"
  std::uint64_t seed = 20261202;
  // Timed inputs generated on the device, fresh for every launch, where the contract allows it
  // (check/timed_inputs.hpp); false, or a contract whose inputs need structure: two datasets made
  // on the CPU, alternating.
  bool fresh_inputs = true;
  // Fresh inputs under a tolerance contract (no bit-exact device reference hashes every launch): the
  // candidate's timed launches compared with the reference over the whole run, spread over the
  // shapes (1 - 0.9^44 = 99.0 %: a kernel wrong on one launch in ten is caught).
  int verify_launches = 44;
  // ... unless comparing that many would read more than this many output elements on the host (each
  // compared launch costs a reference computed there): the cheapest shapes take the most, the memo
  // states the figure reached. 0: no limit.
  std::int64_t verify_element_budget = std::int64_t(1) << 30;
  bool keep_input_files = false;     // leave input files for the next call (compare), and reuse them
  std::filesystem::path input_root;  // where input files go ("" → the session's scratch/bench)
  ProgressFn progress;               // one line per shape, or empty
  // kqual selftest only: the candidate (not the baselines) is handed the address of kqual's output
  // hash slots ([expect] given_hash_slots; worker::BenchRequest::give_hash_slots).
  bool give_hash_slots = false;
};

struct Series {
  std::string label;
  std::string role;                  // "candidate" or "baseline"
  std::vector<double> samples_ms;
  std::vector<double> warmup_ms;
  stats::Summary summary;
  double bytes_per_s = 0;            // contract's minimum bytes / median time
  double flops_per_s = 0;            // contract's flops / median time
  bool verified = true;              // timed output re-checked against the reference
  std::string verify_detail;
  std::string verify_code;           // "timed_output_wrong" when not verified
  std::string error;                 // the implementation could not be timed
  // Launches made (warm-up and timed), and how many of them were compared with the contract's
  // reference on their own inputs, or with the same kernel launched again untimed on them.
  std::size_t launches = 0, reference_compared = 0, rerun_compared = 0;
  // How the samples were taken (worker::BenchReply): the timer, the event interval of the same
  // samples when the timer is CUPTI, launches per graph replay, and the clock guard's record.
  worker::TimerKind timer = worker::TimerKind::events;
  std::vector<double> event_ms;
  int graph_launches = 0;
  std::vector<double> sm_clock_mhz, mem_clock_mhz;
  unsigned reference_sm_mhz = 0, max_temperature_c = 0;
  std::string clocks_note;
  int discarded = 0;
  std::vector<std::string> clock_events;
  bool clock_guard_exhausted = false;
};

// The error of a series the contract or its launch plan refused before any launch ("refused: ..."):
// the shape was not timed, which is no failure of the implementation.
constexpr std::string_view kRefusedBeforeLaunch = "refused: ";
inline bool refused_before_launch(const Series& s) { return s.error.rfind(kRefusedBeforeLaunch, 0) == 0; }

struct ShapeResult {
  contract::Dims dims;
  std::string shape;                 // "n=268435456"
  DType dtype = DType::f32;
  double min_bytes = 0;
  double flops = 0;
  std::vector<Series> series;        // [0] is the candidate
  std::string fastest_baseline;
  std::vector<stats::Comparison> vs_baselines;  // candidate (B) against each baseline (A)
  stats::Comparison vs_fastest;
  // How the timed inputs were made and verified: "fresh" (generated on the device for every
  // launch) or "datasets" (two, made on the CPU); the sentence says what was verified.
  std::string timed_inputs;
  std::string timed_inputs_detail;
  double copy_bytes_per_s = 0;       // measured at this size (0 if not)
  std::vector<double> copy_samples_ms;
};

struct TimingReport {
  std::vector<ShapeResult> shapes;
  std::string boundary;              // what exactly the timed region contains
  std::string l2_mode;               // "cold_l2_write_flush", "cold_l2_clean_flush" or "warm_l2"
  worker::TimerKind timer = worker::TimerKind::events;
  // The candidate's launches compared with the reference and with untimed re-runs, and the
  // detection power that gives (bench/timed_verify.hpp).
  json verification;
  json to_json() const;
};

// The case a timing run uses for one shape (inputs and reference come from check::prepare_case).
contract::CaseSpec timing_case_spec(const contract::Contract& c, const contract::Dims& dims, const TimingOptions& o);
// The second dataset of a shape (another seed): timed samples alternate between the two.
contract::CaseSpec timing_alt_case_spec(const contract::Contract& c, const contract::Dims& dims, const TimingOptions& o);
// Generates the timing cases (inputs, references, expected-output hashes) ahead of time, e.g. on a
// thread while the GPU checks correctness; later timing calls in this process find them cached.
// With keep_input_files and an input_root, the input files are written there too.
void prepare_timing_cases(worker::Session& s, const contract::Contract& c, const TimingOptions& o);

TimingReport time_against_baselines(worker::Session& s, const build::BuiltCandidate& candidate,
                                    const std::vector<const build::BuiltCandidate*>& baselines,
                                    const TimingOptions& o);

}  // namespace kqual::bench
