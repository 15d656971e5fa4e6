#pragma once
// An operation contract: tensors and dims, domain, numerical policy, trusted reference, case
// generator and refusals. Contracts are pure CPU code: references never live where a candidate
// kernel could reach them (they are computed and compared in the coordinating process).
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kqual/contract/dtype.hpp"
#include "kqual/core/json.hpp"

namespace kqual::contract {

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
  bool supports(DType t) const;
};

// A problem as a user (or the case generator) asks for it, before anything runs.
struct Request {
  DType dtype = DType::f32;
  std::map<std::string, std::int64_t> lengths;  // per tensor, in elements
  std::map<std::string, std::int64_t> strides;  // per tensor, in elements (1 = contiguous)
  std::int64_t offset_elements = 0;            // start offset of every tensor view
  bool in_place = false;                        // output aliases the first input
};

// Refusal: why a request is outside the contract or the candidate's claimed domain.
struct Refusal {
  std::string code;    // stable identifier, e.g. "dtype_unsupported"
  std::string reason;  // human sentence naming the offending value
};

struct CaseSpec {
  std::string id;         // e.g. "f32/n=257/specials/off=0"
  std::string family;     // value family
  DType dtype = DType::f32;
  std::int64_t n = 0;
  std::int64_t offset_elements = 0;
  std::uint64_t seed = 0;
};

struct Tensor {
  std::string name;
  DType dtype = DType::f32;
  std::int64_t elements = 0;
  std::vector<std::uint8_t> bytes;
};

struct CaseData {
  CaseSpec spec;
  std::map<std::string, std::int64_t> dims;
  std::vector<Tensor> inputs;
};

// One mismatch class, in order of precedence when several apply.
struct Comparison {
  bool ok = true;
  std::string code;    // "", "unwritten_output", "nan_policy", "wrong_result"
  std::string detail;  // first offending index with expected and actual values
  std::int64_t mismatches = 0;
};

class Contract {
 public:
  virtual ~Contract() = default;
  virtual std::string name() const = 0;
  virtual std::string summary() const = 0;            // one line: the operation
  virtual std::vector<TensorDecl> tensors() const = 0;
  virtual std::vector<std::string> dims() const = 0;
  virtual std::vector<DType> dtypes() const = 0;
  virtual std::string numerical_policy() const = 0;   // text for the memo
  virtual json domain_json() const = 0;

  // Refuse before launch; nullopt = accepted.
  virtual std::optional<Refusal> validate(const Request& req, const Supports& cand) const = 0;
  // Requests that must be refused, with the expected refusal code (tests and memo).
  virtual std::vector<std::pair<Request, std::string>> unsupported_examples() const = 0;

  virtual std::vector<CaseSpec> correctness_cases(const Supports& cand, std::uint64_t seed, bool include_large) const = 0;
  virtual std::vector<std::int64_t> benchmark_sizes() const = 0;
  virtual CaseData make_case(const CaseSpec& spec) const = 0;
  // Expected outputs, computed in higher precision on the CPU, rounded as the policy states.
  virtual std::vector<Tensor> reference(const CaseData& data) const = 0;
  // Compare one output tensor; poison_byte is the pattern the harness filled it with.
  virtual Comparison compare(const Tensor& expected, const std::uint8_t* actual, std::uint8_t poison_byte) const = 0;
  // Minimum bytes any implementation must move (each input read once, each output written once).
  virtual double min_bytes(const std::map<std::string, std::int64_t>& dims, DType t) const = 0;
  virtual double flops(const std::map<std::string, std::int64_t>& dims, DType t) const = 0;
};

// Built-in contracts by name; throws Error(input) listing the known names.
const Contract& find_contract(const std::string& name);
std::vector<std::string> contract_names();

}  // namespace kqual::contract
