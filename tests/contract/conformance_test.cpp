// One conformance test over every contract in the registry: the refusal codes mean the same thing
// everywhere (kRefusalCodes), the contract's own refusal examples agree with validate(), and the
// common refusals (dtype outside the contract, dtype not claimed, a missing tensor, a size over the
// candidate's claim) come out with the same code from each contract.
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <string>

#include "kqual/contract/contract.hpp"

namespace kqual::contract {
namespace {

bool canonical(const std::string& code) {
  return std::any_of(std::begin(kRefusalCodes), std::end(kRefusalCodes), [&](const char* c) { return code == c; });
}

// What a capable candidate claims: every dtype of the contract, any size, 16-byte alignment.
Supports capable(const Contract& c) {
  Supports s;
  s.dtypes = c.dtypes();
  s.min_alignment_bytes = 16;
  s.max_n = std::numeric_limits<std::int64_t>::max();
  return s;
}

Request request(const Contract& c, DType t, const Dims& dims) {
  Request r;
  r.dtype = t;
  r.dims = dims;
  for (const auto& td : c.tensors()) r.lengths[td.name] = c.tensor_elements(td.name, dims);
  return r;
}

std::string code_of(const Contract& c, const Request& r, const Supports& s) {
  auto v = c.validate(r, s);
  return v ? v->code : "accepted";
}

class Conformance : public ::testing::TestWithParam<std::string> {
 protected:
  const Contract& c() const { return find_contract(GetParam()); }
};

TEST_P(Conformance, RefusalExamplesUseCanonicalCodesAndAgreeWithValidate) {
  const auto examples = c().unsupported_examples();
  ASSERT_FALSE(examples.empty()) << GetParam() << " lists no request it refuses";
  for (const auto& [req, expected] : examples) {
    EXPECT_TRUE(canonical(expected)) << GetParam() << ": '" << expected << "' is not in kRefusalCodes";
    const auto v = c().validate(req, capable(c()));
    ASSERT_TRUE(v) << GetParam() << ": an example expected to be refused as " << expected << " was accepted";
    EXPECT_EQ(v->code, expected) << GetParam() << ": " << v->reason;
    EXPECT_FALSE(v->reason.empty());
  }
}

TEST_P(Conformance, BenchmarkShapesAreInsideTheDomain) {
  for (DType t : c().dtypes())
    for (const auto& dims : c().benchmark_shapes())
      EXPECT_EQ(code_of(c(), request(c(), t, dims), capable(c())), "accepted") << GetParam() << " " << format_dims(dims);
}

TEST_P(Conformance, CommonRefusalsHaveOneCodeEverywhere) {
  const Dims dims = c().benchmark_shapes().front();
  const DType t = c().dtypes().front();
  // Over the candidate's claimed size: exceeds_claim (too_large is the contract's own limit).
  Supports small = capable(c());
  small.max_n = 1;
  EXPECT_EQ(code_of(c(), request(c(), t, dims), small), "exceeds_claim") << GetParam();
  // A dtype the contract has but the candidate does not claim.
  Supports none = capable(c());
  none.dtypes.clear();
  EXPECT_EQ(code_of(c(), request(c(), t, dims), none), "dtype_not_claimed") << GetParam();
  // A dtype outside the contract.
  for (DType other : {DType::f32, DType::bf16, DType::f16, DType::f64, DType::i32, DType::i64, DType::u32}) {
    const auto have = c().dtypes();
    if (std::find(have.begin(), have.end(), other) != have.end()) continue;
    EXPECT_EQ(code_of(c(), request(c(), other, dims), capable(c())), "dtype_unsupported") << GetParam();
    break;
  }
  // A tensor missing from the request.
  Request missing = request(c(), t, dims);
  missing.lengths.erase(c().tensors().front().name);
  const std::string mc = code_of(c(), missing, capable(c()));
  EXPECT_EQ(mc, "missing_tensor") << GetParam();
  // Every refusal any of the above produced is canonical.
  for (const std::string& code : {code_of(c(), request(c(), t, dims), small), mc}) EXPECT_TRUE(canonical(code)) << code;
}

INSTANTIATE_TEST_SUITE_P(EveryContract, Conformance, ::testing::ValuesIn(contract_names()),
                         [](const auto& test_info) { return test_info.param; });

}  // namespace
}  // namespace kqual::contract
