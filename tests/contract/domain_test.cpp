// The derivation from a declared Domain is general: a toy contract that declares only its domain
// (and the numerics any contract must bring) gets validate(), its refusal examples, its JSON, tensor
// sizes and dtypes, min_bytes and the claimed range, and each of them follows the declaration.
// Also: the claimed range of the built-in contracts.
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <set>
#include <string>

#include "kqual/contract/contract.hpp"
#include "kqual/core/error.hpp"

namespace kqual::contract {
namespace {

constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();

// y = x * w (row-wise scale) and acc[b] = sum of row b in f64: every feature of a declaration.
class Toy final : public Contract {
 public:
  std::string name() const override { return "toy_scale"; }
  std::string summary() const override { return "y[b][l] = x[b][l] * w[l]; acc[b] = sum_l y[b][l]"; }
  const Domain& domain() const override {
    static const Domain d{
        .dims = {{.name = "batch", .max = 1024}, {.name = "len"}},
        .tensors = {{.name = "x", .role = Role::input, .shape = {"batch", "len"}, .description = "rows", .layout = Layout::row_major},
                    {.name = "w", .role = Role::input, .shape = {"len"}, .description = "weights"},
                    {.name = "y", .role = Role::output, .shape = {"batch", "len"}, .description = "scaled rows",
                     .layout = Layout::row_major},
                    {.name = "acc", .role = Role::output, .shape = {"batch"}, .description = "row sums", .dtype = DType::f64}},
        .dtypes = {DType::f32, DType::bf16},
        .limits = {{.dims = {"batch", "len"}, .max = std::int64_t(1) << 34}},
        .claim = {.dims = {"batch", "len"}},
        .in_place = InPlace{"y", "x"},
        .alignment_note = "toy note",
    };
    return d;
  }
  std::string numerical_policy() const override { return "toy"; }
  Reproducibility reproducibility(DType) const override { return {.required = true, .reason = "toy", .opt_out = "none"}; }
  std::vector<CaseSpec> correctness_cases(const Supports&, std::uint64_t, bool) const override { return {}; }
  std::vector<Dims> benchmark_shapes() const override { return {{{"batch", 8}, {"len", 1000}}}; }
  CaseData make_case(const CaseSpec&) const override { throw_error(ErrorKind::internal, "toy has no cases"); }
  std::vector<Tensor> reference(const CaseData&, ReferenceHost&) const override { return {}; }
  double flops(const Dims& d, DType) const override { return 2.0 * double(d.at("batch") * d.at("len")); }
};

const Toy& toy() {
  static const Toy t;
  return t;
}

Supports claims(std::int64_t align = 4) {
  Supports s;
  s.dtypes = {DType::f32, DType::bf16};
  s.min_alignment_bytes = align;
  return s;
}

std::string code_of(const Request& r, const Supports& s) {
  auto v = toy().validate(r, s);
  return v ? v->code : "accepted";
}
std::string reason_of(const Request& r, const Supports& s) {
  auto v = toy().validate(r, s);
  return v ? v->reason : "";
}

Request ok() { return toy().request(DType::f32, {{"batch", 8}, {"len", 1000}}); }

TEST(ToyDomain, DeclarationIsSoundAndSizesFollowIt) {
  EXPECT_TRUE(declaration_problems(toy().domain()).empty());
  const Dims d{{"batch", 8}, {"len", 1000}};
  EXPECT_EQ(toy().tensor_elements("x", d), 8000);
  EXPECT_EQ(toy().tensor_elements("w", d), 1000);
  EXPECT_EQ(toy().tensor_elements("acc", d), 8);
  EXPECT_THROW(toy().tensor_elements("z", d), Error);
  EXPECT_EQ(toy().tensor_dtype("x", DType::bf16), DType::bf16);
  EXPECT_EQ(toy().tensor_dtype("acc", DType::bf16), DType::f64);  // an accumulator keeps its dtype
  EXPECT_EQ(toy().min_bytes(d, DType::bf16), 2.0 * (8000 + 1000 + 8000) + 8.0 * 8);
  EXPECT_EQ(toy().dims(), (std::vector<std::string>{"batch", "len"}));
  ASSERT_EQ(toy().tensors().size(), 4u);
  EXPECT_EQ(toy().tensors()[3].role, Role::output);
  EXPECT_EQ(parse_shape(toy(), "batch=2,len=3").at("len"), 3);
}

TEST(ToyDomain, EveryCheckComesFromTheDeclaration) {
  const Supports s = claims(16);
  EXPECT_EQ(code_of(ok(), s), "accepted");
  Request r = ok();
  r.dtype = DType::i32;
  EXPECT_EQ(code_of(r, s), "dtype_unsupported");
  EXPECT_NE(reason_of(r, s).find("toy_scale contract (f32, bf16)"), std::string::npos) << reason_of(r, s);
  Supports f32 = s;
  f32.dtypes = {DType::f32};
  EXPECT_EQ(code_of(toy().request(DType::bf16, {{"batch", 8}, {"len", 1000}}), f32), "dtype_not_claimed");
  for (const char* t : {"x", "w", "y", "acc"}) {
    r = ok();
    r.lengths.erase(t);
    EXPECT_EQ(code_of(r, s), "missing_tensor") << t;
    EXPECT_NE(reason_of(r, s).find(std::string("'") + t + "'"), std::string::npos);
  }
  r = ok();
  r.dims.erase("len");  // no tensor gives len's length by declaration
  EXPECT_EQ(code_of(r, s), "missing_dim");
  EXPECT_EQ(code_of(toy().request(DType::f32, {{"batch", 8}, {"len", 0}}), s), "empty");
  EXPECT_NE(reason_of(toy().request(DType::f32, {{"batch", 8}, {"len", 0}}), s).find("len = 0"), std::string::npos);
  EXPECT_EQ(code_of(toy().request(DType::f32, {{"batch", 1025}, {"len", 1}}), s), "dim_too_large");
  EXPECT_NE(reason_of(toy().request(DType::f32, {{"batch", 1025}, {"len", 1}}), s).find("batch = 1025"), std::string::npos);
  const Request big = toy().request(DType::f32, {{"batch", 1024}, {"len", (std::int64_t(1) << 24) + 1}});
  EXPECT_EQ(code_of(big, s), "too_large");
  EXPECT_NE(reason_of(big, s).find("2^34"), std::string::npos) << reason_of(big, s);
  r = ok();
  r.lengths["acc"] = 7;
  EXPECT_EQ(code_of(r, s), "length_mismatch");
  EXPECT_NE(reason_of(r, s).find("'acc' has 7 elements but batch = 8"), std::string::npos) << reason_of(r, s);
  Supports small = s;
  small.max_n = 7999;
  EXPECT_EQ(code_of(ok(), small), "exceeds_claim");
  EXPECT_NE(reason_of(ok(), small).find("batch*len = 8000"), std::string::npos) << reason_of(ok(), small);
  r = ok();
  r.strides["x"] = 8;  // the row count: x given column-major
  EXPECT_EQ(code_of(r, s), "transposed");
  r.strides["x"] = 2;
  EXPECT_EQ(code_of(r, s), "non_contiguous");
  r = ok();
  r.strides["w"] = 8;  // w is not row_major: any stride is non_contiguous
  EXPECT_EQ(code_of(r, s), "non_contiguous");
  r = ok();
  r.offset_elements = -2;
  EXPECT_EQ(code_of(r, s), "negative_offset");
  r.offset_elements = 2;  // 8 bytes of f32 (and 16 of the f64 accumulator)
  EXPECT_EQ(code_of(r, s), "misaligned");
  EXPECT_EQ(code_of(r, claims(8)), "accepted");
  r = toy().request(DType::bf16, {{"batch", 8}, {"len", 1000}}, 4);  // 8 bytes of bf16, 32 of f64
  EXPECT_EQ(code_of(r, claims(8)), "accepted");
  r.offset_elements = 2;  // 4 bytes of bf16
  EXPECT_EQ(code_of(r, claims(8)), "misaligned");
  r = ok();
  r.in_place = true;
  EXPECT_EQ(code_of(r, s), "aliasing_not_claimed");
  Supports inplace = s;
  inplace.in_place = true;
  EXPECT_EQ(code_of(r, inplace), "accepted");
}

TEST(ToyDomain, RefusalExamplesCoverEveryCode) {
  const std::vector<std::string> want = {"dtype_unsupported", "dtype_not_claimed", "missing_tensor", "missing_dim",
                                         "empty",             "dim_too_large",     "too_large",      "length_mismatch",
                                         "exceeds_claim",     "transposed",        "non_contiguous", "negative_offset",
                                         "misaligned",        "aliasing_not_claimed"};
  EXPECT_EQ(refusal_codes(toy().domain()), want);
  std::set<std::string> covered;
  for (const auto& e : toy().refusal_examples()) {
    const Supports s = e.claims ? *e.claims : claims(16);
    EXPECT_EQ(code_of(e.request, s), e.code) << reason_of(e.request, s);
    if (e.claims) {
      EXPECT_EQ(code_of(e.request, widest_claims(toy().domain())), "accepted") << e.code;
    }
    covered.insert(e.code);
  }
  EXPECT_EQ(covered, std::set<std::string>(want.begin(), want.end()));
  // unsupported_examples() is the claim-independent part.
  for (const auto& [r, code] : toy().unsupported_examples()) EXPECT_EQ(code_of(r, claims(1)), code);
}

TEST(ToyDomain, JsonSaysWhatIsDeclared) {
  const json j = toy().domain_json();
  EXPECT_EQ(j.at("dtypes"), json({"f32", "bf16"}));
  EXPECT_EQ(j.at("dims")[0].at("max"), 1024);
  EXPECT_EQ(j.at("dims")[1].at("max"), "none");
  EXPECT_EQ(j.at("limits")[0].at("of"), "batch*len");
  EXPECT_EQ(j.at("limits")[0].at("max"), std::int64_t(1) << 34);
  EXPECT_EQ(j.at("tensors")[3].at("dtype"), "f64");
  EXPECT_EQ(j.at("tensors")[0].at("dtype"), "request");
  EXPECT_EQ(j.at("tensors")[0].at("layout"), "row_major");
  EXPECT_EQ(j.at("tensors")[1].at("elements"), "len");
  EXPECT_EQ(j.at("claim").at("max_n_bounds"), "batch*len");
  EXPECT_EQ(j.at("aliasing").at("output"), "y");
  EXPECT_NE(j.at("alignment").get<std::string>().find("toy note"), std::string::npos);
}

TEST(ToyDomain, ClaimedRange) {
  Supports s = claims();
  ClaimedRange r = toy().claimed_range(s);  // the default max_n, 2^31-1
  EXPECT_EQ(r.max_elements, (std::int64_t(1) << 31) - 1);
  EXPECT_EQ(r.tensor, "x");
  EXPECT_EQ(r.tensor_elements.at("acc"), 1024);
  EXPECT_EQ(r.tensor_elements.at("w"), (std::int64_t(1) << 31) - 1);  // batch = 1
  EXPECT_FALSE(r.past_int32());
  s.max_n = std::int64_t(1) << 40;  // the claim reaches past the contract's limit: the limit decides
  r = toy().claimed_range(s);
  EXPECT_EQ(r.max_elements, std::int64_t(1) << 34);
  EXPECT_EQ(r.max_index, (std::int64_t(1) << 34) - 1);
  EXPECT_TRUE(r.past_int32());
  EXPECT_EQ(r.max_bytes, (std::int64_t(1) << 34) * 4);  // f32 claimed: 4 bytes; acc's f64 is only 1024 elements
  s.dtypes = {DType::bf16};
  EXPECT_EQ(toy().claimed_range(s).max_bytes, (std::int64_t(1) << 34) * 2);
  // The bound is reached: the largest x is accepted, one more row is not.
  Request edge = toy().request(DType::bf16, {{"batch", 1024}, {"len", std::int64_t(1) << 24}});
  EXPECT_EQ(code_of(edge, s), "accepted");
  s.dtypes = {DType::i32};  // nothing claimed inside the domain
  EXPECT_EQ(toy().claimed_range(s).max_elements, 0);
  s = claims();
  s.max_n = 0;
  EXPECT_EQ(toy().claimed_range(s).max_elements, 0);
}

TEST(ToyDomain, BrokenDeclarationsAreReported) {
  Domain d = toy().domain();
  d.tensors[1].shape = {"length"};
  d.in_place = InPlace{"y", "w"};
  d.dims[0].from_length_of = "x";
  d.mismatch_code = "size_mismatch";
  const auto p = declaration_problems(d);
  auto mentions = [&](const std::string& what) {
    return std::any_of(p.begin(), p.end(), [&](const std::string& s) { return s.find(what) != std::string::npos; });
  };
  EXPECT_TRUE(mentions("dim 'length', which is not declared"));
  EXPECT_TRUE(mentions("'y' and 'w' differ"));
  EXPECT_TRUE(mentions("dim 'batch' is taken from the length of 'x'"));
  EXPECT_TRUE(mentions("size_mismatch"));
}

// ---- The built-in contracts' claimed ranges -------------------------------------------------------

Supports all_of(const std::string& contract, std::int64_t max_n) {
  Supports s;
  s.dtypes = find_contract(contract).dtypes();
  s.max_n = max_n;
  return s;
}

TEST(ClaimedRange, BuiltInContracts) {
  const std::int64_t i31 = (std::int64_t(1) << 31) - 1, t40 = std::int64_t(1) << 40;
  // The default claim (2^31-1 elements) never reaches past int32 indices...
  for (const auto& name : contract_names()) {
    const ClaimedRange r = find_contract(name).claimed_range(all_of(name, i31));
    EXPECT_LE(r.max_elements, i31) << name;
    EXPECT_FALSE(r.past_int32()) << name;
  }
  // ...gemm's own limit (16384 per dim) keeps every operand at 2^28 elements whatever the claim.
  EXPECT_EQ(find_contract("gemm").claimed_range(all_of("gemm", kMax)).max_elements, std::int64_t(1) << 28);
  EXPECT_EQ(find_contract("gemm").claimed_range(all_of("gemm", 1 << 20)).max_elements, 1 << 20);
  EXPECT_EQ(find_contract("gemm").claimed_range(all_of("gemm", kMax)).max_bytes, (std::int64_t(1) << 28) * 4);
  // A claim of everything: the contract's limits decide.
  EXPECT_EQ(find_contract("exclusive_scan").claimed_range(all_of("exclusive_scan", kMax)).max_elements, t40);
  const ClaimedRange reduce = find_contract("reduce_sum").claimed_range(all_of("reduce_sum", kMax));
  EXPECT_EQ(reduce.tensor, "x");
  EXPECT_EQ(reduce.max_elements, t40);
  EXPECT_EQ(reduce.tensor_elements.at("y"), t40);  // cols = 1
  EXPECT_EQ(find_contract("transpose").claimed_range(all_of("transpose", kMax)).max_elements, i31 * i31);
  EXPECT_EQ(find_contract("residual_add_relu").claimed_range(all_of("residual_add_relu", kMax)).max_elements, kMax);
  // A claim of 2^32 elements reaches past int32 indices in every contract but gemm.
  for (const auto& name : contract_names()) {
    const ClaimedRange r = find_contract(name).claimed_range(all_of(name, std::int64_t(1) << 32));
    EXPECT_EQ(r.past_int32(), name != "gemm") << name;
    if (name != "gemm") {
      EXPECT_EQ(r.max_elements, std::int64_t(1) << 32) << name;
    }
  }
  // The bound is reached: a request of exactly that many elements is accepted, for each 2-D contract.
  auto accepted = [](const std::string& name, const Dims& dims) {
    const Contract& c = find_contract(name);
    return !c.validate(c.request(DType::f32, dims), all_of(name, std::int64_t(1) << 32)).has_value();
  };
  EXPECT_TRUE(accepted("reduce_sum", {{"rows", 1}, {"cols", std::int64_t(1) << 32}}));
  EXPECT_TRUE(accepted("softmax", {{"rows", 4}, {"cols", std::int64_t(1) << 30}}));
  EXPECT_FALSE(accepted("transpose", {{"rows", 2}, {"cols", std::int64_t(1) << 31}}));  // cols over 2^31-1
  EXPECT_TRUE(accepted("transpose", {{"rows", 4}, {"cols", std::int64_t(1) << 30}}));
  EXPECT_FALSE(accepted("exclusive_scan", {{"n", (std::int64_t(1) << 32) + 1}}));  // one past the claim
}

}  // namespace
}  // namespace kqual::contract
