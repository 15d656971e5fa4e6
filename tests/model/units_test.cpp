#include <gtest/gtest.h>

#include "kqual/core/error.hpp"
#include "kqual/model/units.hpp"

namespace kqual::model {
namespace {

TEST(Units, DurationsQuantitiesAndFractions) {
  EXPECT_DOUBLE_EQ(parse_duration("--x", "70ms"), 0.070);
  EXPECT_DOUBLE_EQ(parse_duration("--x", "12us"), 12e-6);
  EXPECT_DOUBLE_EQ(parse_duration("--x", "-3 us"), -3e-6);
  EXPECT_DOUBLE_EQ(parse_duration("--x", "0.5s"), 0.5);
  EXPECT_DOUBLE_EQ(parse_quantity("--x", "4.8TB/s"), 4.8e12);
  EXPECT_DOUBLE_EQ(parse_quantity("--x", "48Ki"), 49152.0);
  EXPECT_DOUBLE_EQ(parse_quantity("--x", "5.4e8"), 5.4e8);
  EXPECT_DOUBLE_EQ(parse_fraction("--x", "30%"), 0.3);
  EXPECT_EQ(parse_count_list("--c", "3, 0,2,1,0,4"), (std::vector<std::int64_t>{3, 0, 2, 1, 0, 4}));
  EXPECT_EQ(parse_dims("--gemm", "1536x1024x8192", 3), (std::vector<std::int64_t>{1536, 1024, 8192}));
  EXPECT_EQ(format_count(5833.3), "5,834");
  EXPECT_EQ(format_percent(0.6), "60.0 %");
}

TEST(Units, ErrorsNameTheFlagAndTheValue) {
  auto message = [](auto&& f) {
    try {
      f();
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::usage);
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message([] { parse_duration("--extra-cold", "70"); }).find("--extra-cold '70'"), std::string::npos);
  EXPECT_NE(message([] { parse_duration("--extra-cold", "70 parsecs"); }).find("unknown unit 'parsecs'"),
            std::string::npos);
  EXPECT_NE(message([] { parse_quantity("--bytes", "lots"); }).find("--bytes 'lots'"), std::string::npos);
  EXPECT_NE(message([] { parse_count_list("--counts", "3,x,2"); }).find("element 'x'"), std::string::npos);
  EXPECT_NE(message([] { parse_count_list("--counts", "3,-1"); }).find("element '-1'"), std::string::npos);
  EXPECT_NE(message([] { parse_dims("--gemm", "12x34", 3); }).find("--gemm '12x34'"), std::string::npos);
}

}  // namespace
}  // namespace kqual::model
