#pragma once
// Shared by the check's tests: the bytes two runs wrote to output "y", written to files as the worker
// writes them (run k poisoned with poison[k]), and judged by the check's own judge_runs against
// `want` under `policy`, as a case is judged after the worker's reply.
#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "kqual/check/evaluate.hpp"
#include "kqual/contract/contract.hpp"
#include "kqual/core/files.hpp"
#include "kqual/worker/protocol.hpp"
#include "../../src/check/internal.hpp"

namespace kqual::check::test_util {

struct WrittenRuns {
  std::vector<std::uint8_t> run1, run2;
  std::vector<std::uint8_t> poison = {0xFF, 0x7F};
  std::vector<std::string> placements;  // the request's output placements ("" = none given)
};

// True when judge_runs accepts; res carries its code, detail and failing elements otherwise.
inline bool judge_written(const contract::Contract& c, const RunToRunPolicy& policy, const WrittenRuns& w,
                          const std::vector<contract::Tensor>& want, CaseResult& res) {
  ScratchDir dir("kqual-judge-runs");
  worker::RunRequest request;
  request.poison = w.poison;
  request.placements = w.placements;
  for (int k = 0; k < 2; ++k) {
    const std::vector<std::uint8_t>& bytes = k == 0 ? w.run1 : w.run2;
    const std::string f = (dir.path() / ("y.out" + std::to_string(k))).string();
    std::ofstream(f, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
    request.out_files["y"].push_back(f);
  }
  worker::Answer<worker::RunReply> answer;
  answer.raw.status = worker::WorkerReply::Status::ok;
  answer.reply = worker::RunReply{};
  answer.reply->runs.resize(2);
  return detail::judge_runs(c, policy, answer, request, want, res);
}

}  // namespace kqual::check::test_util
