#pragma once
// Small text helpers shared by the summaries kqual prints and writes.
#include <cstddef>
#include <string>

namespace kqual {

// The first line of `s`, cut at `max` characters ("..." marks the cut).
std::string first_line(const std::string& s, std::size_t max = 300);

}  // namespace kqual
