#pragma once
// The PyTorch baselines section of a qualify page (html_qualify.cpp calls it; bench/torch_baseline.hpp).
#include <string>

#include "kqual/core/json.hpp"

namespace kqual::report {

// "" when the results hold no "torch_baselines" block (timing did not run); else a <section> with the
// phase's status, eager / compiled / custom per shape with the fastest baseline and the candidate's
// verdict against it, and torch.compile's compile time per shape (a startup cost).
std::string torch_baselines_html(const json& results);

}  // namespace kqual::report
