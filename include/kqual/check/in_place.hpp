#pragma once
// The in-place check: a candidate whose manifest claims `in_place` runs each host-made case a second
// time with every output the contract lets alias an input placed on that input (the kernel gets one
// pointer for both). The contract's declaration decides the pairs (Domain::in_place: built-in
// contracts in their domain, declared ones by an output's `aliases`); the case's inputs are the
// host copy the reference was computed on, uploaded again before every run. The in-place outputs
// must match the reference and, where the contract requires bitwise reproducibility, the
// separate-buffer run byte for byte; otherwise the case fails `aliasing_wrong`, naming the output,
// the element, what it held and what was expected. docs/contracts.md, "In place".
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "kqual/check/evaluate.hpp"
#include "kqual/check/run_to_run.hpp"
#include "kqual/contract/contract.hpp"
#include "kqual/worker/protocol.hpp"

namespace kqual::check {

// One output run on one input.
struct AliasPair {
  std::string output, input;
  bool operator==(const AliasPair&) const = default;
};

// Which outputs go on which inputs for a candidate, or why none does.
struct InPlacePlan {
  std::vector<AliasPair> pairs;  // empty: no case runs in place
  std::string not_exercised;     // why none ("" when pairs is not empty)
};
// From the contract's declaration and the candidate's claim: the contract's in-place pairs when the
// manifest claims in_place; none (with the reason) when it does not claim it or the contract has no
// in-place form.
InPlacePlan plan_in_place(const contract::Contract& c, const contract::Supports& cand);

// The pairs of `plan` that one case can run: the output and the input hold the same bytes there
// (a dtype row giving them different dtypes would not).
std::vector<AliasPair> case_pairs(const InPlacePlan& plan, const std::vector<contract::Tensor>& inputs,
                                  const std::vector<contract::Tensor>& expected);

// "y on x, r separate" style words for a case's pairs ("y on x").
std::string describe_pairs(const std::vector<AliasPair>& pairs);

// The in-place request made from a case's separate-buffer request: every aliased output becomes a
// view of its input (worker::Buffer::aliases) and has no memory, guards or poison of its own; every
// input is uploaded again from the host copy (its file) before each run; every placement is guarded
// (the aliased output lies inside its input's guard regions), shared memory scribbled and the other
// outputs and scratch poisoned as in the separate run; every output comes back to a file of its own
// in `dir` (<name>.inplace<k>), so the separate run's files stay for the comparison.
worker::RunRequest in_place_request(const worker::RunRequest& separate, const std::vector<AliasPair>& pairs,
                                    const std::filesystem::path& dir);

// The in-place run judged: true when right. Otherwise res carries the code (a fault, a write past a
// buffer or another input changed keep their own codes, the detail saying it was the in-place run)
// or aliasing_wrong for a wrong output: its detail names the pair, the run, the element (index),
// what it held and what was expected (the reference's element; the separate-buffer run's where only
// that differs), and res.failing_elements lists the first ones with "in_place" set. `separate` is the
// request whose files hold the separate-buffer outputs the case passed with.
bool judge_in_place(const contract::Contract& c, const RunToRunPolicy& policy, const worker::Answer<worker::RunReply>& r,
                    const worker::RunRequest& aliased, const worker::RunRequest& separate, const std::vector<AliasPair>& pairs,
                    const std::vector<contract::Tensor>& expected, CaseResult& res);

}  // namespace kqual::check
