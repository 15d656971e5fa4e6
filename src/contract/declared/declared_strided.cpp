// Strided tensors of a declared contract (docs/declared-contracts.md, "Strided tensors"): the harness
// holds them in their storage (rows x stride elements), the reference sees their dense view (rows x
// cols), inputs carry poison in the padding and outputs must leave it as the harness poisoned it.
#include <fmt/format.h>

#include <cstring>
#include <optional>
#include <type_traits>

#include "declared_spec.hpp"
#include "kqual/contract/compare.hpp"
#include "kqual/core/error.hpp"

namespace kqual::contract::declared {
namespace {

struct Rows {
  std::size_t rows = 0, cols = 0, stride = 0;
};

// The rows of a strided tensor in a case; nullopt for a dense one.
std::optional<Rows> rows_of(const Spec& s, const std::string& tensor, const Dims& all) {
  const TensorDef* td = s.tensor(tensor);
  if (!td || td->layout != "strided") return std::nullopt;
  return Rows{std::size_t(all.at(td->shape[0])), std::size_t(all.at(td->shape[1])), std::size_t(all.at(td->stride_axis))};
}

}  // namespace

Tensor dense_view(const Spec& s, const Tensor& t, const Dims& all) {
  const auto r = rows_of(s, t.name, all);
  if (!r) return t;
  const std::size_t es = dtype_size(t.dtype);
  if (t.bytes.size() != r->rows * r->stride * es)
    throw_error(ErrorKind::internal, fmt::format("strided tensor '{}': {} bytes, expected {} rows of stride {} x {} bytes", t.name,
                                                 t.bytes.size(), r->rows, r->stride, es));
  Tensor d;
  d.name = t.name;
  d.dtype = t.dtype;
  d.elements = std::int64_t(r->rows * r->cols);
  d.bytes.resize(r->rows * r->cols * es);
  for (std::size_t i = 0; i < r->rows; ++i) std::memcpy(d.bytes.data() + i * r->cols * es, t.bytes.data() + i * r->stride * es, r->cols * es);
  return d;
}

std::vector<Tensor> dense_inputs(const std::vector<Tensor>& in, const Dims& all, const Spec& s) {
  std::vector<Tensor> v;
  v.reserve(in.size());
  for (const auto& t : in) v.push_back(dense_view(s, t, all));
  return v;
}

void to_storage(const Spec& s, Tensor& t, const Dims& all) {
  const auto r = rows_of(s, t.name, all);
  if (!r) return;
  const std::size_t es = dtype_size(t.dtype), n = r->rows * r->stride;
  if (std::size_t(t.elements) != r->rows * r->cols)
    throw_error(ErrorKind::internal, fmt::format("output '{}': {} elements, expected {} x {}", t.name, t.elements, r->rows, r->cols));
  auto spread = [&](auto& v, std::size_t width) {
    using V = std::decay_t<decltype(v)>;
    if (v.empty()) return;
    V out(n * width);
    for (std::size_t i = 0; i < r->rows; ++i) {
      std::memcpy(out.data() + i * r->stride * width, v.data() + i * r->cols * width, r->cols * width * sizeof(v[0]));
      // Padding holds element 0: a constant output reads as constant (degenerate_reason), and
      // nothing in it is ever compared as a value.
      for (std::size_t j = r->cols; j < r->stride; ++j) std::memcpy(out.data() + (i * r->stride + j) * width, v.data(), width * sizeof(v[0]));
    }
    v = std::move(out);
  };
  spread(t.bytes, es);
  spread(t.ref, 1);
  spread(t.bound, 1);
  spread(t.alt, 1);
  t.elements = std::int64_t(n);
  t.row_length = std::int64_t(r->cols);
  t.row_stride = std::int64_t(r->stride);
}

void poison_padding(const Spec& s, Tensor& t, const Dims& all, std::uint64_t seed) {
  const auto r = rows_of(s, t.name, all);
  if (!r || r->stride == r->cols) return;
  const std::size_t es = dtype_size(t.dtype);
  const bool integer = is_integral(t.dtype);
  std::vector<std::uint8_t> pattern(es, 0x7F);
  if (!integer && (seed & 1)) {
    // A quiet NaN with a payload (never one a computation makes by itself).
    if (t.dtype == DType::f32) pattern = {0x5A, 0xA5, 0xC1, 0x7F};
    else if (t.dtype == DType::bf16) pattern = {0xC5, 0x7F};
    else if (t.dtype == DType::f16) pattern = {0x5A, 0x7E};
    else if (t.dtype == DType::f64) pattern = {0x5A, 0xA5, 0x5A, 0xA5, 0x00, 0x00, 0xF8, 0x7F};
  }
  for (std::size_t i = 0; i < r->rows; ++i)
    for (std::size_t j = r->cols; j < r->stride; ++j) std::memcpy(t.bytes.data() + (i * r->stride + j) * es, pattern.data(), es);
  t.row_length = std::int64_t(r->cols);
  t.row_stride = std::int64_t(r->stride);
}

Comparison check_padding(const Tensor& expected, const std::uint8_t* actual, std::uint8_t poison_byte) {
  Comparison c;
  if (expected.row_stride <= expected.row_length || expected.row_length <= 0) return c;
  const std::size_t es = dtype_size(expected.dtype), cols = std::size_t(expected.row_length), stride = std::size_t(expected.row_stride);
  const std::size_t rows = std::size_t(expected.elements) / stride;
  std::size_t first = 0;
  for (std::size_t i = 0; i < rows; ++i)
    for (std::size_t j = cols; j < stride; ++j) {
      const std::uint8_t* p = actual + (i * stride + j) * es;
      bool kept = true;
      for (std::size_t b = 0; b < es; ++b) kept &= p[b] == poison_byte;
      if (kept) continue;
      if (c.mismatches++ == 0) first = i * stride + j;
      if (c.examples.size() < 3) c.examples.push_back(std::int64_t(i * stride + j));
    }
  if (c.mismatches == 0) return c;
  c.ok = false;
  c.code = "out_of_bounds_write";
  c.detail = fmt::format("'{}' is strided (rows of {} elements, one every {}): {} element(s) of the padding between rows were "
                         "written, the first at row {}, column {} (storage element {}): {} where the harness left 0x{:02x} bytes",
                         expected.name, cols, stride, c.mismatches, first / stride, first % stride, first,
                         format_element(expected.dtype, actual, first), poison_byte);
  return c;
}

std::vector<std::uint8_t> dense_bytes(const Tensor& expected, const std::uint8_t* actual) {
  const std::size_t es = dtype_size(expected.dtype), cols = std::size_t(expected.row_length), stride = std::size_t(expected.row_stride);
  const std::size_t rows = std::size_t(expected.elements) / stride;
  std::vector<std::uint8_t> out(rows * cols * es);
  for (std::size_t i = 0; i < rows; ++i) std::memcpy(out.data() + i * cols * es, actual + i * stride * es, cols * es);
  return out;
}

Tensor dense_expected(const Tensor& expected) {
  Tensor d;
  d.name = expected.name;
  d.dtype = expected.dtype;
  const std::size_t cols = std::size_t(expected.row_length), stride = std::size_t(expected.row_stride);
  const std::size_t rows = std::size_t(expected.elements) / stride;
  d.elements = std::int64_t(rows * cols);
  d.bytes = dense_bytes(expected, expected.bytes.data());
  auto take = [&](const std::vector<double>& v, std::vector<double>& out) {
    if (v.empty()) return;
    out.resize(rows * cols);
    for (std::size_t i = 0; i < rows; ++i) std::memcpy(out.data() + i * cols, v.data() + i * stride, cols * sizeof(double));
  };
  take(expected.ref, d.ref);
  take(expected.bound, d.bound);
  take(expected.alt, d.alt);
  return d;
}

}  // namespace kqual::contract::declared
