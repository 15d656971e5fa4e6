// The run holds the reference processes (check/reference.cpp): a session's ReferenceHost serves
// every case of a declared contract with one Python process, sessions made from its options share
// it, and another run has its own (CPU only: use_gpu off, no worker starts).
#include <gtest/gtest.h>

#include <filesystem>

#include "kqual/check/evaluate.hpp"
#include "kqual/contract/contract.hpp"
#include "kqual/contract/declared/declared.hpp"
#include "kqual/contract/reference_host.hpp"
#include "kqual/core/error.hpp"
#include "kqual/worker/session.hpp"
#include "contract/contract_test_util.hpp"

namespace kqual::check {
namespace {

TEST(Reference, TheRunHoldsOneProcessPerDeclaredContractAndItsSessionsShareIt) {
  KQUAL_NEED_NUMPY();
  const contract::Contract& c =
      contract::load_declared_contract(std::filesystem::path(KQUAL_SOURCE_DIR) / "contracts/rmsnorm/contract.toml");
  contract::Supports claims;
  claims.dtypes = {DType::f32};
  claims.min_alignment_bytes = 4;
  const auto cases = c.correctness_cases(claims, 5, false);
  ASSERT_GE(cases.size(), 3u);
  worker::SessionOptions so;
  so.use_gpu = false;
  worker::Session s(so);
  for (std::size_t i = 0; i < 3; ++i) {
    std::string which;
    const auto expected = compute_reference(s, c, c.make_case(cases[i]), &which);
    EXPECT_EQ(which, "cpu");  // the Python process runs on the CPU; only the fp64 GPU reference is "gpu-fp64"
    EXPECT_FALSE(expected.empty());
  }
  EXPECT_EQ(reference_host(s).processes_started(), 1);
  worker::Session lane(s.options());  // a lane, or a candidate's own session, of the same run
  EXPECT_EQ(&reference_host(lane), &reference_host(s));
  worker::Session other(so);  // another run
  EXPECT_NE(&reference_host(other), &reference_host(s));
  EXPECT_EQ(reference_host(other).processes_started(), 0);
}

}  // namespace
}  // namespace kqual::check
