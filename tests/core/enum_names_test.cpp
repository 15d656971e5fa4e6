#include "kqual/core/enum_names.hpp"

#include <gtest/gtest.h>

namespace {

enum class Colour { red, green, blue, ultraviolet };

constexpr kqual::EnumNames<Colour, 3> kColours{{{
    {Colour::red, "red"}, {Colour::green, "green"}, {Colour::blue, "blue"}}}};

TEST(EnumNames, NamesAndParsesEveryEntryBothWays) {
  for (const auto& [value, word] : kColours.entries) {
    EXPECT_STREQ(kColours.name(value), word);
    ASSERT_TRUE(kColours.parse(word).has_value()) << word;
    EXPECT_EQ(*kColours.parse(word), value);
  }
  static_assert(kColours.name(Colour::green)[0] == 'g');
}

TEST(EnumNames, UnknownWordsAndValuesAreSaidNotGuessed) {
  EXPECT_FALSE(kColours.parse("Red").has_value());  // exact: case matters
  EXPECT_FALSE(kColours.parse("").has_value());
  EXPECT_FALSE(kColours.parse("red ").has_value());
  EXPECT_STREQ(kColours.name(Colour::ultraviolet), "unknown");
  EXPECT_STREQ(kColours.name(Colour::ultraviolet, "?"), "?");
  EXPECT_EQ(kColours.choices(), "red, green or blue");
}

}  // namespace
