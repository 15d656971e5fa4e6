#pragma once
// The PyTorch timing worker (tools/torch/timing_worker.py) as a child process of the coordinator:
// one JSON line answered per JSON line (torch_baseline_worker.cpp). Private to src/bench.
#include <sys/types.h>

#include <filesystem>
#include <string>

#include "kqual/core/json.hpp"

namespace kqual::bench {

class TorchWorker {
 public:
  // Starts `python script cfg`; stderr goes to err_file (its tail explains a worker that died).
  TorchWorker(const std::string& python, const std::filesystem::path& script, const json& cfg, const std::filesystem::path& err_file);
  ~TorchWorker();
  TorchWorker(const TorchWorker&) = delete;
  TorchWorker& operator=(const TorchWorker&) = delete;

  // One reply (request nullptr: the hello); {"ok": false, "code": "worker_died" | "timeout" |
  // "protocol", ...} when there is none.
  json call(const json* request, double timeout_s);

 private:
  json died();
  std::filesystem::path err_file_;
  pid_t pid_ = -1;
  int to_ = -1, from_ = -1;
  std::string pending_;
};

}  // namespace kqual::bench
