// Two runs on the same inputs, measured (run_to_run.hpp).
#include "kqual/check/run_to_run.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "kqual/contract/compare.hpp"

namespace kqual::check {

RunToRunPolicy run_to_run_policy(const contract::Contract& c, const contract::Supports& s, DType t) {
  const contract::Reproducibility r = c.reproducibility(t);
  RunToRunPolicy p{.required = r.required, .reason = r.reason, .opt_out = r.opt_out, .rule_from = "contract"};
  if (!r.required && s.deterministic.value_or(false)) {
    p.required = true;
    p.rule_from = "manifest";
    p.reason = fmt::format("the candidate's manifest claims it ([supports] deterministic = true), although contract {} does not "
                           "require it ({})",
                           c.name(), r.reason);
    p.opt_out = "remove [supports] deterministic = true from the manifest: the contract then admits a difference within its "
                "error bound";
  }
  return p;
}

namespace {

std::uint64_t r2r_bits(DType t, const std::uint8_t* p, std::size_t i) {
  std::uint64_t v = 0;
  const std::size_t w = dtype_size(t);
  std::memcpy(&v, p + i * w, w);  // little-endian hosts: the low bytes
  return v;
}

bool r2r_is_float(DType t) { return t == DType::f32 || t == DType::bf16 || t == DType::f16 || t == DType::f64; }

// One element's difference, with the element's bound.
struct ElementGap {
  double ulps = 0, abs = 0;
  bool beyond = false;
  double ratio = 0;
};

ElementGap element_gap(DType t, const std::uint8_t* a, const std::uint8_t* b, std::size_t i, double bound) {
  ElementGap g;
  g.ulps = ulp_distance(t, a, b, i);
  const double x = contract::element_as_double(t, a, i), y = contract::element_as_double(t, b, i);
  if (std::isnan(x) || std::isnan(y)) g.abs = std::isnan(x) && std::isnan(y) ? 0 : INFINITY;
  else g.abs = x == y ? 0 : std::fabs(x - y);  // x == y: equal infinities (their difference is NaN)
  g.ratio = g.abs == 0 ? 0 : bound > 0 ? g.abs / bound : INFINITY;
  g.beyond = !(g.abs <= bound);  // an infinite gap is beyond any bound
  return g;
}

}  // namespace

double ulp_distance(DType t, const std::uint8_t* a, const std::uint8_t* b, std::size_t i) {
  if (!r2r_is_float(t)) {
    const double x = contract::element_as_double(t, a, i), y = contract::element_as_double(t, b, i);
    return std::fabs(x - y);
  }
  const std::uint64_t x = r2r_bits(t, a, i), y = r2r_bits(t, b, i);
  const int width = int(8 * dtype_size(t));
  const std::uint64_t sign = std::uint64_t(1) << (width - 1);
  const std::uint64_t mag = sign - 1;
  const bool xn = std::isnan(contract::element_as_double(t, a, i)), yn = std::isnan(contract::element_as_double(t, b, i));
  if (xn || yn) return xn && yn ? 0.0 : INFINITY;
  const std::uint64_t mx = x & mag, my = y & mag;
  // Same sign: the magnitudes' distance; opposite signs: both distances to zero (-0 and +0 meet).
  const std::uint64_t d = (x & sign) == (y & sign) ? (mx > my ? mx - my : my - mx) : mx + my;
  return double(d);
}

OutputDifference measure_difference(const contract::Tensor& expected, const std::uint8_t* a, const std::uint8_t* b) {
  OutputDifference o;
  o.name = expected.name;
  o.dtype = expected.dtype;
  const DType t = expected.dtype;
  const std::size_t n = std::size_t(expected.elements);
  const bool bounded = expected.bound.size() == n && n > 0;
  const bool strided = expected.row_stride > 0 && expected.row_length > 0;
  const std::size_t row = strided ? std::size_t(expected.row_length) : n, step = strided ? std::size_t(expected.row_stride) : n;
  // Chunks of 2^20 elements on every core, merged in order (an output of 2^29 elements costs one
  // pass, as the reference comparison does).
  constexpr std::size_t kChunk = std::size_t(1) << 20;
  const std::size_t chunks = std::max<std::size_t>(1, (n + kChunk - 1) / kChunk);
  std::vector<OutputDifference> part(chunks);
  const std::size_t es = dtype_size(t);
  contract::parallel_for(chunks, [&](std::size_t k) {
    OutputDifference& p = part[k];
    const std::size_t lo = k * kChunk, hi = std::min(n, lo + kChunk);
    for (std::size_t i = lo; i < hi; ++i) {
      if (strided && i % step >= row) continue;  // padding: each run's own poison
      ++p.elements;
      if (std::memcmp(a + i * es, b + i * es, es) == 0) continue;
      ++p.differing;
      const double bound = bounded ? expected.bound[i] : 0.0;
      const ElementGap g = element_gap(t, a, b, i, bound);
      p.max_ulps = std::max(p.max_ulps, g.ulps);
      p.max_abs = std::max(p.max_abs, g.abs);
      if (g.beyond) ++p.beyond_bound;
      if (p.worst_index < 0 || g.ratio > p.ratio) {
        p.ratio = g.ratio;
        p.bound = bound;
        p.worst_index = std::int64_t(i);
      }
    }
  });
  for (const auto& p : part) o.merge(p);
  return o;
}

bool same_bytes(const contract::Tensor& expected, const std::uint8_t* a, const std::uint8_t* b) {
  const std::size_t es = dtype_size(expected.dtype), n = std::size_t(expected.elements);
  if (expected.row_stride <= 0 || expected.row_length <= 0) return std::memcmp(a, b, n * es) == 0;
  const std::size_t row = std::size_t(expected.row_length) * es, step = std::size_t(expected.row_stride) * es;
  for (std::size_t p = 0; p + row <= n * es; p += step)
    if (std::memcmp(a + p, b + p, row) != 0) return false;
  return true;
}

void OutputDifference::merge(const OutputDifference& later) {
  elements += later.elements;
  differing += later.differing;
  beyond_bound += later.beyond_bound;
  max_ulps = std::max(max_ulps, later.max_ulps);
  max_abs = std::max(max_abs, later.max_abs);
  if (later.worst_index >= 0 && (worst_index < 0 || later.ratio > ratio)) {
    ratio = later.ratio;
    bound = later.bound;
    worst_index = later.worst_index;
  }
}

namespace {
json finite_or_null(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }
}  // namespace

json OutputDifference::to_json() const {
  return json{{"name", name},          {"dtype", std::string(to_string(dtype))},
              {"elements", elements},  {"differing", differing},
              {"beyond_bound", beyond_bound}, {"within_bound", within_bound()},
              {"max_ulps", finite_or_null(max_ulps)}, {"max_abs", finite_or_null(max_abs)},
              {"bound", bound},        {"ratio", finite_or_null(ratio)},
              {"worst_index", worst_index}};
}

bool RunToRun::within_bound() const {
  return std::all_of(outputs.begin(), outputs.end(), [](const OutputDifference& o) { return o.within_bound(); });
}

namespace {
// The output whose worst element is furthest past (or closest to) its bound.
const OutputDifference* worst_output(const std::vector<OutputDifference>& v) {
  const OutputDifference* w = nullptr;
  for (const auto& o : v)
    if (!w || o.ratio > w->ratio) w = &o;
  return w;
}
std::string gap_text(double v) { return std::isfinite(v) ? fmt::format("{:.3g}", v) : std::string("inf"); }
}  // namespace

std::string RunToRun::figures() const {
  if (outputs.empty()) return "no difference between two runs";
  double ulps = 0, abs = 0;
  for (const auto& o : outputs) {
    ulps = std::max(ulps, o.max_ulps);
    abs = std::max(abs, o.max_abs);
  }
  const OutputDifference& w = *worst_output(outputs);
  const bool integer = !r2r_is_float(w.dtype);
  std::string s = integer ? fmt::format("max {} apart", gap_text(abs)) : fmt::format("max {} ulps / {} abs", gap_text(ulps), gap_text(abs));
  s += fmt::format(" between {}", runs.empty() ? std::string("two runs") : runs);
  s += w.bound > 0 ? fmt::format(", bound {:.3g}", w.bound) : std::string(", bound 0 (exact output)");
  s += fmt::format(" (output '{}': {} of {} element(s) differ, {} beyond the bound; worst at element {}, {} of the bound)", w.name,
                   w.differing, w.elements, w.beyond_bound, w.worst_index,
                   std::isfinite(w.ratio) ? fmt::format("{:.3g}x", w.ratio) : std::string("beyond a zero"));
  for (const auto& o : outputs)
    if (&o != &w) s += fmt::format("; output '{}': {} element(s) differ, {} beyond the bound", o.name, o.differing, o.beyond_bound);
  return s;
}

std::string RunToRun::rejection() const {
  return fmt::format("two runs on the same inputs gave different bytes: {}; bitwise reproducible results are required: {}. "
                     "Opt-out: {}",
                     figures(), policy.reason, policy.opt_out);
}

std::string RunToRun::note() const {
  return fmt::format("two runs on the same inputs gave different bytes: {}; each run was judged against the reference on its "
                     "own and lies within its error bound, and bitwise reproducibility is not required ({}): accepted, the "
                     "difference reported (two runs each within the bound of the reference may differ by up to twice it){}",
                     figures(), policy.reason,
                     within_bound() ? std::string() : "; the runs differ by more than one bound here");
}

json RunToRun::to_json() const {
  double ulps = 0, abs = 0;
  json outs = json::array();
  for (const auto& o : outputs) {
    ulps = std::max(ulps, o.max_ulps);
    abs = std::max(abs, o.max_abs);
    outs.push_back(o.to_json());
  }
  const OutputDifference* w = worst_output(outputs);
  return json{{"required", policy.required},
              {"reason", policy.reason},
              {"opt_out", policy.opt_out},
              {"rule_from", policy.rule_from},
              {"within_bound", within_bound()},
              {"max_ulps", finite_or_null(ulps)},
              {"max_abs", finite_or_null(abs)},
              {"bound", w ? w->bound : 0.0},
              {"ratio", w ? finite_or_null(w->ratio) : json(0.0)},
              {"outputs", outs}};
}

}  // namespace kqual::check
