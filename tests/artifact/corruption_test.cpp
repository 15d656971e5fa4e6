// Untrusted input: every truncation point of small fixtures and seeded random byte flips must give
// kqual::Error (naming the file) or a valid result — never a crash, hang or foreign exception.
// scripts/test-artifact-hardening runs this suite under ASan/UBSan.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include "fixture_util.hpp"
#include "kqual/artifact/artifact.hpp"
#include "kqual/core/error.hpp"

namespace kqual::artifact {
namespace {

enum class Outcome { valid, error };

// Parses and, for valid results, also exercises selection and JSON (they walk the parsed data).
Outcome parse_once(const std::vector<std::uint8_t>& b, const std::string& name) {
  try {
    const Artifact a = parse_artifact_bytes(b, name);
    (void)select_for_arch(a, Arch::parse("sm_90"));
    (void)to_json(a).dump();
    return Outcome::valid;
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_EQ(e.kind(), ErrorKind::input) << what;
    EXPECT_EQ(what.rfind(name, 0), 0u) << "message does not name the file: " << what;
    return Outcome::error;
  }
  // any other exception escapes and fails the test
}

class Truncation : public ::testing::TestWithParam<const char*> {};

TEST_P(Truncation, EveryStrictPrefixIsAnError) {
  const auto full = test::read_bytes(test::fixture(GetParam()));
  ASSERT_FALSE(full.empty());
  ASSERT_EQ(parse_once(full, GetParam()), Outcome::valid);
  // Fatbins declare their payload size and cubins keep the section headers at the end, so no
  // strict prefix can be complete: each must be rejected.
  for (std::size_t n = 0; n < full.size(); ++n) {
    std::vector<std::uint8_t> cut(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(n));
    ASSERT_EQ(parse_once(cut, GetParam()), Outcome::error) << "prefix of " << n << " bytes accepted";
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, Truncation,
                         ::testing::Values("ptx_compute90.fatbin", "lz4.fatbin", "zstd.fatbin", "sass_sm90.fatbin",
                                           "k_sm90.cubin"),
                         [](const auto& p) {
                           std::string s = p.param;
                           for (auto& c : s) if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           return s;
                         });

class ByteFlips : public ::testing::TestWithParam<const char*> {};

TEST_P(ByteFlips, ErrorOrValidNeverCrash) {
  const auto full = test::read_bytes(test::fixture(GetParam()));
  ASSERT_FALSE(full.empty());
  std::mt19937_64 rng(0x6b7175616cull);  // fixed seed: failures reproduce
  int errors = 0, valid = 0;
  for (int round = 0; round < 1500; ++round) {
    auto b = full;
    const int flips = 1 + static_cast<int>(rng() % 8);
    // Half the rounds hit the headers (first 256 bytes), where offsets and sizes live.
    const std::size_t span = (round % 2 == 0) ? std::min<std::size_t>(256, b.size()) : b.size();
    for (int i = 0; i < flips; ++i) b[rng() % span] ^= static_cast<std::uint8_t>(1 + rng() % 255);
    (parse_once(b, GetParam()) == Outcome::error ? errors : valid)++;
  }
  EXPECT_GT(errors, 0) << "no flip was detected: the corruption test has no power";
  RecordProperty("errors", errors);
  RecordProperty("valid", valid);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, ByteFlips,
                         ::testing::Values("ptx_compute90.fatbin", "lz4.fatbin", "zstd.fatbin", "multi.fatbin",
                                           "k_sm90.cubin", "k_compute90.ptx"),
                         [](const auto& p) {
                           std::string s = p.param;
                           for (auto& c : s) if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           return s;
                         });

// Hostile sizes must be refused before anything large is allocated.
// Regression (found by the fuzzer in CI): a zero byte after a container followed by a non-zero
// byte within the 16-byte alignment gap made the gap scan loop forever.
TEST(Hostile, ZeroGapFollowedByGarbageIsAnErrorNotAHang) {
  std::vector<std::uint8_t> b(16 + 16, 0);
  const std::uint32_t magic = 0xBA55ED50;
  std::memcpy(b.data(), &magic, 4);
  b[4] = 1;   // version
  b[6] = 16;  // header size; payload size (bytes 8..15) stays 0
  b[17] = 0x42;
  try {
    parse_artifact_bytes(b, "gap.fatbin");
    FAIL() << "garbage after a container was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("gap.fatbin"), std::string::npos) << e.what();
  }
}

TEST(Hostile, FuzzerRegressionInputsTerminate) {
  const std::filesystem::path dir = std::filesystem::path(KQUAL_SOURCE_DIR) / "tests/artifact/regressions";
  int n = 0;
  for (const auto& f : std::filesystem::directory_iterator(dir)) {
    std::ifstream in(f.path(), std::ios::binary);
    std::vector<std::uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    try {
      parse_artifact_bytes(bytes, f.path().filename().string());
    } catch (const Error&) {
    }
    ++n;
  }
  EXPECT_GE(n, 1);
}

TEST(Hostile, HugeDeclaredSizesAreRefused) {
  auto b = test::read_bytes(test::fixture("ptx_compute90.fatbin"));
  ASSERT_GE(b.size(), 80u);
  auto set_u64 = [&](std::size_t off, std::uint64_t v) { for (std::size_t i = 0; i < 8; ++i) b[off + i] = static_cast<std::uint8_t>(v >> (8 * i)); };
  auto orig = b;
  set_u64(16 + 56, 1ull << 40);  // decompressed size of entry 0
  EXPECT_EQ(parse_once(b, "huge"), Outcome::error);
  b = orig;
  set_u64(8, ~0ull);  // container payload size
  EXPECT_EQ(parse_once(b, "huge"), Outcome::error);
  b = orig;
  set_u64(16 + 8, ~0ull - 100);  // entry payload size (overflow if added naively)
  EXPECT_EQ(parse_once(b, "huge"), Outcome::error);
}

}  // namespace
}  // namespace kqual::artifact
