#pragma once
// Output comparison shared by the contracts: bit-exact, or under a per-element bound (error model).
// Both report, in order of precedence: unwritten_output (the poison pattern survived), nan_policy
// (NaN where a number is expected or the reverse — NaN never matches a number), wrong_result.
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "kqual/contract/contract.hpp"

namespace kqual::contract {

// Element i of a buffer of dtype t, widened to double (integers exactly up to 2^53).
double element_as_double(DType t, const std::uint8_t* p, std::size_t i);
// "1.5 (0x3fc00000)" — value and storage bits.
std::string format_element(DType t, const std::uint8_t* p, std::size_t i);
// Stores v rounded to nearest even into element i (f32, bf16, f64, i32, i64, u32).
void store_element(DType t, std::uint8_t* p, std::size_t i, double v);

// How one element fails, in order of precedence when an output has several kinds (payload: a NaN
// whose bits changed where a contract asks for bits, e.g. a transpose).
enum class Mismatch : int { unwritten = 0, payload = 1, nan_policy = 2, wrong = 3 };

// Counts of mismatching elements per class with the first few indices of each and the worst error:
// the whole state a comparison keeps, whatever the number of wrong elements (formatting
// every wrong element of a 2^29-element output stalled the coordinator for minutes).
struct ElementScan {
  static constexpr std::size_t kNone = std::numeric_limits<std::size_t>::max();
  static constexpr std::size_t kKeepExamples = 3;
  static constexpr int kClasses = 4;
  struct ClassTally {
    std::int64_t count = 0;
    std::vector<std::size_t> first;  // at most kKeepExamples, ascending
  };
  ClassTally cls[kClasses];
  std::size_t worst_index = kNone;  // the wrong element with the largest |error| / bound
  double worst_excess = 0, worst_error = 0;

  // One mismatching element (inline: it runs once per wrong element).
  void note(Mismatch m, std::size_t i, double error = NAN, double excess = NAN) {
    ClassTally& c = cls[int(m)];
    if (c.first.size() < kKeepExamples) c.first.push_back(i);
    ++c.count;
    if (m == Mismatch::wrong && !std::isnan(excess) && (worst_index == kNone || excess > worst_excess)) {
      worst_excess = excess;
      worst_error = error;
      worst_index = i;
    }
  }
  void merge(const ElementScan& later);  // later covers higher indices
  std::int64_t mismatches() const;
  // The comparison's verdict: the class of highest precedence, its count, and the first few
  // elements, formatted by describe(i) (called for at most one element per class reported).
  Comparison verdict(const std::string& tensor, std::size_t n, const std::function<std::string(std::size_t)>& describe,
                     std::uint8_t poison_byte, const std::string& payload_text = "lost their payload bits") const;
};

// Runs scan_range(lo, hi, tally) over [0, n) in chunks of 2^20 elements on up to
// hardware_concurrency threads and merges the tallies in index order.
ElementScan scan_elements(std::size_t n, const std::function<void(std::size_t, std::size_t, ElementScan&)>& scan_range);

// Bitwise equality; for floating dtypes any NaN matches any NaN.
Comparison compare_exact(const Tensor& expected, const std::uint8_t* actual, std::uint8_t poison_byte);
// |actual - expected.ref[i]| <= expected.bound[i]; infinities must match exactly (a reference past the
// dtype's largest finite value matches the infinity it rounds to), NaN only NaN.
Comparison compare_bounded(const Tensor& expected, const std::uint8_t* actual, std::uint8_t poison_byte);
// v rounded to nearest even in dtype t (floating dtypes; ±Inf past the largest finite value).
double rounded_to(DType t, double v);
// Element i still holds the poison pattern the harness filled the output with.
bool is_poison(DType t, const std::uint8_t* p, std::size_t i, std::uint8_t poison_byte);
// Dispatch: bounded when expected.bound is present, exact otherwise.
Comparison compare_output(const Tensor& expected, const std::uint8_t* actual, std::uint8_t poison_byte);

// Why an expected output is no evidence of correctness on its own ("" when it is): every element
// zero or every element equal, so a kernel that writes a constant would pass.
std::string degenerate_reason(const Tensor& expected);

// Unit roundoff of a floating dtype (2^-24 for f32, 2^-8 for bf16, 2^-53 for f64).
double unit_roundoff(DType t);

// Runs body(i) for i in [0, count) on up to hardware_concurrency threads.
template <typename F>
void parallel_for(std::size_t count, F body) {
  std::size_t threads = std::min<std::size_t>(count, std::max(1u, std::thread::hardware_concurrency()));
  if (threads <= 1) {
    for (std::size_t i = 0; i < count; ++i) body(i);
    return;
  }
  std::vector<std::thread> pool;
  for (std::size_t t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      for (std::size_t i = t; i < count; i += threads) body(i);
    });
  for (auto& th : pool) th.join();
}

}  // namespace kqual::contract
