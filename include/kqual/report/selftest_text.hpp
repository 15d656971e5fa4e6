#pragma once
// kqual selftest's terminal text, rendered from its typed result (the CLI prints it; --json prints the
// document instead).
#include <string>

#include "kqual/report/results.hpp"

namespace kqual::report {

// Per contract: the known-broken candidates rejected (for their stated reason) and the good ones
// accepted, a row per candidate with its outcome per seed and first failure; then per class of defect,
// and the count of checks and unexpected outcomes. `lanes`: the worker sessions it ran in.
std::string render_selftest_text(const SelftestResult& r, int lanes);

}  // namespace kqual::report
