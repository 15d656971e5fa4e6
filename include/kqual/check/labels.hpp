#pragma once
// How a failing case is named and worded in a verdict: what a faulting kernel did, in words (not
// where kqual noticed it), and when a failure past 2^31 elements may be called index_overflow.
// Pure functions over worker replies and case results, so the CPU tests can call them.
#include <string>

#include "kqual/check/evaluate.hpp"
#include "kqual/worker/worker.hpp"

namespace kqual::check {

// What the kernel did, for a CUDA error the worker reports by name (CUDA_ERROR_...): e.g. for
// CUDA_ERROR_LAUNCH_FAILED "the kernel trapped, hit a device-side assert or an unspecified fault
// during its launch (CUDA_ERROR_LAUNCH_FAILED)". `description` is the driver's string for it (may
// be empty); it is used for names without a sentence of their own.
std::string launch_fault_sentence(const std::string& cuda_error, const std::string& description = "");

// The detail of a case whose worker request failed: for a CUDA error, the sentence above and the
// driver call that reported it; otherwise the worker's reason. kqual's own source locations
// ("<path>/src/cuda/objects.cpp:154: ") are left out: they say where kqual noticed the error, not
// what the candidate did; fault_debug keeps them.
std::string fault_detail(const worker::WorkerReply& r);
// The worker's message as it came (source locations included), for a case's debug field.
inline std::string fault_debug(const worker::WorkerReply& r) { return r.reason; }

// `message` without kqual's source locations: every "<path>/src/<folder>/<file>.<ext>:<line>: "
// (and a bare "src/...:<line>: ") is removed.
std::string without_source_locations(std::string message);

// A case past 2^31 elements that failed is called index_overflow (32-bit index arithmetic, or an
// offset of that width) only when the evidence says so:
//   - it ran and failed by the candidate's doing: a wrong, unwritten or changed output, a write
//     past a buffer, a fault of its kernel, a hang (a wrapped 32-bit loop may never end) — not kqual's
//     own error, a crashed or confused worker, a launch the driver refused or a case not run;
//   - every smaller case ran and passed: none failed, none was skipped, at least one passed, and the
//     large cases (past 2^22 elements or so, `large_cases_ran`) were among them — without them a
//     failure at 2^31 may be any defect that a large case would have shown.
// `before` is the report as it stood before this case.
bool is_index_overflow(const CorrectnessReport& before, bool large_cases_ran, const CaseResult& r);
// Applies the rule to a failing case past 2^31 elements (`past` names the size, "2^31" or "2^32"):
// code index_overflow and a detail saying why, or its own code kept, with the reason it is not
// called index_overflow added to the detail.
void label_index_case(const CorrectnessReport& before, bool large_cases_ran, const std::string& past, CaseResult& r);
// The case's own failure code inside an index_overflow detail that label_index_case wrote (the fault
// the case shows when it runs alone, as `kqual check --case` runs it: "illegal_address",
// "wrong_result", ...); "" for any other text.
std::string index_overflow_fault(const std::string& detail);

}  // namespace kqual::check
