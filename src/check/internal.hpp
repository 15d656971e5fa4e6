#pragma once
// Internal to src/check/: the pieces its files share. evaluate.cpp runs a candidate's cases in
// order; host_case.cpp runs one host-made case and diagnoses its failure; judge_runs.cpp judges a
// worker reply; generated_case.cpp and device_case.cpp run cases generated on the device;
// index_cases.cpp the cases past 2^31 elements; sanitizer_pass.cpp the compute-sanitizer pass.
// Not a public header.
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kqual/check/evaluate.hpp"
#include "kqual/check/plan.hpp"
#include "kqual/check/run_to_run.hpp"
#include "kqual/worker/protocol.hpp"

namespace kqual::check {
// The names every file of src/check/ uses.
using build::BuiltCandidate;
using worker::DeviceFacts;
using worker::Session;
using worker::WorkerReply;
}  // namespace kqual::check

namespace kqual::check::detail {

// [elements] per hash of an output verified on the device (device_case.cpp).
inline constexpr std::uint64_t kChunkElements = std::uint64_t(1) << 20;

// How a case is run: the default (inputs against unmapped pages, shared memory scribbled, failures
// diagnosed), or the sanitizer pass's (one run, every buffer its own exact-size allocation).
struct RunStyle {
  bool traps = true;
  bool scribble = true;
  bool diagnose = true;
  int* diagnoses_left = nullptr;  // shared by a candidate's cases: failures diagnosed at most this often
  std::size_t guard_bytes = 4096;
  int runs = 2;
  // A passing case runs again with the contract's in-place outputs on their inputs when the candidate
  // claims in_place (in_place.hpp).
  bool in_place = true;
};

// judge_runs.cpp. The outputs of one worker request judged against the expected tensors: true
// when every run was right; otherwise res.code and res.detail are set.
// Two runs that differ are measured and judged under `policy` (run_to_run.hpp): res.run_to_run is
// set, and res.note when the difference is admitted.
bool judge_runs(const contract::Contract& c, const RunToRunPolicy& policy, const worker::Answer<worker::RunReply>& r,
                const worker::RunRequest& request, const std::vector<contract::Tensor>& expected, CaseResult& res);
bool is_fault(const std::string& code);
bool is_value_failure(const std::string& code);

// host_case.cpp. The candidate's claims and launch plan admit the case: the resolved plan, or
// nullopt with res refused.
std::optional<ResolvedPlan> admit_case(Session& s, const BuiltCandidate& b, const contract::Contract& c,
                                       const contract::CaseSpec& spec, CaseResult& res);
// A host-made case run as `style` says, judged, and its failure diagnosed.
CaseResult run_case_styled(Session& s, const BuiltCandidate& b, const contract::Contract& c, const contract::CaseSpec& spec,
                           const RunStyle& style);

// evaluate.cpp: the case loop's pieces the index cases share.
std::int64_t case_elements(const contract::Contract& c, const contract::CaseSpec& spec);
// A case over CheckOptions::max_case_elements: not run.
bool over_size_cap(const contract::Contract& c, const contract::CaseSpec& spec, const CheckOptions& o);
// One case through the harness (host-made, or generated on the device), with its wall time.
CaseResult run_one_case(Session& s, const BuiltCandidate& b, const contract::Contract& c, const contract::CaseSpec& spec,
                        const CheckOptions& o, int* diagnoses);
// `run` with a failing reference (Error(cuda)) turned into a harness_error case: kqual's failure.
CaseResult harness_guarded(const contract::CaseSpec& spec, const std::function<CaseResult()>& run);
// A harness_error case recorded as not run (true), never counted against the candidate.
bool harness_not_run(CaseResult& r, CorrectnessReport& rep);
// A case that ran (pass, refused or fail) counted into the report.
void count_case(CorrectnessReport& rep, const CaseResult& r);

// index_cases.cpp: the cases past 2^31 elements, with the large cases run to bracket a failure there.
void run_index_cases(Session& s, const BuiltCandidate& b, const contract::Contract& c, const CheckOptions& o,
                     CorrectnessReport& rep, int* diagnoses);

// reference.cpp: the module of a reference source (NVRTC, cached per source and arch in the
// session's scratch folder), and a reference's launches as the worker takes them.
std::string reference_module(Session& s, const std::string& source, const std::string& name);
std::vector<worker::Launch> worker_launches(const contract::GpuReference& g);
// The expected outputs of one window of a generated case: the contract's window_reference with the
// session's ReferenceHost.
std::vector<contract::Tensor> window_reference(Session& s, const contract::Contract& c, const contract::CaseSpec& big,
                                               const contract::OutputWindow& w);

// device_case.cpp: a generated case verified on the device against the contract's
// device_reference (chunk hashes; a differing chunk explained on the CPU).
CaseResult run_device_verified_case(Session& s, const BuiltCandidate& b, const contract::Contract& c,
                                    const contract::CaseSpec& spec, double timeout_s);
// The device memory a generated case needs, or "" when the device holds it (res is then untouched).
std::string device_too_small(Session& s, const contract::Contract& c, const contract::CaseSpec& spec, const ResolvedPlan& plan);
// The worker buffers of a generated case: inputs generated on the device (stream = position among
// the contract's inputs), outputs read back in `windows` where it names them and hashed per chunk
// otherwise; `outputs` (a reference's raw outputs) replaces the contract's outputs when given.
std::vector<worker::Buffer> generated_buffers(const contract::Contract& c, const contract::CaseSpec& spec,
                                              const std::vector<contract::Tensor>* outputs,
                                              const std::map<std::string, std::vector<std::pair<std::uint64_t, std::uint64_t>>>* windows);
// Run 2's poison byte: 0x7F, a large finite value in f32, bf16 and f64; 0x7B when an output is f16,
// e4m3 or e5m2, where 0x7F.. is NaN like run 1's 0xFF.. (an unwritten element where the reference
// is NaN would pass both runs). 0x7B.. is finite in every float dtype (f16 60768, e4m3 352).
std::uint8_t second_poison_byte(const std::vector<contract::Tensor>& outputs);

// The candidate's request for a generated case: its plan, two runs (poison 0xFF, 0x7F) with guarded
// buffers, the generator module, `buffers` and the plan's scratch.
worker::RunRequest generated_request(Session& s, const BuiltCandidate& b, const ResolvedPlan& plan, std::vector<worker::Buffer> buffers);
// How every generated case begins: res names the case and how its outputs are referenced
// (`reference`), then admit_case and device_too_small (res skipped): the plan, or nullopt.
std::optional<ResolvedPlan> admit_generated(Session& s, const BuiltCandidate& b, const contract::Contract& c,
                                            const contract::CaseSpec& spec, std::string reference, CaseResult& res);
// A generated case's worker reply before its outputs are looked at: false with res set on a fault,
// a write past an output or an input changed on the device.
bool generated_runs_clean(const worker::Answer<worker::RunReply>& r, CaseResult& res);
// One output window read back from a run's files (RunRequest::out_files: per output, one file per
// poison run, holding its windows one after another in the order they were asked for) and judged:
// the contract's reference for it, the bytes of each run up to the first one the contract rejects,
// and that rejection. next_at: where each output's next window starts in its files (advanced).
struct ReadBackWindow {
  contract::Tensor expected;
  std::vector<std::vector<std::uint8_t>> runs;  // the runs the contract accepts, in run order
  std::optional<std::size_t> rejected_run;      // the first run it rejects
  contract::Comparison rejection;
};
ReadBackWindow read_back_window(Session& s, const contract::Contract& c, const contract::CaseSpec& spec, const contract::OutputWindow& w,
                                const worker::RunRequest& request, std::map<std::string, std::size_t>& next_at);

// generated_case.cpp
std::string generator_module(Session& s);
CaseResult run_generated_case(Session& s, const BuiltCandidate& b, const contract::Contract& c, const contract::CaseSpec& spec,
                              double timeout_s);

// sanitizer_pass.cpp (sanitizer_after_cases: the pass that follows the cases, or why it did not run)
std::vector<contract::CaseSpec> sanitizer_picks(const contract::Contract& c, const CheckOptions& o, const CorrectnessReport& rep);
void sanitizer_pass(Session& s, const BuiltCandidate& b, const contract::Contract& c, const std::vector<contract::CaseSpec>& picks,
                    const std::vector<std::string>& tools, CorrectnessReport& rep);
void sanitizer_after_cases(Session& s, const BuiltCandidate& b, const contract::Contract& c, const CheckOptions& o,
                           CorrectnessReport& rep);

}  // namespace kqual::check::detail
