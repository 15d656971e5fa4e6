// `kqual check` and `kqual qualify` of a PyTorch submission: --problem, --class, --allow-kernel, and
// the path those commands take when the candidate is a .py file or a torch_module manifest
// (pipeline/submission.hpp).
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <iostream>

#include "kqual/contract/declared/declared.hpp"
#include "kqual/core/error.hpp"
#include "kqual/decision/decision.hpp"
#include "kqual/pipeline/submission.hpp"
#include "kqual/run/cli.hpp"

namespace kqual::run {

void add_submission_options(CLI::App* cmd, pipeline::SubmissionOptions& s) {
  cmd->add_option("--problem", s.problem,
                  "For a PyTorch submission (a .py file with class ModelNew): the problem it answers, as a contract name, a "
                  "contract.toml, an imported problem's folder, a Definition (.json) or a KernelBench problem file (.py; "
                  "imported into OUT/problem, the capture needs PyTorch); docs/torch-submissions.md");
  cmd->add_option("--class", s.class_name, "For a PyTorch submission: the module class to build (default ModelNew)");
  cmd->add_option("--allow-kernel", s.allow_kernels,
                  "For a PyTorch submission: a regular expression of library kernels (ATen, cuBLAS, cuDNN, Inductor) it may "
                  "launch; repeatable. Any other library kernel rejects it as reference_called");
  cmd->add_option("--stream", s.stream,
                  "For a PyTorch submission: where each checked call is made: own (default: a stream of kqual's, as production "
                  "code calls on many; a kernel on the legacy default stream is then wrong_stream, and the result says whether "
                  "it is right on the default stream) or default (PyTorch's default stream, as KernelBench calls it; the verdict "
                  "says so). Timing always runs on kqual's stream")
      ->check(CLI::IsMember({"own", "default"}));
}

bool check_submission_if_any(const GlobalOptions& g, const pipeline::QualifyOptions& q, pipeline::SubmissionOptions& s,
                             int* exit_code) {
  if (!pipeline::is_torch_submission(q.candidate)) {
    if (!s.problem.empty() || !s.class_name.empty() || !s.allow_kernels.empty() || s.stream != "own")
      throw_error(ErrorKind::usage, fmt::format("--problem, --class, --allow-kernel and --stream are for PyTorch submissions; {} is a "
                                                "kernel candidate (its manifest names its contract)",
                                                q.candidate.string()));
    return false;
  }
  s.sources = q.sources;  // --contracts, --allow-candidate-contract: as for a kernel candidate
  s.candidate = q.candidate;
  s.out_dir = q.out_dir;
  s.seed = q.seed;
  s.watchdog_seconds = std::max(q.watchdog_seconds, 120.0);  // the first case includes the submission's own compile
  s.progress = progress_for(g, q.timing ? "qualify" : "check").sink();
  s.use_gpu = q.use_gpu;
  s.all_cases = q.all_cases;
  s.timing = q.timing;
  if (s.timing) {  // qualify: its timing and decision options, as a kernel candidate takes them
    s.shapes = q.shapes;
    s.dtype = q.dtype;
    s.torch_baselines = q.torch_baselines;
    s.profile = q.profile;
    s.margin = q.margin;
    s.regression_limit = q.regression_limit;
    bench::TimingOptions& to = s.timing_options.timing;
    to.rounds = q.rounds;
    to.samples_per_round = q.samples_per_round;
    to.flush_mode = q.flush_mode;
    to.flush_l2 = q.flush_mode != "none";
    to.clock_guard = q.clock_guard;
    if (q.verify_launches > 0) {  // as for a kernel candidate: given, no element budget
      to.verify_launches = q.verify_launches;
      to.verify_element_budget = 0;
    }
    if (q.timer != worker::TimerKind::events)
      throw_error(ErrorKind::usage, "a PyTorch submission is timed with CUDA events around its call (--timer events); "
                                    "CUPTI and graph timers time a kernel candidate's launches");
  }
  const pipeline::SubmissionOutcome out = pipeline::check_submission(s);
  if (g.json) {
    std::cout << out.check.to_json().dump(2) << "\n";
  } else {
    fmt::print("kqual: {} ({}): PyTorch submission\n", out.name, out.contract);
    fmt::print("verdict: {}\n", out.check.summary());
    if (out.timing) fmt::print("timing: {}\n", out.timing->status);
    if (out.verdict) fmt::print("decision: {}: {}\n", decision::to_string(out.verdict->verdict), out.verdict->summary);
    fmt::print("wrote {} and {}\n", out.results_path.string(), out.summary_path.string());
  }
  *exit_code = out.exit_code;
  return true;
}

}  // namespace kqual::run
