#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

namespace kqual {

enum class DType { f32, bf16, f16, f64, i32, i64, u32 };

std::string_view to_string(DType t);
std::optional<DType> parse_dtype(std::string_view s);
std::size_t dtype_size(DType t);
// C++ spelling used in kernel sources ({T} in manifests).
std::string_view cxx_type(DType t);

inline std::uint32_t f32_bits(float f) { std::uint32_t u; std::memcpy(&u, &f, 4); return u; }
inline float f32_from_bits(std::uint32_t u) { float f; std::memcpy(&f, &u, 4); return f; }
inline float bf16_to_f32(std::uint16_t b) { return f32_from_bits(std::uint32_t(b) << 16); }
// Round-to-nearest-even f32 → bf16; NaN stays NaN (quiet), as __float2bfloat16 does.
inline std::uint16_t f32_to_bf16_rne(float f) {
  std::uint32_t u = f32_bits(f);
  if (std::isnan(f)) return std::uint16_t((u >> 16) | 0x0040);
  std::uint32_t lsb = (u >> 16) & 1u;
  u += 0x7FFFu + lsb;
  return std::uint16_t(u >> 16);
}

}  // namespace kqual
