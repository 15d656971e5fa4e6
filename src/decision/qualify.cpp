#include "kqual/decision/qualify.hpp"

#include <fmt/format.h>

namespace kqual::decision {

QualifyVerdict decide_qualify(const QualifyFindings& f) {
  QualifyVerdict v;
  if (!f.gpu) {
    v.verdict = ShipVerdict::incomplete;
    // What ran and what did not, each said once: the reason there is no GPU is in the summary.
    v.reasons.push_back(fmt::format("static phases passed: manifest valid, contract refusals checked, {} compiled for {}",
                                    f.timing_run ? "candidate and baselines" : "candidate", f.arch));
    std::string missing = "module load (driver-reported registers/shared/local bytes)";
    if (f.correctness_run) missing += ", correctness against the contract";
    if (f.timing_run) missing += ", timing against baselines";
    v.reasons.push_back("not run without a GPU: " + missing);
    v.summary = "No GPU: only the static phases ran. " + f.why_no_gpu;
    return v;
  }
  if (!f.harness_failure.empty()) {
    // kqual failed on its own work: the candidate is neither rejected nor judged on speed.
    v.verdict = ShipVerdict::incomplete;
    v.reasons.push_back("kqual's own failure (`harness_error`): " + f.harness_failure + " — not the candidate's");
    v.would_reverse.push_back("a run in which kqual's own work succeeds (free device memory, the timer's library installed)");
    v.summary = "No decision: kqual's own failure stopped the run (" + f.harness_failure + ") — not the candidate's.";
    return v;
  }
  if (f.correctness_run) {
    if (!f.correct && f.failed == 0) {
      // Nothing failed, and nothing proved anything: every case refused or with a degenerate
      // expected output (all zero, all equal), which a kernel writing a constant would pass.
      v.verdict = ShipVerdict::do_not_ship;
      v.reasons.push_back(fmt::format("no evidence (`no_evidence`): {} case(s) ran, none failed, and none proves the output "
                                      "right ({} refused as outside the claimed domain; the passed ones have degenerate "
                                      "expected outputs)",
                                      f.cases, f.refused));
      v.would_reverse.push_back("a claimed domain that admits cases with informative expected outputs");
      v.summary = "No evidence: no case shows that the candidate computes the right answer.";
      return v;
    }
    if (!f.correct) {
      v.verdict = ShipVerdict::do_not_ship;
      if (f.settled_not_run > 0)
        v.reasons.push_back(fmt::format("rejected by the contract at the first failing case (`{}`: {}); {} of {} cases ran, the "
                                        "other {} were not run because the verdict was settled (--all-cases runs them)",
                                        f.primary_code, f.first_failure, f.cases, f.cases + f.settled_not_run, f.settled_not_run));
      else
        v.reasons.push_back(fmt::format("rejected by the contract: {} of {} cases failed, mostly `{}`: {}", f.failed, f.cases,
                                        f.primary_code, f.first_failure));
      v.would_reverse.push_back("a build that passes every correctness case");
      v.summary = "The candidate computes the wrong answer.";
      return v;
    }
    v.reasons.push_back(fmt::format("correct on all {} cases run ({} refused as outside its claimed domain)", f.passed,
                                    f.refused));
  }
  if (!f.timing_run) {
    v.verdict = f.correct ? ShipVerdict::ship : ShipVerdict::do_not_ship;
    v.summary = "Correctness only; no performance claim was checked.";
    return v;
  }
  if (f.shapes.empty()) {
    // Timing was asked for and timed nothing: no performance claim was checked, which is no ship.
    v.verdict = ShipVerdict::incomplete;
    v.reasons.push_back("timing was asked for and no shape was timed" + (f.timing_not_run.empty() ? "" : ": " + f.timing_not_run));
    v.would_reverse.push_back("a run that times the shapes asked for against a baseline");
    v.summary = (f.correctness_run ? "Correct on every case, but nothing was timed" : "Nothing was timed") +
                (f.timing_not_run.empty() ? std::string() : " (" + f.timing_not_run + ")") + ": no speed decision.";
    return v;
  }
  // Without baselines asked for, a shape has nothing to be compared with: reported, not judged.
  std::vector<ShapeSamples> shapes;
  std::vector<std::string> unjudged;
  for (const auto& sh : f.shapes) {
    if (!f.baselines_expected && sh.failure.empty() && sh.not_timed.empty() && sh.baseline.empty()) unjudged.push_back(sh.shape);
    else shapes.push_back(sh);
  }
  if (!unjudged.empty())
    v.reasons.push_back(fmt::format("timed without baselines (none asked for): {}", fmt::join(unjudged, ", ")));
  if (shapes.empty()) {
    v.verdict = f.correctness_run ? ShipVerdict::no_difference : ShipVerdict::incomplete;
    v.summary = f.correctness_run ? "Correct on every case; timed without baselines, so no speed claim."
                                  : "Timed without baselines and without a correctness check: no decision.";
    return v;
  }
  SpeedJudgement sj = judge_speed(shapes, f.mix, f.policy);
  for (const auto& s : sj.shapes) v.reasons.push_back(fmt::format("{}: {}", s.shape, s.sentence));
  for (const auto& n : sj.notes) v.reasons.push_back(n);
  v.would_reverse = sj.would_reverse;
  // Reverses a ship only: every other verdict already does not ship.
  if (sj.verdict == "ship")
    v.would_reverse.push_back("a correctness failure on inputs outside the tested set (other sizes, dtypes, offsets)");
  const auto speed = ship_verdict_from_string(sj.verdict);
  v.verdict = speed.value_or(ShipVerdict::inconclusive);
  v.summary = (f.correctness_run ? "Correct on every case. " : "") + sj.deciding;
  if (!f.correctness_run && (v.verdict == ShipVerdict::ship || v.verdict == ShipVerdict::no_difference)) {
    // `kqual bench` times without checking: speed alone never ships.
    v.verdict = ShipVerdict::incomplete;
    v.summary = fmt::format("Speed only ({}): {} Correctness was not checked by this command, so there is no ship decision "
                            "(kqual qualify makes one).",
                            sj.verdict == "ship" ? "faster" : "no difference", sj.deciding);
  }
  v.speed = std::move(sj);
  return v;
}

json to_json(const QualifyVerdict& v) {
  json j{{"decision", to_string(v.verdict)}, {"exit_code", exit_code(v.verdict)}, {"summary", v.summary},
         {"reasons", v.reasons},           {"would_reverse", v.would_reverse}};
  if (v.speed) j["speed"] = to_json(*v.speed);
  return j;
}

}  // namespace kqual::decision
