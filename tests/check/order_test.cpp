// The order cases run in (issue 21): cheapest and most decisive first, so that a wrong kernel is
// rejected by a small case and the large ones run only for candidates that pass everything else.
#include <gtest/gtest.h>

#include <set>

#include "kqual/check/evaluate.hpp"
#include "kqual/contract/contract.hpp"

namespace kqual::check {
namespace {

std::int64_t elements(const contract::Contract& c, const contract::CaseSpec& s) {
  std::int64_t e = 0;
  for (const auto& t : c.tensors()) e += c.tensor_elements(t.name, s.dims);
  return e;
}

int group(const contract::Contract& c, const contract::CaseSpec& s) {
  static const std::set<std::string> special = {"specials", "denormals", "near_max", "neg_inf", "large_logits", "all_equal", "wrap"};
  return elements(c, s) > (std::int64_t(1) << 22) ? 2 : special.count(s.family) ? 1 : 0;
}

TEST(CaseOrder, SmallPlainThenSmallSpecialsThenLargeForEveryContract) {
  for (const auto& name : contract::contract_names()) {
    const contract::Contract& c = contract::find_contract(name);
    contract::Supports cand;
    cand.dtypes = c.dtypes();
    cand.min_alignment_bytes = 1;
    auto cases = c.correctness_cases(cand, 20261202, true);
    const auto before = cases.size();
    std::multiset<std::string> ids_before;
    for (const auto& s : cases) ids_before.insert(s.id);
    order_cases(c, cases);
    ASSERT_EQ(cases.size(), before) << name;
    std::multiset<std::string> ids_after;
    for (const auto& s : cases) ids_after.insert(s.id);
    EXPECT_EQ(ids_before, ids_after) << name << ": ordering must neither drop nor add a case";
    for (std::size_t i = 1; i < cases.size(); ++i) {
      const int g0 = group(c, cases[i - 1]), g1 = group(c, cases[i]);
      ASSERT_LE(g0, g1) << name << ": " << cases[i - 1].id << " before " << cases[i].id;
      if (g0 == g1) {
        EXPECT_LE(elements(c, cases[i - 1]), elements(c, cases[i])) << name << ": " << cases[i].id;
      }
    }
    // The first case is one of the smallest plain ones the contract has.
    for (const auto& s : cases)
      if (group(c, s) == 0) {
        EXPECT_LE(elements(c, cases.front()), elements(c, s)) << name;
      }
  }
}

TEST(CaseOrder, ResidualAddReluRunsTheLargeCasesLast) {
  const contract::Contract& c = contract::find_contract("residual_add_relu");
  contract::Supports cand;
  cand.dtypes = {DType::f32};
  cand.min_alignment_bytes = 4;
  auto cases = c.correctness_cases(cand, 7, true);
  order_cases(c, cases);
  ASSERT_GE(cases.size(), 3u);
  EXPECT_EQ(cases.front().dims.at("n"), 1);
  EXPECT_EQ(cases.back().dims.at("n"), (std::int64_t(1) << 29) + 7);
  EXPECT_EQ(cases[cases.size() - 2].dims.at("n"), (std::int64_t(1) << 27) + 5);
}

}  // namespace
}  // namespace kqual::check
