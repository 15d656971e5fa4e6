#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "kqual/core/sha256.hpp"

namespace kqual {
namespace {

// Vectors from FIPS 180-4 examples / NIST CSRC.
TEST(Sha256, EmptyString) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}
TEST(Sha256, Abc) {
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}
TEST(Sha256, TwoBlockMessage) {
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}
TEST(Sha256, MillionAsIncremental) {
  Sha256 h;
  std::string chunk(1000, 'a');
  for (int i = 0; i < 1000; ++i) h.update(chunk.data(), chunk.size());
  EXPECT_EQ(h.finish_hex(), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

}  // namespace
}  // namespace kqual

// The SHA-NI path and the portable one agree on every length around the block boundaries and on
// large inputs fed in odd-sized pieces; both give the FIPS 180-4 answers.
TEST(Sha256, HardwareAndPortablePathsAgree) {
  if (!kqual::detail::sha256_hardware_available()) GTEST_SKIP() << "this CPU has no SHA extensions";
  std::vector<std::uint8_t> data(200000);
  std::uint32_t x = 12345;
  for (auto& b : data) b = static_cast<std::uint8_t>((x = x * 1664525u + 1013904223u) >> 24);
  auto both = [&](std::size_t n, std::size_t piece) {
    std::string r[2];
    for (int portable = 0; portable < 2; ++portable) {
      kqual::detail::sha256_force_portable(portable == 1);
      kqual::Sha256 h;
      for (std::size_t off = 0; off < n; off += piece) h.update(data.data() + off, std::min(piece, n - off));
      r[portable] = h.finish_hex();
    }
    kqual::detail::sha256_force_portable(false);
    EXPECT_EQ(r[0], r[1]) << "length " << n << ", pieces of " << piece;
  };
  for (std::size_t n = 0; n <= 300; ++n) both(n, n == 0 ? 1 : n);
  for (std::size_t piece : {std::size_t(1), std::size_t(63), std::size_t(64), std::size_t(65), std::size_t(1000), std::size_t(200000)}) both(data.size(), piece);
  for (int portable = 0; portable < 2; ++portable) {
    kqual::detail::sha256_force_portable(portable == 1);
    EXPECT_EQ(kqual::sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    EXPECT_EQ(kqual::sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    EXPECT_EQ(kqual::sha256_hex(std::string(1000000, 'a')),
              "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  }
  kqual::detail::sha256_force_portable(false);
}
