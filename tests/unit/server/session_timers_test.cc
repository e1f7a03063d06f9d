// SessionTimers is pure: time is an argument, so these run at the speed of
// logic (they used to wait on a real asio timer).
#include "server/session_timers.h"

#include <gtest/gtest.h>

#include <initializer_list>
#include <string>
#include <vector>

#include "unit/common/type_printers.h"

namespace tenure::server {
namespace {

using state::SessionId;
using Ids = std::vector<SessionId>;

// The ids named, in order.
Ids IdsOf(std::initializer_list<const char*> names) {
  Ids ids;
  for (const char* name : names) ids.emplace_back(name);
  return ids;
}

TEST(SessionTimersTest, ExpiresNoSoonerThanTtlTimesMultiplier) {
  SessionTimers timers(2);
  timers.Arm(SessionId("a"), 30 * kNsPerMs, 1000);  // 30 ms TTL, multiplier 2 => 1060
  EXPECT_EQ(timers.NextDeadline(), 1060);
  EXPECT_EQ(timers.TakeDue(1059), Ids{});
  EXPECT_EQ(timers.TakeDue(1060), IdsOf({"a"}));
  EXPECT_FALSE(timers.armed(SessionId("a")));
  EXPECT_EQ(timers.NextDeadline(), std::nullopt);
}

TEST(SessionTimersTest, PartialMillisecondsRoundUp) {
  SessionTimers timers(1);
  timers.Arm(SessionId("a"), 10 * kNsPerMs + 1, 0);
  EXPECT_EQ(timers.NextDeadline(), 11);
}

TEST(SessionTimersTest, RenewalPushesTheDeadline) {
  SessionTimers timers(2);
  timers.Arm(SessionId("a"), 40 * kNsPerMs, 0);   // deadline 80
  timers.Arm(SessionId("a"), 40 * kNsPerMs, 50);  // renewed at 50: deadline 130
  EXPECT_EQ(timers.RemainingMs(SessionId("a"), 50), 80);
  EXPECT_EQ(timers.TakeDue(129), Ids{});
  EXPECT_EQ(timers.TakeDue(130), IdsOf({"a"}));
}

TEST(SessionTimersTest, EarlierSessionExpiresFirstAndDisarmedNever) {
  SessionTimers timers(2);
  timers.Arm(SessionId("late"), 60 * kNsPerMs, 0);
  timers.Arm(SessionId("soon"), 10 * kNsPerMs, 0);
  timers.Arm(SessionId("gone"), 10 * kNsPerMs, 0);
  timers.Disarm(SessionId("gone"));
  EXPECT_EQ(timers.TakeDue(1000), IdsOf({"soon", "late"}));
  EXPECT_EQ(timers.size(), 0u);
}

TEST(SessionTimersTest, EqualDeadlinesExpireInIdOrder) {
  SessionTimers timers(1);
  for (const char* id : {"c", "a", "b"}) timers.Arm(SessionId(id), 10 * kNsPerMs, 0);
  EXPECT_EQ(timers.TakeDue(10), IdsOf({"a", "b", "c"}));
}

TEST(SessionTimersTest, ClearForgetsEverything) {
  SessionTimers timers(2);
  timers.Arm(SessionId("a"), 10 * kNsPerMs, 0);
  timers.Clear();
  EXPECT_EQ(timers.size(), 0u);
  EXPECT_EQ(timers.TakeDue(1000), Ids{});
}

TEST(SessionTimersTest, ZeroTtlIsNeverArmed) {
  SessionTimers timers(2);
  timers.Arm(SessionId("no-ttl"), 0, 0);
  EXPECT_FALSE(timers.armed(SessionId("no-ttl")));
  EXPECT_EQ(timers.RemainingMs(SessionId("no-ttl"), 0), -1);
}

}  // namespace
}  // namespace tenure::server
