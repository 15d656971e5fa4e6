// `kqual explain softmax`: online (one-pass) softmax. Each chunk keeps (m, s) = (its max, sum of
// exp(x - m)); states merge by rescaling both sums to the larger max. The broken merge adds the
// sums without rescaling: right only when every chunk has the same max.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "kqual/core/error.hpp"
#include "kqual/model/explain.hpp"

namespace kqual::model {
namespace {
constexpr double kNegInf = -std::numeric_limits<double>::infinity();
constexpr double kTolerance = 1e-12;  // fp64 walkthrough against a long-double two-pass reference

SoftmaxState chunk_state(const std::vector<double>& v, std::size_t begin, std::size_t end) {
  SoftmaxState s{kNegInf, 0.0};
  for (std::size_t i = begin; i < end; ++i) s.max = std::max(s.max, v[i]);
  if (s.max == kNegInf) return s;  // only -inf values: contributes nothing
  for (std::size_t i = begin; i < end; ++i) s.sum += std::exp(v[i] - s.max);
  return s;
}
}  // namespace

SoftmaxState merge_softmax(const SoftmaxState& a, const SoftmaxState& b) {
  if (a.max == kNegInf) return b;
  if (b.max == kNegInf) return a;
  const double m = std::max(a.max, b.max);
  return {m, a.sum * std::exp(a.max - m) + b.sum * std::exp(b.max - m)};
}

SoftmaxWalkthrough explain_softmax(const std::vector<double>& values, std::int64_t chunk_size, bool forget_rescale) {
  if (values.empty()) throw_error(ErrorKind::usage, "--values: at least one value is needed");
  for (double v : values)
    if (std::isnan(v)) throw_error(ErrorKind::usage, "--values: NaN has no softmax to walk through");
  if (chunk_size < 1) throw_error(ErrorKind::usage, fmt::format("--chunk {}: must be >= 1", chunk_size));
  double top = kNegInf;
  for (double v : values) top = std::max(top, v);
  if (top == kNegInf || top == std::numeric_limits<double>::infinity())
    throw_error(ErrorKind::usage, "--values: the largest value must be finite (all -inf, or +inf, has no softmax)");

  SoftmaxWalkthrough w;
  w.forget_rescale = forget_rescale;
  w.values = values;
  w.chunk_size = chunk_size;
  for (std::size_t b = 0; b < values.size(); b += std::size_t(chunk_size))
    w.chunk_states.push_back(chunk_state(values, b, std::min(values.size(), b + std::size_t(chunk_size))));

  SoftmaxState acc = w.chunk_states.front();
  for (std::size_t c = 1; c < w.chunk_states.size(); ++c) {
    SoftmaxMergeStep step;
    step.left = acc;
    step.right = w.chunk_states[c];
    if (forget_rescale) {
      step.merged = {std::max(acc.max, step.right.max), acc.sum + step.right.sum};
    } else {
      step.merged = merge_softmax(acc, step.right);
      step.left_scale = acc.max == kNegInf ? 0.0 : std::exp(acc.max - step.merged.max);
      step.right_scale = step.right.max == kNegInf ? 0.0 : std::exp(step.right.max - step.merged.max);
    }
    w.merges.push_back(step);
    acc = step.merged;
  }
  w.final_state = acc;

  // Reference: two passes in long double over all values.
  long double ref_sum = 0;
  for (double v : values) ref_sum += std::exp(static_cast<long double>(v) - static_cast<long double>(top));
  w.reference = {top, double(ref_sum)};
  for (double v : values) {
    w.probabilities.push_back(std::exp(v - w.final_state.max) / w.final_state.sum);
    w.reference_probabilities.push_back(
        double(std::exp(static_cast<long double>(v) - static_cast<long double>(top)) / ref_sum));
  }
  for (std::size_t i = 0; i < values.size(); ++i) {
    w.probability_sum += w.probabilities[i];
    w.max_abs_error = std::max(w.max_abs_error, std::fabs(w.probabilities[i] - w.reference_probabilities[i]));
  }
  w.correct = w.max_abs_error <= kTolerance && std::fabs(w.probability_sum - 1.0) <= kTolerance;

  if (!forget_rescale) {
    w.explanation = fmt::format(
        "{} chunks of up to {} values each keep (max, sum of exp(x - max)); merging two states rescales each sum by "
        "exp(its max - the new max). Final state (m = {:.6g}, s = {:.6g}) matches the two-pass reference "
        "(m = {:.6g}, s = {:.6g}); probabilities sum to {:.15g}.",
        w.chunk_states.size(), chunk_size, w.final_state.max, w.final_state.sum, w.reference.max, w.reference.sum,
        w.probability_sum);
  } else if (w.correct) {
    w.explanation = fmt::format(
        "The merge forgets to rescale, but every chunk has the same max here, so every scale factor would be 1 and "
        "the answer is right (s = {:.6g}). A test needs chunks with different maxima to expose the bug.",
        w.final_state.sum);
  } else {
    w.explanation = fmt::format(
        "The merge forgets to rescale: it adds sums taken against different maxima, as if exp(x - m_old) were "
        "exp(x - m_new). Final s = {:.6g} instead of {:.6g}; the probabilities sum to {:.6g} instead of 1 and the "
        "largest error is {:.3g}.",
        w.final_state.sum, w.reference.sum, w.probability_sum, w.max_abs_error);
  }
  return w;
}

namespace {
json state_json(const SoftmaxState& s) {
  return {{"max", std::isfinite(s.max) ? json(s.max) : json(nullptr)}, {"sum", s.sum}};
}
json finite_list(const std::vector<double>& v) {
  json a = json::array();
  for (double x : v) a.push_back(std::isfinite(x) ? json(x) : json(x > 0 ? "inf" : "-inf"));
  return a;
}
}  // namespace

json to_json(const SoftmaxWalkthrough& w) {
  json chunks = json::array(), merges = json::array();
  for (const auto& c : w.chunk_states) chunks.push_back(state_json(c));
  for (const auto& m : w.merges)
    merges.push_back({{"left", state_json(m.left)},
                      {"right", state_json(m.right)},
                      {"left_scale", m.left_scale},
                      {"right_scale", m.right_scale},
                      {"merged", state_json(m.merged)}});
  return {{"variant", w.forget_rescale ? "forget_rescale" : "correct"},
          {"values", finite_list(w.values)},
          {"chunk_size", w.chunk_size},
          {"chunk_states", chunks},
          {"merges", merges},
          {"final", state_json(w.final_state)},
          {"probabilities", w.probabilities},
          {"probability_sum", w.probability_sum},
          {"reference", state_json(w.reference)},
          {"reference_probabilities", w.reference_probabilities},
          {"max_abs_error", w.max_abs_error},
          {"correct", w.correct},
          {"explanation", w.explanation}};
}

}  // namespace kqual::model
