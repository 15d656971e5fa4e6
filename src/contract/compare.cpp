// Output comparison: bit-exact or under per-element bounds. The cost of judging an output is bounded
// by its size, never by how many of its elements are wrong: each element is classified with a few
// integer and floating-point operations, mismatches are counted per class, and only the first few
// of each class (and the worst one) are formatted for the report. An output that is wrong at every
// one of 2^29 elements once cost a formatted string per element, minutes of coordinator CPU per
// case; tests/contract/compare_scale_test.cpp keeps that from coming back.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kqual/contract/compare.hpp"
#include "kqual/core/error.hpp"

namespace kqual::contract {

namespace {

bool is_float(DType t) { return is_floating(t); }

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

}  // namespace

ElementScan scan_elements(std::size_t n, const std::function<void(std::size_t, std::size_t, ElementScan&)>& scan_range) {
  // Chunks of 2^20 elements, scanned in parallel into their own tallies, merged in index order so
  // that "first" means the lowest index whatever the thread count.
  constexpr std::size_t kChunk = std::size_t(1) << 20;
  const std::size_t chunks = (n + kChunk - 1) / kChunk;
  if (chunks <= 1) {
    ElementScan one;
    if (n) scan_range(0, n, one);
    return one;
  }
  std::vector<ElementScan> part(chunks);
  parallel_for(chunks, [&](std::size_t k) { scan_range(k * kChunk, std::min(n, (k + 1) * kChunk), part[k]); });
  ElementScan all;
  for (const ElementScan& p : part) all.merge(p);
  return all;
}

void ElementScan::merge(const ElementScan& o) {
  for (int k = 0; k < kClasses; ++k) {
    cls[k].count += o.cls[k].count;
    for (std::size_t i : o.cls[k].first)
      if (cls[k].first.size() < kKeepExamples) cls[k].first.push_back(i);
  }
  if (o.worst_index != kNone && (worst_index == kNone || o.worst_excess > worst_excess)) {
    worst_excess = o.worst_excess;
    worst_error = o.worst_error;
    worst_index = o.worst_index;
  }
}

std::int64_t ElementScan::mismatches() const {
  std::int64_t s = 0;
  for (const auto& c : cls) s += c.count;
  return s;
}

Comparison ElementScan::verdict(const std::string& tensor, std::size_t n, const std::function<std::string(std::size_t)>& describe,
                                std::uint8_t poison_byte, const std::string& payload_text) const {
  // The later examples, by index only: the report names where the next ones are without paying for
  // their values.
  auto examples = [&](const ClassTally& c) {
    std::string s = describe(c.first.front());
    if (c.first.size() > 1) {
      std::vector<std::string> more;
      for (std::size_t k = 1; k < c.first.size(); ++k) more.push_back(fmt::format("[{}]", c.first[k]));
      s += fmt::format("; next at {}", fmt::join(more, ", "));
    }
    return s;
  };
  auto indices = [](const ClassTally& c) { return std::vector<std::int64_t>(c.first.begin(), c.first.end()); };
  Comparison r;
  auto fail = [](const char* code, std::string detail, std::int64_t count) {
    Comparison c;
    c.ok = false;
    c.code = code;
    c.detail = std::move(detail);
    c.mismatches = count;
    return c;
  };
  if (const ClassTally& u = cls[int(Mismatch::unwritten)]; u.count) {
    r = fail("unwritten_output",
         fmt::format("{} of {} elements of '{}' never written; first: {} (the poison pattern 0x{:02x}..){}", u.count, n, tensor,
                     describe(u.first.front()), poison_byte,
                     u.first.size() > 1 ? fmt::format("; next at [{}]", fmt::join(u.first.begin() + 1, u.first.end(), "], [")) : ""),
         u.count);
    r.examples = indices(u);
  } else if (const ClassTally& p = cls[int(Mismatch::payload)]; p.count) {
    r = fail("wrong_result", fmt::format("{} NaN elements of '{}' {}; first: {}", p.count, tensor, payload_text, examples(p)), p.count);
    r.examples = indices(p);
  } else if (const ClassTally& q = cls[int(Mismatch::nan_policy)]; q.count) {
    r = fail("nan_policy", fmt::format("{} elements of '{}' violate the NaN policy; first: {}", q.count, tensor, examples(q)), q.count);
    r.examples = indices(q);
  } else if (const ClassTally& w = cls[int(Mismatch::wrong)]; w.count) {
    std::string worst;
    if (worst_index != kNone)
      worst = fmt::format("; worst: {}[{}] error {:.3g} is {:.3g}x the bound", tensor, worst_index, worst_error, worst_excess);
    r = fail("wrong_result", fmt::format("{} of {} elements of '{}' are wrong; first: {}{}", w.count, n, tensor, examples(w), worst),
             w.count);
    r.examples = indices(w);
  }
  return r;
}

std::string format_element(DType t, const std::uint8_t* p, std::size_t i) {
  std::uint64_t bits = bits_at(t, p, i);
  if (!is_float(t)) return fmt::format("{}", element_as_double(t, p, i));
  return fmt::format("{:.9g} (0x{:0{}x})", element_as_double(t, p, i), bits, 2 * dtype_size(t));
}

namespace {

// NaN from the storage bits alone (no conversion per element): exponent all ones, mantissa not zero.
bool nan_bits(DType t, std::uint64_t b) {
  switch (t) {
    case DType::f32: return (b & 0x7FFFFFFFu) > 0x7F800000u;
    case DType::bf16: return (b & 0x7FFFu) > 0x7F80u;
    case DType::f16: return (b & 0x7FFFu) > 0x7C00u;
    case DType::f64: return (b & 0x7FFFFFFFFFFFFFFFull) > 0x7FF0000000000000ull;
    case DType::e4m3: return (b & 0x7Fu) == 0x7Fu;  // no Inf: S.1111.111 is the only NaN
    case DType::e5m2: return (b & 0x7Fu) > 0x7Cu;
    default: return false;
  }
}

// The exact comparison's inner loop for one element width: fixed-size loads the compiler keeps in
// registers (a memcpy of a run-time size per element cost most of the time).
template <typename U>
void scan_exact(DType t, const std::uint8_t* want, const std::uint8_t* actual, std::uint64_t poison, std::size_t lo, std::size_t hi,
                ElementScan& y) {
  const bool fl = is_float(t);
  for (std::size_t i = lo; i < hi; ++i) {
    U e, a;
    std::memcpy(&e, want + i * sizeof(U), sizeof(U));
    std::memcpy(&a, actual + i * sizeof(U), sizeof(U));
    if (e == a) continue;
    const bool en = fl && nan_bits(t, e), an = fl && nan_bits(t, a);
    if (en && an) continue;
    y.note(std::uint64_t(a) == poison ? Mismatch::unwritten : en != an ? Mismatch::nan_policy : Mismatch::wrong, i);
  }
}

}  // namespace

Comparison compare_exact(const Tensor& expected, const std::uint8_t* actual, std::uint8_t poison_byte) {
  const DType t = expected.dtype;
  const std::size_t n = std::size_t(expected.elements);
  const std::uint64_t poison = poison_bits(t, poison_byte);
  const std::uint8_t* want = expected.bytes.data();
  ElementScan scan = scan_elements(n, [&](std::size_t lo, std::size_t hi, ElementScan& y) {
    switch (dtype_size(t)) {
      case 1: scan_exact<std::uint8_t>(t, want, actual, poison, lo, hi, y); break;
      case 2: scan_exact<std::uint16_t>(t, want, actual, poison, lo, hi, y); break;
      case 4: scan_exact<std::uint32_t>(t, want, actual, poison, lo, hi, y); break;
      case 8: scan_exact<std::uint64_t>(t, want, actual, poison, lo, hi, y); break;
      default: throw_error(ErrorKind::internal, fmt::format("compare_exact: element size {}", dtype_size(t)));
    }
  });
  return scan.verdict(expected.name, n, [&](std::size_t i) {
    return fmt::format("{}[{}]: expected {}, got {}", expected.name, i, format_element(t, want, i), format_element(t, actual, i));
  }, poison_byte);
}

Comparison compare_bounded(const Tensor& expected, const std::uint8_t* actual, std::uint8_t poison_byte) {
  const DType t = expected.dtype;
  const std::size_t n = std::size_t(expected.elements);
  if (expected.ref.size() != n || expected.bound.size() != n)
    throw_error(ErrorKind::internal, fmt::format("tensor '{}': reference has {} values and {} bounds for {} elements",
                                                 expected.name, expected.ref.size(), expected.bound.size(), n));
  const std::uint64_t poison = poison_bits(t, poison_byte);
  ElementScan scan = scan_elements(n, [&](std::size_t lo, std::size_t hi, ElementScan& y) {
    for (std::size_t i = lo; i < hi; ++i) {
      const double r = expected.ref[i], b = expected.bound[i];
      const double a = element_as_double(t, actual, i);
      const bool rn = std::isnan(r), an = std::isnan(a);
      bool ok;
      if (rn || an) ok = rn && an;
      else if (std::isinf(r) || std::isinf(a)) ok = r == a || (std::isinf(a) && rounded_to(t, r) == a);  // a correctly rounded overflow
      else ok = std::fabs(a - r) <= b;
      if (ok) continue;
      if (bits_at(t, actual, i) == poison) y.note(Mismatch::unwritten, i);
      else if (rn != an) y.note(Mismatch::nan_policy, i);
      else if (std::isfinite(r) && std::isfinite(a)) y.note(Mismatch::wrong, i, std::fabs(a - r), b > 0 ? std::fabs(a - r) / b : INFINITY);
      else y.note(Mismatch::wrong, i);
    }
  });
  return scan.verdict(expected.name, n, [&](std::size_t i) {
    return fmt::format("{}[{}]: expected {:.9g} ± {:.3g}, got {}", expected.name, i, expected.ref[i], expected.bound[i],
                       format_element(t, actual, i));
  }, poison_byte);
}

double rounded_to(DType t, double v) {
  std::uint8_t buf[8] = {};
  store_element(t, buf, 0, v);
  return element_as_double(t, buf, 0);
}

bool is_poison(DType t, const std::uint8_t* p, std::size_t i, std::uint8_t poison_byte) {
  return bits_at(t, p, i) == poison_bits(t, poison_byte);
}

Comparison compare_output(const Tensor& expected, const std::uint8_t* actual, std::uint8_t poison_byte) {
  return expected.bound.empty() ? compare_exact(expected, actual, poison_byte) : compare_bounded(expected, actual, poison_byte);
}

}  // namespace kqual::contract
