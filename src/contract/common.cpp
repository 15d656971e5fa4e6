#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kqual/contract/compare.hpp"
#include "kqual/contract/contract.hpp"
#include "kqual/core/error.hpp"

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
  const auto names = c.dims();
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
    return d;
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
  for (const auto& n : names)
    if (!d.count(n)) bad("dim '" + n + "' missing");
  return d;
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
    case DType::f16: break;
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
    case DType::f16: break;
  }
  throw_error(ErrorKind::internal, fmt::format("store_element: dtype {} not handled", to_string(t)));
}

namespace {

bool is_float(DType t) { return t == DType::f32 || t == DType::bf16 || t == DType::f16 || t == DType::f64; }

std::uint64_t bits_at(DType t, const std::uint8_t* p, std::size_t i) {
  std::uint64_t v = 0;
  std::size_t es = dtype_size(t);
  std::memcpy(&v, p + i * es, es);
  return v;
}

std::uint64_t poison_bits(DType t, std::uint8_t poison_byte) {
  std::uint64_t v = 0;
  for (std::size_t b = 0; b < dtype_size(t); ++b) v |= std::uint64_t(poison_byte) << (8 * b);
  return v;
}

struct Tally {
  std::int64_t unwritten = 0, nan_bad = 0, wrong = 0;
  std::string first_unwritten, first_nan, first_wrong;
  double worst_excess = 0;  // largest |err| / bound over wrong elements
  std::string worst;
  Comparison result(const std::string& tensor, std::size_t n) const {
    if (unwritten)
      return {false, "unwritten_output",
              fmt::format("{} of {} elements of '{}' never written; first: {}", unwritten, n, tensor, first_unwritten), unwritten};
    if (nan_bad)
      return {false, "nan_policy", fmt::format("{} elements of '{}' violate the NaN policy; first: {}", nan_bad, tensor, first_nan),
              nan_bad};
    if (wrong)
      return {false, "wrong_result",
              fmt::format("{} of {} elements of '{}' are wrong; first: {}{}", wrong, n, tensor, first_wrong,
                          worst.empty() ? "" : "; worst: " + worst),
              wrong};
    return {};
  }
};

}  // namespace

std::string format_element(DType t, const std::uint8_t* p, std::size_t i) {
  std::uint64_t bits = bits_at(t, p, i);
  if (!is_float(t)) return fmt::format("{}", element_as_double(t, p, i));
  return fmt::format("{:.9g} (0x{:0{}x})", element_as_double(t, p, i), bits, 2 * dtype_size(t));
}

Comparison compare_exact(const Tensor& expected, const std::uint8_t* actual, std::uint8_t poison_byte) {
  const DType t = expected.dtype;
  const std::size_t n = std::size_t(expected.elements);
  const std::uint64_t poison = poison_bits(t, poison_byte);
  const bool fl = is_float(t);
  Tally y;
  for (std::size_t i = 0; i < n; ++i) {
    std::uint64_t e = bits_at(t, expected.bytes.data(), i), a = bits_at(t, actual, i);
    if (e == a) continue;
    bool en = fl && std::isnan(element_as_double(t, expected.bytes.data(), i));
    bool an = fl && std::isnan(element_as_double(t, actual, i));
    if (en && an) continue;
    std::string where = fmt::format("{}[{}]: expected {}, got {}", expected.name, i, format_element(t, expected.bytes.data(), i),
                                    format_element(t, actual, i));
    if (a == poison) {
      if (!y.unwritten++) y.first_unwritten = where + fmt::format(" (the poison pattern 0x{:02x}..)", poison_byte);
    } else if (en != an) {
      if (!y.nan_bad++) y.first_nan = where;
    } else if (!y.wrong++) {
      y.first_wrong = where;
    }
  }
  return y.result(expected.name, n);
}

Comparison compare_bounded(const Tensor& expected, const std::uint8_t* actual, std::uint8_t poison_byte) {
  const DType t = expected.dtype;
  const std::size_t n = std::size_t(expected.elements);
  if (expected.ref.size() != n || expected.bound.size() != n)
    throw_error(ErrorKind::internal, fmt::format("tensor '{}': reference has {} values and {} bounds for {} elements",
                                                 expected.name, expected.ref.size(), expected.bound.size(), n));
  const std::uint64_t poison = poison_bits(t, poison_byte);
  Tally y;
  for (std::size_t i = 0; i < n; ++i) {
    const double r = expected.ref[i], b = expected.bound[i];
    const double a = element_as_double(t, actual, i);
    const bool rn = std::isnan(r), an = std::isnan(a);
    bool ok;
    if (rn || an) ok = rn && an;
    else if (std::isinf(r) || std::isinf(a)) ok = r == a;
    else ok = std::fabs(a - r) <= b;
    if (ok) continue;
    std::string where = fmt::format("{}[{}]: expected {:.9g} ± {:.3g}, got {}", expected.name, i, r, b, format_element(t, actual, i));
    if (bits_at(t, actual, i) == poison) {
      if (!y.unwritten++) y.first_unwritten = where + fmt::format(" (the poison pattern 0x{:02x}..)", poison_byte);
    } else if (rn != an) {
      if (!y.nan_bad++) y.first_nan = where;
    } else {
      if (!y.wrong++) y.first_wrong = where;
      double excess = b > 0 ? std::fabs(a - r) / b : INFINITY;
      if (std::isfinite(r) && std::isfinite(a) && (y.worst.empty() || excess > y.worst_excess)) {
        y.worst_excess = excess;
        y.worst = fmt::format("{}[{}] error {:.3g} is {:.3g}x the bound", expected.name, i, std::fabs(a - r), excess);
      }
    }
  }
  return y.result(expected.name, n);
}

Comparison compare_output(const Tensor& expected, const std::uint8_t* actual, std::uint8_t poison_byte) {
  return expected.bound.empty() ? compare_exact(expected, actual, poison_byte) : compare_bounded(expected, actual, poison_byte);
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
