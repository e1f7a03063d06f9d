// LeaderDuties: the leader's session duties with time as an input.
#include "server/leader_duties.h"

#include <gtest/gtest.h>

#include <initializer_list>
#include <string>
#include <vector>

#include "common/duration.h"
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

constexpr DurationNs kTtl10s = 10 * kNsPerSecond;
constexpr DurationNs kTtl15s = 15 * kNsPerSecond;

state::Session TtlSession(const char* id, DurationNs ttl_ns = kTtl10s) {
  state::Session session;
  session.id = SessionId(id);
  session.ttl_ns = ttl_ns;
  if (ttl_ns != 0) session.ttl = FormatGoDuration(ttl_ns);  // as the API stores it
  return session;
}

class LeaderDutiesTest : public ::testing::Test {
 protected:
  // Becomes leader at `now_ms` over the sessions a, b (TTL 10 s) and
  // forever (no TTL).
  void Lead(MonoMs now_ms) { duties_.OnBecameLeader(now_ms, {&a_, &b_, &forever_}); }

  state::Session a_ = TtlSession("a");
  state::Session b_ = TtlSession("b");
  state::Session forever_ = TtlSession("forever", 0);
  LeaderDuties duties_{2};
};

TEST_F(LeaderDutiesTest, NewLeaderArmsEveryTtlSessionAtAFullTtlTimesMultiplier) {
  EXPECT_EQ(duties_.OnBecameLeader(MonoMs(5'000), {&a_, &b_, &forever_}), 2u);
  EXPECT_EQ(duties_.NextDeadline(), MonoMs(25'000));
  EXPECT_EQ(duties_.DueExpiries(MonoMs(24'999)), Ids{});
  EXPECT_EQ(duties_.DueExpiries(MonoMs(25'000)), IdsOf({"a", "b"}));
  EXPECT_TRUE(duties_.IsExpiring(SessionId("a")));
  EXPECT_FALSE(duties_.IsExpiring(SessionId("forever")));
}

TEST_F(LeaderDutiesTest, RenewalFromMemoryPushesTheDeadline) {
  Lead(MonoMs(0));
  ASSERT_TRUE(duties_.Renew(SessionId("a"), &a_, MonoMs(15'000)).ok());
  EXPECT_EQ(duties_.DueExpiries(MonoMs(20'000)), IdsOf({"b"}));
  EXPECT_EQ(duties_.DueExpiries(MonoMs(34'999)), Ids{});
  EXPECT_EQ(duties_.DueExpiries(MonoMs(35'000)), IdsOf({"a"}));
}

TEST_F(LeaderDutiesTest, FollowerNeitherRenewsNorExpires) {
  Status renewed = duties_.Renew(SessionId("a"), &a_, MonoMs(0));
  EXPECT_EQ(renewed.code(), Code::kNotLeader);
  duties_.OnSessionCreated(SessionId("c"), kTtl10s, MonoMs(0));
  EXPECT_EQ(duties_.NextDeadline(), std::nullopt);
}

TEST_F(LeaderDutiesTest, RenewingAMissingSessionIsNotFoundWithConsulsText) {
  Lead(MonoMs(0));
  Status renewed = duties_.Renew(SessionId("zz"), nullptr, MonoMs(0));
  EXPECT_EQ(renewed.code(), Code::kNotFound);
  EXPECT_EQ(renewed.message(), "Session id 'zz' not found");
}

TEST_F(LeaderDutiesTest, ExpiringSessionCannotBeRenewed) {
  Lead(MonoMs(0));
  ASSERT_EQ(duties_.DueExpiries(MonoMs(20'000)), IdsOf({"a", "b"}));
  EXPECT_EQ(duties_.Renew(SessionId("a"), &a_, MonoMs(20'001)).code(), Code::kNotFound);
}

TEST_F(LeaderDutiesTest, ExpiringSessionJoinsNoQueueButLockDelayDoesNotRefuseAnEnqueue) {
  Lead(MonoMs(0));
  ASSERT_EQ(duties_.DueExpiries(MonoMs(20'000)), IdsOf({"a", "b"}));
  std::optional<state::ApplyResult> refused =
      duties_.RefuseBeforeProposing(state::KvEnqueue{"k", "v", 0, SessionId("a")}, MonoMs(20'000));
  ASSERT_TRUE(refused.has_value());
  EXPECT_FALSE(refused->ok);
  EXPECT_FALSE(refused->queued);
  EXPECT_EQ(refused->status.message(), "invalid session \"a\"");
  // Another session, on a key in a replicated lock-delay window: proposed
  // (the Store queues it until the window has passed).
  auto in_window = [](std::string_view key) { return key == "k"; };
  EXPECT_FALSE(duties_
                   .RefuseBeforeProposing(state::KvEnqueue{"k", "v", 0, SessionId("c")},
                                          MonoMs(20'000), in_window)
                   .has_value());
}

TEST_F(LeaderDutiesTest, ExpiringSessionAcquiresNothing) {
  Lead(MonoMs(0));
  ASSERT_EQ(duties_.DueExpiries(MonoMs(20'000)), IdsOf({"a", "b"}));
  std::optional<state::ApplyResult> kv =
      duties_.RefuseBeforeProposing(state::KvAcquire{"k", "v", 0, SessionId("a")}, MonoMs(20'000));
  ASSERT_TRUE(kv.has_value());
  EXPECT_FALSE(kv->ok);
  EXPECT_EQ(kv->status.message(), "invalid session \"a\"");

  state::Txn txn;
  txn.ops.push_back({state::TxnVerb::kSet, "x", "1", 0, LogIndex(), SessionId()});
  txn.ops.push_back({state::TxnVerb::kLock, "k", "v", 0, LogIndex(), SessionId("b")});
  std::optional<state::ApplyResult> refused = duties_.RefuseBeforeProposing(txn, MonoMs(20'000));
  ASSERT_TRUE(refused.has_value());
  ASSERT_EQ(refused->txn.errors.size(), 1u);
  EXPECT_EQ(refused->txn.errors[0].op_index, 1u);
  EXPECT_EQ(refused->txn.errors[0].what, "invalid session \"b\"");
  EXPECT_TRUE(refused->txn.results.empty());
}

// Consul checks lock-delay before the session: an acquire without a session
// on a key in a replicated window is the plain `false` of a lock-delay, not
// "missing session" (found by the in-process transcripts).
TEST_F(LeaderDutiesTest, ReplicatedLockDelayComesBeforeTheMissingSession) {
  Lead(MonoMs(0));
  auto in_window = [](std::string_view key) { return key == "k"; };
  std::optional<state::ApplyResult> refused = duties_.RefuseBeforeProposing(
      state::KvAcquire{"k", "v", 0, SessionId()}, MonoMs(0), in_window);
  ASSERT_TRUE(refused.has_value());
  EXPECT_TRUE(refused->lock_delayed);
  EXPECT_TRUE(refused->status.ok());
  refused = duties_.RefuseBeforeProposing(state::KvAcquire{"free", "v", 0, SessionId()}, MonoMs(0),
                                          in_window);
  ASSERT_TRUE(refused.has_value());
  EXPECT_FALSE(refused->lock_delayed);
  EXPECT_EQ(refused->status.message(), "missing session");
  state::Txn txn;
  txn.ops.push_back({state::TxnVerb::kLock, "k", "v", 0, LogIndex(), SessionId("a")});
  refused = duties_.RefuseBeforeProposing(txn, MonoMs(0), in_window);
  ASSERT_TRUE(refused.has_value());
  ASSERT_EQ(refused->txn.errors.size(), 1u);
  EXPECT_EQ(refused->txn.errors[0].what, "failed to lock key \"k\" due to lock delay");
}

TEST_F(LeaderDutiesTest, LiveSessionAndOtherCommandsAreNotRefused) {
  Lead(MonoMs(0));
  EXPECT_FALSE(
      duties_.RefuseBeforeProposing(state::KvAcquire{"k", "v", 0, SessionId("a")}, MonoMs(0)));
  EXPECT_FALSE(
      duties_.RefuseBeforeProposing(state::KvRelease{"k", "v", 0, SessionId("a")}, MonoMs(0)));
  ASSERT_EQ(duties_.DueExpiries(MonoMs(20'000)), IdsOf({"a", "b"}));
  // Releasing is always allowed; only grants are refused.
  EXPECT_FALSE(
      duties_.RefuseBeforeProposing(state::KvRelease{"k", "v", 0, SessionId("a")}, MonoMs(0)));
}

TEST_F(LeaderDutiesTest, CommittedExpiryEndsTheExpiringState) {
  Lead(MonoMs(0));
  ASSERT_EQ(duties_.DueExpiries(MonoMs(20'000)), IdsOf({"a", "b"}));
  duties_.OnCommitted(SessionChange{SessionId(), 0, SessionId("a")}, MonoMs(20'010));
  EXPECT_FALSE(duties_.IsExpiring(SessionId("a")));
  duties_.ExpiryResolved(SessionId("b"));
  EXPECT_FALSE(duties_.IsExpiring(SessionId("b")));
  EXPECT_EQ(duties_.NextDeadline(), std::nullopt);
}

TEST_F(LeaderDutiesTest, FailedExpiryIsRetriedASecondLaterAndStaysExpiring) {
  Lead(MonoMs(0));
  ASSERT_EQ(duties_.DueExpiries(MonoMs(20'000)), IdsOf({"a", "b"}));
  duties_.ExpiryResolved(SessionId("b"));
  duties_.ExpiryFailed(SessionId("a"), MonoMs(20'005));
  EXPECT_TRUE(duties_.IsExpiring(SessionId("a")));
  EXPECT_EQ(duties_.Renew(SessionId("a"), &a_, MonoMs(20'500)).code(), Code::kNotFound);
  EXPECT_EQ(duties_.NextDeadline(), MonoMs(20'005 + LeaderDuties::kExpiryRetryMs));
  EXPECT_EQ(duties_.DueExpiries(MonoMs(21'004)), Ids{});
  EXPECT_EQ(duties_.DueExpiries(MonoMs(21'005)), IdsOf({"a"}));
  EXPECT_TRUE(duties_.IsExpiring(SessionId("a")));
  EXPECT_EQ(duties_.NextDeadline(), std::nullopt);
}

TEST_F(LeaderDutiesTest, DestroyedSessionIsForgottenEvenWhileARetryWaits) {
  Lead(MonoMs(0));
  ASSERT_EQ(duties_.DueExpiries(MonoMs(20'000)), IdsOf({"a", "b"}));
  duties_.ExpiryFailed(SessionId("a"), MonoMs(20'000));
  duties_.OnSessionDestroyed(SessionId("a"));
  EXPECT_FALSE(duties_.IsExpiring(SessionId("a")));
  duties_.ExpiryResolved(SessionId("b"));
  EXPECT_EQ(duties_.NextDeadline(), std::nullopt);
}

TEST_F(LeaderDutiesTest, CreatedSessionIsArmedWhenItsCreateCommits) {
  Lead(MonoMs(0));
  duties_.OnCommitted(SessionChange{SessionId("c"), TtlSession("c").ttl_ns, SessionId()},
                      MonoMs(3'000));
  ASSERT_TRUE(duties_.Renew(SessionId("a"), &a_, MonoMs(10'000)).ok());
  ASSERT_TRUE(duties_.Renew(SessionId("b"), &b_, MonoMs(10'000)).ok());
  EXPECT_EQ(duties_.NextDeadline(), MonoMs(23'000));
  EXPECT_EQ(duties_.DueExpiries(MonoMs(23'000)), IdsOf({"c"}));
}

TEST_F(LeaderDutiesTest, LostLeadershipForgetsEverythingAndNextLeadershipStartsAfresh) {
  Lead(MonoMs(0));
  ASSERT_EQ(duties_.DueExpiries(MonoMs(20'000)), IdsOf({"a", "b"}));
  duties_.ExpiryFailed(SessionId("a"), MonoMs(20'000));
  duties_.OnLostLeadership();
  EXPECT_FALSE(duties_.leading());
  EXPECT_FALSE(duties_.IsExpiring(SessionId("a")));
  EXPECT_EQ(duties_.NextDeadline(), std::nullopt);
  // Leading again (the expiry never committed): a full TTL x 2 from now.
  Lead(MonoMs(50'000));
  EXPECT_FALSE(duties_.IsExpiring(SessionId("a")));
  EXPECT_EQ(duties_.DueExpiries(MonoMs(69'999)), Ids{});
  EXPECT_EQ(duties_.DueExpiries(MonoMs(70'000)), IdsOf({"a", "b"}));
}

TEST_F(LeaderDutiesTest, MultiplierOneExpiresAtTheTtl) {
  LeaderDuties strict(1);
  strict.OnBecameLeader(MonoMs(0), {&a_});
  EXPECT_EQ(strict.DueExpiries(MonoMs(9'999)), Ids{});
  EXPECT_EQ(strict.DueExpiries(MonoMs(10'000)), IdsOf({"a"}));
}

TEST(SessionChangeTest, TimersFollowWhatTheStoreApplied) {
  EXPECT_FALSE(TouchesSessions(state::KvSet{"k", "v", 0}));
  EXPECT_TRUE(TouchesSessions(state::SessionCreate{TtlSession("c", kTtl15s)}));
  EXPECT_TRUE(TouchesSessions(state::SessionDestroy{SessionId("d")}));

  state::Store store;
  state::ApplyResult created =
      store.Apply({ClusterMs(1), state::SessionCreate{TtlSession("c", kTtl15s)}}, LogIndex(1));
  SessionChange change = SessionChangeOf(created);
  EXPECT_EQ(change.created_id, SessionId("c"));
  EXPECT_EQ(change.created_ttl_ns, kTtl15s);
  // A create the Store refused (the id exists) arms nothing.
  state::ApplyResult again =
      store.Apply({ClusterMs(2), state::SessionCreate{TtlSession("c", kTtl15s)}}, LogIndex(2));
  EXPECT_FALSE(again.status.ok());
  EXPECT_TRUE(SessionChangeOf(again).empty());
  EXPECT_EQ(SessionChangeOf(
                store.Apply({ClusterMs(3), state::SessionDestroy{SessionId("c")}}, LogIndex(3)))
                .destroyed_id,
            SessionId("c"));
  EXPECT_TRUE(
      SessionChangeOf(store.Apply({ClusterMs(4), state::KvSet{"k", "v", 0}}, LogIndex(4))).empty());
}

// A key left free with waiters in a lock-delay window (decision 0027): the
// grant is due once the window has passed, and nothing is due for a held key.
TEST_F(LeaderDutiesTest, QueueGrantIsDueOnceTheLockDelayWindowHasPassed) {
  state::Store store;
  state::Session holder = TtlSession("h", 0);
  holder.lock_delay_ns = 2 * kNsPerSecond;
  store.Apply({ClusterMs(1'000), state::SessionCreate{holder}}, LogIndex(1));
  store.Apply({ClusterMs(1'000), state::SessionCreate{TtlSession("w", 0)}}, LogIndex(2));
  store.Apply({ClusterMs(1'000), state::KvAcquire{"k", "v", 0, SessionId("h")}}, LogIndex(3));
  EXPECT_TRUE(
      store.Apply({ClusterMs(1'000), state::KvEnqueue{"k", "w", 0, SessionId("w")}}, LogIndex(4))
          .queued);

  // Not leading: nothing is scheduled.
  duties_.CheckQueue(store, "k", MonoMs(500), 0);
  EXPECT_EQ(duties_.queue_grants_pending(), 0u);

  duties_.OnBecameLeader(MonoMs(500), store);
  duties_.CheckQueue(store, "k", MonoMs(500), 0);  // held: nothing to grant
  EXPECT_EQ(duties_.queue_grants_pending(), 0u);

  store.Apply({ClusterMs(1'000), state::SessionDestroy{SessionId("h")}}, LogIndex(5));
  ASSERT_NE(store.FindQueue("k"), nullptr);  // free, in lock-delay until 3,000
  duties_.CheckQueue(store, "k", MonoMs(600), 2'000);
  EXPECT_EQ(duties_.NextDeadline(), std::optional<MonoMs>(MonoMs(2'600)));
  EXPECT_TRUE(duties_.DueQueueGrants(MonoMs(2'599)).empty());
  EXPECT_EQ(duties_.DueQueueGrants(MonoMs(2'600)), std::vector<std::string>{"k"});
  EXPECT_EQ(duties_.queue_grants_pending(), 0u);

  // A failed proposal comes back a second later while leading.
  duties_.QueueGrantFailed("k", MonoMs(2'600));
  EXPECT_TRUE(duties_.DueQueueGrants(MonoMs(3'599)).empty());
  EXPECT_EQ(duties_.DueQueueGrants(MonoMs(3'600)), std::vector<std::string>{"k"});

  // The grant applied: the waiter holds the key and nothing stays due.
  store.Apply({ClusterMs(3'000), state::KvQueueGrant{"k"}}, LogIndex(6));
  EXPECT_EQ(store.FindKv("k")->session, SessionId("w"));
  duties_.CheckQueue(store, "k", MonoMs(3'700), 0);
  EXPECT_EQ(duties_.queue_grants_pending(), 0u);

  // Leadership lost: everything pending is forgotten.
  duties_.QueueGrantFailed("k", MonoMs(3'700));
  duties_.OnLostLeadership();
  EXPECT_EQ(duties_.queue_grants_pending(), 0u);
}

// The lock-delay gap of decision 0027: a new leader whose wall clock runs
// ahead inherits a window that the replicated clock says has passed but its
// LockDelayGuard still holds. Its enqueues and dequeues of that key carry
// `hold`, so their entries grant nothing; the grant is due when the guard
// lets the key go, not at once.
TEST_F(LeaderDutiesTest, QueueCommandsOnAGuardedKeyAreHeldAndTheGrantWaitsForTheGuard) {
  auto build = [](state::Store& store) {
    state::Session holder = TtlSession("h", 0);
    holder.lock_delay_ns = 5 * kNsPerSecond;
    store.Apply({ClusterMs(1'000), state::SessionCreate{holder}}, LogIndex(1));
    store.Apply({ClusterMs(1'000), state::SessionCreate{TtlSession("w", 0)}}, LogIndex(2));
    store.Apply({ClusterMs(1'000), state::SessionCreate{TtlSession("x", 0)}}, LogIndex(3));
    store.Apply({ClusterMs(1'000), state::KvAcquire{"k", "v", 0, SessionId("h")}}, LogIndex(4));
    store.Apply({ClusterMs(1'000), state::KvEnqueue{"k", "w", 0, SessionId("w")}}, LogIndex(5));
    store.Apply({ClusterMs(1'000), state::SessionDestroy{SessionId("h")}}, LogIndex(6));
    // Free with a waiter, in lock-delay until 6,000 in replicated time.
  };
  state::Store store;
  build(store);

  // A follower stamps nothing.
  state::CommandBody early = state::KvEnqueue{"k", "x", 0, SessionId("x")};
  EXPECT_FALSE(duties_.HoldQueueGrant(&early, MonoMs(100)));
  EXPECT_FALSE(std::get<state::KvEnqueue>(early).hold);

  // Elected at 100 on its own clock: the guard holds "k" until 5,100.
  duties_.OnBecameLeader(MonoMs(100), store);
  ASSERT_EQ(duties_.lock_delays().Until("k"), MonoMs(5'100));

  state::CommandBody enqueue = state::KvEnqueue{"k", "x", 0, SessionId("x")};
  state::CommandBody dequeue = state::KvDequeue{"k", SessionId("w")};
  state::CommandBody other_key = state::KvEnqueue{"j", "x", 0, SessionId("x")};
  state::CommandBody grant = state::KvQueueGrant{"k"};
  EXPECT_TRUE(duties_.HoldQueueGrant(&enqueue, MonoMs(200)));
  EXPECT_TRUE(std::get<state::KvEnqueue>(enqueue).hold);
  EXPECT_TRUE(duties_.HoldQueueGrant(&dequeue, MonoMs(5'099)));
  EXPECT_TRUE(std::get<state::KvDequeue>(dequeue).hold);
  EXPECT_FALSE(duties_.HoldQueueGrant(&other_key, MonoMs(200)));
  EXPECT_FALSE(std::get<state::KvEnqueue>(other_key).hold);
  EXPECT_FALSE(duties_.HoldQueueGrant(&grant, MonoMs(200)));

  // Its clock runs 5 s ahead: the stamp 6,500 is past the replicated
  // window, yet the held enqueue grants nothing and x queues behind w.
  state::ApplyResult r =
      store.Apply({ClusterMs(6'500), std::get<state::KvEnqueue>(enqueue)}, LogIndex(7));
  EXPECT_TRUE(r.queued);
  EXPECT_TRUE(r.queue_events.empty());
  EXPECT_TRUE(store.FindKv("k")->session.empty());
  ASSERT_EQ(store.FindQueue("k")->size(), 2u);

  // The same enqueue without the stamp grants w at once (the gap).
  state::Store unguarded;
  build(unguarded);
  state::ApplyResult gap = unguarded.Apply(
      {ClusterMs(6'500), state::KvEnqueue{"k", "x", 0, SessionId("x")}}, LogIndex(7));
  ASSERT_EQ(gap.queue_events.size(), 1u);
  EXPECT_EQ(unguarded.FindKv("k")->session, SessionId("w"));

  // The grant is due when the guard lets go, though the replicated window
  // has passed (remaining 0).
  duties_.CheckQueue(store, "k", MonoMs(200), 0);
  EXPECT_EQ(duties_.NextDeadline(), std::optional<MonoMs>(MonoMs(5'100)));
  EXPECT_TRUE(duties_.DueQueueGrants(MonoMs(5'099)).empty());
  EXPECT_EQ(duties_.DueQueueGrants(MonoMs(5'100)), std::vector<std::string>{"k"});

  // From then on nothing is stamped.
  state::CommandBody later = state::KvEnqueue{"k", "x", 0, SessionId("x")};
  EXPECT_FALSE(duties_.HoldQueueGrant(&later, MonoMs(5'100)));
  EXPECT_FALSE(std::get<state::KvEnqueue>(later).hold);
}

}  // namespace
}  // namespace tenure::server
