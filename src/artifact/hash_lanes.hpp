#pragma once
// SHA-256 of many messages at once (internal): two lanes on the SHA extensions (hash_lanes.cpp).
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace kqual::artifact::detail {

// The lowercase hex SHA-256 of each message, in order; equal to kqual::sha256_hex of each.
std::vector<std::string> sha256_hex_all(const std::vector<std::span<const std::uint8_t>>& msgs);

}  // namespace kqual::artifact::detail
