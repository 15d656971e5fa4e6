#pragma once
// Which cases a PyTorch submission takes (src/bench/torch_submission_cases.cpp); past_limit_case is
// declared in kqual/bench/torch_submission.hpp.
#include <cstdint>
#include <string>
#include <vector>

#include "kqual/bench/torch_submission.hpp"
#include "kqual/contract/contract.hpp"

namespace kqual::bench {

// The elements of the case's largest tensor.
std::int64_t case_elements(const contract::Contract& c, const contract::CaseSpec& spec);

// The cases a submission takes at `dtypes`: within o.max_case_elements, one per (dtype, dims, family), the
// largest of each dtype grown past the limit; where none is within it, those of the smallest size (note
// says so, *skipped counts the rest); with o.only_dims, the contract's cases at those sizes, else its base
// case made at them, up to o.own_size_cap_elements.
std::vector<contract::CaseSpec> submission_cases(const contract::Contract& c, const std::vector<DType>& dtypes, const SubmissionCheckOptions& o,
                                                 int* skipped, std::string* note);

}  // namespace kqual::bench
