// How a failing case is named and worded in a verdict (labels.hpp).
#include "kqual/check/labels.hpp"

#include <fmt/format.h>

#include <map>
#include <regex>
#include <set>

namespace kqual::check {

std::string launch_fault_sentence(const std::string& cuda_error, const std::string& description) {
  // What the driver's sticky errors mean for the kernel that caused them (CUDA driver API,
  // "Error Handling"): the worker only reports them; the candidate's code raised them.
  static const std::map<std::string, std::string> said = {
      {"CUDA_ERROR_LAUNCH_FAILED",
       "the kernel trapped, hit a device-side assert or an unspecified fault during its launch"},
      {"CUDA_ERROR_ASSERT", "the kernel hit a device-side assert during its launch"},
      {"CUDA_ERROR_ILLEGAL_ADDRESS",
       "the kernel loaded or stored at an address outside every allocation it may use during its launch"},
      {"CUDA_ERROR_MISALIGNED_ADDRESS",
       "the kernel loaded or stored at an address not aligned to the width of the access during its launch"},
      {"CUDA_ERROR_INVALID_ADDRESS_SPACE",
       "the kernel used an address in an instruction for another state space (global, shared, local) during its launch"},
      {"CUDA_ERROR_ILLEGAL_INSTRUCTION", "the kernel executed an illegal instruction during its launch"},
      {"CUDA_ERROR_INVALID_PC", "the kernel jumped to an invalid program counter during its launch"},
      {"CUDA_ERROR_HARDWARE_STACK_ERROR",
       "the kernel overflowed or corrupted its call stack during its launch (deep recursion, large local arrays)"},
      {"CUDA_ERROR_LAUNCH_TIMEOUT", "the kernel ran past the device's execution time limit and was stopped"},
      {"CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES",
       "the driver refused the launch: the kernel needs more registers or other resources per block than the device has "
       "at this block size"},
      {"CUDA_ERROR_INVALID_VALUE",
       "the driver refused a call of the launch (an invalid grid, block or shared-memory size, or another invalid argument)"},
  };
  if (auto it = said.find(cuda_error); it != said.end()) return fmt::format("{} ({})", it->second, cuda_error);
  if (cuda_error.empty()) return "the launch failed with a CUDA error the worker did not name";
  return description.empty() ? fmt::format("the launch failed with {}", cuda_error)
                             : fmt::format("the launch failed with {} ({})", cuda_error, description);
}

std::string without_source_locations(std::string message) {
  // kqual's own files only: a path whose folder is src/<module>/ (absolute, relative or bare),
  // then ":<line>: ". A candidate's "kernel.cu:12:" (compile logs) is left as it is.
  static const std::regex location(R"((?:[^\s:()'"]*/)?src/[A-Za-z0-9_]+/[A-Za-z0-9_.\-]+\.(?:cpp|hpp|cu|cuh|h):[0-9]+:\s*)");
  return std::regex_replace(message, location, "");
}

namespace {

// From "…: <call> failed: <NAME> (<description>)" (cuda::check's message): the call's name without
// its arguments and the description. Either may come back empty.
std::pair<std::string, std::string> call_and_description(const std::string& reason, const std::string& name) {
  std::string call, description;
  const std::string plain = without_source_locations(reason);
  if (auto f = plain.find(" failed: " + name); f != std::string::npos) {
    call = plain.substr(0, f);
    if (auto colon = call.rfind(": "); colon != std::string::npos) call = call.substr(colon + 2);
    if (auto paren = call.find('('); paren != std::string::npos) call = call.substr(0, paren);
    if (auto open = plain.find(" (", f + 9 + name.size()); open != std::string::npos) {
      const auto close = plain.rfind(')');
      if (close != std::string::npos && close > open) description = plain.substr(open + 2, close - open - 2);
    }
  }
  return {call, description};
}

}  // namespace

std::string fault_detail(const worker::WorkerReply& r) {
  using S = worker::WorkerReply::Status;
  const bool cuda = (r.status == S::error || r.status == S::sticky_error) && r.body.is_object() &&
                    r.body.value("kind", std::string()) == "cuda" && r.body.contains("cuda_error") && r.body["cuda_error"].is_string();
  if (!cuda) return without_source_locations(r.reason);
  const std::string name = r.body["cuda_error"].get<std::string>();
  const auto [call, description] = call_and_description(r.reason, name);
  const std::string said = launch_fault_sentence(name, description);
  return call.empty() ? said : fmt::format("{}; reported by {}", said, call);
}

namespace {
constexpr const char* kFaultMarker = "breaks there; ";  // in an index_overflow detail, before the case's own code
}  // namespace

std::string index_overflow_fault(const std::string& detail) {
  const auto at = detail.find(kFaultMarker);
  if (at == std::string::npos) return "";
  const auto from = at + std::string(kFaultMarker).size();
  const auto colon = detail.find(':', from);
  if (colon == std::string::npos) return "";
  return detail.substr(from, colon - from);
}

bool is_index_overflow(const CorrectnessReport& before, bool large_cases_ran, const CaseResult& r) {
  // Failures the candidate's kernel causes; kqual's own (harness_error, worker_protocol), a crashed
  // worker, a launch the driver refused (launch_error) or a refusal say nothing of index width.
  static const std::set<std::string> by_the_kernel = {
      "wrong_result",        "nondeterministic",   "nan_policy",          "unwritten_output", "out_of_bounds_write",
      "input_mutated",       "illegal_address",    "misaligned_address",  "illegal_instruction", "stack_overflow",
      "launch_failure",      "device_assert",      "hang",                "aliasing_wrong"};
  if (r.status != CaseStatus::fail || !by_the_kernel.count(r.code)) return false;
  return large_cases_ran && before.failed == 0 && before.skipped == 0 && before.passed > 0;
}

void label_index_case(const CorrectnessReport& before, bool large_cases_ran, const std::string& past, CaseResult& r) {
  if (r.status != CaseStatus::fail) return;
  if (is_index_overflow(before, large_cases_ran, r)) {
    r.detail = fmt::format("fails past {} elements while every smaller case passed — 32-bit index arithmetic (or an offset of "
                           "that width) {}{}: {}",
                           past, kFaultMarker, r.code, r.detail);
    r.code = "index_overflow";
    return;
  }
  // Why this is not called index_overflow: the reader should not have to guess.
  std::string why;
  if (before.failed > 0) why = "a smaller case failed too";
  else if (!large_cases_ran) why = "the large cases below 2^31 elements did not run";
  else if (before.skipped > 0) why = fmt::format("{} smaller case{} did not run", before.skipped, before.skipped == 1 ? "" : "s");
  else if (before.passed == 0) why = "no smaller case passed";
  else why = fmt::format("{} is not evidence of 32-bit index arithmetic", r.code);
  r.detail = fmt::format("{} (past {} elements; not called index_overflow: {})", r.detail, past, why);
}

}  // namespace kqual::check
