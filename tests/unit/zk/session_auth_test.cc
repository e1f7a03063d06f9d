// ZooKeeper sessions' passwords and negotiated timeouts (zk/session_auth.h):
// the clamp's cases are those a running ZooKeeper 3.8.0 with tickTime 2000
// answered (docs/zookeeper-compat.md).
#include "zk/session_auth.h"

#include <gtest/gtest.h>

#include <climits>
#include <string>

namespace tenure::zk {
namespace {

const std::string kZkTestSecret(32, '\x5a');

TEST(ZkSessionAuthTest, APasswordIsSixteenBytesOfItsIdAndTheSecret) {
  const std::string password = SessionPassword(kZkTestSecret, 0x10003bd64ee0000);
  EXPECT_EQ(password.size(), 16u);
  EXPECT_EQ(SessionPassword(kZkTestSecret, 0x10003bd64ee0000), password);
  EXPECT_NE(SessionPassword(kZkTestSecret, 0x10003bd64ee0001), password);
  EXPECT_NE(SessionPassword(std::string(32, '\x5b'), 0x10003bd64ee0000), password);
  EXPECT_NE(SessionPassword(kZkTestSecret, -0x10003bd64ee0000), password);
}

TEST(ZkSessionAuthTest, OnlyItsOwnPasswordMatches) {
  const std::string password = SessionPassword(kZkTestSecret, 42);
  EXPECT_TRUE(PasswordMatches(kZkTestSecret, 42, password));
  EXPECT_FALSE(PasswordMatches(kZkTestSecret, 43, password));
  EXPECT_FALSE(PasswordMatches(kZkTestSecret, 42, std::string(16, '\0')));
  EXPECT_FALSE(PasswordMatches(kZkTestSecret, 42, password.substr(0, 15)));
  EXPECT_FALSE(PasswordMatches(kZkTestSecret, 42, password + "x"));
  EXPECT_FALSE(PasswordMatches("", 42, password));
}

TEST(ZkSessionAuthTest, TimeoutsAreClampedAsZooKeeperClampsThem) {
  EXPECT_EQ(NegotiatedTimeoutMs(1000, 4000, 40000), 4000);
  EXPECT_EQ(NegotiatedTimeoutMs(10'000'000, 4000, 40000), 40000);
  EXPECT_EQ(NegotiatedTimeoutMs(30000, 4000, 40000), 30000);
  EXPECT_EQ(NegotiatedTimeoutMs(-1, 4000, 40000), 4000);
  EXPECT_EQ(NegotiatedTimeoutMs(INT32_MAX, 4000, 40000), 40000);
}

}  // namespace
}  // namespace tenure::zk
