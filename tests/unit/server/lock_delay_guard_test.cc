// LockDelayGuard (decision 0010): a new leader counts the remaining part of
// every inherited lock-delay window again on its own monotonic clock, so a
// wall clock that runs ahead of its predecessor's cannot shorten a window.
#include "server/lock_delay_guard.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "server/leader_duties.h"
#include "unit/state/store_fixture.h"

namespace tenure::server {
namespace {

using state::SessionId;
using state::testutil::StoreDriver;

constexpr DurationNs kTenSecondsNs = 10'000'000'000;

TEST(LockDelayGuardTest, InheritedWindowsAreCountedFromTheElection) {
  StoreDriver d;
  SessionId s = d.NewSession(kTenSecondsNs);
  ASSERT_TRUE(d.Acquire("svc/leader", s).ok);
  d.Destroy(s);  // window: 10 s from the replicated clock now
  d.AdvanceMs(4'000);
  d.Set("other", "x");  // the replicated clock moves on 4 s: 6 s remain

  LockDelayGuard guard;
  guard.OnBecameLeader(d.store(), /*now_mono_ms=*/MonoMs(100'000));
  EXPECT_EQ(guard.size(), 1u);
  EXPECT_TRUE(guard.Blocks("svc/leader", MonoMs(100'000)));
  EXPECT_TRUE(guard.Blocks("svc/leader", MonoMs(105'999)));
  EXPECT_FALSE(guard.Blocks("svc/leader", MonoMs(106'000)));
  EXPECT_FALSE(guard.Blocks("other", MonoMs(100'000)));
}

// The point of the guard: the Store alone judges windows with the stamping
// leader's wall clock. A new leader 5 s ahead would see the window over
// after 1 s; the guard still holds the key for the full 6 s.
TEST(LockDelayGuardTest, ALeaderWhoseClockRunsAheadStillWaitsTheFullWindow) {
  StoreDriver d;
  SessionId s = d.NewSession(kTenSecondsNs);
  ASSERT_TRUE(d.Acquire("k", s).ok);
  d.Destroy(s);
  d.AdvanceMs(4'000);
  d.Set("tick", "");
  LockDelayGuard guard;
  guard.OnBecameLeader(d.store(), MonoMs(0));

  d.AdvanceMs(5'000 + 1'000);  // new leader: +5 s skew, 1 s after its election
  state::ApplyResult r = d.Acquire("k", d.NewSession());
  EXPECT_TRUE(r.ok) << "the Store alone lets the acquire through (the gap the guard closes)";
  EXPECT_TRUE(guard.Blocks("k", MonoMs(1'000)));
}

TEST(LockDelayGuardTest, ExpiredWindowsAreNotInheritedAndClearForgetsAll) {
  StoreDriver d;
  SessionId a = d.NewSession(1'000'000'000);  // 1 s
  SessionId b = d.NewSession(kTenSecondsNs);
  ASSERT_TRUE(d.Acquire("short", a).ok);
  ASSERT_TRUE(d.Acquire("long", b).ok);
  d.Destroy(a);
  d.Destroy(b);
  d.AdvanceMs(2'000);
  d.Set("tick", "");
  LockDelayGuard guard;
  guard.OnBecameLeader(d.store(), MonoMs(0));
  EXPECT_FALSE(guard.Blocks("short", MonoMs(0)));
  EXPECT_TRUE(guard.Blocks("long", MonoMs(0)));
  guard.Clear();
  EXPECT_FALSE(guard.Blocks("long", MonoMs(0)));
  EXPECT_EQ(guard.size(), 0u);
}

}  // namespace
}  // namespace tenure::server

namespace tenure::server {
namespace {

using state::SessionId;

// Through LeaderDuties: the refusals carry the Store's own answers, and a
// new leadership starts from the Store's windows again.
TEST(LockDelayGuardTest, LeaderDutiesRefuseInheritedWindowsWithTheStoresAnswers) {
  state::testutil::StoreDriver d;
  SessionId s = d.NewSession(kTenSecondsNs);
  ASSERT_TRUE(d.Acquire("k", s).ok);
  d.Destroy(s);
  LeaderDuties duties(2);
  duties.OnBecameLeader(/*now_ms=*/MonoMs(50'000), d.store());
  EXPECT_EQ(duties.lock_delays().size(), 1u);

  std::optional<state::ApplyResult> kv = duties.RefuseBeforeProposing(
      state::KvAcquire{"k", "v", 0, SessionId("other")}, MonoMs(59'999));
  ASSERT_TRUE(kv.has_value());
  EXPECT_FALSE(kv->ok);
  EXPECT_TRUE(kv->lock_delayed);
  EXPECT_TRUE(kv->status.ok());

  state::Txn txn;
  txn.ops.push_back({state::TxnVerb::kLock, "free", "v", 0, LogIndex(), SessionId("other")});
  txn.ops.push_back({state::TxnVerb::kLock, "k", "v", 0, LogIndex(), SessionId("other")});
  std::optional<state::ApplyResult> rolled_back = duties.RefuseBeforeProposing(txn, MonoMs(51'000));
  ASSERT_TRUE(rolled_back.has_value());
  ASSERT_EQ(rolled_back->txn.errors.size(), 1u);
  EXPECT_EQ(rolled_back->txn.errors[0].op_index, 1u);
  EXPECT_EQ(rolled_back->txn.errors[0].what, "failed to lock key \"k\" due to lock delay");

  EXPECT_FALSE(duties.RefuseBeforeProposing(state::KvAcquire{"k", "v", 0, SessionId("other")},
                                            MonoMs(60'000)));
  EXPECT_FALSE(duties.RefuseBeforeProposing(state::KvAcquire{"free", "v", 0, SessionId("other")},
                                            MonoMs(50'000)));
  duties.OnLostLeadership();
  EXPECT_EQ(duties.lock_delays().size(), 0u);
  EXPECT_FALSE(duties.RefuseBeforeProposing(state::KvAcquire{"k", "v", 0, SessionId("other")},
                                            MonoMs(50'000)));
}

}  // namespace
}  // namespace tenure::server
