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
    if (!f.correct) {
      v.verdict = ShipVerdict::do_not_ship;
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
  bool slower = false, broken_timed = false;
  for (const auto& sh : f.shapes) {
    if (!sh.failure.empty()) {
      broken_timed = true;
      v.reasons.push_back(fmt::format("{}: {}", sh.shape, sh.failure));
      continue;
    }
    if (sh.fastest_baseline.empty() || !sh.vs_fastest) continue;
    const stats::Comparison& c = *sh.vs_fastest;
    v.reasons.push_back(fmt::format("{}: {:.2f}x the fastest baseline ({}), time ratio 95 % CI [{:.3f}, {:.3f}] → {}", sh.shape,
                                    1.0 / c.estimate, sh.fastest_baseline, c.ci.lo, c.ci.hi, stats::to_string(c.verdict)));
    if (c.verdict == stats::Verdict::slower) slower = true;
    v.would_reverse.push_back(fmt::format("{}: a candidate/baseline time ratio above {:.3f} (now {:.3f}) would make it slower "
                                          "than {}",
                                          sh.shape, 1.0 + f.equivalence_margin, c.estimate, sh.fastest_baseline));
  }
  v.would_reverse.push_back("a correctness failure on inputs outside the tested set (other sizes, dtypes, offsets)");
  if (broken_timed) {
    v.verdict = ShipVerdict::do_not_ship;
    v.summary = "The candidate failed while being timed.";
  } else if (slower) {
    v.verdict = ShipVerdict::do_not_ship;
    v.summary = "Correct, but slower than a baseline on at least one shape.";
  } else {
    v.verdict = ShipVerdict::ship;
    v.summary = "Correct on every case, and no shape slower than the fastest baseline.";
  }
  return v;
}

json to_json(const QualifyVerdict& v) {
  return json{{"decision", to_string(v.verdict)}, {"exit_code", exit_code(v.verdict)}, {"summary", v.summary},
              {"reasons", v.reasons},           {"would_reverse", v.would_reverse}};
}

}  // namespace kqual::decision
