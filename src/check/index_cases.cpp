// Cases past 2^31 elements when the claims reach there (generated on the device, checked in
// windows), and the large cases run afterwards to bracket a failure there: index_overflow is said
// only on that evidence (labels.hpp).
#include "kqual/check/evaluate.hpp"

#include <chrono>
#include <mutex>
#include <set>

#include "kqual/check/labels.hpp"
#include "internal.hpp"

namespace kqual::check::detail {
namespace {

// A past-2^31 case failed in a check that skipped the large cases (--no-large-cases): they are run
// now, only to tell 32-bit index arithmetic from a failure that starts at a smaller size (2^27
// elements, a grid limit). True when every one of them ran and passed (or the contract has none).
bool bracket_with_large_cases(Session& s, const BuiltCandidate& b, const contract::Contract& c, const CheckOptions& o,
                              CorrectnessReport& rep, int* diagnoses) {
  std::set<std::string> regular;
  for (const auto& spec : c.correctness_cases(b.manifest.supports, o.seed, false)) regular.insert(spec.id);
  bool all_passed = true;
  for (const auto& spec : c.correctness_cases(b.manifest.supports, o.seed, true)) {
    if (regular.count(spec.id)) continue;
    if (over_size_cap(c, spec, o)) return false;
    CaseResult r = run_one_case(s, b, c, spec, o, diagnoses);
    rep.wall_ms += r.wall_ms;
    if (harness_not_run(r, rep)) return false;
    if (r.status == CaseStatus::skipped) {
      ++rep.skipped;
      rep.results.push_back(r);
      return false;
    }
    count_case(rep, r);
    all_passed = all_passed && r.status == CaseStatus::pass;
    rep.results.push_back(r);
    if (r.status == CaseStatus::fail) return false;
  }
  return all_passed;
}

// One case past 2^31 elements at a time in this process. Each takes a large share of the device's memory
// (an f32 buffer of 2^32 elements is 16 GiB; its reference run in the session's reference worker as much
// again): lanes (selftest, screen) running theirs at once ran an H100's 80 GB out, and the failed
// allocation was kqual's own failure, not the candidate's. Smaller cases of other lanes go on meanwhile.
std::mutex& index_case_gate() {
  static std::mutex m;
  return m;
}

}  // namespace

// Past 2^31 elements, when the claims reach there: generated on the device, checked in windows.
// A failure there while every smaller case, the large ones included, passed is 32-bit index
// arithmetic (or its like): index_overflow, only on that evidence (labels.hpp).
void run_index_cases(Session& s, const BuiltCandidate& b, const contract::Contract& c, const CheckOptions& o,
                     CorrectnessReport& rep, int* diagnoses) {
  bool large_ran = o.include_large;
  for (const auto& spec : c.index_cases(b.manifest.supports, o.seed)) {
    const std::lock_guard<std::mutex> one_at_a_time(index_case_gate());  // the wait is not the case's time
    auto t0 = std::chrono::steady_clock::now();
    CaseResult r = harness_guarded(spec, [&] { return run_generated_case(s, b, c, spec, o.index_case_timeout_s); });
    r.wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    rep.wall_ms += r.wall_ms;
    if (harness_not_run(r, rep)) return;
    if (r.status == CaseStatus::skipped) {
      ++rep.skipped;
      rep.results.push_back(r);
      continue;
    }
    bool bracketed = false;
    if (r.status == CaseStatus::fail && !large_ran && rep.failed == 0 && rep.skipped == 0 && is_index_overflow(rep, true, r))
      large_ran = bracketed = bracket_with_large_cases(s, b, c, o, rep, diagnoses) && rep.failed == 0;
    if (r.status == CaseStatus::fail) label_index_case(rep, large_ran, spec.id.find("2^32") != std::string::npos ? "2^32" : "2^31", r);
    if (bracketed) r.detail += " (the large cases below 2^31 elements, not asked for, were run to tell this apart and passed)";
    count_case(rep, r);
    rep.results.push_back(r);
    if (r.status == CaseStatus::fail && (r.code == "index_overflow" || is_fault(r.code) || r.code == "hang")) return;
  }
}

}  // namespace kqual::check::detail
