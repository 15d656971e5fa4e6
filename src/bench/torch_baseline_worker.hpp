#pragma once
// The PyTorch workers (tools/torch/timing_worker.py, submission_worker.py) as child processes of the
// coordinator: one JSON line answered per JSON line (torch_baseline_worker.cpp), over a core Child
// (kqual/core/child.hpp: its own process group, so PyTorch's compile workers end with it). Private
// to src/bench.
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kqual/bench/activity_record.hpp"
#include "kqual/bench/torch_baseline.hpp"
#include "kqual/bench/torch_submission.hpp"
#include "kqual/core/child.hpp"
#include "kqual/core/files.hpp"
#include "kqual/core/json.hpp"

namespace kqual::bench {

class TorchWorker {
 public:
  // Starts `python script cfg`; stderr goes to err_file (its tail explains a worker that died). `what`
  // names it in errors.
  TorchWorker(const std::string& python, const std::filesystem::path& script, const json& cfg, const std::filesystem::path& err_file,
              std::string what = "the PyTorch timing worker", const std::vector<std::pair<std::string, std::string>>& env = {});

  // One reply (request nullptr: the hello) within timeout_s; {"ok": false, "code": "worker_died" |
  // "timeout" | "protocol", ...} when there is none.
  json call(const json* request, double timeout_s);

  // The activity record this worker writes (kqual_record injected), or null.
  RecordChannel* record() const { return record_.get(); }
  void attach_record(std::unique_ptr<RecordChannel> r) { record_ = std::move(r); }

 private:
  json died();
  std::unique_ptr<RecordChannel> record_;  // outlives the child (members end in reverse order)
  std::unique_ptr<Child> child_;  // its destructor kills the group and reaps the worker
  std::string start_error_;       // why it could not be started (child_ is null then)
  std::string what_;
};

// The worker, started and greeted; `blocker` is "" when it can time, else the phase's status.
struct TorchStart {
  std::unique_ptr<TorchWorker> w;
  json hello;
  std::string blocker;
};
// Starts tools/torch/timing_worker.py with torch.compile's mode and, with_reference, the declared
// contract's PyTorch reference; its stderr under scratch/torch.
// record: kqual's recorder injected too (its samples then read from the activity record, as a submission's are).
// greet false: the process is started and not yet greeted (hello null): greet_torch_worker() reads its
// hello later, so PyTorch's import and CUDA start run while kqual does other work.
TorchStart start_torch_worker(const std::filesystem::path& scratch, const TorchOperation& op, const std::string& compile_mode,
                              bool with_reference, bool record = false, bool greet = true);
void greet_torch_worker(TorchStart& ts, const TorchOperation& op);

// The PyTorch timing worker of run_torch_baselines started ahead of the phase (start_torch_baselines_early).
struct TorchEarlyStart {
  TorchStart ts;
  std::string compile_mode;
};

// A worker's environment with kqual's recorder injected, and the channel it writes to (made in dir).
// Throws Error(internal) where libkqual_record.so is not found.
std::unique_ptr<RecordChannel> record_channel_for(const std::filesystem::path& dir, std::vector<std::pair<std::string, std::string>>& env);

// Where a PyTorch worker's files go: the folder given, else a temporary one of its own (removed with
// this object).
class WorkerScratch {
 public:
  WorkerScratch(const std::filesystem::path& given, const char* prefix) {
    if (given.empty()) {
      own_.emplace(prefix);
      dir_ = own_->path();
    } else {
      dir_ = given;
    }
  }
  const std::filesystem::path& path() const { return dir_; }

 private:
  std::optional<ScratchDir> own_;
  std::filesystem::path dir_;
};

// One timing reply of either worker (samples, warm-up on block 0, clocks, the guard's record) added
// to a series; block counts from 0.
void add_torch_samples(const json& a, int block, Series& se);

// Starts tools/torch/submission_worker.py (o.worker, o.python when set) for submission s judged by c:
// its file, class, allowed library kernels, seed and, for an imported KernelBench problem, the
// problem's folder, for a built-in contract its name, for another declared one its PyTorch reference
// (the worker profiles the problem's own PyTorch form to know the reference's kernels). Not greeted yet: the first call(nullptr, ...) is the hello.
std::unique_ptr<TorchWorker> start_submission_worker(const contract::Contract& c, const TorchSubmission& s,
                                                     const SubmissionCheckOptions& o, const std::filesystem::path& err_file);

}  // namespace kqual::bench
