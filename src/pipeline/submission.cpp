// A PyTorch submission checked and reported (submission.hpp).
#include "kqual/pipeline/submission.hpp"
#include "kqual/pipeline/phases.hpp"

#include <fmt/format.h>

#include "kqual/bench/torch_baseline.hpp"
#include "kqual/contract/declared/declared.hpp"
#include "kqual/import/import_definition.hpp"
#include "kqual/import/import_kernelbench.hpp"
#include "kqual/decision/profile.hpp"
#include "kqual/pipeline/qualify.hpp"
#include "kqual/core/error.hpp"
#include "kqual/core/exit_codes.hpp"
#include "kqual/core/files.hpp"
#include "kqual/core/version.hpp"
#include "kqual/report/submission_result.hpp"

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
// A problem given in a peer's own format, imported into OUT/problem (replaced on each run; written
// whole or not at all by the importer) so that the contract that judged the submission is kept with
// its results: a Definition (.json, flashinfer-trace / SOL-ExecBench) or a KernelBench problem file
// (.py; its capture needs PyTorch, so this runs on the GPU machine). "" for anything else.
fs::path imported_problem(const fs::path& p, const fs::path& out_dir, const ProgressFn& progress) {
  if (!fs::is_regular_file(p) || (p.extension() != ".json" && p.extension() != ".py")) return {};
  const fs::path target = out_dir / "problem";
  fs::create_directories(out_dir);
  fs::remove_all(target);
  if (progress) progress(fmt::format("import: {} into {}", p.string(), target.string()));
  if (p.extension() == ".json") {
    contract::DefinitionImportOptions io;
    io.definition = p;
    io.out = target;
    (void)contract::import_definition(io);
  } else {
    contract::KernelBenchImportOptions io;
    io.problem = p;
    io.out = target;
    (void)contract::import_kernelbench(io);
  }
  return target;
}

const contract::Contract& problem_contract(const std::string& problem, const fs::path& out_dir, const contract::ContractSources& sources,
                                          const ProgressFn& progress) {
  fs::path p = problem;
  if (const fs::path imported = imported_problem(p, out_dir, progress); !imported.empty()) p = imported;
  if (fs::is_directory(p)) p /= "contract.toml";
  if (fs::is_regular_file(p)) {
    p = fs::canonical(p);
    contract::ContractSources s = sources;  // the problem the user names is the user's choice of judge
    s.user_dirs.push_back(p.parent_path().parent_path());
    return contract::ContractLookup(s).resolve(p.string(), fs::current_path());
  }
  if (contract::contract_value_is_path(problem))
    throw_error(ErrorKind::input, fmt::format("--problem {}: no contract.toml there", problem));
  return contract::ContractLookup(sources).resolve(problem, fs::current_path());
}

// qualify: the accepted submission timed, then the qualify rule on the check and the timing, as for
// a kernel candidate (decision::decide_qualify).
// What qualify decides with, read before any GPU work (a bad profile, margin, shape or dtype is an
// input or usage error, not a lost run).
struct SubmissionDecisionInputs {
  decision::SpeedPolicy policy;
  decision::ShapeMix mix;
  bench::SubmissionTimingOptions timing;
};

SubmissionDecisionInputs decision_inputs(const contract::Contract& c, const bench::TorchSubmission& s, const SubmissionOptions& o) {
  SubmissionDecisionInputs in;
  const decision::DeploymentProfile profile = o.profile.empty() ? decision::DeploymentProfile{} : decision::load_profile(o.profile);
  in.policy = decision::speed_policy(profile, o.margin, o.regression_limit);
  in.mix = contract_shape_mix(c, profile);
  in.timing = o.timing_options;
  in.timing.baselines = bench::parse_torch_baselines(o.torch_baselines);
  // A dtype the submission claims (its claims, else every dtype of the contract).
  in.timing.timing.dtype = timing_dtype(o.dtype, s.dtypes.empty() ? c.dtypes() : s.dtypes, "the submission");
  in.timing.timing.seed = o.seed;
  for (const auto& text : o.shapes) in.timing.timing.shapes.push_back(contract::parse_shape(c, text));
  if (o.shapes.empty())
    for (const auto& [text, calls] : profile.shape_calls) in.timing.timing.shapes.push_back(contract::parse_shape(c, text));
  in.timing.timing.progress = o.progress;
  return in;
}

void decide_submission(const contract::Contract& c, const bench::TorchSubmission& s, const SubmissionOptions& o,
                       const SubmissionDecisionInputs& in, SubmissionOutcome& out) {
  const bench::SubmissionCheck& r = out.check;
  decision::QualifyFindings f;
  f.gpu = r.not_run.empty();
  f.why_no_gpu = r.not_run;
  f.cases = r.cases;
  f.passed = r.passed;
  f.failed = int(r.failures.size());
  f.evidence = r.passed;
  f.skipped = r.skipped;
  f.correct = r.accepted;
  if (r.harness_failed && !r.failures.empty()) f.harness_failure = r.failures.front().detail;
  if (!r.failures.empty()) {
    f.primary_code = bench::to_string(r.failures.front().failure);
    f.first_failure = fmt::format("{}: {}", r.failures.front().id, r.failures.front().detail);
  }
  f.policy = in.policy;
  f.mix = in.mix;
  f.timing_run = false;
  if (f.gpu && r.accepted && !r.harness_failed) {
    bench::SubmissionCheckOptions co;
    co.seed = o.seed;
    co.worker = o.worker;
    co.max_case_elements = o.max_case_elements;
    co.case_timeout_s = o.watchdog_seconds;
    out.timing = bench::time_torch_submission(c, s, co, in.timing);
    f.timing_run = true;  // asked for: a timing that timed nothing is incomplete, never "correct, no claim"
    if (out.timing->report.shapes.empty()) f.timing_not_run = out.timing->status;
    f.baselines_expected = out.timing->status.find("timed alone") == std::string::npos;
    if (!out.timing->harness_failure.empty()) f.harness_failure = out.timing->harness_failure;
    add_timed_shapes(f, out.timing->report);
  }
  out.verdict = decision::decide_qualify(f);
  out.exit_code = decision::exit_code(out.verdict->verdict);
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
    c = &problem_contract(o.problem, o.out_dir, o.sources, o.progress);
    s.file = o.candidate;
    out.name = o.candidate.stem().string();
  } else {
    const bench::TorchSubmissionManifest m = bench::read_torch_submission_manifest(o.candidate);
    c = o.problem.empty() ? &contract::ContractLookup(o.sources).resolve(m.contract, m.file.parent_path())
                          : &problem_contract(o.problem, o.out_dir, o.sources, o.progress);
    s = m.submission;
    out.name = m.name;
  }
  if (!o.class_name.empty()) s.class_name = o.class_name;
  s.allow_kernels.insert(s.allow_kernels.end(), o.allow_kernels.begin(), o.allow_kernels.end());
  const fs::path file = contract::declared_file(*c);
  if (!file.empty()) s.problem_dir = file.parent_path();
  out.contract = c->name();

  std::optional<SubmissionDecisionInputs> inputs;
  if (o.timing) inputs = decision_inputs(*c, s, o);
  if (!o.use_gpu) {
    out.check.not_run = "--no-gpu: a PyTorch submission runs only in the submission worker on a GPU (it has no static phase)";
    out.check.not_applied = bench::submission_rules_not_applied();
  } else {
    bench::SubmissionCheckOptions co;
    co.seed = o.seed;
    co.worker = o.worker;
    co.max_case_elements = o.max_case_elements;
    co.case_timeout_s = o.watchdog_seconds;
    co.stop_at_first_failure = !o.all_cases;
    co.recheck_own_size = bench::imported_problem(s.problem_dir);
    co.stream = o.stream == "default" ? bench::SubmissionCheckOptions::Stream::legacy_default : bench::SubmissionCheckOptions::Stream::own;
    out.check = bench::check_torch_submission(*c, s, co);
  }
  const bench::SubmissionCheck& r = out.check;
  out.exit_code = !r.not_run.empty() ? kExitIncomplete : r.harness_failed ? kExitInternal : r.accepted ? kExitPass : kExitFail;
  if (o.timing) decide_submission(*c, s, o, *inputs, out);

  // ---- write: results.json and summary.md, from one typed result ----
  report::SubmissionResult res;
  res.qualify = o.timing;
  res.kqual_version = kVersion;
  res.kqual_commit = git_revision();
  res.candidate = {out.name, fs::absolute(s.file).string(), s.class_name, s.allow_kernels};
  res.contract = out.contract;
  res.seed = o.seed;
  res.check = r;
  res.timing = out.timing;
  res.decision = out.verdict;
  const Written w = write_results(o.out_dir, report::to_json(res), {{"summary.md", report::render_submission_summary_md(res)}});
  out.results_path = w.results;
  out.summary_path = w.files.at(0);
  return out;
}

}  // namespace kqual::pipeline
