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

// Issue 25: a loss of 2.21e+05 s printed as "2.21e+05 s net (interval [2.21e+05 s, 2.21e+05 s])".
TEST(Units, DurationsInTheUnitAReaderExpects) {
  EXPECT_EQ(format_seconds(0.0123), "12.3 ms");
  EXPECT_EQ(format_seconds(42.0), "42 s");
  EXPECT_EQ(format_seconds(90.0), "1.5 min");
  EXPECT_EQ(format_seconds(221000.0), "61.4 h");
  EXPECT_EQ(format_seconds(-221000.0), "-61.4 h");
  EXPECT_EQ(format_seconds(9e7), "1042 days");
  // The interval's real bounds: decimals until the width shows.
  const SecondsTriple t = format_seconds_interval(221000.0, 220980.0, 221030.0);
  EXPECT_EQ(t.point, "61.389 h");
  EXPECT_EQ(t.lo, "61.383 h");
  EXPECT_EQ(t.hi, "61.397 h");
  EXPECT_NE(t.lo, t.hi);
  const SecondsTriple w = format_seconds_interval(0.0123, 0.010, 0.015);
  EXPECT_EQ(w.point, "12.3 ms");
  EXPECT_EQ(w.lo, "10.0 ms");
  EXPECT_EQ(w.hi, "15.0 ms");
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
