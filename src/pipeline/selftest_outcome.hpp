#pragma once
// selftest's rule for one folder: what it is expected to do (be accepted, or, known-broken, be rejected for
// its stated reason), and what one seed of it came to against that, in the words of its row.
#include <map>
#include <string>
#include <vector>

#include "kqual/build/manifest.hpp"
#include "kqual/pipeline/phases.hpp"

namespace kqual::pipeline {

struct SelftestExpectation {
  bool broken = false;
  std::vector<std::string> codes;  // broken: the stated reason first, then the alternatives
  std::string text;                // "accepted", "rejected: a or b"
  bool timed_class = false;        // a defect that shows only when timed
};

// From the folder's manifest ([expect] rejected_for and its alternatives); Error(input) for a known-broken
// folder that states no reason.
SelftestExpectation selftest_expectation(const build::Manifest& m, bool broken);

struct SeedOutcome {
  std::string got;        // "accepted", "rejected: <code>", "load failed: ...", "incomplete: kqual's own failure: ..."
  bool ok = false;        // as the folder expects
  bool rejected = false;  // the candidate was told wrong (by its cases or when timed)
};

// One seed: `load_error` is empty when the candidate loaded; `codes` are the failure classes seen (the
// timed finding's included), `timed_code`/`timed_detail` what timing found ("" when nothing). A seed whose
// cases kqual's own failure stopped with none failed is incomplete: never "rejected" with no class.
SeedOutcome seed_outcome(const SelftestExpectation& x, const std::string& load_error, const CorrectnessSummary& sum,
                         const std::map<std::string, int>& codes, const std::string& timed_code, const std::string& timed_detail);

}  // namespace kqual::pipeline
