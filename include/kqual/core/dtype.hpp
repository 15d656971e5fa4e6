#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

namespace kqual {

// The element types a contract's tensors hold. The narrow ones (f16, e4m3, e5m2) are encoded and
// decoded by core/narrow_float.hpp; `boolean` is one byte holding 0 or 1 (C++ and CUDA `bool`).
enum class DType { f32, bf16, f16, f64, i32, i64, u32, i8, u8, e4m3, e5m2, boolean };

// Every dtype, in the order above (for tables, errors that list the choices, and tests).
inline constexpr DType kAllDTypes[] = {DType::f32, DType::bf16, DType::f16, DType::f64,  DType::i32,  DType::i64,
                                       DType::u32, DType::i8,   DType::u8,  DType::e4m3, DType::e5m2, DType::boolean};

// "f32", "bf16", "f16", "f64", "i32", "i64", "u32", "i8", "u8", "e4m3", "e5m2", "bool".
std::string_view to_string(DType t);
// Those words, and the spellings peers use: float32/float, bfloat16, float16/half, float64/double,
// int32, int64, uint32, int8, uint8, float8_e4m3fn/fp8_e4m3, float8_e5m2/fp8_e5m2, boolean.
std::optional<DType> parse_dtype(std::string_view s);
// Floating point (f32, bf16, f16, f64, e4m3, e5m2): compared within bounds, NaN and Inf classes.
bool is_floating(DType t);
// Integers and bool: values are exact and never go through a float.
bool is_integral(DType t);
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
