#include "kqual/core/narrow_float.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "kqual/core/xoshiro.hpp"

namespace {

using kqual::decode_narrow;
using kqual::encode_narrow;
using kqual::NarrowFormat;
using kqual::Overflow;

std::uint32_t pattern_count(const NarrowFormat& f) { return 1u << (1 + f.exponent_bits + f.mantissa_bits); }

// Every finite value of the format, by exhaustive decoding: the oracle the encoder is checked against.
std::vector<std::pair<double, std::uint32_t>> finite_values(const NarrowFormat& f) {
  std::vector<std::pair<double, std::uint32_t>> out;
  for (std::uint32_t b = 0; b < pattern_count(f); ++b) {
    const double v = decode_narrow(f, b);
    if (std::isfinite(v)) out.push_back({v, b});
  }
  return out;
}

TEST(NarrowFloat, EveryPatternDecodesAndEncodesBackToItself) {
  for (const NarrowFormat* f : {&kqual::kF16, &kqual::kE4M3, &kqual::kE5M2}) {
    int nans = 0;
    for (std::uint32_t b = 0; b < pattern_count(*f); ++b) {
      const double v = decode_narrow(*f, b);
      if (std::isnan(v)) {
        ++nans;
        EXPECT_TRUE(kqual::narrow_is_nan(*f, b));
        EXPECT_TRUE(kqual::narrow_is_nan(*f, encode_narrow(*f, v))) << f->name << " " << b;
        continue;
      }
      EXPECT_EQ(encode_narrow(*f, v), b) << f->name << " pattern " << b << " value " << v;
    }
    // IEEE-like formats: every all-ones exponent with a non-zero mantissa, both signs; e4m3: two.
    const int expected_nans = f->has_inf ? 2 * ((1 << f->mantissa_bits) - 1) : 2;
    EXPECT_EQ(nans, expected_nans) << f->name;
  }
}

TEST(NarrowFloat, KnownValuesAndTheRangeEdges) {
  using kqual::kE4M3;
  using kqual::kE5M2;
  using kqual::kF16;
  EXPECT_EQ(encode_narrow(kF16, 1.0), 0x3C00u);
  EXPECT_EQ(encode_narrow(kF16, 65504.0), 0x7BFFu);
  EXPECT_EQ(encode_narrow(kF16, 65519.0), 0x7BFFu);
  EXPECT_EQ(encode_narrow(kF16, 65520.0), 0x7C00u);  // the tie above the largest goes to inf
  EXPECT_EQ(encode_narrow(kF16, 65520.0, Overflow::saturate), 0x7BFFu);
  EXPECT_EQ(encode_narrow(kF16, std::ldexp(1.0, -24)), 0x0001u);  // the smallest subnormal
  EXPECT_EQ(encode_narrow(kF16, std::ldexp(1.0, -25)), 0x0000u);  // half of it: tie to even (zero)
  EXPECT_EQ(encode_narrow(kF16, std::ldexp(3.0, -26)), 0x0001u);
  EXPECT_EQ(encode_narrow(kF16, -0.0), 0x8000u);
  EXPECT_EQ(encode_narrow(kF16, std::numeric_limits<double>::quiet_NaN()), 0x7E00u);
  EXPECT_EQ(kqual::f32_to_f16_rn(1.0f + std::ldexp(1.0f, -11)), 0x3C00u);  // tie: to the even mantissa
  EXPECT_EQ(kqual::f32_to_f16_rn(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3C02u);
  EXPECT_FLOAT_EQ(kqual::f16_to_f32(0x7BFF), 65504.0f);

  EXPECT_EQ(encode_narrow(kE4M3, 448.0), 0x7Eu);
  EXPECT_EQ(encode_narrow(kE4M3, 464.0), 0x7Eu);  // tie between 448 and 480 (not a number here): even
  EXPECT_EQ(encode_narrow(kE4M3, 465.0), 0x7Fu);  // past the largest, no inf: NaN
  EXPECT_EQ(encode_narrow(kE4M3, 465.0, Overflow::saturate), 0x7Eu);
  EXPECT_EQ(encode_narrow(kE4M3, -1e9, Overflow::saturate), 0xFEu);
  EXPECT_EQ(encode_narrow(kE4M3, -std::numeric_limits<double>::infinity()), 0xFFu);
  EXPECT_EQ(encode_narrow(kE4M3, std::ldexp(1.0, -9)), 0x01u);  // smallest subnormal
  EXPECT_EQ(encode_narrow(kE4M3, std::ldexp(1.0, -10)), 0x00u);
  EXPECT_DOUBLE_EQ(decode_narrow(kE4M3, 0x7E), 448.0);
  EXPECT_DOUBLE_EQ(decode_narrow(kE4M3, 0x08), std::ldexp(1.0, -6));  // smallest normal

  EXPECT_EQ(encode_narrow(kE5M2, 57344.0), 0x7Bu);
  EXPECT_EQ(encode_narrow(kE5M2, 61440.0), 0x7Cu);  // tie above the largest: inf
  EXPECT_EQ(encode_narrow(kE5M2, 61439.0), 0x7Bu);
  EXPECT_EQ(encode_narrow(kE5M2, 1e9, Overflow::saturate), 0x7Bu);
  EXPECT_EQ(encode_narrow(kE5M2, std::numeric_limits<double>::quiet_NaN()), 0x7Eu);
  EXPECT_DOUBLE_EQ(decode_narrow(kE5M2, 0x01), std::ldexp(1.0, -16));
}

// Random doubles across each format's whole range: the encoding is the nearest finite value, a tie
// going to the even pattern, against an exhaustive search of the format's values.
TEST(NarrowFloat, EncodingIsTheNearestValueTiesToEven) {
  kqual::Xoshiro256 rng(20261204);
  for (const NarrowFormat* f : {&kqual::kF16, &kqual::kE4M3, &kqual::kE5M2}) {
    const auto values = finite_values(*f);
    for (int i = 0; i < 4000; ++i) {
      const double unit = double(rng.next() >> 11) * 0x1p-53;
      const double mag = std::ldexp(unit, int(rng.index(std::size_t(2 * f->bias + 2))) - f->bias - f->mantissa_bits);
      const double v = (rng.index(2) ? -1 : 1) * std::min(mag, f->max_finite);
      // Ties made on purpose: every fourth value is the midpoint of two neighbours.
      double x = v;
      if (i % 4 == 0) {
        const std::uint32_t b = encode_narrow(*f, v) & ((1u << (f->exponent_bits + f->mantissa_bits)) - 1);
        const double lo = decode_narrow(*f, b), hi = decode_narrow(*f, b + 1);
        if (std::isfinite(hi)) x = (v < 0 ? -1 : 1) * (lo + hi) / 2;
      }
      double best = std::numeric_limits<double>::infinity();
      std::uint32_t best_bits = 0;
      for (const auto& [val, bits] : values) {
        const double d = std::fabs(val - x);
        const bool tie_even = d == best && (bits & 1u) == 0 && std::signbit(x) == std::signbit(val);
        if (d < best || tie_even) {
          best = d;
          best_bits = bits;
        }
      }
      const std::uint32_t got = encode_narrow(*f, x);
      EXPECT_EQ(decode_narrow(*f, got), decode_narrow(*f, best_bits)) << f->name << " x=" << x;
    }
  }
}

}  // namespace
