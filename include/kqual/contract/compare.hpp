#pragma once
// Output comparison shared by the contracts: bit-exact, or under a per-element bound (error model).
// Both report, in order of precedence: unwritten_output (the poison pattern survived), nan_policy
// (NaN where a number is expected or the reverse — NaN never matches a number), wrong_result.
#include <cstdint>
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

// Bitwise equality; for floating dtypes any NaN matches any NaN.
Comparison compare_exact(const Tensor& expected, const std::uint8_t* actual, std::uint8_t poison_byte);
// |actual - expected.ref[i]| <= expected.bound[i]; infinities must match exactly, NaN only NaN.
Comparison compare_bounded(const Tensor& expected, const std::uint8_t* actual, std::uint8_t poison_byte);
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
