#include "kqual/core/sha256.hpp"

#include <cstring>
#include <fstream>
#include <vector>

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

#include "kqual/core/error.hpp"

namespace kqual {
namespace {
constexpr std::uint32_t kK[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};
inline std::uint32_t rotr(std::uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }
}  // namespace

Sha256::Sha256()
    : h_{0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19} {}

namespace {

void block_portable(std::array<std::uint32_t, 8>& h_, const std::uint8_t* p) {
  std::uint32_t w[64];
  for (int i = 0; i < 16; ++i)
    w[i] = (std::uint32_t(p[4 * i]) << 24) | (std::uint32_t(p[4 * i + 1]) << 16) |
           (std::uint32_t(p[4 * i + 2]) << 8) | std::uint32_t(p[4 * i + 3]);
  for (int i = 16; i < 64; ++i) {
    std::uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
    std::uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
    w[i] = w[i - 16] + s0 + w[i - 7] + s1;
  }
  std::uint32_t a = h_[0], b = h_[1], c = h_[2], d = h_[3], e = h_[4], f = h_[5], g = h_[6], h = h_[7];
  for (int i = 0; i < 64; ++i) {
    std::uint32_t t1 = h + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + kK[i] + w[i];
    std::uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
    h = g; g = f; f = e; e = d + t1; d = c; c = b; b = a; a = t1 + t2;
  }
  h_[0] += a; h_[1] += b; h_[2] += c; h_[3] += d; h_[4] += e; h_[5] += f; h_[6] += g; h_[7] += h;
}

#if defined(__x86_64__)
// The x86 SHA extensions (SHA-NI): two rounds per sha256rnds2, the message schedule in
// sha256msg1/msg2. Layout and instruction use as in Intel's "Intel SHA Extensions" white paper:
// the state lives as ABEF and CDGH; each group of 4 rounds adds 4 schedule words and their K.
__attribute__((target("sha,sse4.1,ssse3"))) void blocks_shani(std::array<std::uint32_t, 8>& h, const std::uint8_t* p,
                                                             std::size_t n) {
  const __m128i kByteSwap = _mm_set_epi64x(0x0c0d0e0f08090a0bULL, 0x0405060700010203ULL);
  __m128i tmp = _mm_loadu_si128(reinterpret_cast<const __m128i*>(&h[0]));     // D C B A (lanes 3..0)
  __m128i state1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(&h[4]));  // H G F E
  tmp = _mm_shuffle_epi32(tmp, 0xB1);                                         // C D A B
  state1 = _mm_shuffle_epi32(state1, 0x1B);                                   // E F G H
  __m128i state0 = _mm_alignr_epi8(tmp, state1, 8);                           // A B E F
  state1 = _mm_blend_epi16(state1, tmp, 0xF0);                                // C D G H
  for (; n > 0; --n, p += 64) {
    const __m128i abef = state0, cdgh = state1;
    __m128i m[4];
    for (int i = 0; i < 4; ++i)
      m[i] = _mm_shuffle_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * i)), kByteSwap);
    for (int g = 0; g < 16; ++g) {
      if (g >= 4) {
        // W[t..t+3] from W[t-16..t-1]: m[g%4] holds W[t-16..t-13] and is overwritten.
        __m128i w = _mm_sha256msg1_epu32(m[g % 4], m[(g + 1) % 4]);
        w = _mm_add_epi32(w, _mm_alignr_epi8(m[(g + 3) % 4], m[(g + 2) % 4], 4));
        m[g % 4] = _mm_sha256msg2_epu32(w, m[(g + 3) % 4]);
      }
      __m128i wk = _mm_add_epi32(m[g % 4], _mm_loadu_si128(reinterpret_cast<const __m128i*>(&kK[4 * g])));
      state1 = _mm_sha256rnds2_epu32(state1, state0, wk);
      wk = _mm_shuffle_epi32(wk, 0x0E);
      state0 = _mm_sha256rnds2_epu32(state0, state1, wk);
    }
    state0 = _mm_add_epi32(state0, abef);
    state1 = _mm_add_epi32(state1, cdgh);
  }
  tmp = _mm_shuffle_epi32(state0, 0x1B);        // F E B A
  state1 = _mm_shuffle_epi32(state1, 0xB1);     // D C H G
  state0 = _mm_blend_epi16(tmp, state1, 0xF0);  // D C B A
  state1 = _mm_alignr_epi8(state1, tmp, 8);     // H G F E
  _mm_storeu_si128(reinterpret_cast<__m128i*>(&h[0]), state0);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(&h[4]), state1);
}

bool cpu_has_shani() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return false;
  const bool sse41 = (c >> 19) & 1, ssse3 = (c >> 9) & 1;
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
  return sse41 && ssse3 && ((b >> 29) & 1);
}
#endif

bool& portable_forced() {
  static bool forced = false;
  return forced;
}

}  // namespace

namespace detail {
bool sha256_hardware_available() {
#if defined(__x86_64__)
  static const bool has = cpu_has_shani();
  return has;
#else
  return false;
#endif
}
void sha256_force_portable(bool on) { portable_forced() = on; }
}  // namespace detail

void Sha256::blocks(const std::uint8_t* p, std::size_t n) {
#if defined(__x86_64__)
  if (!portable_forced() && detail::sha256_hardware_available()) {
    blocks_shani(h_, p, n);
    return;
  }
#endif
  for (; n > 0; --n, p += 64) block_portable(h_, p);
}

void Sha256::update(const void* data, std::size_t size) {
  auto p = static_cast<const std::uint8_t*>(data);
  total_ += size;
  if (buf_len_ > 0) {
    std::size_t take = std::min(size, 64 - buf_len_);
    std::memcpy(buf_.data() + buf_len_, p, take);
    buf_len_ += take; p += take; size -= take;
    if (buf_len_ == 64) { blocks(buf_.data(), 1); buf_len_ = 0; }
  }
  if (size >= 64) {
    blocks(p, size / 64);
    p += size / 64 * 64;
    size %= 64;
  }
  if (size > 0) { std::memcpy(buf_.data(), p, size); buf_len_ = size; }
}

std::array<std::uint8_t, 32> Sha256::finish() {
  std::uint64_t bits = total_ * 8;
  std::uint8_t pad = 0x80;
  update(&pad, 1);
  std::uint8_t zero = 0;
  while (buf_len_ != 56) update(&zero, 1);
  std::uint8_t len[8];
  for (int i = 0; i < 8; ++i) len[i] = std::uint8_t(bits >> (56 - 8 * i));
  update(len, 8);
  std::array<std::uint8_t, 32> out{};
  for (int i = 0; i < 8; ++i)
    for (int j = 0; j < 4; ++j) out[4 * i + j] = std::uint8_t(h_[i] >> (24 - 8 * j));
  return out;
}

std::string Sha256::finish_hex() {
  static const char* digits = "0123456789abcdef";
  auto d = finish();
  std::string s;
  for (auto b : d) { s += digits[b >> 4]; s += digits[b & 15]; }
  return s;
}

std::string sha256_hex(const void* data, std::size_t size) {
  Sha256 h;
  h.update(data, size);
  return h.finish_hex();
}

std::string sha256_file_hex(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw_error(ErrorKind::io, "cannot open '" + path + "' to hash it");
  Sha256 h;
  std::vector<char> buf(1 << 16);
  while (in) {
    in.read(buf.data(), std::streamsize(buf.size()));
    h.update(buf.data(), std::size_t(in.gcount()));
  }
  return h.finish_hex();
}

}  // namespace kqual
