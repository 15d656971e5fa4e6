#pragma once
// The PyTorch timing worker (tools/torch/timing_worker.py) as a child process of the coordinator:
// one JSON line answered per JSON line (torch_baseline_worker.cpp), over a core Child
// (kqual/core/child.hpp: its own process group, so PyTorch's compile workers end with it). Private
// to src/bench.
#include <filesystem>
#include <memory>
#include <string>

#include "kqual/core/child.hpp"
#include "kqual/core/json.hpp"

namespace kqual::bench {

class TorchWorker {
 public:
  // Starts `python script cfg`; stderr goes to err_file (its tail explains a worker that died). `what`
  // names it in errors.
  TorchWorker(const std::string& python, const std::filesystem::path& script, const json& cfg, const std::filesystem::path& err_file,
              std::string what = "the PyTorch timing worker");

  // One reply (request nullptr: the hello) within timeout_s; {"ok": false, "code": "worker_died" |
  // "timeout" | "protocol", ...} when there is none.
  json call(const json* request, double timeout_s);

 private:
  json died();
  std::unique_ptr<Child> child_;  // its destructor kills the group and reaps the worker
  std::string start_error_;       // why it could not be started (child_ is null then)
  std::string what_;
};

}  // namespace kqual::bench
