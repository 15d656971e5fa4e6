// One naming scheme for every JSON document: "kqual.<command>/<version>".
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kqual/core/json.hpp"

namespace kqual {
namespace {

struct Sample {
  std::string name;
  int count = 0;
  double share = 0;
  std::vector<std::string> steps;
  int unwritten = 0;
};
KQUAL_DEFINE_TO_JSON(Sample, name, share, count, steps)

TEST(DefineToJson, TheMembersListedUnderTheirNamesInThatOrder) {
  const json j = to_json(Sample{"a", 3, 0.5, {"x", "y"}, 7});
  EXPECT_EQ(j.dump(), R"({"name":"a","share":0.5,"count":3,"steps":["x","y"]})");
}

TEST(SchemaName, CommandAndVersion) {
  EXPECT_EQ(schema_name("qualify"), "kqual.qualify/" + std::to_string(kJsonSchemaVersion));
  const json h = schema_header("inspect-diff");
  EXPECT_EQ(h.at("schema"), "kqual.inspect-diff/1");
  EXPECT_EQ(h.at("schema_version"), kJsonSchemaVersion);
  EXPECT_EQ(h.begin().key(), "schema");  // first in the document
}

TEST(SchemaName, ParsesOnlyTheScheme) {
  auto s = parse_schema_name("kqual.model-roofline/1");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->command, "model-roofline");
  EXPECT_EQ(s->version, 1);
  s = parse_schema_name(schema_name("compare"));
  ASSERT_TRUE(s);
  EXPECT_EQ(s->command, "compare");
  EXPECT_EQ(s->version, kJsonSchemaVersion);
  for (const char* bad : {"kqual.qualify", "kqual./1", "kqual.qualify/", "kqual.qualify/0", "kqual.qualify/1x",
                          "kqual.Qualify/1", "kqual.qual ify/1", "other.qualify/1", "", "kqual.qualify/-1"})
    EXPECT_FALSE(parse_schema_name(bad)) << bad;
}

}  // namespace
}  // namespace kqual
