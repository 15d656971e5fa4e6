#pragma once
// The qualify verdict: what `kqual qualify` / `check` / `bench` decide from the measured findings.
// One rule, here, beside compare's ship rule (decision.hpp); both speak ShipVerdict.
#include <optional>
#include <string>
#include <vector>

#include "kqual/core/json.hpp"
#include "kqual/decision/decision.hpp"
#include "kqual/decision/speed.hpp"
#include "kqual/stats/compare.hpp"

namespace kqual::decision {

// How a correctness phase's cases ended, as every result that records the phase carries them (the
// pipeline's summary, qualify's findings, compare's sides, selftest's seeds): copied as one.
struct CaseCounts {
  int cases = 0, passed = 0, failed = 0, refused = 0;
  int evidence = 0;  // passed cases whose expected output is not degenerate
  int skipped = 0;   // cases not run: over the size cap, or the device cannot hold them

  CaseCounts& counts() { return *this; }
  const CaseCounts& counts() const { return *this; }
};

struct QualifyFindings : CaseCounts {
  std::string arch;                        // the target the candidate was built for
  bool gpu = true;                         // false: only the static phases ran
  std::string why_no_gpu;
  // Non-empty: kqual itself failed (its allocation, a timer library it needs, a worker lost outside
  // the candidate's launch, its reference), naming what; nothing is decided about the candidate.
  std::string harness_failure;
  bool correctness_run = true;
  bool correct = true;                     // accepted by the contract (when run); the counts: CaseCounts
  std::string primary_code, first_failure; // when rejected
  bool baselines_expected = true;          // false: the user asked for no baselines (no shape is then "not compared")
  int settled_not_run = 0;                 // cases not run: the first failing case had settled the verdict
  bool timing_run = true;                  // timing was asked for (qualify, bench), whether or not anything was timed
  std::string timing_not_run;              // why nothing was timed, when timing_run and shapes is empty
  std::vector<ShapeSamples> shapes;        // the candidate and its fastest valid baseline, per timed shape
  SpeedPolicy policy;                      // margins and regression limit
  ShapeMix mix;                            // how the deployment weighs the shapes
};

struct QualifyVerdict {
  ShipVerdict verdict = ShipVerdict::incomplete;
  std::string summary;                     // one sentence
  std::vector<std::string> reasons;
  std::vector<std::string> would_reverse;
  std::optional<SpeedJudgement> speed;     // the per-shape table and overall effect, when timing ran
};

// First match wins (docs/decision.md):
//   1. no GPU                                   → incomplete (static phases only);
//   2. kqual's own failure (harness_failure)    → incomplete, naming it ("not the candidate's");
//   3. rejected by the contract                 → do not ship ("no evidence" when no case failed but
//                                                 none proved anything: every case refused or degenerate);
//   4. timing not asked for (`kqual check`)     → ship if correct (no performance claim), else do not ship;
//      timing asked for and nothing timed        → incomplete, naming why (timing_not_run);
//   5. otherwise the speed rule (speed.hpp, judge_speed) on every timed shape, except that without
//      baselines asked for (baselines_expected false) a shape not compared is only reported;
//   6. correctness not checked (`kqual bench`)  → never ship: a speed win or tie is incomplete ("correctness
//                                                 not checked"), a loss stays do not ship.
QualifyVerdict decide_qualify(const QualifyFindings& f);

// {"decision", "exit_code", "summary", "reasons", "would_reverse"} as results.json carries it.
json to_json(const QualifyVerdict& v);

}  // namespace kqual::decision
