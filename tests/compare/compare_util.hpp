#pragma once
// Shared by the compare suites: the kqual binary ($KQUAL_EXE, else next to the test binary, else
// the build-time path) and a private temporary directory.
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

struct TempDir {
  std::filesystem::path path;
  TempDir() {
    std::string t = (std::filesystem::temp_directory_path() / "kqual-compare-test-XXXXXX").string();
    path = mkdtemp(t.data());
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

}  // namespace kqual::test
