#pragma once
// Shared by the compare suites: the kqual binary ($KQUAL_EXE, else next to the test binary, else
// the build-time path). TempDir is test_util.hpp's.
#include <cstdlib>
#include <filesystem>
#include <string>

#include "test_util.hpp"

namespace kqual::test {

inline std::filesystem::path compare_kqual() {
  if (const char* e = std::getenv("KQUAL_EXE"); e && *e) return e;
  if (auto p = kqual_exe(); std::filesystem::exists(p)) return p;
  return KQUAL_EXE;
}

}  // namespace kqual::test
