// A PyTorch submission's summary.md, rendered from the typed result (submission_result.hpp).
#include <fmt/format.h>

#include "kqual/report/submission_result.hpp"
#include "kqual/bench/torch_baseline.hpp"
#include "kqual/stats/summary.hpp"

namespace kqual::report {
namespace {

std::string series_ms_text(const bench::Series& se) {
  if (!se.error.empty()) return "failed";
  if (!se.verified) return "wrong output";
  return se.samples_ms.empty() ? "-" : fmt::format("{:.4f} ms", stats::median(se.samples_ms));
}

// Per shape: the submission's and each baseline's median, and the speed-ups with their intervals.
std::string timing_md(const bench::SubmissionTiming& t) {
  std::string md = fmt::format("\n## Speed against PyTorch\n\n{}\n\n", t.status);
  if (t.report.shapes.empty()) return md;
  md += "| shape | window | submission | torch_eager | torch_compiled | speed-up vs eager [95% CI] | vs compiled [95% CI] |\n"
        "|---|---|---|---|---|---|---|\n";
  for (std::size_t i = 0; i < t.report.shapes.size(); ++i) {
    const bench::ShapeResult& sh = t.report.shapes[i];
    auto series = [&](const char* label) -> std::string {
      for (const auto& se : sh.series)
        if (se.label == label) return series_ms_text(se);
      return "not timed";
    };
    auto speedup = [&](const char* label) -> std::string {
      for (const auto& s : t.speedups.at(i))
        if (s.baseline == label) return fmt::format("{:.2f}x [{:.2f}, {:.2f}] {}", s.speedup, s.ci_low, s.ci_high, s.verdict);
      return "-";
    };
    const std::string w = i < t.windows.size() ? t.windows[i] : "";
    md += fmt::format("| {} | {} | {} | {} | {} | {} | {} |\n", sh.shape, w.substr(w.find(": ") == std::string::npos ? 0 : w.find(": ") + 2),
                      series_ms_text(sh.series.front()), series(bench::kTorchEager), series(bench::kTorchCompiled), speedup(bench::kTorchEager),
                      speedup(bench::kTorchCompiled));
  }
  if (!t.timed_output_failure.empty()) md += "\n**Timed outputs wrong**: " + t.timed_output_failure + "\n";
  // A series that failed says why: "failed" in the table alone is not a finding a reviewer can check.
  for (const auto& sh : t.report.shapes)
    for (const auto& se : sh.series)
      if (!se.error.empty()) md += fmt::format("- {} {} failed: {}\n", sh.shape, se.label, se.error.substr(0, 600));
  for (const auto& n : t.notes) md += "- " + n + "\n";
  return md;
}

}  // namespace

std::string render_submission_summary_md(const SubmissionResult& res) {
  const bench::SubmissionCheck& r = res.check;
  std::string md = fmt::format("# {} ({}): PyTorch submission\n\n**{}**\n\n", res.candidate.name, res.contract, r.summary());
  md += fmt::format("- cases: {} run, {} right, {} left out (larger than the submission limit)\n", r.cases, r.passed, r.skipped);
  if (!r.worker_torch.empty()) md += fmt::format("- PyTorch {} on {}\n", r.worker_torch, r.worker_device);
  md += fmt::format("- seed {}; kqual {} ({})\n", res.seed, res.kqual_version, res.kqual_commit);
  if (!r.failures.empty()) {
    md += "\n## Failures\n\n| case | class | detail |\n|---|---|---|\n";
    for (const auto& f : r.failures) md += fmt::format("| {} | {} | {} |\n", f.id, bench::to_string(f.failure), f.detail);
  }
  if (!r.kernels.empty()) {
    md += "\n## Kernels the submission launched (activity record: name [origin])\n\n";
    for (const auto& k : r.kernels) md += "- `" + k + "`\n";
  }
  if (res.decision) {
    md += fmt::format("\n## Decision: {}\n\n{}\n", decision::to_string(res.decision->verdict), res.decision->summary);
    for (const auto& why : res.decision->reasons) md += "- " + why + "\n";
  }
  if (res.timing) md += timing_md(*res.timing);
  md += "\n## Harness rules that do not apply to a PyTorch submission, and what stands in for them\n\n";
  for (const auto& n : r.not_applied) md += "- " + n + "\n";
  return md;
}

}  // namespace kqual::report
