// ZooKeeper's path rules as its 3.8 server applies them (PathUtils), with
// the cases checked against a running ZooKeeper 3.8.0 where the compat
// page says so ("/é" is valid; "/\x7f" and an emoji are not).
#include "state/zk_path.h"

#include <gtest/gtest.h>

#include <climits>
#include <string>

namespace tenure::state {
namespace {

TEST(ZkPathsTest, ValidPaths) {
  for (const std::string path : {"/", "/a", "/a/b", "/é", "/...", "/.a", "/a.", "/a/.b/c..", "/x y",
                                 "/\xc2\xa0", "/lock/_c_1-lock-0000000001"}) {
    EXPECT_EQ(ZkPathError(path), "") << path;
  }
}

TEST(ZkPathsTest, RefusedPathsSayWhy) {
  const std::pair<std::string, std::string> cases[] = {
      {"", "Path length must be > 0"},
      {"a", "Path must start with / character"},
      {"/a/", "Path must not end with / character"},
      {"//a", "empty node name specified @1"},
      {"/a//b", "empty node name specified @3"},
      {"/.", "relative paths not allowed @1"},
      {"/..", "relative paths not allowed @2"},
      {"/a/./b", "relative paths not allowed @3"},
      {"/a/../b", "relative paths not allowed @4"},
      {std::string("/a\0b", 4), "null character not allowed @2"},
      {"/\x01", "invalid character @1"},
      {"/\x7f", "invalid character @1"},
      {"/\xc2\x80", "invalid character @1"},          // U+0080
      {"/ab\xee\x80\x80", "invalid character @3"},    // U+E000, private use
      {"/\xef\xbf\xb0", "invalid character @1"},      // U+FFF0
      {"/\xf0\x9f\x98\x80", "invalid character @1"},  // an emoji: two UTF-16 units
      {"/\xff", "invalid character @1"},              // not UTF-8: U+FFFD in Java
      {"/\xc0\xaf", "invalid character @1"},          // an overlong '/'
      {"/\xe2\x82", "invalid character @1"},          // cut short
  };
  for (const auto& [path, why] : cases) EXPECT_EQ(ZkPathError(path), why) << path;
}

TEST(ZkPathsTest, ParentAndName) {
  EXPECT_EQ(ZkParentOf("/a"), "/");
  EXPECT_EQ(ZkParentOf("/a/b"), "/a");
  EXPECT_EQ(ZkParentOf("/a/b/c"), "/a/b");
  EXPECT_EQ(ZkNameOf("/a"), "a");
  EXPECT_EQ(ZkNameOf("/a/b"), "b");
}

TEST(ZkPathsTest, SequenceSuffixesAreZooKeepersFormat) {
  EXPECT_EQ(ZkSequenceSuffix(0), "0000000000");
  EXPECT_EQ(ZkSequenceSuffix(42), "0000000042");
  EXPECT_EQ(ZkSequenceSuffix(INT_MAX), "2147483647");
  EXPECT_EQ(ZkSequenceSuffix(-1), "-000000001");
  EXPECT_EQ(ZkSequenceSuffix(INT_MIN), "-2147483648");
  // The suffix on a path ending in "/" makes it valid, as ZooKeeper allows.
  EXPECT_EQ(ZkPathError("/a/" + ZkSequenceSuffix(0)), "");
}

TEST(ZkPathsTest, SpecialPaths) {
  for (const char* path : {"/", "/zookeeper", "/zookeeper/quota", "/zookeeper/config"}) {
    EXPECT_TRUE(IsZkSpecialPath(path)) << path;
  }
  EXPECT_FALSE(IsZkSpecialPath("/zookeeper/other"));
  EXPECT_FALSE(IsZkSpecialPath("/zoo"));
}

}  // namespace
}  // namespace tenure::state
