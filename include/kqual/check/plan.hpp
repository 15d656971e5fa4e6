#pragma once
// A built candidate in the worker: loaded and described (registers, shared and local bytes, the
// parameter sizes checked against the manifest), and its launch plan resolved for one problem.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "kqual/build/candidate.hpp"
#include "kqual/core/json.hpp"
#include "kqual/worker/protocol.hpp"
#include "kqual/worker/session.hpp"

namespace kqual::check {

// Loads the image in the worker and records registers/shared/local bytes per kernel, and checks
// the manifest's argument list against the kernel's parameter sizes. Returns a refusal reason or "".
std::string load_and_describe(worker::Session& s, build::BuiltCandidate& b);

// The worker's launch list for one problem, or a refusal (launch plan outside device limits,
// dim value not representable in the declared parameter type, ...).
struct ResolvedPlan {
  std::vector<worker::Launch> launches;
  std::vector<worker::Buffer> scratch;  // kind scratch, poisoned like outputs
  std::string refusal;
};
ResolvedPlan resolve_plan(const build::BuiltCandidate& b, DType t, const std::map<std::string, std::int64_t>& dims,
                          const worker::DeviceFacts& dev);

}  // namespace kqual::check
