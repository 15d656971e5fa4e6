#include "kqual/report/selftest_text.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace kqual::report {
namespace {

// One candidate's row: its outcome per seed (or why it ran none), the first seed's first failure, and
// its sanitizer summary under --sanitize.
std::string candidate_rows(const SelftestCandidate& row) {
  std::string outcome;
  if (row.seeds)
    for (const auto& seed_row : *row.seeds) outcome += fmt::format("{}{}  ", seed_row.as_expected ? "" : "UNEXPECTED ", seed_row.outcome);
  else
    outcome = row.outcome.value_or("");
  std::string t = fmt::format("  {:<9} {:<26} {:<30} {}\n", row.kind, row.candidate, row.expected, outcome);
  if (row.seeds && !row.seeds->empty() && !row.seeds->front().first_failure.empty())
    t += fmt::format("  {:<9}   reason: {}\n", "", row.seeds->front().first_failure.substr(0, 200));
  if (row.sanitizer) {
    const json& sj = *row.sanitizer;  // worker::SanitizerLog::to_json() and the log's path (only ever JSON)
    t += fmt::format("  {:<9}   {}: {} error(s){}\n", "", sj.value("tool", std::string("?")),
                     sj.contains("errors") && sj["errors"].is_number() ? std::to_string(sj["errors"].get<int>()) : std::string("?"),
                     !sj.contains("findings") || sj["findings"].empty()
                         ? ""
                         : "; first: " + sj["findings"][0].value("headline", std::string()).substr(0, 160));
  }
  return t;
}

}  // namespace

std::string render_selftest_text(const SelftestResult& r, int lanes) {
  std::string t;
  if (!r.device_present) {
    t += fmt::format("selftest: no GPU ({}): candidates compiled only, none run\n", r.why_no_device);
  } else {
    const bool named = r.provenance.contains("gpu") && r.provenance["gpu"].is_object();
    t += fmt::format("selftest on {} — seeds {}, {} lane(s)\n", named ? r.provenance["gpu"].value("name", std::string("?")) : "?",
                     json(r.seeds).dump(), lanes);
  }
  if (r.sanitizer) t += fmt::format("sanitizer: {} {}\n", r.sanitizer->tool, r.sanitizer->path.empty() ? r.sanitizer->note : r.sanitizer->path);
  for (const auto& pc : r.contracts) {
    if (r.device_present)
      t += fmt::format("\n== {}: broken rejected {}/{} (for the intended reason {}/{}), good accepted {}/{}\n", pc.contract,
                       pc.broken_rejected, pc.broken, pc.broken_for_intended_reason, pc.broken, pc.good_accepted, pc.good);
    else
      t += fmt::format("\n== {}: not run (no GPU)\n", pc.contract);
    t += fmt::format("  {:<9} {:<26} {:<30} {}\n", "kind", "candidate", "expected", "outcome per seed");
    for (const auto& row : r.candidates)
      if (row.contract == pc.contract) t += candidate_rows(row);
  }
  if (!r.classes.empty() && r.device_present) {
    t += "\n== by class of defect (the stated reason of each known-broken candidate)\n";
    for (const auto& bc : r.classes)
      t += fmt::format("  {:<22} rejected for it {}/{} checks  ({})\n", bc.defect_class, bc.rejected_for_it, bc.checks,
                       fmt::format("{}", fmt::join(bc.candidates, ", ")));
  }
  t += fmt::format("\nselftest: {} checks, {} unexpected\n", r.checks, r.unexpected);
  return t;
}

}  // namespace kqual::report
