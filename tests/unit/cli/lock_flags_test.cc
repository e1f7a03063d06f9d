// What `tenure lock`'s -shell and -name turn into (cli/lock_flags.h).
#include "cli/lock_flags.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace tenure::cli {
namespace {

TEST(LockFlagsTest, ChildArgvWithAndWithoutShell) {
  const std::vector<std::string> args = {"echo", "a", "|", "b"};
  EXPECT_EQ(ChildArgv(args, false, "/bin/bash"), args);
  EXPECT_EQ(ChildArgv(args, true, "/bin/bash"),
            (std::vector<std::string>{"/bin/bash", "-c", "echo a | b"}));
  EXPECT_EQ(ChildArgv(args, true, nullptr),
            (std::vector<std::string>{"/bin/sh", "-c", "echo a | b"}));
  EXPECT_EQ(ChildArgv(args, true, ""), (std::vector<std::string>{"/bin/sh", "-c", "echo a | b"}));
}

TEST(LockFlagsTest, DefaultSessionNameIsConsulsAndBounded) {
  EXPECT_EQ(DefaultSessionName({"echo", "hi"}, "jobs/x", 1024),
            "Consul lock for 'echo hi' at 'jobs/x'");
  // Cut at the limit, never inside a UTF-8 character ("é" is 2 bytes).
  const std::string name = DefaultSessionName({"\xc3\xa9\xc3\xa9\xc3\xa9"}, "p", 19);
  EXPECT_EQ(name, "Consul lock for '\xc3\xa9");
}

}  // namespace
}  // namespace tenure::cli
