// The global functions of a loaded cubin, for the recorder's 'O' lines (cubin_symbols.hpp).
#include "cubin_symbols.hpp"

#include <cstring>

#include "kqual/bench/record_mac.hpp"

namespace kqual_record {

// The global functions a cubin defines (its symbol table), ';'-joined; "-" for more than 64, or for an
// image that is not an ELF cubin (a fatbin, compressed).
std::string cubin_functions(const char* image, std::size_t size) {
  const auto* b = reinterpret_cast<const unsigned char*>(image);
  if (!b || size < 64 || std::memcmp(b, "\x7f" "ELF", 4) != 0 || b[4] != 2) return "-";
  const std::uint64_t shoff = load_le(b + 0x28, 8);
  const std::size_t shentsize = load_le(b + 0x3A, 2), shnum = load_le(b + 0x3C, 2);
  if (shentsize < 64 || shoff > size || shnum > (size - shoff) / shentsize) return "-";
  auto sh = [&](std::size_t i, std::size_t off, std::size_t n) { return load_le(b + shoff + i * shentsize + off, n); };
  std::string out;
  int count = 0;
  for (std::size_t i = 0; i < shnum; ++i) {
    if (sh(i, 4, 4) != 2) continue;  // SHT_SYMTAB
    const std::uint64_t off = sh(i, 0x18, 8), len = sh(i, 0x20, 8), link = sh(i, 0x28, 4);
    if (off > size || len > size - off || link >= shnum) return "-";
    const std::uint64_t str_off = sh(link, 0x18, 8), str_len = sh(link, 0x20, 8);
    if (str_off > size || str_len > size - str_off) return "-";
    for (std::uint64_t e = off; e + 24 <= off + len; e += 24) {
      const unsigned info = b[e + 4];
      const std::uint64_t name = load_le(b + e, 4);
      if ((info & 0xf) != 2 || (info >> 4) != 1 || name >= str_len) continue;  // STT_FUNC, STB_GLOBAL
      const char* n = reinterpret_cast<const char*>(b + str_off + name);
      const std::size_t n_len = strnlen(n, str_len - name);
      if (++count > 64) return "-";
      if (!out.empty()) out += ';';
      out.append(n, n_len);
    }
  }
  for (char& c : out)
    if (c == '\t' || c == '\n' || c == '\r') c = ' ';
  return out.empty() ? "-" : out;
}

}  // namespace kqual_record
