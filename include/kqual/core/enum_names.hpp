#pragma once
// One word per enumerator, written once: the table an enum's to_string and its parser both read.
//
//   inline constexpr kqual::EnumNames<LoadPath, 3> kLoadPathNames{{{
//       {LoadPath::native_sass, "native_sass"}, {LoadPath::ptx_jit, "ptx_jit"},
//       {LoadPath::incompatible, "incompatible"}}}};
//   const char* to_string(LoadPath p) { return kLoadPathNames.name(p); }
//   std::optional<LoadPath> parse_load_path(std::string_view s) { return kLoadPathNames.parse(s); }
//
// A value missing from the table names itself "unknown" (never a null pointer); parse() is exact
// (case-sensitive) and returns nullopt for any other word, so the caller says what was wrong.
#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace kqual {

template <class E, std::size_t N>
struct EnumNames {
  std::array<std::pair<E, const char*>, N> entries;

  constexpr const char* name(E value, const char* fallback = "unknown") const {
    for (const auto& [v, n] : entries)
      if (v == value) return n;
    return fallback;
  }
  constexpr std::optional<E> parse(std::string_view word) const {
    for (const auto& [v, n] : entries)
      if (word == n) return v;
    return std::nullopt;
  }
  // "a, b or c": for an error that lists what would have been accepted.
  std::string choices() const {
    std::string out;
    for (std::size_t i = 0; i < N; ++i) {
      if (i > 0) out += i + 1 == N ? " or " : ", ";
      out += entries[i].second;
    }
    return out;
  }
};

}  // namespace kqual
