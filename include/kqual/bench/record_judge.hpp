#pragma once
// A PyTorch submission's case judged from its activity record (activity_record.hpp): the record's own
// integrity first, then what each of the case's calls did on the GPU: which streams, which threads,
// what crossed to the host, and who did the work (the kernels' origin: the submission's own code, ATen,
// cuBLAS, cuDNN, Inductor). Pure: no process, no GPU; tests feed it records written by hand.
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "kqual/bench/activity_record.hpp"
#include "kqual/bench/torch_submission.hpp"

namespace kqual::bench {

// The worker's marks for call k (1-based): "armed<k>" before the spin it puts on the caller's stream, "call<k>" before it, "returned<k>" when it returned,
// "fenced<k>" after a one-element fill on the caller's stream (the fence: the caller's stream reached it
// only once everything the call put on that stream was done); "ref" / "ref-done" around the problem's
// own reference, run on the same values.
std::string armed_mark(int k);
std::string call_mark(int k);
std::string returned_mark(int k);
std::string fenced_mark(int k);

struct RecordRules {
  std::vector<std::string> allow;          // regular expressions of kernel names the user or the problem allows
  std::uint64_t output_bytes = 0;          // the case's outputs, all together [bytes]
  // The case's inputs [bytes each]: between the calls the harness copies only these within the GPU (B into
  // A's tensors); other work there is not its own.
  std::vector<std::uint64_t> input_bytes;
  // What the recorder may upload (check_uploads: label -> the code of kqual's bytes): the only copies from the
  // host between the calls are these uploads of datasets B and A (and the reference's A).
  std::map<std::string, std::uint64_t> uploads;
  bool require_origin = true;              // a kernel whose launch has no record is the record not adding up
  // An imported problem (KernelBench's rules): a solution may replace some of the reference's operators and
  // leave the rest to the library. Its library kernels pass where its own kernels do part of the work and
  // at least one kernel the reference launches did not run (something was replaced); else reference_called.
  bool partial_replacement = false;
};

// One kernel of the submission's calls, with where it came from and its GPU time.
struct RecordKernel {
  std::string name;  // demangled
  WorkOrigin origin = WorkOrigin::own;
  std::string object;  // the object that launched it
  double ns = 0;
  bool allowed = false;  // filling or copying memory, or named by the allow list
  bool reference = false;  // the problem's own reference launches it too
};

struct RecordJudgement {
  SubmissionFailure failure = SubmissionFailure::none;
  std::string detail;
  std::vector<RecordKernel> kernels;            // every distinct kernel of the calls
  std::map<std::string, double> gpu_ns_by_origin;  // [ns] of every call's kernels and copies, by origin ("own", "ATen", ...)
  std::vector<std::string> reference_kernels;   // what the reference launched (names, demangled)
  std::vector<int> call_work;                   // per call: kernels, copies and memsets between its call and returned marks
  // partial_replacement: the library's kernels the solution kept, allowed (names); "" note when none
  std::vector<std::string> kept_library;
};

// The case's record judged: `calls` calls were marked; modules: every module loaded so far.
RecordJudgement judge_case_record(const ActivityRecord& r, const std::vector<RecordModule>& modules, int calls, const RecordRules& rules);

// Timed samples read from the record. The worker marks each kept sample "t<id>" before its call and
// "/t<id>" after it, and the verified last call of each dataset "v<d>" / "vd<d>".
struct RecordTiming {
  std::vector<double> ms;  // [ms] per sample: the first start to the last end of everything its call caused, on every stream
  // "" when the record holds; else harness_tampered (a sample's marks or work missing), timer_patched (the
  // events report less than the GPU ran), late_result (work between samples by another thread),
  // timed_output_wrong (a timed call did other GPU work than the verified calls)
  std::string code;
  std::string detail;
};
// ids: each kept sample's id (the reply's sample_ids); event_ms: what the events said of it. judge:
// the checks above (the submission's series); without, the spans only (a baseline's).
// modules: every module loaded so far (a kernel's origin): the submission's own kernels between the first
// and the last sample, outside every sample, are work moved out of the timing window.
// own_uploads (judge only): the copies of the recorder's own uploads (check_uploads); any other copy from the
// host after the first sample began, outside every timed and verified call, is harness_tampered.
RecordTiming timing_from_record(const ActivityRecord& r, const std::vector<RecordModule>& modules, const std::vector<int>& ids,
                                const std::vector<double>& event_ms, bool judge, const std::set<std::uint32_t>* own_uploads = nullptr);

// A kernel's name as C++ spells it (the record holds the compiled, mangled one).
std::string demangled(const std::string& name);
// An activity in words for a finding: "kernel add_relu(...)", "a memset of N bytes", "a copy of N bytes".
std::string what_ran(const RecordActivity& a);

}  // namespace kqual::bench
