// SHA-256 of many messages, two at a time. With the x86 SHA extensions one message is bound by
// the latency of the round instruction (each round needs the previous one's state), so a core has
// room for a second, independent message: two lanes, each taking the next message when its own
// ends, hash ~1.3x the bytes per second of one (measured on the 2-core build machine). Used for an
// entry's image and its kernels' code (most of the hashing in a library: docs/artifact.md). The
// results equal kqual::sha256_hex's (tests/artifact/artifact_test.cpp, HashLanes); without the
// extensions, that function is used.
#include "hash_lanes.hpp"

#include <array>
#include <cstring>

#include "kqual/core/sha256.hpp"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace kqual::artifact::detail {

#if defined(__x86_64__)
namespace {

alignas(16) constexpr std::uint32_t kRound[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01,
    0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc,
    0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147,
    0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116, 0x1e376c08,
    0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208,
    0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

// One message's progress: its full blocks in place, then 1 or 2 padded tail blocks in `tail`.
struct Lane {
  std::size_t msg = 0;
  const std::uint8_t* next = nullptr;   // next block to hash
  std::size_t blocks = 0;               // left in the current segment
  bool in_tail = false;
  std::size_t tail_blocks = 0;
  alignas(16) std::uint8_t tail[128];
  std::uint32_t state[8];               // ABEF, CDGH (the SHA-NI layout) as two __m128i
};

constexpr std::uint32_t kInit[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                    0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};

__attribute__((target("sse4.1"))) void to_lanes(const std::uint32_t h[8], std::uint32_t out[8]) {
  __m128i tmp = _mm_loadu_si128(reinterpret_cast<const __m128i*>(&h[0]));
  __m128i s1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(&h[4]));
  tmp = _mm_shuffle_epi32(tmp, 0xB1);
  s1 = _mm_shuffle_epi32(s1, 0x1B);
  const __m128i s0 = _mm_alignr_epi8(tmp, s1, 8);
  s1 = _mm_blend_epi16(s1, tmp, 0xF0);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(&out[0]), s0);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(&out[4]), s1);
}

__attribute__((target("sse4.1"))) std::string digest_hex(const std::uint32_t st[8]) {
  const __m128i s0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(&st[0]));
  __m128i s1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(&st[4]));
  const __m128i tmp = _mm_shuffle_epi32(s0, 0x1B);
  s1 = _mm_shuffle_epi32(s1, 0xB1);
  std::uint32_t h[8];
  _mm_storeu_si128(reinterpret_cast<__m128i*>(&h[0]), _mm_blend_epi16(tmp, s1, 0xF0));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(&h[4]), _mm_alignr_epi8(s1, tmp, 8));
  static const char* digits = "0123456789abcdef";
  std::string s(64, '0');
  for (int i = 0; i < 8; ++i)
    for (int j = 0; j < 8; ++j) s[static_cast<std::size_t>(8 * i + j)] = digits[(h[i] >> (28 - 4 * j)) & 15];
  return s;
}

// One block for each of L lanes, the lanes' rounds interleaved.
template <int L>
__attribute__((target("sha,sse4.1,ssse3"))) void block(Lane* const* lanes) {
  const __m128i kByteSwap = _mm_set_epi64x(0x0c0d0e0f08090a0bLL, 0x0405060700010203LL);
  __m128i s0[L], s1[L], abef[L], cdgh[L], m[L][4];
  for (int l = 0; l < L; ++l) {
    s0[l] = abef[l] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(&lanes[l]->state[0]));
    s1[l] = cdgh[l] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(&lanes[l]->state[4]));
    for (int i = 0; i < 4; ++i)
      m[l][i] = _mm_shuffle_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(lanes[l]->next + 16 * i)), kByteSwap);
  }
  for (int g = 0; g < 16; ++g) {
    const __m128i k = _mm_load_si128(reinterpret_cast<const __m128i*>(&kRound[4 * g]));
    for (int l = 0; l < L; ++l) {
      if (g >= 4) {
        __m128i w = _mm_sha256msg1_epu32(m[l][g % 4], m[l][(g + 1) % 4]);
        w = _mm_add_epi32(w, _mm_alignr_epi8(m[l][(g + 3) % 4], m[l][(g + 2) % 4], 4));
        m[l][g % 4] = _mm_sha256msg2_epu32(w, m[l][(g + 3) % 4]);
      }
      __m128i wk = _mm_add_epi32(m[l][g % 4], k);
      s1[l] = _mm_sha256rnds2_epu32(s1[l], s0[l], wk);
      wk = _mm_shuffle_epi32(wk, 0x0E);
      s0[l] = _mm_sha256rnds2_epu32(s0[l], s1[l], wk);
    }
  }
  for (int l = 0; l < L; ++l) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(&lanes[l]->state[0]), _mm_add_epi32(s0[l], abef[l]));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(&lanes[l]->state[4]), _mm_add_epi32(s1[l], cdgh[l]));
  }
}

void start(Lane& lane, std::size_t msg, std::span<const std::uint8_t> m) {
  lane.msg = msg;
  lane.next = m.data();
  lane.blocks = m.size() / 64;
  lane.in_tail = false;
  const std::size_t rest = m.size() % 64;
  std::memset(lane.tail, 0, sizeof lane.tail);
  if (rest) std::memcpy(lane.tail, m.data() + lane.blocks * 64, rest);
  lane.tail[rest] = 0x80;
  lane.tail_blocks = rest + 1 + 8 <= 64 ? 1 : 2;
  const std::uint64_t bits = static_cast<std::uint64_t>(m.size()) * 8;
  for (int i = 0; i < 8; ++i)
    lane.tail[lane.tail_blocks * 64 - 1 - static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(bits >> (8 * i));
  to_lanes(kInit, lane.state);
  if (lane.blocks == 0) {
    lane.in_tail = true;
    lane.next = lane.tail;
    lane.blocks = lane.tail_blocks;
  }
}

// After a block: the next one, the tail, or done (false).
bool advance(Lane& lane) {
  lane.next += 64;
  if (--lane.blocks > 0) return true;
  if (lane.in_tail) return false;
  lane.in_tail = true;
  lane.next = lane.tail;
  lane.blocks = lane.tail_blocks;
  return true;
}

}  // namespace
#endif

std::vector<std::string> sha256_hex_all(const std::vector<std::span<const std::uint8_t>>& msgs) {
  std::vector<std::string> out(msgs.size());
#if defined(__x86_64__)
  if (kqual::detail::sha256_hardware_available()) {
    Lane a, b;
    Lane* active[2] = {nullptr, nullptr};
    std::size_t next = 0;
    auto refill = [&](Lane*& slot, Lane& lane) {
      slot = next < msgs.size() ? &lane : nullptr;
      if (slot) start(lane, next, msgs[next]), ++next;
    };
    refill(active[0], a);
    refill(active[1], b);
    while (active[0] || active[1]) {
      if (active[0] && active[1]) block<2>(active);
      else block<1>(active[0] ? &active[0] : &active[1]);
      for (int l = 0; l < 2; ++l) {
        if (!active[l] || advance(*active[l])) continue;
        out[active[l]->msg] = digest_hex(active[l]->state);
        refill(active[l], l == 0 ? a : b);
      }
    }
    return out;
  }
#endif
  for (std::size_t i = 0; i < msgs.size(); ++i) out[i] = sha256_hex(msgs[i].data(), msgs[i].size());
  return out;
}

}  // namespace kqual::artifact::detail
