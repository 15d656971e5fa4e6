#include "kqual/core/narrow_float.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace kqual {

namespace {

std::uint32_t narrow_sign_bit(const NarrowFormat& f) { return 1u << (f.exponent_bits + f.mantissa_bits); }
std::uint32_t narrow_exp_all_ones(const NarrowFormat& f) { return (1u << f.exponent_bits) - 1; }
std::uint32_t narrow_canonical_nan(const NarrowFormat& f) {
  // f16's quiet NaN does not fit the 8-bit field of the table: all-ones exponent, top mantissa bit.
  if (f.nan_bits != 0) return f.nan_bits;
  return (narrow_exp_all_ones(f) << f.mantissa_bits) | (1u << (f.mantissa_bits - 1));
}
std::uint32_t narrow_inf(const NarrowFormat& f) { return narrow_exp_all_ones(f) << f.mantissa_bits; }

// |v| (finite, positive, already rounded to a value the format holds) to exponent and mantissa fields.
std::uint32_t narrow_magnitude_bits(const NarrowFormat& f, double a) {
  if (a == 0) return 0;
  int e2 = 0;
  (void)std::frexp(a, &e2);  // a = m * 2^e2, m in [0.5, 1): the unbiased exponent is e2 - 1
  const int exponent = e2 - 1;
  if (exponent < 1 - f.bias)  // subnormal: the mantissa counts min_subnormal steps
    return std::uint32_t(std::ldexp(a, f.bias - 1 + f.mantissa_bits));
  const std::uint32_t field = std::uint32_t(exponent + f.bias);
  const auto mantissa = std::uint32_t(std::ldexp(a, f.mantissa_bits - exponent)) - (1u << f.mantissa_bits);
  return (field << f.mantissa_bits) | mantissa;
}

}  // namespace

double NarrowFormat::min_normal() const { return std::ldexp(1.0, 1 - bias); }
double NarrowFormat::min_subnormal() const { return std::ldexp(1.0, 1 - bias - mantissa_bits); }

std::uint32_t encode_narrow(const NarrowFormat& f, double v, Overflow o) {
  const std::uint32_t sign = std::signbit(v) ? narrow_sign_bit(f) : 0;
  if (std::isnan(v)) return sign | narrow_canonical_nan(f);
  const double a = std::fabs(v);
  const auto overflowed = [&] {
    if (o == Overflow::saturate) return sign | narrow_magnitude_bits(f, f.max_finite);
    return sign | (f.has_inf ? narrow_inf(f) : narrow_canonical_nan(f));
  };
  if (std::isinf(a)) return overflowed();
  // The step between neighbours at a's binade (subnormals share the smallest normal binade's step),
  // then round a / step to an integer, ties to even: nearbyint under the default rounding mode.
  int e2 = 0;
  (void)std::frexp(a, &e2);
  const int exponent = a == 0 ? 1 - f.bias : std::max(e2 - 1, 1 - f.bias);
  const int step_exp = exponent - f.mantissa_bits;
  const double rounded = std::ldexp(std::nearbyint(std::ldexp(a, -step_exp)), step_exp);
  if (rounded > f.max_finite) return overflowed();
  return sign | narrow_magnitude_bits(f, rounded);
}

bool narrow_is_nan(const NarrowFormat& f, std::uint32_t bits) {
  const std::uint32_t magnitude = bits & (narrow_sign_bit(f) - 1);
  const std::uint32_t mantissa = magnitude & ((1u << f.mantissa_bits) - 1);
  const std::uint32_t field = magnitude >> f.mantissa_bits;
  if (field != narrow_exp_all_ones(f)) return false;
  return f.has_inf ? mantissa != 0 : mantissa == (1u << f.mantissa_bits) - 1;
}

double decode_narrow(const NarrowFormat& f, std::uint32_t bits) {
  const bool negative = (bits & narrow_sign_bit(f)) != 0;
  const std::uint32_t magnitude = bits & (narrow_sign_bit(f) - 1);
  const std::uint32_t mantissa = magnitude & ((1u << f.mantissa_bits) - 1);
  const std::uint32_t field = magnitude >> f.mantissa_bits;
  double a = 0;
  if (narrow_is_nan(f, bits)) {
    a = std::numeric_limits<double>::quiet_NaN();
  } else if (f.has_inf && field == narrow_exp_all_ones(f)) {
    a = std::numeric_limits<double>::infinity();
  } else if (field == 0) {
    a = std::ldexp(double(mantissa), 1 - f.bias - f.mantissa_bits);
  } else {
    a = std::ldexp(double(mantissa | (1u << f.mantissa_bits)), int(field) - f.bias - f.mantissa_bits);
  }
  return negative ? -a : a;
}

}  // namespace kqual
