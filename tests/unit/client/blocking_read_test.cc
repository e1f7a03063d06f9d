// The one blocking-read rule (client/blocking_read.h, decision 0044): the
// next index from X-Consul-Index as Consul documents it, and the target and
// timeout every blocking GET is sent with.
#include "client/blocking_read.h"

#include <gtest/gtest.h>

#include <string>

namespace tenure::client {
namespace {

net::ClientResponse WithIndex(const std::string& index) {
  net::ClientResponse response;
  response.status = 200;
  response.headers["x-consul-index"] = index;
  return response;
}

TEST(BlockingReadTest, AnIndexThatMovedOnIsTheNextWait) {
  EXPECT_EQ(NextWaitIndex(7, 0), 7u);
  EXPECT_EQ(NextWaitIndex(7, 5), 7u);
  EXPECT_EQ(NextWaitIndex(7, 7), 7u);  // the wait ran out: the same again
  auto next = NextWaitIndex(WithIndex("42"), 40);
  ASSERT_TRUE(next.ok()) << next.status().ToString();
  EXPECT_EQ(*next, 42u);
}

TEST(BlockingReadTest, AnIndexThatWentBackwardsResetsToZero) {
  EXPECT_EQ(NextWaitIndex(3, 9), 0u);
  EXPECT_EQ(NextWaitIndex(0, 9), 0u);
  auto next = NextWaitIndex(WithIndex("12"), 100);
  ASSERT_TRUE(next.ok());
  EXPECT_EQ(*next, 0u);
}

TEST(BlockingReadTest, ZeroOrNoIndexWaitsOnOne) {
  EXPECT_EQ(NextWaitIndex(0, 0), 1u);
  auto zero = NextWaitIndex(WithIndex("0"), 0);
  ASSERT_TRUE(zero.ok());
  EXPECT_EQ(*zero, 1u);
  net::ClientResponse none;
  none.status = 404;
  auto absent = NextWaitIndex(none, 0);
  ASSERT_TRUE(absent.ok());
  EXPECT_EQ(*absent, 1u);
  auto parsed = ParseIndexHeader("");
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(*parsed, 0u);
}

TEST(BlockingReadTest, GarbageIsAnErrorNamingTheHeader) {
  for (const char* bad : {"abc", "12abc", "-1", "+5", " 5", "5 ", "1.5", "0x10"}) {
    auto next = NextWaitIndex(WithIndex(bad), 3);
    ASSERT_FALSE(next.ok()) << bad;
    EXPECT_EQ(next.status().code(), Code::kCorruption) << bad;
    EXPECT_EQ(std::string(next.status().message()), std::string("bad X-Consul-Index ") + bad);
  }
}

TEST(BlockingReadTest, TheFullUint64RangeAndNotOneMore) {
  auto max = ParseIndexHeader("18446744073709551615");
  ASSERT_TRUE(max.ok());
  EXPECT_EQ(*max, 18446744073709551615ULL);
  for (const char* over : {"18446744073709551616", "18446744073709551620", "99999999999999999999",
                           "184467440737095516150"}) {
    auto parsed = ParseIndexHeader(over);
    ASSERT_FALSE(parsed.ok()) << over;
    EXPECT_EQ(std::string(parsed.status().message()), std::string("bad X-Consul-Index ") + over);
  }
}

TEST(BlockingReadTest, TargetsAndTimeouts) {
  // With a wait: ?index=&wait=, and a timeout past the wait and its jitter.
  BlockingGet get = BlockingRead("/v1/kv/a", 5, 16'000);
  EXPECT_EQ(get.target, "/v1/kv/a?index=5&wait=16000ms");
  EXPECT_EQ(get.timeout_ms, 16'000 + 1'000 + 5'000);
  get = BlockingRead("/v1/kv/a?recurse", 5, 16'000);
  EXPECT_EQ(get.target, "/v1/kv/a?recurse&index=5&wait=16000ms");
  // Index 0 is an immediate read: no parameters, the client's default timeout.
  get = BlockingRead("/v1/kv/a?recurse", 0, 16'000);
  EXPECT_EQ(get.target, "/v1/kv/a?recurse");
  EXPECT_EQ(get.timeout_ms, 0);
  // The server's default wait: no ?wait=, and always the long timeout.
  get = BlockingRead("/v1/kv/a?consistent", 9, 0);
  EXPECT_EQ(get.target, "/v1/kv/a?consistent&index=9");
  EXPECT_EQ(get.timeout_ms, kBlockingReadTimeoutMs);
  get = BlockingRead("/v1/kv/a", 0, 0);
  EXPECT_EQ(get.target, "/v1/kv/a");
  EXPECT_EQ(get.timeout_ms, kBlockingReadTimeoutMs);
}

}  // namespace
}  // namespace tenure::client
