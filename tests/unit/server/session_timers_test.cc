// SessionTimers is pure: time is an argument, so these run at the speed of
// logic (they used to wait on a real asio timer).
#include "server/session_timers.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <initializer_list>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "state/numbered_session.h"
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
  timers.Arm(SessionId("a"), 30 * kNsPerMs, MonoMs(1000));  // 30 ms TTL, multiplier 2 => 1060
  EXPECT_EQ(timers.NextDeadline(), MonoMs(1060));
  EXPECT_EQ(timers.TakeDue(MonoMs(1059)), Ids{});
  EXPECT_EQ(timers.TakeDue(MonoMs(1060)), IdsOf({"a"}));
  EXPECT_FALSE(timers.armed(SessionId("a")));
  EXPECT_EQ(timers.NextDeadline(), std::nullopt);
}

// An etcd lease (a numbered session, decision 0048) ends at TTL x (1 + rho),
// rounded up, whatever the multiplier: its clients renew at a third of it.
TEST(SessionTimersTest, ANumberedSessionEndsAtItsTtlPlusTheClockBound) {
  const SessionId lease = state::NumberedSessionId(0x1234);
  for (int multiplier : {1, 2, 5}) {
    SessionTimers timers(multiplier);
    timers.Arm(lease, 2'000 * kNsPerMs, MonoMs(1000));  // 2 s: 2,020 ms
    EXPECT_EQ(timers.NextDeadline(), MonoMs(3020)) << "multiplier " << multiplier;
    EXPECT_EQ(timers.TakeDue(MonoMs(3019)), Ids{});
    EXPECT_EQ(timers.TakeDue(MonoMs(3020)), Ids{lease});
  }
  SessionTimers timers(2);
  EXPECT_EQ(timers.WaitMs(lease, 150), 152);                              // 1.5 ms rounds up
  EXPECT_EQ(timers.WaitMs(lease, 9'000'000'000'000), 9'090'000'000'000);  // the longest TTL
  EXPECT_EQ(timers.WaitMs(SessionId("2b5f68a0-0000-4000-8000-000000000000"), 150), 300);
}

TEST(SessionTimersTest, PartialMillisecondsRoundUp) {
  SessionTimers timers(1);
  timers.Arm(SessionId("a"), 10 * kNsPerMs + 1, MonoMs(0));
  EXPECT_EQ(timers.NextDeadline(), MonoMs(11));
}

TEST(SessionTimersTest, RenewalPushesTheDeadline) {
  SessionTimers timers(2);
  timers.Arm(SessionId("a"), 40 * kNsPerMs, MonoMs(0));   // deadline 80
  timers.Arm(SessionId("a"), 40 * kNsPerMs, MonoMs(50));  // renewed at 50: deadline 130
  EXPECT_EQ(timers.RemainingMs(SessionId("a"), MonoMs(50)), 80);
  EXPECT_EQ(timers.TakeDue(MonoMs(129)), Ids{});
  EXPECT_EQ(timers.TakeDue(MonoMs(130)), IdsOf({"a"}));
}

TEST(SessionTimersTest, EarlierSessionExpiresFirstAndDisarmedNever) {
  SessionTimers timers(2);
  timers.Arm(SessionId("late"), 60 * kNsPerMs, MonoMs(0));
  timers.Arm(SessionId("soon"), 10 * kNsPerMs, MonoMs(0));
  timers.Arm(SessionId("gone"), 10 * kNsPerMs, MonoMs(0));
  timers.Disarm(SessionId("gone"));
  EXPECT_EQ(timers.TakeDue(MonoMs(1000)), IdsOf({"soon", "late"}));
  EXPECT_EQ(timers.size(), 0u);
}

TEST(SessionTimersTest, EqualDeadlinesExpireInIdOrder) {
  SessionTimers timers(1);
  for (const char* id : {"c", "a", "b"}) timers.Arm(SessionId(id), 10 * kNsPerMs, MonoMs(0));
  EXPECT_EQ(timers.TakeDue(MonoMs(10)), IdsOf({"a", "b", "c"}));
}

TEST(SessionTimersTest, ClearForgetsEverything) {
  SessionTimers timers(2);
  timers.Arm(SessionId("a"), 10 * kNsPerMs, MonoMs(0));
  timers.Clear();
  EXPECT_EQ(timers.size(), 0u);
  EXPECT_EQ(timers.TakeDue(MonoMs(1000)), Ids{});
}

TEST(SessionTimersTest, ZeroTtlIsNeverArmed) {
  SessionTimers timers(2);
  timers.Arm(SessionId("no-ttl"), 0, MonoMs(0));
  EXPECT_FALSE(timers.armed(SessionId("no-ttl")));
  EXPECT_EQ(timers.RemainingMs(SessionId("no-ttl"), MonoMs(0)), -1);
}

// A UUID in the leader's form, made from a number (ordered as the number).
SessionId Uuid(std::uint64_t n) {
  char text[40];
  std::snprintf(text, sizeof text, "%08llx-0000-4000-8000-%012llx",
                static_cast<unsigned long long>(n >> 32),
                static_cast<unsigned long long>(n & 0xffffffffffffull));
  return SessionId(text);
}

TEST(SessionTimersTest, UuidsParseOnlyInTheLeadersForm) {
  std::string id = "0a1b2c3d-4e5f-6789-abcd-ef0123456789";
  ASSERT_TRUE(SessionTimers::ParseUuid(id).has_value());
  EXPECT_EQ(SessionTimers::FormatUuid(*SessionTimers::ParseUuid(id)), id);
  for (std::string_view bad :
       {"0A1B2C3D-4E5F-6789-ABCD-EF0123456789",  // upper case
        "0a1b2c3d-4e5f-6789-abcd-ef012345678",   // short
        "0a1b2c3d-4e5f-6789-abcd-ef01234567890", "0a1b2c3d04e5f-6789-abcd-ef0123456789",
        "0a1b2c3d-4e5f-6789-abcd-ef012345678g", "", "a"}) {
    EXPECT_FALSE(SessionTimers::ParseUuid(bad).has_value()) << bad;
  }
}

TEST(SessionTimersTest, UuidBytesOrderAsTheirText) {
  std::mt19937_64 random(7);
  for (int i = 0; i < 1000; ++i) {
    SessionId a = Uuid(random()), b = Uuid(random());
    EXPECT_EQ(*SessionTimers::ParseUuid(a.view()) < *SessionTimers::ParseUuid(b.view()),
              a.view() < b.view());
  }
}

TEST(SessionTimersTest, EqualDeadlinesExpireInIdOrderAcrossUuidsAndOtherIds) {
  SessionTimers timers(1);
  SessionId u1("00000000-0000-4000-8000-000000000001");
  SessionId u2("ffffffff-0000-4000-8000-000000000002");
  // "0..." < "1" < "ff..." < "zz" as text; u1 and u2 are compact, the others not.
  for (const SessionId& id : {SessionId("zz"), u2, SessionId("1"), u1}) {
    timers.Arm(id, 10 * kNsPerMs, MonoMs(0));
  }
  EXPECT_EQ(timers.size(), 4u);
  EXPECT_EQ(timers.TakeDue(MonoMs(10)), (Ids{u1, SessionId("1"), u2, SessionId("zz")}));
}

TEST(SessionTimersTest, RenewalsMoveDeadlinesWithoutGrowingTheTable) {
  SessionTimers timers(1);
  for (std::uint64_t n = 0; n < 100; ++n) timers.Arm(Uuid(n), 1000 * kNsPerMs, MonoMs(0));
  const std::size_t capacity = timers.compact_capacity();
  for (MonoMs now = MonoMs(1); now <= MonoMs(500); now += 1) {
    for (std::uint64_t n = 0; n < 100; ++n) timers.Arm(Uuid(n), 1000 * kNsPerMs, now);
    ASSERT_EQ(timers.compact_capacity(), capacity);
  }
  EXPECT_EQ(timers.NextDeadline(), MonoMs(1500));
  EXPECT_EQ(timers.TakeDue(MonoMs(1499)), Ids{});
  EXPECT_EQ(timers.TakeDue(MonoMs(1500)).size(), 100u);
  EXPECT_EQ(timers.NextDeadline(), std::nullopt);
}

// An etcd lease's timer is its number in a UUID's shape: 100,000 of them
// fit a table of 131,072 slots (28 bytes each), and a leader whose leases
// ended gives the table back.
TEST(SessionTimersTest, NumberedSessionsFitTheFlatTableAndItShrinksWhenTheyEnd) {
  SessionTimers timers(1);
  for (std::int64_t n = 1; n <= 100000; ++n) {
    timers.Arm(state::NumberedSessionId(n), 60 * kNsPerSecond, MonoMs(n % 1000));
  }
  EXPECT_EQ(timers.size(), 100000u);
  EXPECT_EQ(timers.compact_capacity(), 131072u);
  std::vector<SessionId> due = timers.TakeDue(MonoMs(1000000));
  ASSERT_EQ(due.size(), 100000u);
  // Earliest first, ties by id: deadline 60,600 + (n % 1000) with rho's 1%.
  EXPECT_EQ(due.front(), state::NumberedSessionId(1000));
  EXPECT_EQ(due.back(), state::NumberedSessionId(99999));
  EXPECT_EQ(timers.compact_capacity(), 16u);
}

// Against a model (the string-keyed map and ordered set SessionTimers used to
// be): random arms, renewals, disarms and expiries of UUID and other ids give
// the same expiry order, deadlines and sizes.
TEST(SessionTimersTest, MatchesTheStringKeyedModel) {
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    std::mt19937_64 random(seed);
    SessionTimers timers(2);
    std::map<SessionId, MonoMs> model;
    std::set<std::pair<MonoMs, SessionId>> model_queue;
    std::vector<SessionId> ids;
    for (int i = 0; i < 40; ++i)
      ids.push_back(i % 3 == 0 ? SessionId("s" + std::to_string(i)) : Uuid(random()));
    MonoMs now;
    for (int step = 0; step < 3000; ++step) {
      const SessionId& id = ids[random() % ids.size()];
      switch (random() % 4) {
        case 0:
        case 1: {
          DurationNs ttl = static_cast<DurationNs>(random() % 5) * kNsPerMs;  // 0: never armed
          timers.Arm(id, ttl, now);
          if (ttl > 0) {
            if (auto it = model.find(id); it != model.end()) model_queue.erase({it->second, id});
            model[id] = now + (ttl / kNsPerMs) * 2;
            model_queue.insert({model[id], id});
          }
          break;
        }
        case 2:
          timers.Disarm(id);
          if (auto it = model.find(id); it != model.end()) {
            model_queue.erase({it->second, id});
            model.erase(it);
          }
          break;
        default: {
          now += static_cast<DurationMs>(random() % 4);
          Ids want;
          while (!model_queue.empty() && model_queue.begin()->first <= now) {
            want.push_back(model_queue.begin()->second);
            model.erase(want.back());
            model_queue.erase(model_queue.begin());
          }
          ASSERT_EQ(timers.TakeDue(now), want) << "seed " << seed << " step " << step;
        }
      }
      ASSERT_EQ(timers.size(), model.size());
      ASSERT_EQ(timers.NextDeadline(), model_queue.empty()
                                           ? std::nullopt
                                           : std::optional<MonoMs>(model_queue.begin()->first));
      ASSERT_EQ(timers.armed(id), model.contains(id));
      ASSERT_EQ(timers.RemainingMs(id, now), model.contains(id) ? model[id] - now : -1);
    }
  }
}

}  // namespace
}  // namespace tenure::server
