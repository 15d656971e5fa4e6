#pragma once
// The "unwritten" marker for judging outputs the harness did not poison (a PyTorch submission's own
// tensors, a file a user computed elsewhere): Contract::compare counts an element made of one
// repeated byte B as unwritten when B is its poison byte, so B must be a byte no element consists of.
#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace kqual::contract {

// A byte whose repeated pattern (esize copies) no element of `bytes` holds; 0xA5 when every one
// occurs (only possible for one-byte elements, 256 or more of them: 0xA5 is then a value too).
inline std::uint8_t absent_byte(const std::vector<std::uint8_t>& bytes, std::size_t esize) {
  std::array<bool, 256> seen{};
  for (std::size_t i = 0; i + esize <= bytes.size(); i += esize) {
    bool same = true;
    for (std::size_t j = 1; j < esize && same; ++j) same = bytes[i + j] == bytes[i];
    if (same) seen[bytes[i]] = true;
  }
  for (int b = 0; b < 256; ++b)
    if (!seen[std::size_t(b)]) return std::uint8_t(b);
  return 0xA5;
}

}  // namespace kqual::contract
