#pragma once
// Bounds-checked little-endian reads over untrusted bytes. Every failure is Error(input) with the
// caller's context ("kernels.fatbin: entry 2: header size") so the user learns what was wrong.
#include <cstdint>
#include <cstring>
#include <limits>
#include <span>
#include <string>

#include <fmt/format.h>

#include "kqual/core/error.hpp"

namespace kqual::artifact::detail {

[[noreturn]] inline void fail(const std::string& context, const std::string& what) {
  throw_error(ErrorKind::input, fmt::format("{}: {}", context, what));
}

// True if [off, off + len) lies inside a buffer of `size` bytes (overflow-safe).
inline bool in_bounds(std::uint64_t size, std::uint64_t off, std::uint64_t len) {
  return off <= size && len <= size - off;
}

class Reader {
 public:
  Reader(std::span<const std::uint8_t> bytes, std::string context) : b_(bytes), ctx_(std::move(context)) {}
  std::size_t size() const { return b_.size(); }
  const std::string& context() const { return ctx_; }
  std::span<const std::uint8_t> bytes() const { return b_; }

  template <class T>
  T get(std::uint64_t off, const char* field) const {
    if (!in_bounds(b_.size(), off, sizeof(T)))
      fail(ctx_, fmt::format("{} at offset {} lies outside the {} bytes available (truncated?)", field, off,
                             b_.size()));
    T v;
    std::memcpy(&v, b_.data() + off, sizeof(T));  // host is little-endian (x86-64, aarch64)
    return v;
  }
  std::uint8_t u8(std::uint64_t off, const char* f) const { return get<std::uint8_t>(off, f); }
  std::uint16_t u16(std::uint64_t off, const char* f) const { return get<std::uint16_t>(off, f); }
  std::uint32_t u32(std::uint64_t off, const char* f) const { return get<std::uint32_t>(off, f); }
  std::uint64_t u64(std::uint64_t off, const char* f) const { return get<std::uint64_t>(off, f); }

  std::span<const std::uint8_t> sub(std::uint64_t off, std::uint64_t len, const char* field) const {
    if (!in_bounds(b_.size(), off, len))
      fail(ctx_, fmt::format("{} [{}, +{}) lies outside the {} bytes available (truncated?)", field, off, len,
                             b_.size()));
    return b_.subspan(static_cast<std::size_t>(off), static_cast<std::size_t>(len));
  }

 private:
  std::span<const std::uint8_t> b_;
  std::string ctx_;
};

// Strings taken from the file (symbol names, compiler notes) are shown and written to JSON: bytes
// outside printable ASCII become \xNN so the result is always valid UTF-8.
inline std::string printable(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (unsigned char c : s) {
    if (c >= 0x20 && c < 0x7f) out.push_back(static_cast<char>(c));
    else out += fmt::format("\\x{:02x}", c);
  }
  return out;
}

// Printable rendering of a short byte string for messages.
inline std::string hex_u64(std::uint64_t v) { return fmt::format("{:#x}", v); }

}  // namespace kqual::artifact::detail
