#pragma once
// The fixture the manifest suites share (build, library): a scratch candidate folder, manifests
// parsed as its kqual.toml, the input error one raises, and edits of a known-good manifest.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "kqual/build/manifest.hpp"
#include "kqual/core/error.hpp"
#include "kqual/core/files.hpp"

namespace kqual::test {

// `s` with the first `a` replaced by `b`; an `a` that is not there fails the test (the edit would
// test nothing).
inline std::string replace_first(std::string s, const std::string& a, const std::string& b) {
  auto p = s.find(a);
  EXPECT_NE(p, std::string::npos) << a;
  return p == std::string::npos ? s : s.replace(p, a.size(), b);
}

class ManifestFixture : public ::testing::Test {
 protected:
  explicit ManifestFixture(const std::string& scratch_prefix) : dir(scratch_prefix) {}

  ScratchDir dir;

  std::filesystem::path manifest_path() const { return dir.path() / "kqual.toml"; }
  build::Manifest parse(const std::string& toml) const { return build::parse_manifest(toml, manifest_path()); }

  // The message of the input error that parsing `toml` raises, or "no error".
  std::string error_of(const std::string& toml) const {
    try {
      parse(toml);
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::input);
      return e.what();
    }
    return "no error";
  }

  // Parsing `toml` raises an input error whose message names every one of `parts`.
  void expect_error_naming(const std::string& toml, const std::vector<std::string>& parts) const {
    const std::string e = error_of(toml);
    for (const std::string& part : parts) EXPECT_NE(e.find(part), std::string::npos) << part << " not in: " << e;
  }

  static std::string replace(const std::string& s, const std::string& a, const std::string& b) {
    return replace_first(s, a, b);
  }
};

}  // namespace kqual::test
