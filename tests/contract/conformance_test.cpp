// One conformance test over every contract in the registry: the refusal codes mean the same thing
// everywhere (kRefusalCodes), the contract's own refusal examples agree with validate(), and the
// common refusals (dtype outside the contract, dtype not claimed, a missing tensor, a size over the
// candidate's claim) come out with the same code from each contract. The domain is declared once
// (contract.domain()); the tests below also hold the derivation to the declaration: a sound
// declaration, an example for every code the domain can refuse with, every generated case
// accepted, and the domain's JSON saying what was declared.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <limits>
#include <set>
#include <string>

#include "kqual/contract/contract.hpp"
#include "kqual/contract/declared/declared.hpp"

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

TEST_P(Conformance, DeclarationIsSound) {
  const auto problems = declaration_problems(c().domain());
  EXPECT_TRUE(problems.empty()) << GetParam() << ": " << (problems.empty() ? "" : problems.front());
}

TEST_P(Conformance, EveryRefusalCodeOfTheDomainHasAnExampleRefusedWithIt) {
  const std::vector<std::string> codes = refusal_codes(c().domain());
  std::set<std::string> covered;
  for (const auto& e : c().refusal_examples()) {
    EXPECT_TRUE(std::find(codes.begin(), codes.end(), e.code) != codes.end())
        << GetParam() << ": an example of '" << e.code << "', which the domain does not list";
    if (e.claims) {
      // Claim-dependent: refused under its claims, accepted once the claims are widened.
      EXPECT_EQ(code_of(c(), e.request, *e.claims), e.code) << GetParam();
      EXPECT_EQ(code_of(c(), e.request, widest_claims(c().domain())), "accepted") << GetParam() << " " << e.code;
    } else {
      // Whatever the candidate claims about alignment and aliasing, and for sizes from the default
      // max_n up (a claim below the example's own size would refuse it as exceeds_claim first).
      for (std::int64_t align : {1, 4, 16, 256})
        for (bool in_place : {false, true})
          for (std::int64_t max_n : {Supports{}.max_n, std::numeric_limits<std::int64_t>::max()}) {
            Supports s = capable(c());
            s.min_alignment_bytes = align;
            s.in_place = in_place;
            s.max_n = max_n;
            const auto v = c().validate(e.request, s);
            ASSERT_TRUE(v) << GetParam() << ": " << e.code << " example accepted";
            EXPECT_EQ(v->code, e.code) << GetParam() << ": " << v->reason;
          }
    }
    covered.insert(e.code);
  }
  for (const auto& code : codes) EXPECT_TRUE(covered.count(code)) << GetParam() << ": no example of " << code;
  // The contract-wide codes every domain has.
  for (const char* code : {"dtype_unsupported", "dtype_not_claimed", "missing_tensor", "empty", "exceeds_claim", "non_contiguous",
                           "negative_offset", "misaligned"})
    EXPECT_TRUE(std::find(codes.begin(), codes.end(), code) != codes.end()) << GetParam() << " " << code;
}

TEST_P(Conformance, GeneratedCasesAreAccepted) {
  // Every case the contract generates, large ones included, is inside its own domain for a
  // candidate claiming all of it (element alignment, so the offset cases are generated too).
  Supports s = capable(c());
  s.min_alignment_bytes = 1;
  for (bool large : {false, true})
    for (const auto& spec : c().correctness_cases(s, 1, large)) {
      const Request r = c().request(spec.dtype, spec.dims, spec.offset_elements);
      const auto v = c().validate(r, s);
      EXPECT_FALSE(v) << GetParam() << " " << spec.id << ": " << (v ? v->reason : "");
      // Within the claimed range, which bounds every tensor of an accepted request.
      const ClaimedRange range = c().claimed_range(s);
      for (const auto& td : c().tensors()) EXPECT_LE(r.lengths.at(td.name), range.tensor_elements.at(td.name)) << spec.id;
    }
}

TEST_P(Conformance, DomainJsonSaysWhatIsDeclared) {
  const Domain& d = c().domain();
  const json j = c().domain_json();
  ASSERT_EQ(j.at("dtypes").size(), d.dtypes.size());
  for (std::size_t i = 0; i < d.dtypes.size(); ++i) EXPECT_EQ(j.at("dtypes")[i], std::string(to_string(d.dtypes[i])));
  ASSERT_EQ(j.at("dims").size(), d.dims.size());
  for (std::size_t i = 0; i < d.dims.size(); ++i) {
    EXPECT_EQ(j.at("dims")[i].at("name"), d.dims[i].name);
    EXPECT_EQ(j.at("dims")[i].at("min"), 1);
    const json want = d.dims[i].max == kUnlimited ? json("none") : json(d.dims[i].max);
    EXPECT_EQ(j.at("dims")[i].at("max"), want);
  }
  ASSERT_EQ(j.at("limits").size(), d.limits.size());
  for (std::size_t i = 0; i < d.limits.size(); ++i) EXPECT_EQ(j.at("limits")[i].at("max"), d.limits[i].max);
  ASSERT_EQ(j.at("tensors").size(), d.tensors.size());
  for (std::size_t i = 0; i < d.tensors.size(); ++i) {
    const json& t = j.at("tensors")[i];
    EXPECT_EQ(t.at("name"), d.tensors[i].name);
    EXPECT_EQ(t.at("role"), d.tensors[i].role == Role::input ? "input" : "output");
    EXPECT_EQ(t.at("shape").get<std::vector<std::string>>(), d.tensors[i].shape);
    const Layout l = d.tensors[i].layout;
    EXPECT_EQ(t.at("layout"), l == Layout::row_major ? "row_major" : l == Layout::strided ? "strided" : "contiguous");
    if (l == Layout::strided) {
      EXPECT_EQ(t.at("row_length"), d.tensors[i].row_length);
    }
  }
  EXPECT_EQ(j.at("aliasing").at("in_place"), d.in_place.has_value());
  EXPECT_EQ(j.at("refusal_codes").get<std::vector<std::string>>(), refusal_codes(d));
  // The tensors and dims the rest of kqual sees are the declared ones.
  ASSERT_EQ(c().tensors().size(), d.tensors.size());
  ASSERT_EQ(c().dims().size(), d.dims.size());
  EXPECT_EQ(c().dtypes(), d.dtypes);
}

TEST_P(Conformance, MinBytesIsEveryTensorOnce) {
  const Dims dims = c().benchmark_shapes().front();
  for (DType t : c().dtypes()) {
    double want = 0;
    for (const auto& td : c().tensors()) {
      // A strided tensor's view (rows x row length) is moved, never the padding of its storage.
      const TensorSpec* ts = c().domain().tensor(td.name);
      const double elements = ts->layout == Layout::strided ? double(dims.at(ts->shape[0]) * dims.at(ts->row_length))
                                                            : double(c().tensor_elements(td.name, dims));
      want += elements * double(dtype_size(c().tensor_dtype(td.name, t)));
    }
    EXPECT_EQ(c().min_bytes(dims, t), want) << GetParam();
  }
}

// The built-in contracts and the declared ones bundled in contracts/ (issue 22: one pipeline, one
// conformance bar for both kinds).
std::vector<std::string> every_contract() {
  std::vector<std::string> v = contract_names();
  for (const auto& f : ContractLookup().discover({std::filesystem::path(KQUAL_SOURCE_DIR) / "contracts"}))
    if (f.string().starts_with(KQUAL_SOURCE_DIR)) v.push_back(load_declared_contract(f).name());
  return v;
}

INSTANTIATE_TEST_SUITE_P(EveryContract, Conformance, ::testing::ValuesIn(every_contract()),
                         [](const auto& test_info) { return test_info.param; });

}  // namespace
}  // namespace kqual::contract
