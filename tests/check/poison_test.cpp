// The two runs' poison bytes: run 2's must be a finite value in every output dtype, else an
// unwritten element where the reference is NaN would match in both runs.
#include <gtest/gtest.h>

#include <cmath>

#include "kqual/contract/compare.hpp"
#include "kqual/core/dtype.hpp"
#include "../../src/check/internal.hpp"

namespace kqual::check {
namespace {

contract::Tensor out_of(DType t) {
  contract::Tensor x;
  x.name = "y";
  x.dtype = t;
  x.elements = 1;
  return x;
}

TEST(Poison, RunTwosByteIsFiniteInEveryFloatOutput) {
  for (DType t : kAllDTypes) {
    if (!is_floating(t)) continue;
    const std::uint8_t b = detail::second_poison_byte({out_of(DType::f32), out_of(t)});
    std::uint8_t bytes[8];
    for (auto& x : bytes) x = b;
    EXPECT_TRUE(std::isfinite(contract::element_as_double(t, bytes, 0))) << to_string(t) << " poison 0x" << std::hex << int(b);
    for (auto& x : bytes) x = 0xFF;
    EXPECT_TRUE(std::isnan(contract::element_as_double(t, bytes, 0))) << to_string(t) << ": run 1's 0xFF.. is NaN";
  }
  EXPECT_EQ(detail::second_poison_byte({out_of(DType::f32), out_of(DType::bf16)}), 0x7F);  // unchanged where it was finite
}

}  // namespace
}  // namespace kqual::check
