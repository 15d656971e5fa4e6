#pragma once
// A contract's domain, declared once (a `Domain` value per contract): its dims and their limits,
// its tensors (role, shape as dims, dtype, layout), the dtypes it covers, whether an output may
// alias an input, and which quantity the candidate's claimed max_n bounds. Everything a request is
// checked against before launch is derived from that declaration (src/contract/domain.cpp): the
// refusals of validate() with their canonical codes, the refusal examples, the domain's JSON for
// reports, tensor sizes and dtypes, and the largest tensor a candidate's claims can reach.
// docs/contracts.md, "Declaring a domain", describes it for contract authors.
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kqual/core/dtype.hpp"
#include "kqual/core/json.hpp"

namespace kqual::contract {

// Problem dimensions by name ("n"; "rows","cols"; "m","n","k"; ...).
using Dims = std::map<std::string, std::int64_t>;
// "n=257" / "m=128,n=64,k=8192", in the map's (alphabetical) order.
std::string format_dims(const Dims& d);

enum class Role { input, output };

struct TensorDecl {
  std::string name;
  Role role;
  std::string description;
};

// What a candidate claims to support (from its manifest's [supports]).
struct Supports {
  std::vector<DType> dtypes;
  std::int64_t min_alignment_bytes = 16;  // pointer alignment the kernel requires
  std::int64_t max_n = (std::int64_t(1) << 31) - 1;
  bool in_place = false;                  // may an output alias an input?
  // [supports] deterministic: true claims bitwise run-to-run reproducibility (a contract that does
  // not require it then holds the candidate to it); false says it is not (atomics), which only a
  // contract that does not require it admits; nullopt: the contract's rule.
  std::optional<bool> deterministic;
  bool supports(DType t) const;
};

// A problem as a user (or the case generator) asks for it, before anything runs.
struct Request {
  DType dtype = DType::f32;
  Dims dims;                                    // the problem's dims (optional for a dim declared from_length_of)
  std::map<std::string, std::int64_t> lengths;  // per tensor, in elements
  std::map<std::string, std::int64_t> strides;  // per tensor, in elements (1 = contiguous)
  std::int64_t offset_elements = 0;            // start offset of every tensor view
  bool in_place = false;                        // the contract's in-place output aliases its input
};

// Refusal: why a request is outside the contract or the candidate's claimed domain.
struct Refusal {
  std::string code;    // one of kRefusalCodes
  std::string reason;  // human sentence naming the offending value
};

// Every refusal code, one meaning each across all contracts (docs/contracts.md, "Refusal codes").
// validate() checks them in this order, so a request with several faults gets the first.
// The conformance test (tests/contract/conformance_test.cpp) holds every contract to this list.
inline constexpr const char* kRefusalCodes[] = {
    "dtype_unsupported",     // the dtype is outside the contract
    "dtype_not_claimed",     // the contract has it; the candidate does not claim it
    "missing_tensor",        // a tensor of the contract is absent from the request
    "missing_dim",           // a dim of the contract is absent
    "empty",                 // a dim below 1
    "dim_too_large",         // one dim over the contract's per-dim limit
    "too_large",             // over the contract's own size limit
    "length_mismatch",       // a tensor's length differs from what the dims (or the tensor it must equal) give
    "shape_mismatch",        // the same, in a contract that declares it so (gemm: its tensors all differ in shape)
    "constraint",            // a domain constraint of the contract is false (declared contracts: cols % 2 == 0, ...)
    "exceeds_claim",         // over the candidate's claimed max_n
    "transposed",            // a transposed operand the contract does not cover
    "non_contiguous",        // a stride other than the contract's layout
    "negative_offset",       // a start offset below 0
    "misaligned",            // the start breaks the candidate's claimed alignment
    "aliasing_not_claimed",  // the contract allows in-place; the candidate does not claim it
    "aliasing_unsupported",  // the contract has no in-place form
};

inline constexpr std::int64_t kUnlimited = std::numeric_limits<std::int64_t>::max();

struct DimSpec {
  std::string name{};
  // The contract's per-dim limit (dim_too_large above it). Every dim is at least 1 (empty below).
  std::int64_t max = kUnlimited;
  // Requests that give tensor lengths only (1-D contracts): an absent dim is this tensor's length.
  // Empty: the dim must be in the request (missing_dim).
  std::string from_length_of{};
  // A dim the contract fixes (a declared constant axis, e.g. a one-element scale's): its one value
  // bounds the claimed range; another value is the contract's constraint to refuse. 0: not fixed.
  std::int64_t fixed = 0;
};

// The contract's own limit on a product of dims (too_large above it): {"rows","cols"} <= 2^40, or
// one dim ({"m"} <= 16384) where the contract calls that a size limit rather than a dim's range.
struct SizeLimit {
  std::vector<std::string> dims{};
  std::int64_t max = kUnlimited;
};

enum class Layout {
  contiguous,  // stride 1
  row_major,   // 2-D, stride 1; its column-major form (stride = its row count > 1) is refused as transposed
  // 2-D rows of TensorSpec::row_length elements, one every shape[1] elements (the row stride, a dim
  // the request gives): shape is the storage {rows, stride}, the view {rows, row_length}. The gap
  // after each row's last element belongs to nobody: a stride below the row length is refused as
  // non_contiguous, one breaking the contract's stride_multiple or (past the first row) the
  // candidate's alignment as misaligned.
  strided,
};

struct TensorSpec {
  std::string name{};
  Role role = Role::input;
  std::vector<std::string> shape{};  // dim names, outermost first: the tensor has their product of elements
  std::string description{};
  std::optional<DType> dtype{};       // nullopt: the request's dtype; set: always this one (accumulators, indices)
  Layout layout = Layout::contiguous;
  // The start alignment the contract guarantees for this tensor [bytes] (0: none beyond the
  // element): a request breaking it is refused as misaligned whatever the candidate claims, and a
  // kernel may rely on it (declared contracts' `alignment`).
  std::int64_t alignment = 0;
  // Layout::strided: the dim holding the row length (the view's columns), and the multiple of
  // elements the contract guarantees every row stride is (1: any stride >= the row length).
  std::string row_length{};
  std::int64_t stride_multiple = 1;
};

// The output that may alias an input (Request::in_place), if the candidate claims in_place.
struct InPlace {
  std::string output{}, input{};
};

// The quantity the candidate's claimed Supports::max_n bounds (exceeds_claim above it).
struct ClaimScope {
  std::vector<std::string> dims{};  // their product (e.g. {"rows","cols"}); empty: every tensor's element count
};

struct Domain {
  std::vector<DimSpec> dims{};
  std::vector<TensorSpec> tensors{};
  std::vector<DType> dtypes{};
  std::string dtype_note{};           // what else holds for dtypes ("a, b and c share the dtype")
  std::vector<SizeLimit> limits{};
  ClaimScope claim{};
  std::optional<InPlace> in_place{};  // nullopt: no in-place form (aliasing_unsupported)
  std::string no_in_place_reason{};   // why not, appended to that refusal
  // The candidate's min_alignment_bytes applies to every tensor's start (offset_elements times the
  // element size); this says what else a kernel must know about alignment.
  std::string alignment_note{};
  // The code for a tensor whose length does not follow from the dims: length_mismatch, or
  // shape_mismatch for contracts that call it so.
  std::string mismatch_code = "length_mismatch";
  // Per-dtype rows (declared contracts): the dtype of each tensor when the request's dtype is the
  // row's key; tensors absent from a row take the TensorSpec's dtype, else the request's.
  std::map<DType, std::map<std::string, DType>> dtype_rows{};
  // Domain constraints over the dims (declared contracts): the reason the first false one gives, ""
  // when all hold; refused as "constraint" after the length checks. example_dims: a request inside
  // every constraint (the refusal examples start from it); constraint_example: dims outside one.
  std::function<std::string(const Dims&)> constraint{};
  std::optional<Dims> example_dims{}, constraint_example{};

  const DimSpec* dim(std::string_view name) const;        // nullptr when absent
  const TensorSpec* tensor(std::string_view name) const;  // nullptr when absent
};

// ---- Derived from a Domain (src/contract/domain.cpp) ------------------------------------------

// What is inconsistent in a declaration (a shape naming an undeclared dim, an in-place pair of
// different shapes, ...), one sentence each; empty when it is sound. The conformance test holds
// every registered contract to it.
std::vector<std::string> declaration_problems(const Domain& d);

// Elements of a tensor for the given dims (saturating at kUnlimited); throws Error(internal) for a
// tensor or dim the domain does not have.
std::int64_t tensor_elements(const Domain& d, const std::string& tensor, const Dims& dims);
// The tensor's dtype when the request's dtype is t.
DType tensor_dtype(const Domain& d, const std::string& tensor, DType t);
// The quantity Supports::max_n bounds for these dims (the largest tensor when the scope is every tensor).
std::int64_t claim_quantity(const Domain& d, const Dims& dims);
// A request for dims (every tensor's length from the dims, contiguous).
Request make_request(const Domain& d, DType t, const Dims& dims, std::int64_t offset_elements = 0);

// The checks of kRefusalCodes, in that order; `contract` names the contract in reasons.
std::optional<Refusal> check_request(const Domain& d, std::string_view contract, const Request& req, const Supports& cand);
// The codes that can refuse a request of this domain (from the declaration alone).
std::vector<std::string> refusal_codes(const Domain& d);

// A request that must be refused with `code`. Without claims: whatever the candidate claims, as
// long as it claims the request's dtype and sizes up to the default max_n. With claims: under those
// claims, and accepted under widest_claims() (the claim-dependent codes dtype_not_claimed,
// exceeds_claim, misaligned and aliasing_not_claimed).
struct RefusalExample {
  Request request;
  std::string code;
  std::optional<Supports> claims;
};
// At least one example per code of refusal_codes(d).
std::vector<RefusalExample> refusal_examples(const Domain& d);

// What a candidate claiming everything this domain allows claims: every dtype, any size, element
// alignment, in place where the domain has it.
Supports widest_claims(const Domain& d);

json domain_json(const Domain& d);

// The largest tensor a candidate's claims admit: over every request validate() would accept under
// `cand`, the largest element count of one tensor, the largest element index (count - 1) and byte
// extent (count times the largest claimed element size). An upper bound computed from the dims'
// limits, the size limits and the claim; exact when each limit's dims are a part of the tensor's
// shape (every built-in contract). Cases past 2^31 elements are needed exactly when it says so.
struct ClaimedRange {
  std::map<std::string, std::int64_t> tensor_elements;  // per tensor; 0 when no claimed dtype is in the domain
  std::string tensor;                                   // the tensor with the most elements (the first of equals)
  std::int64_t max_elements = 0;
  std::int64_t max_index = -1;                          // max_elements - 1
  std::int64_t max_bytes = 0;                           // saturating at kUnlimited
  bool past_int32() const { return max_index > std::numeric_limits<std::int32_t>::max(); }
};
ClaimedRange claimed_range(const Domain& d, const Supports& cand);

}  // namespace kqual::contract
