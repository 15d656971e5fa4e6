#pragma once
// Which of a manifest's claims ([supports]: dtypes, min_alignment_bytes, max_n, in_place,
// deterministic) the cases that ran exercised, and which they did not: a claim no case tested is
// named as such in the report and the memo, never passed over. docs/contracts.md, "Claims and the
// cases that exercise them", has the table per contract.
#include <string>
#include <vector>

#include "kqual/check/evaluate.hpp"
#include "kqual/contract/contract.hpp"
#include "kqual/core/enum_names.hpp"
#include "kqual/core/json.hpp"

namespace kqual::check {

enum class ClaimCoverage {
  exercised,      // cases ran that would fail a candidate breaking the claim
  partly,         // cases ran, but part of what is claimed was not reached (sizes below the claimed max_n)
  not_exercised,  // claimed, and no case tested it
  not_claimed,    // the manifest does not make the claim (its requests are refused instead)
};
inline constexpr EnumNames<ClaimCoverage, 4> kClaimCoverageNames{{{{ClaimCoverage::exercised, "exercised"},
                                                                   {ClaimCoverage::partly, "partly"},
                                                                   {ClaimCoverage::not_exercised, "not_exercised"},
                                                                   {ClaimCoverage::not_claimed, "not_claimed"}}}};
inline const char* to_string(ClaimCoverage c) { return kClaimCoverageNames.name(c); }

struct ClaimExercise {
  std::string claim;  // the [supports] key
  std::string value;  // what the manifest says (or the contract's rule where it says nothing)
  ClaimCoverage coverage = ClaimCoverage::not_exercised;
  std::string by;     // the cases that exercised it, or why none did
  json to_json() const;
};

// The claims of `cand` against the cases of `rep` (its results: dtypes, sizes, in-place runs, two
// runs compared; its checks_not_run), in [supports] order.
std::vector<ClaimExercise> claims_exercised(const contract::Contract& c, const contract::Supports& cand, const CorrectnessReport& rep);

}  // namespace kqual::check
