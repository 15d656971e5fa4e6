#include "kqual/core/dtype.hpp"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace {

using kqual::DType;

TEST(DTypeNames, EveryDTypeHasOneWordThatParsesBack) {
  std::set<std::string> words;
  for (DType t : kqual::kAllDTypes) {
    const std::string w(kqual::to_string(t));
    EXPECT_NE(w, "?");
    EXPECT_TRUE(words.insert(w).second) << w << " names two dtypes";
    ASSERT_TRUE(kqual::parse_dtype(w).has_value()) << w;
    EXPECT_EQ(*kqual::parse_dtype(w), t);
    EXPECT_GT(kqual::dtype_size(t), 0u) << w;
    EXPECT_NE(kqual::cxx_type(t), "?") << w;
    EXPECT_NE(kqual::is_floating(t), kqual::is_integral(t)) << w;
  }
}

TEST(DTypeNames, PeerSpellingsAndTheNarrowTypes) {
  EXPECT_EQ(kqual::parse_dtype("float16"), DType::f16);
  EXPECT_EQ(kqual::parse_dtype("int8"), DType::i8);
  EXPECT_EQ(kqual::parse_dtype("uint8"), DType::u8);
  EXPECT_EQ(kqual::parse_dtype("float8_e4m3fn"), DType::e4m3);
  EXPECT_EQ(kqual::parse_dtype("float8_e5m2"), DType::e5m2);
  EXPECT_EQ(kqual::parse_dtype("bool"), DType::boolean);
  EXPECT_FALSE(kqual::parse_dtype("float8_e4m3fnuz").has_value());  // another format: refused, not guessed
  EXPECT_FALSE(kqual::parse_dtype("float4_e2m1").has_value());
  EXPECT_FALSE(kqual::parse_dtype("F16").has_value());
  for (DType t : {DType::i8, DType::u8, DType::e4m3, DType::e5m2, DType::boolean}) EXPECT_EQ(kqual::dtype_size(t), 1u);
  EXPECT_TRUE(kqual::is_floating(DType::e4m3));
  EXPECT_TRUE(kqual::is_integral(DType::boolean));
  EXPECT_EQ(kqual::cxx_type(DType::e4m3), "__nv_fp8_e4m3");
}

}  // namespace
