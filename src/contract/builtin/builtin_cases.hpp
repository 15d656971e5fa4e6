#pragma once
// Internal to src/contract/builtin/: what the built-in contracts do alike. What they are, given as
// data when they are made (name, summary, domain and, where one serves every dtype, the run-to-run
// rule); when they make cases, a case's id and seed from its shape and value family, the family
// check, inputs packed from f32 values, empty outputs and data drawn in seeded chunks (the same
// whatever the thread count); and the two run-to-run rules: bitwise agreement required, or any
// summation order admitted. Not a public header.
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "kqual/contract/compare.hpp"
#include "kqual/contract/contract.hpp"
#include "kqual/contract/random.hpp"
#include "kqual/core/error.hpp"
#include "kqual/core/narrow_float.hpp"

namespace kqual::contract::builtin {

// What a built-in contract is, given once when it is made: its name, its one-line summary and its
// domain (the three answers every contract gives as data; the rest is its own code).
class DescribedContract : public Contract {
 public:
  DescribedContract(std::string name, std::string summary, Domain domain)
      : name_(std::move(name)), summary_(std::move(summary)), domain_(std::move(domain)) {}
  std::string name() const final { return name_; }
  std::string summary() const final { return summary_; }
  const Domain& domain() const final { return domain_; }

 private:
  std::string name_, summary_;
  Domain domain_;
};

// A described contract whose run-to-run rule is the same in every dtype: the rule is given when it is
// made, like the rest (a contract whose rule depends on the dtype says so in its own reproducibility()).
class FixedRuleContract : public DescribedContract {
 public:
  FixedRuleContract(std::string name, std::string summary, Domain domain, Reproducibility rule)
      : DescribedContract(std::move(name), std::move(summary), std::move(domain)), rule_(std::move(rule)) {}
  Reproducibility reproducibility(DType) const final { return rule_; }

 private:
  Reproducibility rule_;
};

// A one-element start offset keeps the alignment the candidate claims (so its misaligned-access
// cases may be run).
inline bool admits_element_offset(const Supports& cand, DType t) {
  return std::int64_t(dtype_size(t)) % cand.min_alignment_bytes == 0;
}

// A case of one value family over n contiguous elements: id "<dtype>/n=<n>/<family>[/offset=1]".
inline CaseSpec vector_family_case(DType t, std::int64_t n, const std::string& family, std::int64_t offset, std::uint64_t seed) {
  CaseSpec c;
  c.dtype = t;
  c.dims = {{"n", n}};
  c.family = family;
  c.offset_elements = offset;
  c.seed = mix_seed(seed, std::uint64_t(n) * 131 + std::hash<std::string>{}(family) + std::uint64_t(t) * 7 + std::uint64_t(offset));
  c.id = fmt::format("{}/n={}/{}{}", to_string(t), n, family, offset ? "/offset=1" : "");
  return c;
}

// A case of one value family over a rows x cols matrix: id "<dtype>/rows=R,cols=C/<family>[/offset=1]".
// cols_seed_weight is what cols is multiplied by in the case's seed: 31 for softmax and transpose,
// 131 for reduce_sum, the seeds their cases have always had.
inline CaseSpec matrix_family_case(DType t, std::int64_t rows, std::int64_t cols, const std::string& family, std::int64_t offset,
                                   std::uint64_t seed, std::uint64_t cols_seed_weight) {
  CaseSpec c;
  c.dtype = t;
  c.dims = {{"rows", rows}, {"cols", cols}};
  c.family = family;
  c.offset_elements = offset;
  c.seed = mix_seed(seed, std::uint64_t(rows) * 1000003 + std::uint64_t(cols) * cols_seed_weight + std::hash<std::string>{}(family) +
                              std::uint64_t(t) * 7 + std::uint64_t(offset));
  c.id = fmt::format("{}/rows={},cols={}/{}{}", to_string(t), rows, cols, family, offset ? "/offset=1" : "");
  return c;
}

// Error(internal) unless the case's family is one of `families` ("unknown <what> '<family>'").
inline void require_known_family(const CaseSpec& spec, std::initializer_list<const char*> families,
                                 const char* what = "value family") {
  for (const char* f : families)
    if (spec.family == f) return;
  throw_error(ErrorKind::internal, fmt::format("unknown {} '{}'", what, spec.family));
}

// An input tensor from f32 values: f32 as they are, bf16 and f16 rounded to nearest even (f16 past
// 65504 becomes Inf, as __float2half_rn does): the dtypes of the contracts that draw their data as floats.
inline Tensor float_values_tensor(const std::string& name, DType t, const std::vector<float>& v) {
  if (t != DType::f32 && t != DType::bf16 && t != DType::f16)
    throw_error(ErrorKind::internal, fmt::format("input '{}': no float values for dtype {}", name, to_string(t)));
  Tensor x;
  x.name = name;
  x.dtype = t;
  x.elements = std::int64_t(v.size());
  x.bytes.resize(v.size() * dtype_size(t));
  if (t == DType::f32) {
    std::memcpy(x.bytes.data(), v.data(), v.size() * 4);
  } else {
    auto* p = reinterpret_cast<std::uint16_t*>(x.bytes.data());
    for (std::size_t i = 0; i < v.size(); ++i) p[i] = t == DType::bf16 ? f32_to_bf16_rne(v[i]) : f32_to_f16_rn(v[i]);
  }
  return x;
}

// The cases past 2^31 elements are generated on the device (contract/generated.hpp). Its generator
// makes f16 values too, but they serve timed inputs only: no f16 case is asked for there yet (the
// f16 error models have not been checked at those sizes on a GPU). Each policy that admits f16 says so
// in these words.
inline constexpr const char* kNoGeneratedF16 =
    "Cases not run: f16 shapes past 2^31 elements (those cases' inputs are generated on the device, and "
    "kqual does not yet ask for them in f16; f16's generated values serve timing only), so an f16 claim "
    "reaching there is checked only by the cases below it";

inline std::vector<CaseSpec> without_f16(std::vector<CaseSpec> cases) {
  std::erase_if(cases, [](const CaseSpec& c) { return c.dtype == DType::f16; });
  return cases;
}

// A tensor of `elements` elements, its bytes zeroed, to be filled; with_bound: also a reference value
// and an error bound per element (an expected output under an error model).
inline Tensor zeroed_tensor(const std::string& name, DType t, std::int64_t elements, bool with_bound = false) {
  Tensor y;
  y.name = name;
  y.dtype = t;
  y.elements = elements;
  y.bytes.resize(std::size_t(elements) * dtype_size(t));
  if (with_bound) {
    y.ref.resize(std::size_t(elements));
    y.bound.resize(std::size_t(elements));
  }
  return y;
}

// body(i, rng) for i in [0, n), in chunks of 2^16 elements in parallel; chunk c draws from its own
// generator seeded by (seed, first_stream + c), so the data is the same whatever the thread count.
template <class Body>
void for_each_in_seeded_chunks(std::size_t n, std::uint64_t seed, Body&& body, std::uint64_t first_stream = 0) {
  constexpr std::size_t kChunk = std::size_t(1) << 16;
  const std::size_t chunks = (n + kChunk - 1) / kChunk;
  parallel_for(chunks, [&](std::size_t c) {
    Rng rng(mix_seed(seed, first_stream + c));
    for (std::size_t i = c * kChunk; i < std::min(n, (c + 1) * kChunk); ++i) body(i, rng);
  });
}

// The rule of a contract whose output has one right answer: two runs must agree bitwise (`reason`:
// why; `opt_out`: what a user who needs otherwise can do, if anything).
inline Reproducibility bitwise_required(std::string reason, std::string opt_out) {
  return {.required = true, .reason = std::move(reason), .opt_out = std::move(opt_out)};
}

// The rule of a contract whose error bound admits any summation order: two runs need not agree
// bitwise (each is held to the bound, and so is their difference) unless the candidate claims so.
inline Reproducibility any_order_admitted(std::string reason) {
  return {.required = false,
          .reason = std::move(reason),
          .opt_out = "claim [supports] deterministic = true in the candidate's manifest to be held to bitwise "
                     "reproducibility"};
}

}  // namespace kqual::contract::builtin
