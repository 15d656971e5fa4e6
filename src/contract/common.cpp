#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kqual/contract/compare.hpp"
#include "kqual/contract/contract.hpp"
#include "kqual/core/error.hpp"
#include "kqual/core/narrow_float.hpp"

namespace kqual::contract {

std::string format_dims(const Dims& d) {
  std::string s;
  for (const auto& [k, v] : d) s += fmt::format("{}{}={}", s.empty() ? "" : ",", k, v);
  return s;
}

std::int64_t CaseSpec::dim(const std::string& name) const {
  auto it = dims.find(name);
  if (it == dims.end()) throw_error(ErrorKind::internal, fmt::format("case {} has no dim '{}'", id, name));
  return it->second;
}

Dims parse_shape(const Contract& c, const std::string& text) {
  const auto names = c.given_dims();
  Dims d;
  auto bad = [&](const std::string& why) {
    throw_error(ErrorKind::usage, fmt::format("shape '{}' for contract {}: {} (expected {})", text, c.name(), why,
                                              names.size() == 1 ? "a number, or " + names[0] + "=N"
                                                                : "k=v pairs for " + fmt::format("{}", fmt::join(names, ", "))));
  };
  auto number = [&](const std::string& s) {
    if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos) bad("'" + s + "' is not a positive integer");
    try {
      return std::stoll(s);
    } catch (const std::exception&) {
      bad("'" + s + "' is out of range");
    }
    return 0LL;
  };
  if (text.find('=') == std::string::npos) {
    if (names.size() != 1) bad("a bare number needs a contract with one dim");
    d[names[0]] = number(text);
    return c.complete_dims(d);
  }
  std::size_t pos = 0;
  while (pos <= text.size()) {
    std::size_t end = text.find(',', pos);
    if (end == std::string::npos) end = text.size();
    std::string item = text.substr(pos, end - pos);
    std::size_t eq = item.find('=');
    if (eq == std::string::npos) bad("'" + item + "' is not k=v");
    std::string k = item.substr(0, eq);
    if (std::find(names.begin(), names.end(), k) == names.end()) bad("unknown dim '" + k + "'");
    if (d.count(k)) bad("dim '" + k + "' given twice");
    d[k] = number(item.substr(eq + 1));
    pos = end + 1;
  }
  const auto optional = c.optional_dims();
  for (const auto& n : names)
    if (!d.count(n) && std::find(optional.begin(), optional.end(), n) == optional.end()) bad("dim '" + n + "' missing");
  return c.complete_dims(d);
}

std::optional<GpuReference> Contract::gpu_reference(const CaseData&) const { return std::nullopt; }

std::vector<Tensor> Contract::reference_from_gpu(const CaseData&, const std::vector<Tensor>&) const {
  throw_error(ErrorKind::internal, fmt::format("contract {} has no GPU reference", name()));
}

double unit_roundoff(DType t) {
  switch (t) {
    case DType::f32: return std::ldexp(1.0, -24);
    case DType::bf16: return std::ldexp(1.0, -8);
    case DType::f16: return std::ldexp(1.0, -11);
    case DType::f64: return std::ldexp(1.0, -53);
    case DType::e4m3: return std::ldexp(1.0, -4);
    case DType::e5m2: return std::ldexp(1.0, -3);
    default: return 0;
  }
}

double element_as_double(DType t, const std::uint8_t* p, std::size_t i) {
  switch (t) {
    case DType::f32: { float f; std::memcpy(&f, p + 4 * i, 4); return f; }
    case DType::bf16: { std::uint16_t b; std::memcpy(&b, p + 2 * i, 2); return bf16_to_f32(b); }
    case DType::f64: { double f; std::memcpy(&f, p + 8 * i, 8); return f; }
    case DType::i32: { std::int32_t v; std::memcpy(&v, p + 4 * i, 4); return double(v); }
    case DType::u32: { std::uint32_t v; std::memcpy(&v, p + 4 * i, 4); return double(v); }
    case DType::i64: { std::int64_t v; std::memcpy(&v, p + 8 * i, 8); return double(v); }
    case DType::f16: { std::uint16_t h; std::memcpy(&h, p + 2 * i, 2); return decode_narrow(kF16, h); }
    case DType::i8: return double(std::int8_t(p[i]));
    case DType::u8: return double(p[i]);
    case DType::e4m3: return decode_narrow(kE4M3, p[i]);
    case DType::e5m2: return decode_narrow(kE5M2, p[i]);
    case DType::boolean: return double(p[i]);  // a byte other than 0 or 1 shows as itself, never as "true"
  }
  throw_error(ErrorKind::internal, fmt::format("element_as_double: dtype {} not handled", to_string(t)));
}

void store_element(DType t, std::uint8_t* p, std::size_t i, double v) {
  switch (t) {
    case DType::f32: { float f = float(v); std::memcpy(p + 4 * i, &f, 4); return; }
    case DType::bf16: {
      // Round once from double: via f32 would round twice. Exact f32 values (the common case) are fine.
      float f = float(v);
      if (double(f) != v && std::isfinite(v)) {
        // Nudge to the f32 neighbour on v's side, so RNE to bf16 sees a value strictly on the right side.
        float toward = double(f) < v ? std::nextafter(f, INFINITY) : std::nextafter(f, -INFINITY);
        std::uint32_t u = f32_bits(f);
        if ((u & 0xFFFF) == 0x8000) f = toward;  // a tie in f32 that is not a tie in double
      }
      std::uint16_t b = f32_to_bf16_rne(f);
      std::memcpy(p + 2 * i, &b, 2);
      return;
    }
    case DType::f64: std::memcpy(p + 8 * i, &v, 8); return;
    case DType::i32: { std::int32_t x = std::int32_t(v); std::memcpy(p + 4 * i, &x, 4); return; }
    case DType::u32: { std::uint32_t x = std::uint32_t(v); std::memcpy(p + 4 * i, &x, 4); return; }
    case DType::i64: { std::int64_t x = std::int64_t(v); std::memcpy(p + 8 * i, &x, 8); return; }
    // One rounding from double, ties to even. f16 overflows to Inf (__float2half_rn); fp8 saturates to
    // its largest finite value, as the __nv_fp8_e4m3 / __nv_fp8_e5m2 constructors do (__NV_SATFINITE).
    case DType::f16: { const auto h = std::uint16_t(encode_narrow(kF16, v)); std::memcpy(p + 2 * i, &h, 2); return; }
    case DType::e4m3: p[i] = std::uint8_t(encode_narrow(kE4M3, v, Overflow::saturate)); return;
    case DType::e5m2: p[i] = std::uint8_t(encode_narrow(kE5M2, v, Overflow::saturate)); return;
    // Integers in range are exact; out of range (never a reference's integer output) clamps instead of
    // the undefined cast.
    case DType::i8: p[i] = std::uint8_t(std::int8_t(std::clamp(v, -128.0, 127.0))); return;
    case DType::u8: p[i] = std::uint8_t(std::clamp(v, 0.0, 255.0)); return;
    case DType::boolean: p[i] = v != 0 ? 1 : 0; return;
  }
  throw_error(ErrorKind::internal, fmt::format("store_element: dtype {} not handled", to_string(t)));
}

std::string degenerate_reason(const Tensor& expected) {
  const std::size_t n = std::size_t(expected.elements);
  if (n <= 1) return "";
  auto value = [&](std::size_t i) {
    return expected.ref.size() == n ? expected.ref[i] : element_as_double(expected.dtype, expected.bytes.data(), i);
  };
  const double first = value(0);
  bool all_equal = true, all_zero = true;
  for (std::size_t i = 0; i < n && (all_equal || all_zero); ++i) {
    double v = value(i);
    if (!(v == first) && !(std::isnan(v) && std::isnan(first))) all_equal = false;
    if (v != 0) all_zero = false;
  }
  if (all_zero) return fmt::format("every expected element of '{}' is zero", expected.name);
  if (all_equal) return fmt::format("every expected element of '{}' equals {:g}", expected.name, first);
  return "";
}

}  // namespace kqual::contract
