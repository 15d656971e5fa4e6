// A PyTorch submission checked and reported (submission.hpp).
#include "kqual/pipeline/submission.hpp"

#include <fmt/format.h>

#include "kqual/contract/declared/declared.hpp"
#include "kqual/core/error.hpp"
#include "kqual/core/exit_codes.hpp"
#include "kqual/core/files.hpp"
#include "kqual/core/version.hpp"

namespace kqual::pipeline {
namespace fs = std::filesystem;

bool is_torch_submission(const fs::path& candidate) {
  if (fs::is_regular_file(candidate) && candidate.extension() == ".py") return true;
  return bench::is_torch_submission_manifest(candidate);
}

namespace {

// --problem: a declared contract's name, its contract.toml, or the folder holding it (an imported
// KernelBench problem). A path named on the command line is the user's choice of judge: its parent
// folder joins the user's contract folders for this run.
const contract::Contract& problem_contract(const std::string& problem) {
  fs::path p = problem;
  if (fs::is_directory(p)) p /= "contract.toml";
  if (fs::is_regular_file(p)) {
    p = fs::canonical(p);
    contract::ContractSources s = contract::contract_sources();
    s.user_dirs.push_back(p.parent_path().parent_path());
    contract::set_contract_sources(s);
    return contract::resolve_contract(p.string(), fs::current_path());
  }
  if (contract::contract_value_is_path(problem))
    throw_error(ErrorKind::input, fmt::format("--problem {}: no contract.toml there", problem));
  return contract::resolve_contract(problem, fs::current_path());
}

std::string summary_md(const SubmissionOutcome& out, const SubmissionOptions& o) {
  const bench::SubmissionCheck& r = out.check;
  std::string md = fmt::format("# {} ({}): PyTorch submission\n\n**{}**\n\n", out.name, out.contract, r.summary());
  md += fmt::format("- cases: {} run, {} right, {} left out (larger than the submission limit)\n", r.cases, r.passed, r.skipped);
  if (!r.worker_torch.empty()) md += fmt::format("- PyTorch {} on {}\n", r.worker_torch, r.worker_device);
  md += fmt::format("- seed {}; kqual {} ({})\n", o.seed, kVersion, git_revision());
  if (!r.failures.empty()) {
    md += "\n## Failures\n\n| case | class | detail |\n|---|---|---|\n";
    for (const auto& f : r.failures) md += fmt::format("| {} | {} | {} |\n", f.id, bench::to_string(f.failure), f.detail);
  }
  if (!r.kernels.empty()) {
    md += "\n## Kernels the submission launched (PyTorch profiler)\n\n";
    for (const auto& k : r.kernels) md += "- `" + k + "`\n";
  }
  md += "\n## Harness rules that do not apply to a PyTorch submission, and what stands in for them\n\n";
  for (const auto& n : r.not_applied) md += "- " + n + "\n";
  return md;
}

}  // namespace

SubmissionOutcome check_submission(const SubmissionOptions& o) {
  bench::TorchSubmission s;
  SubmissionOutcome out;
  const contract::Contract* c = nullptr;
  if (fs::is_regular_file(o.candidate) && o.candidate.extension() == ".py") {
    if (o.problem.empty())
      throw_error(ErrorKind::usage, fmt::format("{} is a PyTorch submission: name the problem it answers with --problem "
                                                "(a contract name, a contract.toml, or an imported problem's folder)",
                                                o.candidate.string()));
    c = &problem_contract(o.problem);
    s.file = o.candidate;
    out.name = o.candidate.stem().string();
  } else {
    const bench::TorchSubmissionManifest m = bench::read_torch_submission_manifest(o.candidate);
    c = o.problem.empty() ? &contract::resolve_contract(m.contract, m.file.parent_path()) : &problem_contract(o.problem);
    s = m.submission;
    out.name = m.name;
  }
  if (!o.class_name.empty()) s.class_name = o.class_name;
  s.allow_kernels.insert(s.allow_kernels.end(), o.allow_kernels.begin(), o.allow_kernels.end());
  const fs::path file = contract::declared_file(*c);
  if (!file.empty()) s.problem_dir = file.parent_path();
  out.contract = c->name();

  if (!o.use_gpu) {
    out.check.not_run = "--no-gpu: a PyTorch submission runs only in the submission worker on a GPU (it has no static phase)";
    out.check.not_applied = bench::submission_rules_not_applied();
  } else {
    bench::SubmissionCheckOptions co;
    co.seed = o.seed;
    co.case_timeout_s = o.watchdog_seconds;
    co.stop_at_first_failure = !o.all_cases;
    out.check = bench::check_torch_submission(*c, s, co);
  }
  const bench::SubmissionCheck& r = out.check;
  out.exit_code = !r.not_run.empty() ? kExitIncomplete : r.harness_failed ? kExitInternal : r.accepted ? kExitPass : kExitFail;

  json results{{"kind", "torch_submission"},
               {"kqual", {{"version", kVersion}, {"commit", git_revision()}}},
               {"candidate", {{"name", out.name}, {"file", fs::absolute(s.file).string()}, {"class", s.class_name},
                              {"allow_kernels", s.allow_kernels}}},
               {"contract", out.contract},
               {"seed", o.seed},
               {"check", r.to_json()}};
  fs::create_directories(o.out_dir);
  out.results_path = o.out_dir / "results.json";
  out.summary_path = o.out_dir / "summary.md";
  write_file_atomic(out.results_path, results.dump(2) + "\n");
  write_file_atomic(out.summary_path, summary_md(out, o));
  return out;
}

}  // namespace kqual::pipeline
