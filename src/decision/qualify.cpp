#include "kqual/decision/qualify.hpp"

#include <fmt/format.h>

namespace kqual::decision {

QualifyVerdict decide_qualify(const QualifyFindings& f) {
  QualifyVerdict v;
  if (!f.gpu) {
    v.verdict = ShipVerdict::incomplete;
    v.reasons.push_back("static phases passed: manifest valid, contract refusals checked, candidate and baselines compiled "
                        "with NVRTC for " + f.arch);
    v.reasons.push_back("not run without a GPU: module load (driver-reported registers/shared/local bytes), correctness "
                        "against the contract, timing against baselines");
    v.summary = "No GPU: only the static phases ran. " + f.why_no_gpu;
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
  const std::string correct_words = f.correctness_run ? "Correct on every case" : "Correctness not checked by this command";
  if (!f.timing_run) {
    v.verdict = f.correct ? ShipVerdict::ship : ShipVerdict::do_not_ship;
    v.summary = "Correctness only; no performance claim was checked.";
    return v;
  }
  bool slower = false, broken_timed = false, inconclusive = false, faster = false;
  std::vector<std::string> not_compared;
  for (const auto& sh : f.shapes) {
    if (!sh.failure.empty()) {
      broken_timed = true;
      v.reasons.push_back(fmt::format("{}: {}", sh.shape, sh.failure));
      continue;
    }
    if (sh.fastest_baseline.empty() || !sh.vs_fastest) {
      not_compared.push_back(sh.shape);
      continue;
    }
    const stats::Comparison& c = *sh.vs_fastest;
    v.reasons.push_back(fmt::format("{}: {:.2f}x the fastest baseline ({}), time ratio 95 % CI [{:.3f}, {:.3f}] → {}", sh.shape,
                                    1.0 / c.estimate, sh.fastest_baseline, c.ci.lo, c.ci.hi, stats::to_string(c.verdict)));
    if (c.verdict == stats::Verdict::slower) slower = true;
    if (c.verdict == stats::Verdict::inconclusive) inconclusive = true;
    if (c.verdict == stats::Verdict::faster) faster = true;
    v.would_reverse.push_back(fmt::format("{}: a candidate/baseline time ratio above {:.3f} (now {:.3f}) would make it slower "
                                          "than {}",
                                          sh.shape, 1.0 + f.equivalence_margin, c.estimate, sh.fastest_baseline));
  }
  if (!not_compared.empty())
    v.reasons.push_back(fmt::format("not compared (no baseline that passed its own check was timed): {}", fmt::join(not_compared, ", ")));
  v.would_reverse.push_back("a correctness failure on inputs outside the tested set (other sizes, dtypes, offsets)");
  if (broken_timed) {
    v.verdict = ShipVerdict::do_not_ship;
    v.summary = "The candidate failed while being timed.";
  } else if (slower) {
    v.verdict = ShipVerdict::do_not_ship;
    v.summary = "Correct, but slower than a baseline on at least one shape.";
  } else if (!not_compared.empty() && f.baselines_expected) {
    v.verdict = ShipVerdict::incomplete;
    v.summary = fmt::format("{}, but {} of {} shape(s) were not compared with a valid baseline: no speed claim can be made "
                            "for them.",
                            correct_words, not_compared.size(), f.shapes.size());
  } else if (inconclusive) {
    v.verdict = ShipVerdict::inconclusive;
    v.summary = correct_words + ", but the timing is inconclusive on at least one shape (more rounds may settle it).";
  } else if (!faster) {
    v.verdict = ShipVerdict::no_difference;
    v.summary = correct_words + "; no shape is faster than the fastest baseline (no reliable difference): no speed claim.";
  } else {
    v.verdict = ShipVerdict::ship;
    v.summary = correct_words + "; faster than the fastest baseline on at least one shape and slower on none.";
  }
  return v;
}

json to_json(const QualifyVerdict& v) {
  return json{{"decision", to_string(v.verdict)}, {"exit_code", exit_code(v.verdict)}, {"summary", v.summary},
              {"reasons", v.reasons},           {"would_reverse", v.would_reverse}};
}

}  // namespace kqual::decision
