#pragma once
// A candidate written for PyTorch (a `ModelNew` module whose kernels come from load_inline, Triton or
// torch.library) checked against a contract: kqual makes the contract's cases and references as for
// any candidate; the submission runs in tools/torch/submission_worker.py, a process of its own per
// candidate, killed when a case outlives its deadline; the outputs it writes are judged here
// (docs/torch-submissions.md).
//
// What changes against a kernel candidate, and is said in every result: the submission allocates
// its outputs, so poisoned outputs and guard pages do not apply; instead every output is compared
// with the reference on two datasets given in the same tensors (a result cached by data_ptr and
// shape is caught), a third call on fresh tensors is compared with the first, inputs are hashed
// before and after each call, the output is read once the caller's stream is done and again after
// the whole device is, and every kernel, copy and stream of every call comes from kqual's activity
// recorder (activity_record.hpp), injected below the submission's interpreter.
#include <array>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kqual/contract/contract.hpp"
#include "kqual/core/enum_names.hpp"
#include "kqual/core/json.hpp"

namespace kqual::bench {

struct TorchSubmission {
  std::filesystem::path file;            // the submission's .py
  std::string class_name = "ModelNew";   // the module class it defines
  std::filesystem::path problem_dir;     // the contract's folder (an imported KernelBench problem: reference.py with CONFIG)
  std::vector<std::string> allow_kernels;  // regular expressions of library kernels the problem or the user allows
  std::vector<DType> dtypes;               // the dtypes the submission claims; empty: every dtype of the contract
};

// Why a submission's case failed, one class per way PyTorch-level submissions are known to cheat or
// break (docs/torch-submissions.md has the table).
enum class SubmissionFailure {
  none,
  wrong_result,        // an output differs from the reference beyond the contract's bound
  nan_policy,          // NaN / Inf where the contract's policy says otherwise
  cached_output,       // the second dataset, given in the same tensors, got the first dataset's output
  first_call_differs,  // the first call's output differs from a later call's on the same values
  input_mutated,       // an input's bytes changed during a call
  unjoined_stream,     // work left on a side stream the call did not join to the caller's stream
  late_result,         // output bytes written after the call's stream was done (a thread, a deferred write)
  reference_called,    // a library kernel (ATen, cuBLAS, cuDNN, Inductor) did the work: the allow-list does not name it
  timer_patched,       // torch.cuda.Event, torch.cuda.synchronize, time.* or another watched function replaced
  output_mismatch,     // not a plain CUDA tensor of the problem's dtype and size (a lazy or wrapped result)
  parameters_differ,   // the problem's Model has parameters the submission's module does not
  exception,           // the submission raised (or a CUDA error it caused did)
  crash,               // the worker process died during the case
  hang,                // no answer within the case's deadline: the worker was killed
  harness_error,       // kqual's side failed (an unreadable reply, files it could not read): not the submission's verdict
  harness_tampered,    // the activity record stopped, broke its chain, or does not add up (a launch without its kernel)
  wrong_stream,        // a kernel or copy of the call on the legacy default stream, not ordered with the caller's stream
  host_compute,        // the call copied its data to the host and back: the work done on the CPU
  nondeterministic,    // two calls on the same inputs differ where the contract requires reproducibility
  build_failed,        // the submission's own kernels did not build (load_inline, Triton): the compiler's first error
  // wrong (or raising, or crashing) at a size kqual scaled the problem to, right at the problem's own size:
  // a kernel written for the sizes it was given (SubmissionCheck::own_size says so)
  shape_unsupported,
};
inline constexpr EnumNames<SubmissionFailure, 22> kSubmissionFailureNames{{{
    {SubmissionFailure::none, "none"},
    {SubmissionFailure::wrong_result, "wrong_result"},
    {SubmissionFailure::nan_policy, "nan_policy"},
    {SubmissionFailure::cached_output, "cached_output"},
    {SubmissionFailure::first_call_differs, "first_call_differs"},
    {SubmissionFailure::input_mutated, "input_mutated"},
    {SubmissionFailure::unjoined_stream, "unjoined_stream"},
    {SubmissionFailure::late_result, "late_result"},
    {SubmissionFailure::reference_called, "reference_called"},
    {SubmissionFailure::timer_patched, "timer_patched"},
    {SubmissionFailure::output_mismatch, "output_mismatch"},
    {SubmissionFailure::parameters_differ, "parameters_differ"},
    {SubmissionFailure::exception, "exception"},
    {SubmissionFailure::crash, "crash"},
    {SubmissionFailure::hang, "hang"},
    {SubmissionFailure::harness_error, "harness_error"},
    {SubmissionFailure::harness_tampered, "harness_tampered"},
    {SubmissionFailure::wrong_stream, "wrong_stream"},
    {SubmissionFailure::host_compute, "host_compute"},
    {SubmissionFailure::nondeterministic, "nondeterministic"},
    {SubmissionFailure::build_failed, "build_failed"},
    {SubmissionFailure::shape_unsupported, "shape_unsupported"},
}}};
inline const char* to_string(SubmissionFailure f) { return kSubmissionFailureNames.name(f); }

// A submission worker's failure code as the submission's own failure ("exception", "build_failed",
// "output_mismatch", "parameters_differ", "timeout" → hang, "worker_died" → crash), or harness_error
// for every other code (kqual's own: "worker_error", "protocol", "usage", an unknown one). The one
// mapping the check and the timing share: kqual's failure is never charged to the submission.
SubmissionFailure submission_failure_of_code(const std::string& code);

struct SubmissionCaseResult {
  std::string id;  // the contract's case id
  SubmissionFailure failure = SubmissionFailure::none;
  std::string detail;
  std::vector<std::string> kernels;  // what the profiled call launched
};

// The three output files of one output tensor: calls 1 (dataset A), 2 (dataset B in A's tensors), 3
// (dataset A, fresh tensors).
struct SubmissionOutputFiles {
  std::string name;
  std::filesystem::path call[3];
  // Where the activity record holds the recorder's own read of the output's device memory: its keyed
  // code per call, and the record's key. The bytes judged must carry that code (read once, then judged:
  // a file changed after the check is not judged).
  std::optional<std::uint64_t> mac[3];
  std::array<std::uint64_t, 2> key{};
};

// One case judged from the worker's reply and the files it wrote; expected_a / expected_b: the
// references of the two datasets, in the order of `files`. Pure: no process, no GPU.
struct RecordJudgement;
SubmissionCaseResult judge_submission_case(const contract::Contract& c, const std::string& id, const json& reply,
                                           const std::vector<contract::Tensor>& expected_a,
                                           const std::vector<contract::Tensor>& expected_b,
                                           const std::vector<SubmissionOutputFiles>& files, const RecordJudgement* record);

struct SubmissionCheckOptions {
  std::uint64_t seed = 20261205;
  double case_timeout_s = 120;   // per case
  // The worker's start: PyTorch imported, the submission's module loaded and its extensions built (a
  // load_inline build takes one to several minutes, more with other builds beside it): not a case's deadline.
  double import_timeout_s = 900;
  std::filesystem::path worker;  // the worker script; empty: tools/torch/submission_worker.py
  std::string python;            // empty: the reference interpreter
  std::filesystem::path scratch; // where case files go (removed after); empty: a temporary folder
  std::int64_t max_case_elements = std::int64_t(1) << 24;  // larger cases are left out (said in the result)
  // Where no case is within max_case_elements, the cases of the smallest size run, up to this many elements.
  std::int64_t own_size_cap_elements = std::int64_t(1) << 28;
  bool stop_at_first_failure = true;
  // Set in the worker's environment (kqual screen --gpus: CUDA_VISIBLE_DEVICES pins it to the lane's GPU).
  std::vector<std::pair<std::string, std::string>> env;
  // Where each call is made: Stream::own, a stream of kqual's (production code calls on many
  // streams), or Stream::legacy_default, PyTorch's default stream as KernelBench calls it.
  enum class Stream { own, legacy_default } stream = Stream::own;
  // With Stream::own: a submission rejected wrong_stream is checked again on the default stream, and the
  // result says whether it is right there (SubmissionCheck::on_default_stream).
  bool recheck_on_default_stream = true;
  // A submission wrong, raising or crashing at a scaled size is checked again at the problem's own size (its
  // benchmark shapes, as near as own_size_cap_elements allows): right there, the verdict is shape_unsupported.
  // For problems that have a size of their own (an imported KernelBench problem: imported_problem()).
  bool recheck_own_size = false;
  // Only cases of these sizes (empty: every size the contract makes).
  std::vector<contract::Dims> only_dims;
};

struct SubmissionCheck {
  std::string not_run;          // why nothing ran (no PyTorch, no CUDA device here): neither accepted nor rejected
  bool accepted = false;
  bool harness_failed = false;  // kqual could not judge (harness_error): neither accepted nor rejected
  std::string worker_torch, worker_device;
  int cases = 0, passed = 0, skipped = 0;
  std::vector<SubmissionCaseResult> failures;
  std::vector<std::string> kernels;      // every kernel the submission launched, over every case
  std::vector<std::string> not_applied;  // harness rules that cannot hold for a PyTorch submission, each with why
  std::vector<std::string> dtypes;       // the dtypes judged (the submission's claim, else the contract's)
  std::map<std::string, double> gpu_ns_by_origin;  // [ns] the calls' GPU time by origin (own, ATen, cuBLAS, ...)
  std::string stream = "own";            // where the calls were made: "own" (a stream of kqual's) or "default"
  // A wrong_stream rejection checked again on the default stream: "accepted: ..." or "rejected: ..."
  // (summary() of that check); "" when not checked.
  std::string on_default_stream;
  // Where no case is within max_case_elements (a problem whose fixed sizes are larger: VGG's classifier
  // weights): which cases ran instead, at the problem's smallest size; "" otherwise.
  std::string cases_note;
  // A rejection at a scaled size checked again at the problem's own size (summary() of that check); "" when not.
  std::string own_size;
  // The problem's parameters the submission declares under other names, each given to the submission's
  // parameter of the same shape (tools/torch/kqual_parameters.py): "problem name -> submission name".
  std::vector<std::string> parameters_by_shape;
  // An imported problem's library kernels the submission kept while replacing others (partial replacement,
  // allowed as KernelBench allows it): "name (origin, from object)".
  std::vector<std::string> kept_library;
  // [ms] the worker's start (its hello), its runs of the cases, and kqual's making of the cases (on
  // a thread of its own, each case made while the worker runs the one before).
  double hello_ms = 0, worker_ms = 0, prepare_ms = 0;
  std::string summary() const;           // "accepted: 37 cases ..." / "rejected: cached_output at <id>: ..."
  json to_json() const;
};

// An imported problem folder (KernelBench's: reference.py and problem.py): it has sizes of its own, and
// lets a solution keep some of its operators in the library.
bool imported_problem(const std::filesystem::path& problem_dir);

// The harness rules a PyTorch submission cannot be held to, each with what stands in for it.
std::vector<std::string> submission_rules_not_applied();

// Where the submission's PyTorch extensions are built (TORCH_EXTENSIONS_DIR of its worker): a folder of
// its own under the cache ($KQUAL_CACHE_DIR, else $XDG_CACHE_HOME/kqual, else ~/.cache/kqual), keyed by the
// content of its file and of the .py files beside it.
std::filesystem::path submission_build_dir(const TorchSubmission& s);

// A case just past the element limit: `spec` (the largest within it) with the outermost axis of its
// largest tensor grown to the smallest size at which that tensor holds more than `limit` elements, if the
// contract accepts that shape (a kernel whose grid stops at 2^24 elements is wrong there, and only there).
std::optional<contract::CaseSpec> past_limit_case(const contract::Contract& c, const contract::CaseSpec& spec, std::int64_t limit);

// Every correctness case of `c` the submission can take (its dtypes, up to max_case_elements), each
// run as above. Where the worker cannot run (no PyTorch, no CUDA device) the result says so in
// not_run. Throws Error(input) for a problem folder or submission that cannot be used.
SubmissionCheck check_torch_submission(const contract::Contract& c, const TorchSubmission& s, const SubmissionCheckOptions& o);

// The shape of each tensor of `c` at `dims` (the declared axes, outermost first; a built-in's
// domain). Throws Error(internal) for a tensor or axis it does not know.
std::vector<std::int64_t> tensor_shape(const contract::Contract& c, const std::string& tensor, const contract::Dims& dims);

// A candidate folder whose kqual.toml says [candidate] kind = "torch_module": the submission file
// (`module`, relative to the folder), its class, the contract it answers (`contract`: a name, or a
// path that resolves as any manifest's contract path does), library kernels it may call
// (`allow_kernels`) and, for a bundled known-broken one, [expect] rejected_for / or_rejected_for.
struct TorchSubmissionManifest {
  std::filesystem::path file;  // the kqual.toml
  std::string name, description, contract;
  TorchSubmission submission;
  std::string expect_rejected_for;  // "" when none is stated
  std::vector<std::string> expect_or;
  // A timing cheat ([expect] timed_failure): accepted by check, qualify fails it while timed with this class.
  std::string expect_timed_failure;
};
// True when `path` (a folder with kqual.toml, or the file) is such a manifest; false for any other
// manifest or path. Throws Error(input) only for a file that cannot be parsed as TOML.
bool is_torch_submission_manifest(const std::filesystem::path& path);
// Reads it; throws Error(input) naming the file and key for a missing module, an unknown key, a
// module file that does not exist.
TorchSubmissionManifest read_torch_submission_manifest(const std::filesystem::path& path);

}  // namespace kqual::bench
