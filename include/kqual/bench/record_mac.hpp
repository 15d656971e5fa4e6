// The record's integrity code, shared by the recorder (kqual_record.cpp, loaded into the worker) and
// the reader in kqual (src/bench/activity_record.cpp): SipHash-2-4 (Aumasson and Bernstein, "SipHash: a
// fast short-input PRF", 2012) under a 128-bit key that the recorder reads from a file kqual wrote and
// deletes before the submission's code runs. Each line's code covers the previous line's code and the
// line's text, so a line written by anyone else, dropped or reordered breaks the chain from there on.
#pragma once

#include <cstddef>
#include <cstdint>

namespace kqual_record {

inline std::uint64_t rotl(std::uint64_t x, int b) { return (x << b) | (x >> (64 - b)); }

inline void sip_round(std::uint64_t& v0, std::uint64_t& v1, std::uint64_t& v2, std::uint64_t& v3) {
  v0 += v1; v1 = rotl(v1, 13); v1 ^= v0; v0 = rotl(v0, 32);
  v2 += v3; v3 = rotl(v3, 16); v3 ^= v2;
  v0 += v3; v3 = rotl(v3, 21); v3 ^= v0;
  v2 += v1; v1 = rotl(v1, 17); v1 ^= v2; v2 = rotl(v2, 32);
}

inline std::uint64_t load_le(const unsigned char* p, std::size_t n) {
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < n; ++i) v |= std::uint64_t(p[i]) << (8 * i);
  return v;
}

// SipHash-2-4 of (prev as 8 little-endian bytes, then data[0..n)).
inline std::uint64_t chained_mac(const std::uint64_t key[2], std::uint64_t prev, const char* data, std::size_t n) {
  std::uint64_t v0 = 0x736f6d6570736575ULL ^ key[0], v1 = 0x646f72616e646f6dULL ^ key[1];
  std::uint64_t v2 = 0x6c7967656e657261ULL ^ key[0], v3 = 0x7465646279746573ULL ^ key[1];
  auto absorb = [&](std::uint64_t m) {
    v3 ^= m;
    sip_round(v0, v1, v2, v3);
    sip_round(v0, v1, v2, v3);
    v0 ^= m;
  };
  absorb(prev);
  const auto* p = reinterpret_cast<const unsigned char*>(data);
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) absorb(load_le(p + i, 8));
  const std::size_t total = n + 8;
  absorb(load_le(p + i, n - i) | (std::uint64_t(total & 0xff) << 56));
  v2 ^= 0xff;
  for (int r = 0; r < 4; ++r) sip_round(v0, v1, v2, v3);
  return v0 ^ v1 ^ v2 ^ v3;
}

// SipHash-2-4 of a stream of bytes under the record's key, fed in pieces: the code the recorder writes
// for the device memory it read itself (its 'R' lines), so that kqual can tell whether the bytes a worker
// wrote to a file are the bytes that were in the GPU's memory. The first word is a tag, so these codes
// are never equal to a line's code.
class ContentMac {
 public:
  explicit ContentMac(const std::uint64_t key[2])
      : v0_(0x736f6d6570736575ULL ^ key[0]), v1_(0x646f72616e646f6dULL ^ key[1]), v2_(0x6c7967656e657261ULL ^ key[0]),
        v3_(0x7465646279746573ULL ^ key[1]) {
    absorb(0x6b7175616c6f7574ULL);  // "kqualout"
  }
  void update(const void* data, std::size_t n) {
    const auto* p = static_cast<const unsigned char*>(data);
    total_ += n;
    while (n > 0 && fill_ > 0 && fill_ < 8) {
      tail_[fill_++] = *p++;
      --n;
      if (fill_ == 8) {
        absorb(load_le(tail_, 8));
        fill_ = 0;
      }
    }
    for (; n >= 8; n -= 8, p += 8) absorb(load_le(p, 8));
    for (; n > 0; --n) tail_[fill_++] = *p++;
  }
  std::uint64_t final() {
    absorb(load_le(tail_, fill_) | (std::uint64_t((total_ + 8) & 0xff) << 56));
    v2_ ^= 0xff;
    for (int r = 0; r < 4; ++r) sip_round(v0_, v1_, v2_, v3_);
    return v0_ ^ v1_ ^ v2_ ^ v3_;
  }

 private:
  void absorb(std::uint64_t m) {
    v3_ ^= m;
    sip_round(v0_, v1_, v2_, v3_);
    sip_round(v0_, v1_, v2_, v3_);
    v0_ ^= m;
  }
  std::uint64_t v0_, v1_, v2_, v3_;
  unsigned char tail_[8] = {};
  std::size_t fill_ = 0;
  std::uint64_t total_ = 0;
};

}  // namespace kqual_record
