// Which claims of a manifest the cases exercised (claims.hpp): counted from the cases that ran.
#include "kqual/check/claims.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "kqual/check/in_place.hpp"
#include "kqual/check/run_to_run.hpp"

namespace kqual::check {

json ClaimExercise::to_json() const {
  return json{{"claim", claim}, {"value", value}, {"coverage", to_string(coverage)}, {"by", by}};
}

namespace {

// A case that ran (a sanitizer finding spans several cases that ran already: it is not counted again).
bool ran(const CaseResult& r) { return !r.sanitizer_finding && (r.status == CaseStatus::pass || r.status == CaseStatus::fail); }

ClaimExercise dtypes_claim(const contract::Supports& cand, const CorrectnessReport& rep) {
  ClaimExercise e{"dtypes", "", ClaimCoverage::exercised, ""};
  std::map<DType, int> per;
  for (const auto& r : rep.results)
    if (ran(r)) ++per[r.spec.dtype];
  std::vector<std::string> names, counts, missing;
  for (DType t : cand.dtypes) {
    names.emplace_back(to_string(t));
    if (per[t] > 0) counts.push_back(fmt::format("{}: {}", to_string(t), per[t]));
    else missing.emplace_back(to_string(t));
  }
  e.value = fmt::format("{}", fmt::join(names, ", "));
  e.by = counts.empty() ? "no case ran" : fmt::format("cases run per dtype ({})", fmt::join(counts, ", "));
  if (!missing.empty()) {
    e.coverage = counts.empty() ? ClaimCoverage::not_exercised : ClaimCoverage::partly;
    e.by += fmt::format("; not exercised: {}", fmt::join(missing, ", "));
  }
  return e;
}

ClaimExercise alignment_claim(const contract::Supports& cand, const CorrectnessReport& rep) {
  ClaimExercise e{"min_alignment_bytes", std::to_string(cand.min_alignment_bytes), ClaimCoverage::exercised, ""};
  int placed = 0, offset = 0;
  for (const auto& r : rep.results) {
    if (!ran(r) || r.spec.family == contract::kGeneratedFamily) continue;
    ++placed;
    offset += r.spec.offset_elements != 0;
  }
  const bool traps = std::none_of(rep.checks_not_run.begin(), rep.checks_not_run.end(),
                                  [](const std::string& s) { return s.find("unmapped pages") != std::string::npos; });
  if (placed == 0) {
    e.coverage = ClaimCoverage::not_exercised;
    e.by = "no host-made case ran";
  } else if (!traps) {
    e.coverage = ClaimCoverage::partly;
    e.by = fmt::format("{} case(s) with views offset by {} case(s)' offsets; inputs at the claimed alignment and no more: not "
                       "exercised (no unmapped-page placement on this platform)",
                       offset, offset);
  } else {
    e.by = fmt::format("{} case(s) with every input at the claimed alignment and no more (against an unmapped page), {} of "
                       "them with views offset from the allocation",
                       placed, offset);
  }
  return e;
}

ClaimExercise max_n_claim(const contract::Contract& c, const contract::Supports& cand, const CorrectnessReport& rep) {
  ClaimExercise e{"max_n", std::to_string(cand.max_n), ClaimCoverage::exercised, ""};
  std::int64_t largest = 0;
  for (const auto& r : rep.results)
    if (ran(r)) largest = std::max(largest, contract::claim_quantity(c.domain(), r.spec.dims));
  if (largest == 0) {
    e.coverage = ClaimCoverage::not_exercised;
    e.by = "no case ran";
    return e;
  }
  // Past the largest case run, only the cases past 2^31 elements (when the claims reach there) and the
  // exceeds_claim refusal speak for the claim.
  e.by = fmt::format("largest case run: {} (the quantity max_n bounds)", largest);
  if (largest < cand.max_n) {
    e.coverage = ClaimCoverage::partly;
    e.by += fmt::format("; from {} to the claimed {} not exercised", largest + 1, cand.max_n);
  }
  return e;
}

ClaimExercise in_place_claim(const contract::Contract& c, const contract::Supports& cand, const CorrectnessReport& rep) {
  const InPlacePlan plan = plan_in_place(c, cand);
  ClaimExercise e{"in_place", cand.in_place ? "true" : "false", ClaimCoverage::exercised, ""};
  if (!cand.in_place) {
    e.coverage = ClaimCoverage::not_claimed;
    e.by = plan.not_exercised;
    return e;
  }
  if (plan.pairs.empty()) {
    e.coverage = ClaimCoverage::not_exercised;
    e.by = plan.not_exercised;
    return e;
  }
  int n = 0;
  std::string pairs;
  for (const auto& r : rep.results)
    if (ran(r) && !r.in_place.empty()) {
      ++n;
      pairs = r.in_place;
    }
  if (n == 0) {
    e.coverage = ClaimCoverage::not_exercised;
    e.by = fmt::format("no case ran in place ({}): a case runs in place only after it passed with separate buffers",
                       describe_pairs(plan.pairs));
    return e;
  }
  e.by = fmt::format("{} case(s) run again with {} (the kernel given one pointer for both)", n, pairs);
  return e;
}

ClaimExercise deterministic_claim(const contract::Contract& c, const contract::Supports& cand, const CorrectnessReport& rep) {
  std::string rule = cand.deterministic ? (*cand.deterministic ? "true" : "false") : "unset (the contract's rule)";
  ClaimExercise e{"deterministic", rule, ClaimCoverage::exercised, ""};
  int compared = 0;
  for (const auto& r : rep.results)
    if (r.status == CaseStatus::pass || r.code == "nondeterministic") ++compared;
  bool required = false;
  for (DType t : cand.dtypes) required = required || run_to_run_policy(c, cand, t).required;
  if (compared == 0) {
    e.coverage = ClaimCoverage::not_exercised;
    e.by = "no case compared two runs";
    return e;
  }
  e.by = fmt::format("{} case(s) run twice on the same inputs, compared {}", compared,
                     required ? "bit for bit" : "against the error bound (bitwise reproducibility not required)");
  return e;
}

}  // namespace

std::vector<ClaimExercise> claims_exercised(const contract::Contract& c, const contract::Supports& cand, const CorrectnessReport& rep) {
  return {dtypes_claim(cand, rep), alignment_claim(cand, rep), max_n_claim(c, cand, rep), in_place_claim(c, cand, rep),
          deterministic_claim(c, cand, rep)};
}

}  // namespace kqual::check
