#pragma once
// A PyTorch submission's results as a type (schema kqual.submission/1 for `kqual check`,
// kqual.submission-qualify/1 for `kqual qualify`; docs/torch-submissions.md): the candidate, the
// contract that judged it, the check, and under qualify the timing against PyTorch and the decision.
// The pipeline (src/pipeline/submission.cpp) fills it; summary.md is rendered from it
// (src/report/submission_summary.cpp); JSON only at the edge (src/report/submission_result.cpp), with
// to_json(submission_result_from_json(doc)) == doc (tests/pipeline/submission_qualify_test.cpp).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kqual/bench/torch_submission.hpp"
#include "kqual/bench/torch_submission_timing.hpp"
#include "kqual/core/json.hpp"
#include "kqual/decision/qualify.hpp"

namespace kqual::report {

struct SubmissionCandidate {
  std::string name, file, class_name;    // the submission file (absolute) and the class judged
  std::vector<std::string> allow_kernels;  // the manifest's and --allow-kernel's patterns
};

struct SubmissionResult {
  bool qualify = false;  // `kqual qualify` (timed and decided) or `kqual check`
  std::string kqual_version, kqual_commit;
  SubmissionCandidate candidate;
  std::string contract;
  std::uint64_t seed = 0;
  bench::SubmissionCheck check;
  std::optional<bench::SubmissionTiming> timing;     // qualify: when the submission was accepted
  std::optional<decision::QualifyVerdict> decision;  // qualify: the decision
};

json to_json(const SubmissionResult& r);
// Error(input) naming the field when the document is not a submission document kqual wrote.
SubmissionResult submission_result_from_json(const json& doc);

// summary.md: the verdict, the cases, the kernels launched, the decision and the timing per shape
// (qualify), and the harness rules that do not apply to a PyTorch submission.
std::string render_submission_summary_md(const SubmissionResult& r);

}  // namespace kqual::report
