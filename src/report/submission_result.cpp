// A PyTorch submission's results document at its JSON edge (submission_result.hpp): written in the
// order the submission commands have always written it, read back field by field.
#include "kqual/report/submission_result.hpp"

#include <fmt/format.h>

#include "json_read.hpp"
#include "kqual/core/error.hpp"
#include "kqual/report/results.hpp"

namespace kqual::report {
namespace {

using namespace read;

bench::SubmissionCheck check_from_json(const json& c, const std::string& path) {
  bench::SubmissionCheck r;
  const std::string verdict = get_str(c, path, "verdict");
  if (verdict != "not_run" && verdict != "error" && verdict != "accepted" && verdict != "rejected")
    throw_error(ErrorKind::input, fmt::format("{}: '{}' is not a submission verdict (accepted, rejected, error, not_run)",
                                              join(path, "verdict"), verdict));
  r.not_run = get_str(c, path, "not_run");
  r.harness_failed = verdict == "error";
  r.accepted = verdict == "accepted";
  r.worker_torch = get_str(c, path, "torch");
  r.worker_device = get_str(c, path, "device");
  r.cases = get_int<int>(c, path, "cases");
  r.passed = get_int<int>(c, path, "passed");
  r.skipped = get_int<int>(c, path, "skipped");
  for (const auto& [f, p] : get_items(c, path, "failures")) {
    bench::SubmissionCaseResult x;
    x.id = get_str(*f, p, "case");
    const std::string code = get_str(*f, p, "code");
    const auto failure = bench::kSubmissionFailureNames.parse(code);
    if (!failure)
      throw_error(ErrorKind::input, fmt::format("{}: '{}' is none of {}", join(p, "code"), code, bench::kSubmissionFailureNames.choices()));
    x.failure = *failure;
    x.detail = get_str(*f, p, "detail");
    x.kernels = get_strings(*f, p, "kernels");
    r.failures.push_back(std::move(x));
  }
  r.kernels = get_strings(c, path, "kernels");
  r.dtypes = get_strings(c, path, "dtypes");
  const json by_origin = get_object(c, path, "gpu_ns_by_origin");
  for (const auto& [origin, ns] : by_origin.items())
    r.gpu_ns_by_origin[origin] = as_double(ns, join(join(path, "gpu_ns_by_origin"), origin));
  r.stream = get_str(c, path, "stream", "own");
  r.on_default_stream = get_str(c, path, "on_default_stream");
  r.cases_note = get_str(c, path, "cases_note");
  r.own_size = get_str(c, path, "own_size");
  r.parameters_by_shape = get_strings(c, path, "parameters_by_shape");
  r.kept_library = get_strings(c, path, "kept_library");
  r.not_applied = get_strings(c, path, "not_applied");
  const json t = get_object(c, path, "time_ms");
  const std::string tp = join(path, "time_ms");
  r.hello_ms = get_double(t, tp, "worker_start");
  r.worker_ms = get_double(t, tp, "worker_cases");
  r.prepare_ms = get_double(t, tp, "case_preparation");
  return r;
}

bench::SubmissionTiming timing_from_json(const json& t, const std::string& path) {
  bench::SubmissionTiming r;
  r.status = get_str(t, path, "status");
  r.windows = get_strings(t, path, "windows");
  for (const auto& [shape, p] : get_items(t, path, "speedups")) {
    std::vector<bench::SubmissionSpeedup> row;
    for (const auto& [s, sp] : get_items(*shape, p, "speedups")) {
      bench::SubmissionSpeedup x;
      x.baseline = get_str(*s, sp, "baseline");
      x.speedup = get_double(*s, sp, "speedup");
      const std::vector<double> ci = get_doubles(*s, sp, "ci");
      if (ci.size() != 2) wrong(join(sp, "ci"), "[lo, hi]", s->at("ci"));
      x.ci_low = ci[0];
      x.ci_high = ci[1];
      x.verdict = get_str(*s, sp, "verdict");
      row.push_back(std::move(x));
    }
    r.speedups.push_back(std::move(row));
  }
  if (const json* rep = member(t, path, "timing")) r.report = timing_report_from_json(*rep);
  r.timed_output_failure = get_str(t, path, "timed_output_failure");
  r.harness_failure = get_str(t, path, "harness_failure");
  r.notes = get_strings(t, path, "notes");
  return r;
}

}  // namespace

json to_json(const SubmissionResult& r) {
  json j = schema_header(r.qualify ? "submission-qualify" : "submission");  // docs/json-schema.md
  j.update(json{{"kind", r.qualify ? "torch_submission_qualify" : "torch_submission"},
                {"kqual", {{"version", r.kqual_version}, {"commit", r.kqual_commit}}},
                {"candidate", {{"name", r.candidate.name}, {"file", r.candidate.file}, {"class", r.candidate.class_name},
                               {"allow_kernels", r.candidate.allow_kernels}}},
                {"contract", r.contract},
                {"seed", r.seed},
                {"check", r.check.to_json()}});
  if (r.timing) j["timing"] = r.timing->to_json();
  if (r.decision) j["decision"] = decision::to_json(*r.decision);
  return j;
}

SubmissionResult submission_result_from_json(const json& doc) {
  SubmissionResult r;
  r.qualify = schema_command(doc, {"submission", "submission-qualify"}) == "submission-qualify";
  const json k = get_object(doc, "", "kqual");
  r.kqual_version = get_str(k, "kqual", "version");
  r.kqual_commit = get_str(k, "kqual", "commit");
  const json c = get_object(doc, "", "candidate");
  r.candidate.name = get_str(c, "candidate", "name");
  r.candidate.file = get_str(c, "candidate", "file");
  r.candidate.class_name = get_str(c, "candidate", "class");
  r.candidate.allow_kernels = get_strings(c, "candidate", "allow_kernels");
  r.contract = get_str(doc, "", "contract");
  r.seed = get_int<std::uint64_t>(doc, "", "seed");
  r.check = check_from_json(get_object(doc, "", "check"), "check");
  if (const json* t = member(doc, "", "timing")) r.timing = timing_from_json(*t, "timing");
  if (const json* d = member(doc, "", "decision")) r.decision = qualify_verdict_from_json(*d, "decision");
  return r;
}

}  // namespace kqual::report
