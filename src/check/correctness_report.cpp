// The correctness report as JSON (CorrectnessReport::to_json): counts, failing (or all) cases, the
// slowest cases, and what two runs of the same inputs showed across the cases (run_to_run).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "kqual/check/evaluate.hpp"

namespace kqual::check {

std::string CorrectnessReport::primary_code() const {
  std::string best;
  int n = 0;
  for (const auto& [c, k] : failure_codes)
    if (k > n) { best = c; n = k; }
  return best;
}

namespace {

// Across the cases: how many gave different bytes in two runs, the largest figures, the worst case
// (largest difference over its bound), and the note a reader of an accepted candidate needs.
json run_to_run_summary(const std::vector<CaseResult>& results, const json& rule, std::vector<std::string>& notes) {
  int compared = 0, differing = 0;
  double max_ulps = 0, max_abs = 0;
  const CaseResult* worst = nullptr;
  double worst_ratio = -1;
  json ids = json::array();
  for (const auto& r : results) {
    const bool measured = r.run_to_run.is_object();
    if (r.status == CaseStatus::pass || measured) ++compared;
    if (!measured) continue;
    ++differing;
    if (ids.size() < 5) ids.push_back(r.spec.id);
    const json& j = r.run_to_run;
    // null: infinite (a difference where the bound is zero, or a NaN against a number)
    const double u = j.at("max_ulps").is_number() ? j.at("max_ulps").get<double>() : INFINITY;
    const double a = j.at("max_abs").is_number() ? j.at("max_abs").get<double>() : INFINITY;
    const double ratio = j.at("ratio").is_number() ? j.at("ratio").get<double>() : INFINITY;
    max_ulps = std::max(max_ulps, u);
    max_abs = std::max(max_abs, a);
    if (!worst || ratio > worst_ratio) {
      worst = &r;
      worst_ratio = ratio;
    }
  }
  auto num = [](double v) { return std::isfinite(v) ? json(v) : json(nullptr); };
  json s{{"rule", rule},
         {"cases_compared", compared},
         {"cases_differing", differing},
         {"differing_case_ids", ids},
         {"max_ulps", num(max_ulps)},
         {"max_abs", num(max_abs)}};
  if (!worst) return s;
  const json& w = worst->run_to_run;
  s["bound"] = w.value("bound", 0.0);
  s["ratio"] = w.at("ratio");
  s["required"] = w.value("required", true);
  s["within_bound"] = std::all_of(results.begin(), results.end(), [](const CaseResult& r) {
    return !r.run_to_run.is_object() || r.run_to_run.value("within_bound", false);
  });
  s["worst_case"] = {{"id", worst->spec.id},
                     {"status", to_string(worst->status)},
                     {"detail", worst->status == CaseStatus::pass ? worst->note : worst->detail}};
  int noted = 0;
  for (const auto& r : results) noted += r.status == CaseStatus::pass && !r.note.empty();
  if (noted > 0)
    notes.push_back(fmt::format("{} of {} case(s) compared gave different bytes in two runs on the same inputs (max {} ulps / "
                                "{} abs; the largest difference {} the error bound), each run within the bound of the "
                                "reference; accepted because the rule does not require bitwise reproducibility. Largest "
                                "against its bound: {}: {}",
                                noted, compared, std::isfinite(max_ulps) ? fmt::format("{:g}", max_ulps) : std::string("inf"),
                                std::isfinite(max_abs) ? fmt::format("{:.3g}", max_abs) : std::string("inf"),
                                std::isfinite(worst_ratio) ? fmt::format("{:.3g}x", worst_ratio) : std::string("past a zero bound of"),
                                worst->spec.id, worst->status == CaseStatus::pass ? worst->note : worst->detail));
  return s;
}

}  // namespace

json CorrectnessReport::to_json(bool all_cases) const {
  json codes = json::object();
  for (const auto& [c, k] : failure_codes) codes[c] = k;
  json settled = json::array();
  for (const auto& id : settled_not_run) settled.push_back(id);
  json cs = json::array();
  for (const auto& r : results) {
    if (!all_cases && r.status == CaseStatus::pass) continue;  // failing and not-run (harness_error) cases stay
    cs.push_back({{"id", r.spec.id}, {"status", to_string(r.status)}, {"code", r.code}, {"detail", r.detail}, {"dims", r.spec.dims},
                  {"dtype", to_string(r.spec.dtype)}, {"family", r.spec.family}, {"offset_elements", r.spec.offset_elements},
                  {"seed", r.spec.seed}, {"reference", r.reference}, {"wall_ms", r.wall_ms}});
    if (!r.degenerate.empty()) cs.back()["degenerate"] = r.degenerate;
    if (r.run_to_run.is_object()) cs.back()["run_to_run"] = r.run_to_run;
    if (!r.note.empty()) cs.back()["note"] = r.note;
    if (!r.debug.empty()) cs.back()["debug"] = r.debug;
    if (!r.input_sha256.empty()) cs.back()["input_sha256"] = r.input_sha256;
    if (!r.in_place.empty()) cs.back()["in_place"] = r.in_place;
    if (r.failing_elements.is_array() && !r.failing_elements.empty()) cs.back()["failing_elements"] = r.failing_elements;
  }
  std::vector<const CaseResult*> by_time;
  for (const auto& r : results) by_time.push_back(&r);
  std::sort(by_time.begin(), by_time.end(), [](auto* a, auto* b) { return a->wall_ms > b->wall_ms; });
  json slowest = json::array();
  for (std::size_t i = 0; i < std::min<std::size_t>(3, by_time.size()); ++i)
    slowest.push_back({{"id", by_time[i]->spec.id}, {"wall_ms", by_time[i]->wall_ms}});
  std::vector<std::string> notes;
  const json r2r = run_to_run_summary(results, run_to_run_rule, notes);
  return json{{"candidate", candidate},
              {"verdict", accepted() ? "accepted" : incomplete() ? "incomplete" : "rejected"},
              {"harness_errors", harness_errors},
              {"harness_failure", harness_failure},
              {"slowest_cases", slowest},
              {"primary_reason", primary_code()},
              {"cases", cases},
              {"passed", passed},
              {"evidence", evidence},
              {"skipped", skipped},
              {"wall_ms", wall_ms},
              {"failed", failed},
              {"refused", refused},
              {"failure_codes", codes},
              {"settled_not_run", settled},
              {"checks_not_run", checks_not_run},
              {"run_to_run", r2r},
              {"claims", claims},
              {"notes", notes},
              {"sanitizer", sanitizer.is_null() ? json{{"status", "not_run"}, {"why", "not asked for"}} : sanitizer},
              {all_cases ? "case_results" : "failing_cases", cs}};
}

}  // namespace kqual::check
