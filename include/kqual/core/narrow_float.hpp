#pragma once
// The narrow floating formats kernels ship in, encoded and decoded on the host exactly as the
// IEEE 754 rules and the CUDA conversion intrinsics define them, so that references, inputs and
// comparisons agree bit for bit with what a kernel stores:
//   f16        IEEE binary16: 1 sign, 5 exponent (bias 15), 10 mantissa bits; inf and NaN.
//   fp8 e4m3   OCP "E4M3FN": 1, 4 (bias 7), 3; no inf, NaN only at S.1111.111; largest 448.
//   fp8 e5m2   OCP E5M2: 1, 5 (bias 15), 2; IEEE-like inf and NaN; largest 57344.
// Encoding rounds to nearest, ties to even (cvt.rn), subnormals included. What happens past the
// largest finite value is the caller's choice, as with __nv_cvt_float_to_fp8's __NV_NOSAT /
// __NV_SATFINITE: to_special gives inf where the format has one (f16, e5m2) and NaN where it does
// not (e4m3); saturate gives the largest finite value of that sign (inf inputs included). NaN in
// gives the format's canonical quiet NaN (f16 0x7E00, e4m3 0x7F, e5m2 0x7E), sign kept.
#include <cstdint>

namespace kqual {

struct NarrowFormat {
  const char* name;
  int exponent_bits, mantissa_bits, bias;
  bool has_inf;          // all-ones exponent with a zero mantissa is inf (else a normal number)
  std::uint8_t nan_bits;  // canonical NaN, sign bit clear
  double max_finite;
  double min_normal() const;
  double min_subnormal() const;
};

inline constexpr NarrowFormat kF16{"f16", 5, 10, 15, true, 0, 65504.0};  // NaN: 0x7E00 (nan16)
inline constexpr NarrowFormat kE4M3{"e4m3", 4, 3, 7, false, 0x7F, 448.0};
inline constexpr NarrowFormat kE5M2{"e5m2", 5, 2, 15, true, 0x7E, 57344.0};

enum class Overflow { to_special, saturate };

// Any double (a float widened is exact) to the format's bits, and back (exact).
std::uint32_t encode_narrow(const NarrowFormat& f, double v, Overflow o = Overflow::to_special);
double decode_narrow(const NarrowFormat& f, std::uint32_t bits);
bool narrow_is_nan(const NarrowFormat& f, std::uint32_t bits);

inline std::uint16_t f32_to_f16_rn(float v) { return std::uint16_t(encode_narrow(kF16, double(v))); }
inline float f16_to_f32(std::uint16_t h) { return float(decode_narrow(kF16, h)); }

}  // namespace kqual
