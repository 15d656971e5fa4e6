#pragma once
// The qualify verdict: what `kqual qualify` / `check` / `bench` decide from the measured findings.
// One rule, here, beside compare's ship rule (decision.hpp); both speak ShipVerdict.
#include <optional>
#include <string>
#include <vector>

#include "kqual/core/json.hpp"
#include "kqual/decision/decision.hpp"
#include "kqual/stats/compare.hpp"

namespace kqual::decision {

// One timed shape, as the timing phase left it.
struct QualifyShape {
  std::string shape;                       // "n=268435456"
  std::string failure;                     // the candidate failed or was wrong while timed ("" = fine)
  std::string fastest_baseline;            // "" when no baseline ran at this shape
  std::optional<stats::Comparison> vs_fastest;  // candidate / fastest baseline time ratio
};

struct QualifyFindings {
  std::string arch;                        // the target the candidate was built for
  bool gpu = true;                         // false: only the static phases ran
  std::string why_no_gpu;
  bool correctness_run = true;
  bool correct = true;                     // accepted by the contract (when run)
  int cases = 0, passed = 0, failed = 0, refused = 0;
  std::string primary_code, first_failure; // when rejected
  bool baselines_expected = true;          // false: the user asked for no baselines (no shape is then "not compared")
  int settled_not_run = 0;                 // cases not run: the first failing case had settled the verdict
  bool timing_run = true;
  std::vector<QualifyShape> shapes;
  double equivalence_margin = 0.02;        // relative: ratios within 1 ± this are "no difference"
};

struct QualifyVerdict {
  ShipVerdict verdict = ShipVerdict::incomplete;
  std::string summary;                     // one sentence
  std::vector<std::string> reasons;
  std::vector<std::string> would_reverse;
};

// First match wins (docs/statistics.md, "qualify's verdict rules"):
//   1. no GPU                                   → incomplete (static phases only);
//   2. rejected by the contract                 → do not ship ("no evidence" when no case failed but
//                                                 none proved anything: every case refused or degenerate);
//   3. timing not run                           → ship if correct (no performance claim), else do not ship;
//   4. any shape failed or was wrong when timed → do not ship;
//   5. any shape slower than its fastest baseline (time-ratio CI above 1 + margin) → do not ship;
//   6. any shape without a valid baseline       → incomplete ("not compared"), unless no baselines were asked for;
//   7. any shape inconclusive                   → inconclusive;
//   8. no shape faster (all "no difference")    → no difference: correct, no speed claim;
//   9. otherwise (every shape faster or equal, at least one faster) → ship.
QualifyVerdict decide_qualify(const QualifyFindings& f);

// {"decision", "exit_code", "summary", "reasons", "would_reverse"} as results.json carries it.
json to_json(const QualifyVerdict& v);

}  // namespace kqual::decision
