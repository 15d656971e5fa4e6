#include "kqual/core/narrow_float.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

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

// 2^k as a double (k within the normal range): ldexp's result by multiplication, which is exact for the
// values here (no overflow or underflow), without libm's call (encode/decode run per element of a case).
double pow2(int k) {
  const std::uint64_t bits = std::uint64_t(1023 + k) << 52;
  double d;
  std::memcpy(&d, &bits, sizeof d);
  return d;
}
// The unbiased binary exponent of a positive finite double (floor(log2 a)); a double subnormal gives one
// below every exponent the narrow formats have, which is all their callers need.
int binary_exponent(double a) {
  std::uint64_t bits;
  std::memcpy(&bits, &a, sizeof bits);
  const int field = int((bits >> 52) & 0x7FF);
  return field == 0 ? -1023 : field - 1023;
}

// |v| (finite, positive, already rounded to a value the format holds) to exponent and mantissa fields.
std::uint32_t narrow_magnitude_bits(const NarrowFormat& f, double a) {
  if (a == 0) return 0;
  const int exponent = binary_exponent(a);
  if (exponent < 1 - f.bias)  // subnormal: the mantissa counts min_subnormal steps
    return std::uint32_t(a * pow2(f.bias - 1 + f.mantissa_bits));
  const std::uint32_t field = std::uint32_t(exponent + f.bias);
  const auto mantissa = std::uint32_t(a * pow2(f.mantissa_bits - exponent)) - (1u << f.mantissa_bits);
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
  const int exponent = a == 0 ? 1 - f.bias : std::max(binary_exponent(a), 1 - f.bias);
  const int step_exp = exponent - f.mantissa_bits;
  const double rounded = std::nearbyint(a * pow2(-step_exp)) * pow2(step_exp);
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

namespace {

double decode_narrow_slow(const NarrowFormat& f, std::uint32_t bits) {
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
    a = double(mantissa) * pow2(1 - f.bias - f.mantissa_bits);
  } else {
    a = double(mantissa | (1u << f.mantissa_bits)) * pow2(int(field) - f.bias - f.mantissa_bits);
  }
  return negative ? -a : a;
}

// Every value of a format of at most 16 bits, decoded once per process (f16: 512 KB).
struct DecodeTable {
  NarrowFormat format;
  std::vector<double> values;
  explicit DecodeTable(const NarrowFormat& f) : format(f), values(std::size_t(1) << (1 + f.exponent_bits + f.mantissa_bits)) {
    for (std::size_t b = 0; b < values.size(); ++b) values[b] = decode_narrow_slow(f, std::uint32_t(b));
  }
  bool holds(const NarrowFormat& f) const {
    return f.exponent_bits == format.exponent_bits && f.mantissa_bits == format.mantissa_bits && f.bias == format.bias &&
           f.has_inf == format.has_inf && f.nan_bits == format.nan_bits;
  }
};

}  // namespace

double decode_narrow(const NarrowFormat& f, std::uint32_t bits) {
  static const DecodeTable f16(kF16), e4m3(kE4M3), e5m2(kE5M2);
  for (const DecodeTable* t : {&f16, &e4m3, &e5m2})
    if (t->holds(f)) return t->values[bits & (t->values.size() - 1)];
  return decode_narrow_slow(f, bits);
}

}  // namespace kqual
