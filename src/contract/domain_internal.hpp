#pragma once
// Internal to src/contract/: the arithmetic domain.cpp (the checks) and domain_examples.cpp (the
// refusal codes and examples) share. Not a public header.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "kqual/contract/domain.hpp"

namespace kqual::contract::domain_detail {

inline constexpr DType kAllDTypes[] = {DType::f32, DType::bf16, DType::f16, DType::f64, DType::i32, DType::i64, DType::u32};

// a * b, saturating at the int64 range (dims and lengths in a request may be anything).
inline std::int64_t mul_sat(std::int64_t a, std::int64_t b) {
  std::int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return (a < 0) != (b < 0) ? std::numeric_limits<std::int64_t>::min() : kUnlimited;
  return r;
}

inline std::int64_t product(const std::vector<std::string>& names, const Dims& dims) {
  std::int64_t p = 1;
  for (const auto& n : names) p = mul_sat(p, dims.at(n));
  return p;
}

inline bool has(const std::vector<DType>& ts, DType t) { return std::find(ts.begin(), ts.end(), t) != ts.end(); }

// Each dim's own maximum (a size limit can be exceeded when the product of these is over it).
inline std::map<std::string, std::int64_t> dim_maxima(const Domain& d) {
  std::map<std::string, std::int64_t> c;
  for (const auto& dim : d.dims) c[dim.name] = dim.max;
  return c;
}

inline std::int64_t ceiling_product(const std::vector<std::string>& names, const std::map<std::string, std::int64_t>& ceil) {
  std::int64_t p = 1;
  for (const auto& n : names) p = mul_sat(p, ceil.at(n));
  return p;
}

}  // namespace kqual::contract::domain_detail
