// PyTorch submissions in kqual screen (screen_submission.hpp).
#include "kqual/pipeline/screen_submission.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "kqual/contract/declared/declared.hpp"
#include "kqual/core/error.hpp"

namespace kqual::pipeline {
namespace fs = std::filesystem;

std::optional<bench::TorchSubmissionManifest> screen_submission_of(const fs::path& cand) {
  if (!bench::is_torch_submission_manifest(cand)) return std::nullopt;
  return bench::read_torch_submission_manifest(cand);
}

ScreenVerdict check_screen_submission(const ScreenOptions& o, const bench::TorchSubmissionManifest& m, const std::string& visible,
                                      GpuGate& gate, ScreenTimer* timer) {
  ScreenVerdict v;
  const contract::Contract& c = contract::ContractLookup(o.sources).resolve(m.contract, m.file.parent_path());
  bench::TorchSubmission s = m.submission;
  if (const fs::path file = contract::declared_file(c); !file.empty()) s.problem_dir = file.parent_path();
  bench::SubmissionCheckOptions co;
  co.seed = o.seed;
  co.case_timeout_s = std::max(o.watchdog_seconds, 120.0);  // the first case includes the submission's own compile
  co.stop_at_first_failure = !o.all_cases;
  co.recheck_own_size = bench::imported_problem(s.problem_dir);
  co.worker = o.submission_worker;
  if (!visible.empty()) co.env = {{"CUDA_VISIBLE_DEVICES", visible}, {"CUDA_DEVICE_ORDER", "PCI_BUS_ID"}};
  const bench::SubmissionCheck r = [&] {
    const GpuGate::Hold checking = gate.shared();
    return bench::check_torch_submission(c, s, co);
  }();
  if (!r.not_run.empty()) {
    v.verdict = ScreenVerdictKind::incomplete;
    v.reason = "PyTorch submission not run";
    v.detail = r.not_run;
    return v;
  }
  if (r.harness_failed) {
    v.verdict = ScreenVerdictKind::incomplete;
    v.reason = "harness_error";
    v.codes = {{"harness_error", 1}};  // never reused from the journal
    v.detail = r.summary();
    return v;
  }
  if (r.accepted) {
    v.verdict = ScreenVerdictKind::accepted;
    v.reason = fmt::format("PyTorch submission: {} of {} cases", r.passed, r.cases);
    if (timer) {
      const GpuGate::Hold timing = gate.exclusive();
      timer->time_submission(c, s, co, v);
    }
    return v;
  }
  v.verdict = ScreenVerdictKind::rejected;
  for (const auto& f : r.failures) ++v.codes[bench::to_string(f.failure)];
  v.reason = r.failures.empty() ? "rejected" : bench::to_string(r.failures.front().failure);
  v.detail = r.summary();
  return v;
}

}  // namespace kqual::pipeline
