// SessionTimers is pure: time is an argument, so these run at the speed of
// logic (they used to wait on a real asio timer).
#include "server/session_timers.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace tenure::server {
namespace {

using Ids = std::vector<std::string>;

TEST(SessionTimersTest, ExpiresNoSoonerThanTtlTimesMultiplier) {
  SessionTimers timers(2);
  timers.Arm("a", 30 * kNsPerMs, 1000);  // 30 ms TTL, multiplier 2 => 1060
  EXPECT_EQ(timers.NextDeadline(), 1060);
  EXPECT_EQ(timers.TakeDue(1059), Ids{});
  EXPECT_EQ(timers.TakeDue(1060), Ids{"a"});
  EXPECT_FALSE(timers.armed("a"));
  EXPECT_EQ(timers.NextDeadline(), std::nullopt);
}

TEST(SessionTimersTest, PartialMillisecondsRoundUp) {
  SessionTimers timers(1);
  timers.Arm("a", 10 * kNsPerMs + 1, 0);
  EXPECT_EQ(timers.NextDeadline(), 11);
}

TEST(SessionTimersTest, RenewalPushesTheDeadline) {
  SessionTimers timers(2);
  timers.Arm("a", 40 * kNsPerMs, 0);   // deadline 80
  timers.Arm("a", 40 * kNsPerMs, 50);  // renewed at 50: deadline 130
  EXPECT_EQ(timers.RemainingMs("a", 50), 80);
  EXPECT_EQ(timers.TakeDue(129), Ids{});
  EXPECT_EQ(timers.TakeDue(130), Ids{"a"});
}

TEST(SessionTimersTest, EarlierSessionExpiresFirstAndDisarmedNever) {
  SessionTimers timers(2);
  timers.Arm("late", 60 * kNsPerMs, 0);
  timers.Arm("soon", 10 * kNsPerMs, 0);
  timers.Arm("gone", 10 * kNsPerMs, 0);
  timers.Disarm("gone");
  EXPECT_EQ(timers.TakeDue(1000), (Ids{"soon", "late"}));
  EXPECT_EQ(timers.size(), 0u);
}

TEST(SessionTimersTest, EqualDeadlinesExpireInIdOrder) {
  SessionTimers timers(1);
  for (const char* id : {"c", "a", "b"}) timers.Arm(id, 10 * kNsPerMs, 0);
  EXPECT_EQ(timers.TakeDue(10), (Ids{"a", "b", "c"}));
}

TEST(SessionTimersTest, ClearForgetsEverything) {
  SessionTimers timers(2);
  timers.Arm("a", 10 * kNsPerMs, 0);
  timers.Clear();
  EXPECT_EQ(timers.size(), 0u);
  EXPECT_EQ(timers.TakeDue(1000), Ids{});
}

TEST(SessionTimersTest, ZeroTtlIsNeverArmed) {
  SessionTimers timers(2);
  timers.Arm("no-ttl", 0, 0);
  EXPECT_FALSE(timers.armed("no-ttl"));
  EXPECT_EQ(timers.RemainingMs("no-ttl", 0), -1);
}

}  // namespace
}  // namespace tenure::server
