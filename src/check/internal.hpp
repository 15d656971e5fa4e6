#pragma once
// Internal to src/check/: the pieces evaluate.cpp (cases, judging, diagnosis), generated_case.cpp
// (cases past 2^31 elements) and sanitizer_pass.cpp share. Not a public header.
#include <optional>
#include <string>
#include <vector>

#include "kqual/check/evaluate.hpp"
#include "kqual/check/plan.hpp"
#include "kqual/worker/protocol.hpp"

namespace kqual::check::detail {
using build::BuiltCandidate;
using worker::Session;

// How a case is run: the default (inputs against unmapped pages, shared memory scribbled, failures
// diagnosed), or the sanitizer pass's (one run, every buffer its own exact-size allocation).
struct RunStyle {
  bool traps = true;
  bool scribble = true;
  bool diagnose = true;
  int* diagnoses_left = nullptr;  // shared by a candidate's cases: failures diagnosed at most this often
  std::size_t guard_bytes = 4096;
  int runs = 2;
};

// The outputs of one worker request judged against the expected tensors: true when every run was
// right; otherwise res.code and res.detail are set.
bool judge_runs(const contract::Contract& c, const worker::Answer<worker::RunReply>& r, const worker::RunRequest& request,
                const std::vector<contract::Tensor>& expected, CaseResult& res);
bool is_fault(const std::string& code);
bool is_value_failure(const std::string& code);
// The candidate's claims and launch plan admit the case: the resolved plan, or nullopt with res refused.
std::optional<ResolvedPlan> admit_case(Session& s, const BuiltCandidate& b, const contract::Contract& c,
                                       const contract::CaseSpec& spec, CaseResult& res);
CaseResult run_case_styled(Session& s, const BuiltCandidate& b, const contract::Contract& c, const contract::CaseSpec& spec,
                           const RunStyle& style);
std::int64_t case_elements(const contract::Contract& c, const contract::CaseSpec& spec);

// reference.cpp: the module of a reference source (NVRTC, cached per source and arch in the
// session's scratch folder), and a reference's launches as the worker takes them.
std::string reference_module(Session& s, const std::string& source, const std::string& name);
std::vector<worker::Launch> worker_launches(const contract::GpuReference& g);

// device_case.cpp: a generated case verified on the device against the contract's
// device_reference (chunk hashes; a differing chunk explained on the CPU).
CaseResult run_device_verified_case(Session& s, const BuiltCandidate& b, const contract::Contract& c,
                                    const contract::CaseSpec& spec, double timeout_s);
// The device memory a generated case needs, or "" when the device holds it (res is then untouched).
std::string device_too_small(Session& s, const contract::Contract& c, const contract::CaseSpec& spec, const ResolvedPlan& plan);

// generated_case.cpp
std::string generator_module(Session& s);
CaseResult run_generated_case(Session& s, const BuiltCandidate& b, const contract::Contract& c, const contract::CaseSpec& spec,
                              double timeout_s);

// sanitizer_pass.cpp
std::vector<contract::CaseSpec> sanitizer_picks(const contract::Contract& c, const CheckOptions& o, const CorrectnessReport& rep);
void sanitizer_pass(Session& s, const BuiltCandidate& b, const contract::Contract& c, const std::vector<contract::CaseSpec>& picks,
                    const std::vector<std::string>& tools, CorrectnessReport& rep);

}  // namespace kqual::check::detail
