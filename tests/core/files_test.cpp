// core/files.hpp: the parts that need no file system.
#include <gtest/gtest.h>

#include "kqual/core/files.hpp"

namespace kqual {
namespace {

TEST(SplitPathList, ItemsInOrderEmptyOnesDropped) {
  using V = std::vector<std::string>;
  EXPECT_EQ(split_path_list("/a:/b/c"), (V{"/a", "/b/c"}));
  EXPECT_EQ(split_path_list(":/a::b:"), (V{"/a", "b"}));
  EXPECT_EQ(split_path_list("only"), (V{"only"}));
  EXPECT_TRUE(split_path_list("").empty());
  EXPECT_TRUE(split_path_list(":::").empty());
}

}  // namespace
}  // namespace kqual
