#pragma once
// A PyTorch submission timed against PyTorch eager and torch.compile of its problem
// (docs/torch-submissions.md, "Timing"): the submission in its own worker process
// (tools/torch/submission_worker.py, "time"), the baselines in the PyTorch timing worker
// (tools/torch/timing_worker.py), both under the same rules (kqual_torch_timing.py): the same two
// datasets made here, the L2 flushed before every sample, the clock guard, the same window — a CUDA
// graph replay of the call where the submission can be captured, else the call itself for the
// submission and the baselines alike — in A B B A blocks across the two processes. The outputs of
// the last block of every implementation are compared with the contract's reference on both
// datasets: a submission whose timed outputs are wrong is rejected (timed_output_wrong), a wrong
// baseline is never the one to beat.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kqual/bench/timing.hpp"
#include "kqual/bench/torch_submission.hpp"
#include "kqual/core/json.hpp"

namespace kqual::bench {

struct SubmissionTimingOptions {
  TimingOptions timing;  // shapes (empty: the contract's benchmark shapes), rounds, samples, warm-up, flush, clock guard, margin
  std::int64_t max_shape_elements = std::int64_t(1) << 28;  // larger shapes are left out (said in the result)
  double call_timeout_s = 600;                               // one block of one implementation
  std::optional<std::vector<std::string>> baselines;         // as --torch-baselines gives it (nullopt: eager and compiled)
};

// Per shape: the speed-up of the submission over one baseline, median(baseline) / median(submission),
// with its bootstrap interval (the comparison's, inverted), and the comparison's verdict.
struct SubmissionSpeedup {
  std::string baseline;  // "torch_eager", "torch_compiled"
  double speedup = 0, ci_low = 0, ci_high = 0;
  std::string verdict;   // stats::Verdict's word for the submission against it
};

struct SubmissionTiming {
  std::string status;                     // "done: ..." or "not run: <why>"
  TimingReport report;                    // series[0] the submission, then the baselines
  std::vector<std::string> windows;       // per shape: "n=...: cuda_graph" / "n=...: eager_call (why)"
  std::vector<std::vector<SubmissionSpeedup>> speedups;  // per shape of report, per baseline compared
  std::string timed_output_failure;       // non-empty: the submission's timed outputs were wrong (the first shape's detail)
  std::string harness_failure;            // kqual's side failed while timing: nothing is decided
  std::vector<std::string> notes;
  json to_json() const;
};

// The speed-ups of one shape from its comparisons (series k+1 paired with vs_baselines[k]).
std::vector<SubmissionSpeedup> submission_speedups(const ShapeResult& sh);

// Times an accepted submission. Never throws for a missing PyTorch or GPU (status "not run: ..."), a
// submission that raises or dies while timed (its series' error), or a problem PyTorch cannot run
// (the submission is timed alone and the status says there is no baseline).
SubmissionTiming time_torch_submission(const contract::Contract& c, const TorchSubmission& s, const SubmissionCheckOptions& co,
                                       const SubmissionTimingOptions& o);

}  // namespace kqual::bench
