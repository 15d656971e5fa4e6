// PTX text facts: ISA version (.version), target (.target) and kernel names (.entry).
#include <algorithm>
#include <cctype>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "images.hpp"
#include "reader.hpp"

namespace kqual::artifact::detail {

namespace {

// ASCII whitespace, without the C library's locale lookup (PTX text is ASCII).
inline bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }
bool ident_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == '$' || c == '%'; }
bool ident_char(char c) { return ident_start(c) || std::isdigit(static_cast<unsigned char>(c)); }

// Removes // and /* */ comments (PTX follows C comment syntax; strings do not occur in directives we read):
// a // comment becomes its line's '\n', a /* */ comment one space. Text between comments is copied
// in bulk (a library's PTX is tens of MB).
// Into `out` (cleared first): a caller reusing it across images allocates once per thread (a
// library holds hundreds of MB of PTX).
void strip_comments(std::string_view s, std::string& out) {
  out.clear();
  out.reserve(s.size());
  std::size_t i = 0;
  while (i < s.size()) {
    const std::size_t slash = s.find('/', i);
    if (slash == std::string_view::npos) {
      out.append(s.substr(i));
      break;
    }
    out.append(s.substr(i, slash - i));
    const char next = slash + 1 < s.size() ? s[slash + 1] : '\0';
    if (next == '/') {
      const std::size_t nl = s.find('\n', slash + 2);
      i = nl == std::string_view::npos ? s.size() : nl + 1;
      out.push_back('\n');
    } else if (next == '*') {
      const std::size_t end = s.find("*/", slash + 2);
      i = end == std::string_view::npos ? s.size() : end + 2;
      out.push_back(' ');
    } else {
      out.push_back('/');
      i = slash + 1;
    }
  }
}

// Control characters other than the whitespace ones make the image not PTX text.
inline bool bad_text_byte(unsigned char c) { return c < 0x20 && (c < '\t' || c > '\r'); }

// A '.' after one of these starts a token (as next_token splits tokens).
inline bool token_boundary(char c) { return is_space(c) || c == ',' || c == '(' || c == ';'; }

// Whether [b, e) of `p` holds a bad_text_byte; 16 bytes per step where SSE2 is there (a library's
// PTX is hundreds of MB, and a byte-at-a-time loop was half of its parse).
bool has_bad_text_byte(const std::uint8_t* p, std::size_t b, std::size_t e) {
#if defined(__SSE2__)
  const __m128i k1f = _mm_set1_epi8(0x1f), k9 = _mm_set1_epi8(9), k4 = _mm_set1_epi8(4);
  for (; b + 16 <= e; b += 16) {
    const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + b));
    const __m128i lt20 = _mm_cmpeq_epi8(_mm_min_epu8(c, k1f), c);        // c <= 0x1f
    const __m128i d = _mm_sub_epi8(c, k9);
    const __m128i ws = _mm_cmpeq_epi8(_mm_min_epu8(d, k4), d);           // 9 <= c <= 13
    if (_mm_movemask_epi8(_mm_andnot_si128(ws, lt20))) return true;
  }
#endif
  for (; b < e; ++b)
    if (bad_text_byte(p[b])) return true;
  return false;
}

// The next '.' at or after `pos` that starts a token, or t.size().
std::size_t next_directive_dot(std::string_view t, std::size_t pos) {
#if defined(__SSE2__)
  const __m128i dot = _mm_set1_epi8('.');
  while (pos + 16 <= t.size()) {
    unsigned m = static_cast<unsigned>(
        _mm_movemask_epi8(_mm_cmpeq_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(t.data() + pos)), dot)));
    while (m) {
      const std::size_t at = pos + static_cast<std::size_t>(__builtin_ctz(m));
      if (at == 0 || token_boundary(t[at - 1])) return at;
      m &= m - 1;
    }
    pos += 16;
  }
#endif
  while (pos < t.size() && (t[pos] != '.' || (pos > 0 && !token_boundary(t[pos - 1])))) ++pos;
  return pos;
}

std::string_view next_token(std::string_view s, std::size_t& pos) {
  while (pos < s.size() && is_space(s[pos])) ++pos;
  const std::size_t b = pos;
  while (pos < s.size() && !is_space(s[pos]) && s[pos] != ',' && s[pos] != '(' &&
         s[pos] != ';')
    ++pos;
  return s.substr(b, pos - b);
}
}  // namespace

void parse_ptx_image(std::span<const std::uint8_t> image, const std::string& ctx, Entry& e) {
  const void* nul = image.empty() ? nullptr : std::memchr(image.data(), 0, image.size());
  const std::size_t len = nul ? static_cast<std::size_t>(static_cast<const std::uint8_t*>(nul) - image.data()) : image.size();
  // The text before the first NUL: checked a block at a time without branches, the first bad byte
  // located only when a block has one.
  constexpr std::size_t kBlock = 4096;
  for (std::size_t b = 0; b < len; b += kBlock) {
    const std::size_t end = std::min(len, b + kBlock);
    if (!has_bad_text_byte(image.data(), b, end)) continue;
    for (std::size_t i = b; i < end; ++i)
      if (bad_text_byte(image[i])) fail(ctx, fmt::format("PTX: byte {} is {:#04x}, not text", i, image[i]));
  }
  for (std::size_t i = len; i < image.size(); ++i)
    if (image[i] != 0) fail(ctx, fmt::format("PTX: data after the terminating NUL at byte {}", i));
  thread_local std::string text;
  strip_comments(std::string_view(reinterpret_cast<const char*>(image.data()), len), text);
  const std::string_view t(text);

  bool have_version = false, have_target = false;
  std::size_t pos = 0;
  while (pos < t.size()) {
    // Only directives matter (.version, .target, .entry): jump to the next '.' that starts a token
    // (after whitespace, ',', '(' or ';', as next_token splits), instead of tokenising every
    // instruction of a large module.
    // (16 bytes at a time: in PTX a '.' comes every few bytes, mostly inside instruction names
    // such as ld.global.f32, so a memchr per '.' cost more than the scan)
    pos = next_directive_dot(t, pos);
    if (pos >= t.size()) break;
    std::string_view tok = next_token(t, pos);
    if (tok.empty()) { ++pos; continue; }
    if (tok == ".version" && !have_version) {
      std::string_view v = next_token(t, pos);
      const auto dot = v.find('.');
      int ma = 0, mi = 0;
      bool ok = dot != std::string_view::npos && dot > 0 && dot + 1 < v.size() && v.size() <= 8;
      for (std::size_t i = 0; ok && i < v.size(); ++i)
        if (i != dot && !std::isdigit(static_cast<unsigned char>(v[i]))) ok = false;
      if (!ok) fail(ctx, fmt::format("PTX: .version '{}' is not MAJOR.MINOR", v));
      ma = std::stoi(std::string(v.substr(0, dot)));
      mi = std::stoi(std::string(v.substr(dot + 1)));
      e.ptx_isa_major = ma;
      e.ptx_isa_minor = mi;
      have_version = true;
    } else if (tok == ".target" && !have_target) {
      std::string_view a = next_token(t, pos);
      Arch arch;
      try {
        arch = Arch::parse(a);
      } catch (const Error&) {
        fail(ctx, fmt::format("PTX: .target '{}' is not an sm_XY architecture", a.substr(0, 32)));
      }
      // A fatbin entry header already gave the arch; a bare PTX file takes it from .target.
      if (e.arch.number() == 0) {
        e.arch = arch;
      } else if (e.arch.suffix == 0) {
        e.arch.suffix = arch.suffix;
      }
      e.arch.virtual_ = true;
      have_target = true;
    } else if (tok == ".entry") {
      while (pos < t.size() && is_space(t[pos])) ++pos;
      const std::size_t b = pos;
      if (pos < t.size() && ident_start(t[pos]))
        while (pos < t.size() && ident_char(t[pos])) ++pos;
      if (pos == b) fail(ctx, "PTX: .entry without a name");
      e.ptx_entries.emplace_back(t.substr(b, pos - b));
    }
  }
  if (text.capacity() > (std::size_t(64) << 20)) std::string().swap(text);  // keep no huge buffer alive
  if (!have_version) fail(ctx, "PTX: no .version directive");
  if (!have_target) fail(ctx, "PTX: no .target directive");
}

}  // namespace kqual::artifact::detail
