#pragma once
// Shared by the scale-out suites of kqual screen (screen_lanes_test.cpp, screen_shard_test.cpp): the
// message of an expected Error and a substring check, for assertions on what a refusal names.
#include <string>

#include "kqual/core/error.hpp"

namespace kqual::test::scaleout {

// The message of the Error that f throws ("" when it throws none).
template <class F>
std::string error_of(F f, ErrorKind* kind = nullptr) {
  try {
    f();
  } catch (const Error& e) {
    if (kind) *kind = e.kind();
    return e.what();
  }
  return "";
}

inline bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace kqual::test::scaleout
