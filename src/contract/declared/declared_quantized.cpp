// The quantized error model: a reference's real value to the value an output must hold, and where
// either neighbour is admitted (docs/declared-contracts.md, "Error model per output").
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cfloat>
#include <climits>
#include <cmath>

#include "declared_contract.hpp"
#include "declared_spec.hpp"
#include "kqual/contract/compare.hpp"
#include "kqual/core/error.hpp"
#include "kqual/core/files.hpp"
#include "kqual/core/narrow_float.hpp"

namespace kqual::contract::declared {

// The smallest and largest value an integer dtype holds.
std::pair<double, double> integer_range(DType t) {
  switch (t) {
    case DType::i8: return {-128, 127};
    case DType::u8: return {0, 255};
    case DType::boolean: return {0, 1};
    case DType::i32: return {double(INT32_MIN), double(INT32_MAX)};
    case DType::u32: return {0, double(UINT32_MAX)};
    default: return {-0x1p63, 0x1p63};
  }
}

// The quantized model's rule: a real value to the value the output must hold.
double quantized_value(const ErrorModel& m, DType t, double v) {
  if (!is_integral(t)) {
    const NarrowFormat* f = t == DType::f16 ? &kF16 : t == DType::e4m3 ? &kE4M3 : t == DType::e5m2 ? &kE5M2 : nullptr;
    if (f) return decode_narrow(*f, encode_narrow(*f, v, m.saturate ? Overflow::saturate : Overflow::to_special));
    const double r = rounded_to(t, v);
    if (!m.saturate || !std::isinf(r) || std::isinf(v)) return r;
    const double largest = t == DType::f64 ? DBL_MAX : t == DType::bf16 ? double(bf16_to_f32(0x7F7F)) : double(FLT_MAX);
    return std::copysign(largest, v);
  }
  if (!std::isfinite(v)) return v;  // refused by the caller as a contract error
  double q = v;
  switch (m.rounding) {
    case ErrorModel::half_even: q = std::nearbyint(v); break;
    case ErrorModel::half_away: q = std::round(v); break;
    case ErrorModel::floor: q = std::floor(v); break;
    case ErrorModel::ceil: q = std::ceil(v); break;
    case ErrorModel::toward_zero: q = std::trunc(v); break;
  }
  if (m.clamp) return std::clamp(q, m.clamp->first, m.clamp->second);
  if (m.saturate) return std::clamp(q, integer_range(t).first, integer_range(t).second);
  return q;
}

void DeclaredContract::quantized_expected(const TensorDef& td, const CaseData& data, const std::vector<double>& real, Tensor& e) const {
  // The value the output must hold, and where the kernel's f32 arithmetic may land on either side
  // of a rounding boundary, both neighbours: ref = their midpoint, bound = half their distance (no
  // third value of the dtype lies within it).
  const ErrorModel& m = td.error;
  const std::size_t n = std::size_t(e.elements);
  e.ref.resize(n);
  e.bound.assign(n, 0.0);
  std::atomic<std::size_t> bad{n};
  parallel_for((n + (1u << 20) - 1) >> 20, [&](std::size_t c) {
    for (std::size_t i = c << 20; i < std::min(n, (c + 1) << 20); ++i) {
      const double v = real[i];
      const double q = quantized_value(m, e.dtype, v);
      if (is_integral(e.dtype) && !(q >= integer_range(e.dtype).first && q <= integer_range(e.dtype).second)) {
        std::size_t was = bad.load();
        while (i < was && !bad.compare_exchange_weak(was, i)) {
        }
        continue;
      }
      store_element(e.dtype, e.bytes.data(), i, q);
      e.ref[i] = q;
      const double delta = m.band * 0x1p-24 * std::fabs(v);
      if (!(delta > 0) || !std::isfinite(v)) continue;
      // Exactly on a boundary (a tie of half_even, an integer of floor): the rule decides, that is
      // what it is for; the neighbours are admitted only for values the kernel computes inexactly.
      if (quantized_value(m, e.dtype, std::nextafter(v, -INFINITY)) != quantized_value(m, e.dtype, std::nextafter(v, INFINITY))) continue;
      const double lo = quantized_value(m, e.dtype, v - delta), hi = quantized_value(m, e.dtype, v + delta);
      if (lo != hi && std::isfinite(lo) && std::isfinite(hi)) {
        e.ref[i] = lo / 2 + hi / 2;
        e.bound[i] = std::fabs(hi - lo) / 2;
      }
    }
  });
  if (bad.load() < n) {
    const std::size_t i = bad.load();
    throw_error(ErrorKind::input, fmt::format("contract {}: reference output '{}' on case {}: element {} = {} quantizes to {}, outside {} "
                                              "(declare saturate = true or a clamp, or fix the reference)",
                                              s_.file.string(), td.name, data.spec.id, i, real[i], quantized_value(m, e.dtype, real[i]), to_string(e.dtype)));
  }
  to_storage(s_, e, data.dims);
}

}  // namespace kqual::contract::declared
