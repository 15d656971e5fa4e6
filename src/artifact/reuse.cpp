#include "reuse.hpp"

#include <algorithm>
#include <cstring>

#include "reader.hpp"

namespace kqual::artifact::detail {

// Size, then the first 256 and last 64 bytes (the header, with its sizes, and the payload's ends), mixed
// 8 bytes at a time: a cheap bucket; equality is decided by comparing every byte.
std::uint64_t EntryReuse::key(std::span<const std::uint8_t> raw) {
  std::uint64_t h = raw.size() * 0x9E3779B97F4A7C15ull;
  auto mix = [&h](std::span<const std::uint8_t> part) {
    for (std::size_t i = 0; i < part.size(); i += 8) {
      std::uint64_t w = 0;
      std::memcpy(&w, part.data() + i, std::min<std::size_t>(8, part.size() - i));
      h = (h ^ w) * 0xFF51AFD7ED558CCDull;
      h ^= h >> 32;
    }
  };
  mix(raw.first(std::min<std::size_t>(raw.size(), 256)));
  mix(raw.last(std::min<std::size_t>(raw.size(), 64)));
  return h;
}

EntryReuse::EntryReuse(const Artifact& parsed, std::span<const std::uint8_t> file) {
  // Only entries of fatbin containers have a header in the file (a bare cubin or PTX file is its image).
  if (parsed.container != ContainerKind::fatbin && parsed.container != ContainerKind::host_binary) return;
  by_key_.reserve(parsed.entries.size());
  for (const auto& e : parsed.entries) {
    if (!in_bounds(file.size(), e.offset, 16)) continue;
    std::uint32_t ehs;
    std::uint64_t size;
    std::memcpy(&ehs, file.data() + e.offset + 4, sizeof ehs);
    std::memcpy(&size, file.data() + e.offset + 8, sizeof size);
    if (!in_bounds(file.size(), e.offset, std::uint64_t{ehs}) || !in_bounds(file.size(), e.offset + ehs, size)) continue;
    const auto raw = file.subspan(static_cast<std::size_t>(e.offset), static_cast<std::size_t>(ehs + size));
    by_key_.emplace(key(raw), std::pair(&e, raw));
  }
}

const Entry* EntryReuse::find(std::span<const std::uint8_t> raw) const {
  const auto [lo, hi] = by_key_.equal_range(key(raw));
  for (auto it = lo; it != hi; ++it) {
    const auto& old = it->second.second;
    if (old.size() == raw.size() && std::memcmp(old.data(), raw.data(), raw.size()) == 0) return it->second.first;
  }
  return nullptr;
}

}  // namespace kqual::artifact::detail
