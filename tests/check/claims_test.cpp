// Which claims of a manifest the cases exercised: counted from a correctness report's cases, and a
// claim no case tested named not_exercised (in the report's JSON, which the memo renders).
#include "kqual/check/claims.hpp"

#include <gtest/gtest.h>

#include "kqual/contract/contract.hpp"

namespace kqual::check {
namespace {

contract::Supports claimed(bool in_place, std::vector<DType> dtypes = {DType::f32}) {
  contract::Supports s;
  s.dtypes = std::move(dtypes);
  s.in_place = in_place;
  return s;
}

CaseResult case_run(std::int64_t n, DType t = DType::f32, std::string in_place = "", std::int64_t offset = 0) {
  CaseResult r;
  r.spec.id = "case";
  r.spec.family = "normal";
  r.spec.dtype = t;
  r.spec.dims = {{"n", n}};
  r.spec.offset_elements = offset;
  r.status = CaseStatus::pass;
  r.in_place = std::move(in_place);
  return r;
}

ClaimExercise find(const std::vector<ClaimExercise>& v, const std::string& claim) {
  for (const auto& e : v)
    if (e.claim == claim) return e;
  ADD_FAILURE() << "no claim " << claim;
  return {};
}

TEST(Claims, EveryManifestClaimIsListedInSupportsOrder) {
  CorrectnessReport rep;
  rep.results = {case_run(257)};
  std::vector<std::string> names;
  for (const auto& e : claims_exercised(contract::find_contract("residual_add_relu"), claimed(false), rep)) names.push_back(e.claim);
  EXPECT_EQ(names, (std::vector<std::string>{"dtypes", "min_alignment_bytes", "max_n", "in_place", "deterministic"}));
}

TEST(Claims, InPlaceIsExercisedByTheCasesThatRanInPlace) {
  const contract::Contract& c = contract::find_contract("residual_add_relu");
  CorrectnessReport rep;
  rep.results = {case_run(1, DType::f32, "y on x"), case_run(257, DType::f32, "y on x")};
  const ClaimExercise e = find(claims_exercised(c, claimed(true), rep), "in_place");
  EXPECT_EQ(e.coverage, ClaimCoverage::exercised);
  EXPECT_NE(e.by.find("2 case(s) run again with y on x"), std::string::npos) << e.by;
  EXPECT_EQ(e.to_json().at("coverage"), "exercised");
}

TEST(Claims, AnInPlaceClaimNoCaseRanIsNamedNotExercised) {
  CorrectnessReport rep;
  rep.results = {case_run(1)};
  rep.results[0].spec.dims = {{"rows", 1}, {"cols", 1}};  // softmax's and transpose's dims
  // Claimed, the contract has the form, but no case ran in place (none passed with separate buffers).
  ClaimExercise e = find(claims_exercised(contract::find_contract("softmax"), claimed(true), rep), "in_place");
  EXPECT_EQ(e.coverage, ClaimCoverage::not_exercised);
  EXPECT_NE(e.by.find("no case ran in place"), std::string::npos) << e.by;
  // Claimed under a contract without an in-place form.
  e = find(claims_exercised(contract::find_contract("transpose"), claimed(true), rep), "in_place");
  EXPECT_EQ(e.coverage, ClaimCoverage::not_exercised);
  EXPECT_NE(e.by.find("no in-place form"), std::string::npos) << e.by;
  // Not claimed: refused instead, and said so.
  rep.results[0].spec.dims = {{"n", 1}};
  e = find(claims_exercised(contract::find_contract("residual_add_relu"), claimed(false), rep), "in_place");
  EXPECT_EQ(e.coverage, ClaimCoverage::not_claimed);
  EXPECT_EQ(e.to_json().at("coverage"), "not_claimed");
}

TEST(Claims, ADtypeWithoutCasesAndSizesBelowMaxNArePartly) {
  CorrectnessReport rep;
  rep.results = {case_run(1024, DType::f32, "", 1)};
  const auto v = claims_exercised(contract::find_contract("residual_add_relu"), claimed(false, {DType::f32, DType::bf16}), rep);
  const ClaimExercise d = find(v, "dtypes");
  EXPECT_EQ(d.coverage, ClaimCoverage::partly);
  EXPECT_NE(d.by.find("not exercised: bf16"), std::string::npos) << d.by;
  const ClaimExercise n = find(v, "max_n");
  EXPECT_EQ(n.coverage, ClaimCoverage::partly);
  EXPECT_NE(n.by.find("largest case run: 1024"), std::string::npos) << n.by;
  const ClaimExercise a = find(v, "min_alignment_bytes");
  EXPECT_EQ(a.coverage, ClaimCoverage::exercised);
  EXPECT_NE(a.by.find("1 of them with views offset"), std::string::npos) << a.by;
}

// A compute-sanitizer finding fails the check but is no case: no dims, no dtype of its own. It speaks for
// no claim (on the H100, `kqual check` of a candidate only the sanitizer rejects stopped with "internal
// error: map::at" when max_n's count read the finding's dims).
TEST(Claims, ASanitizerFindingIsNoCaseOfAnyClaim) {
  CorrectnessReport rep;
  rep.results = {case_run(257, DType::bf16)};
  CaseResult finding;
  finding.spec.id = "sanitizer/memcheck";
  finding.spec.family = "memcheck";
  finding.sanitizer_finding = true;
  finding.status = CaseStatus::fail;
  finding.code = "out_of_bounds_read";
  rep.results.push_back(finding);
  std::vector<ClaimExercise> v;
  ASSERT_NO_THROW(v = claims_exercised(contract::find_contract("residual_add_relu"), claimed(false, {DType::bf16, DType::f32}), rep));
  const ClaimExercise d = find(v, "dtypes");
  EXPECT_NE(d.by.find("not exercised: f32"), std::string::npos) << d.by;  // the finding's default dtype counts for nothing
  EXPECT_NE(find(v, "max_n").by.find("largest case run: 257"), std::string::npos) << find(v, "max_n").by;
  EXPECT_NE(find(v, "min_alignment_bytes").by.find("1 case(s)"), std::string::npos) << find(v, "min_alignment_bytes").by;
}

TEST(Claims, NoCaseRunExercisesNothing) {
  CorrectnessReport rep;
  for (const auto& e : claims_exercised(contract::find_contract("residual_add_relu"), claimed(true), rep))
    EXPECT_EQ(e.coverage, ClaimCoverage::not_exercised) << e.claim << ": " << e.by;
}

}  // namespace
}  // namespace kqual::check
