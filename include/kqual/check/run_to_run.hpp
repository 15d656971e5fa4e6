#pragma once
// Two runs on the same inputs: the rule a candidate is held to (its contract's, tightened by its
// manifest's claim) and what the two runs' outputs measured against it, element by element, in
// units in the last place and absolutely, against the contract's error bound for each output (the
// tolerance the reference comparison uses). docs/contracts.md, "Run-to-run reproducibility".
#include <cstdint>
#include <string>
#include <vector>

#include "kqual/contract/contract.hpp"
#include "kqual/core/json.hpp"

namespace kqual::check {

struct RunToRunPolicy {
  bool required = true;    // two runs must give the same bytes
  std::string reason;      // why (or why not)
  std::string opt_out;     // how to get the other rule, or why there is none
  std::string rule_from;   // "contract", or "manifest" when [supports] deterministic = true tightened it
};

// The contract's rule for dtype t, tightened by the manifest's [supports] deterministic = true.
// (A manifest's false under a contract that requires reproducibility never gets here: the manifest
// is refused when it is read.)
RunToRunPolicy run_to_run_policy(const contract::Contract& c, const contract::Supports& s, DType t);

// How far apart element i of a and of b are, in units in the last place of dtype t: the distance of
// their bit patterns in the order of the values (-0 and +0 are 0 apart, the largest finite value and
// infinity 1); integers: |a - b|. Two NaN: 0; one NaN: infinity.
double ulp_distance(DType t, const std::uint8_t* a, const std::uint8_t* b, std::size_t i);

// The difference between two runs of one output.
struct OutputDifference {
  std::string name;
  DType dtype = DType::f32;
  std::int64_t elements = 0;       // compared (a strided output's rows only)
  std::int64_t differing = 0;      // elements whose bits differ
  std::int64_t beyond_bound = 0;   // elements with |a - b| over the element's bound (or one NaN)
  double max_ulps = 0;             // over every element
  double max_abs = 0;              // |a - b|, over every element
  double bound = 0;                // the bound at the worst element (largest |a - b| / bound); 0: exact
  double ratio = 0;                // |a - b| / bound there; infinity past a zero bound
  std::int64_t worst_index = -1;   // storage element; -1: no difference
  bool within_bound() const { return beyond_bound == 0; }
  // Folds in another part of the same output (windows of a large case), `later`'s worst_index
  // already in this output's element numbering.
  void merge(const OutputDifference& later);
  json to_json() const;
};

// The two runs' bytes of `expected` (in its storage layout, as the worker wrote them) compared
// element by element against expected.bound (empty: exact, bound 0). Padding between a strided
// output's rows holds each run's own poison and is skipped.
OutputDifference measure_difference(const contract::Tensor& expected, const std::uint8_t* a, const std::uint8_t* b);

// Whether two runs' bytes of `expected` are the same (a strided output's rows only).
bool same_bytes(const contract::Tensor& expected, const std::uint8_t* a, const std::uint8_t* b);

// What two runs of one case showed.
struct RunToRun {
  RunToRunPolicy policy;
  std::vector<OutputDifference> outputs;  // the outputs whose two runs differ
  std::string runs;                       // which runs were compared, for the text ("runs 1 and 2")

  bool differs() const { return !outputs.empty(); }
  bool within_bound() const;
  // Rejected as nondeterministic only where reproducibility is required. Elsewhere each run has been
  // judged against the reference on its own, and two runs each within the bound of the reference
  // may differ from each other by up to twice it: the difference is measured and reported (its
  // ratio to the bound included), never failed against the single bound.
  bool rejects() const { return differs() && policy.required; }
  // "max 3 ulps / 2.4e-07 abs between two runs (output 'y', 2 of 1000 elements differ; worst at
  // element 8: 2.4e-07, bound 1.2e-05)".
  std::string figures() const;
  std::string rejection() const;  // the detail of a nondeterministic rejection (required)
  std::string note() const;       // the note of a case accepted with a difference between its runs
  // {"required", "reason", "opt_out", "rule_from", "within_bound", "max_ulps", "max_abs", "bound",
  //  "ratio", "outputs": [OutputDifference::to_json()]}; an infinite ratio is null.
  json to_json() const;
};

}  // namespace kqual::check
