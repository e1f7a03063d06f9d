// Scenario tests for locks: acquire/release, every row of the state-transition
// table (docs/consul-api.md section 11), session invalidation effects
// (section 2.6), lock-delay and tenure's fencing token (types.h KvEntry::fence).

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/limits.h"
#include "unit/state/store_fixture.h"

namespace tenure::state {
namespace {

using ::testing::IsEmpty;
using testutil::ChangedKeys;
using testutil::kC0;
using testutil::StoreDriver;

constexpr DurationNs kSecond = kNsPerSecond;

// --- section 11, rows 1-7: acquire ---------------------------------------------------

// Row 1.
TEST(StoreLockTest, AcquireOfAbsentKeyCreatesItLockedWithLockIndexOne) {
  StoreDriver d;
  SessionId a = d.NewSession();
  ApplyResult r = d.Acquire("k", a, "me", 11);  // index 2
  EXPECT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_TRUE(r.ok);
  EXPECT_FALSE(r.lock_delayed);
  EXPECT_EQ(r.fence, LogIndex(2));
  auto e = d.Get("k");
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->session, a);
  EXPECT_EQ(e->lock_index, 1u);
  EXPECT_EQ(e->create_index, LogIndex(2));
  EXPECT_EQ(e->modify_index, LogIndex(2));
  EXPECT_EQ(e->value, "me");
  EXPECT_EQ(e->flags, 11u);
  EXPECT_EQ(e->fence, LogIndex(2));
  EXPECT_EQ(d.Held(a), std::vector<std::string>{"k"});
  EXPECT_EQ(d.store().kv_index(), LogIndex(2));
}

// Row 2.
TEST(StoreLockTest, AcquireOfUnlockedKeyIncrementsLockIndexAndReplacesContent) {
  StoreDriver d;
  SessionId a = d.NewSession();
  SessionId b = d.NewSession();
  d.Acquire("k", a, "a");                     // 3
  d.Release("k", a, "a");                     // 4
  ApplyResult r = d.Acquire("k", b, "b", 5);  // 5
  EXPECT_TRUE(r.ok);
  EXPECT_EQ(r.fence, LogIndex(5));
  auto e = d.Get("k");
  EXPECT_EQ(e->session, b);
  EXPECT_EQ(e->lock_index, 2u);
  EXPECT_EQ(e->create_index, LogIndex(3));
  EXPECT_EQ(e->modify_index, LogIndex(5));
  EXPECT_EQ(e->value, "b");
  EXPECT_EQ(e->flags, 5u);
  EXPECT_EQ(e->fence, LogIndex(5));
}

TEST(StoreLockTest, AcquireOfKeyCreatedBySetStartsLockIndexAtOne) {
  StoreDriver d;
  d.Set("k", "plain");  // 1, LockIndex 0
  SessionId a = d.NewSession();
  ApplyResult r = d.Acquire("k", a, "locked");  // 3
  EXPECT_TRUE(r.ok);
  EXPECT_EQ(d.Get("k")->lock_index, 1u);
  EXPECT_EQ(d.Get("k")->create_index, LogIndex(1));
}

// Row 3.
TEST(StoreLockTest, AcquireBySameSessionWithNewContentKeepsLockIndexAndFence) {
  StoreDriver d;
  SessionId a = d.NewSession();
  d.Acquire("k", a, "v1", 1);                  // 2
  d.Set("other", "x");                         // 3
  ApplyResult r = d.Acquire("k", a, "v2", 2);  // 4
  EXPECT_TRUE(r.ok);
  EXPECT_EQ(r.fence, LogIndex(2));
  auto e = d.Get("k");
  EXPECT_EQ(e->session, a);
  EXPECT_EQ(e->lock_index, 1u);
  EXPECT_EQ(e->fence, LogIndex(2));
  EXPECT_EQ(e->modify_index, LogIndex(4));
  EXPECT_EQ(e->value, "v2");
  EXPECT_EQ(e->flags, 2u);
}

// Row 4.
TEST(StoreLockTest, AcquireBySameSessionWithIdenticalContentIsNoOp) {
  StoreDriver d;
  SessionId a = d.NewSession();
  d.Acquire("k", a, "v", 1);  // 2
  d.Set("other", "x");        // 3
  (void)d.store().TakeChanges();
  ApplyResult r = d.Acquire("k", a, "v", 1);  // 4
  EXPECT_TRUE(r.status.ok());
  EXPECT_TRUE(r.ok);
  EXPECT_EQ(r.fence, LogIndex(2));
  auto e = d.Get("k");
  EXPECT_EQ(e->modify_index, LogIndex(2));
  EXPECT_EQ(e->lock_index, 1u);
  EXPECT_EQ(d.store().kv_index(), LogIndex(3));
  EXPECT_THAT(d.store().TakeChanges().keys, IsEmpty());
}

// Row 5.
TEST(StoreLockTest, AcquireByOtherSessionFailsAndChangesNothing) {
  StoreDriver d;
  SessionId a = d.NewSession();
  SessionId b = d.NewSession();
  d.Acquire("k", a, "a", 1);  // 3
  (void)d.store().TakeChanges();
  ApplyResult r = d.Acquire("k", b, "b", 2);
  EXPECT_TRUE(r.status.ok());
  EXPECT_FALSE(r.ok);
  EXPECT_FALSE(r.lock_delayed);
  auto e = d.Get("k");
  EXPECT_EQ(e->session, a);
  EXPECT_EQ(e->lock_index, 1u);
  EXPECT_EQ(e->modify_index, LogIndex(3));
  EXPECT_EQ(e->value, "a");
  EXPECT_EQ(e->flags, 1u);
  EXPECT_EQ(e->fence, LogIndex(3));
  EXPECT_THAT(d.Held(b), IsEmpty());
  EXPECT_THAT(d.store().TakeChanges().keys, IsEmpty());
}

// Row 6.
TEST(StoreLockTest, AcquireWithUnknownSessionIsInvalidSessionError) {
  StoreDriver d;
  d.Set("k", "v");
  const SessionId x = testutil::TestSessionId(999);
  ApplyResult r = d.Acquire("k", x, "mine");
  EXPECT_FALSE(r.status.ok());
  EXPECT_EQ(r.status.message(), "invalid session \"" + x.str() + "\"");
  auto e = d.Get("k");
  EXPECT_EQ(e->session, SessionId());
  EXPECT_EQ(e->value, "v");
  EXPECT_EQ(e->modify_index, LogIndex(1));
  EXPECT_EQ(d.store().kv_index(), LogIndex(1));
}

TEST(StoreLockTest, AcquireOfAbsentKeyWithUnknownSessionCreatesNothing) {
  StoreDriver d;
  ApplyResult r = d.Acquire("k", SessionId("nope"));
  EXPECT_FALSE(r.status.ok());
  EXPECT_EQ(r.status.message(), "invalid session \"nope\"");
  EXPECT_EQ(d.store().FindKv("k"), nullptr);
  EXPECT_EQ(d.store().kv_index(), LogIndex());
}

TEST(StoreLockTest, AcquireWithDestroyedSessionIsInvalidSessionError) {
  StoreDriver d;
  SessionId a = d.NewSession();
  d.Destroy(a);
  ApplyResult r = d.Acquire("k", a);
  EXPECT_FALSE(r.status.ok());
  EXPECT_EQ(r.status.message(), "invalid session \"" + a.str() + "\"");
}

TEST(StoreLockTest, AcquireWithEmptySessionIsMissingSessionError) {
  StoreDriver d;
  d.NewSession();
  ApplyResult r = d.Acquire("k", SessionId());
  EXPECT_FALSE(r.status.ok());
  EXPECT_EQ(r.status.message(), "missing session");
  EXPECT_EQ(d.store().FindKv("k"), nullptr);
}

// Row 7 (and section 2.6): inside the window acquire answers false.
TEST(StoreLockTest, AcquireDuringLockDelayIsRefusedWithoutWriting) {
  StoreDriver d;
  SessionId a = d.NewSession(10 * kSecond);
  SessionId b = d.NewSession();
  d.Acquire("k", a, "a");  // 3
  d.Destroy(a);            // 4, window [kC0, kC0 + 10 s)
  (void)d.store().TakeChanges();
  d.AdvanceMs(5000);
  ApplyResult r = d.Acquire("k", b, "b");
  EXPECT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(r.lock_delayed);
  auto e = d.Get("k");
  EXPECT_EQ(e->session, SessionId());
  EXPECT_EQ(e->value, "a");
  EXPECT_EQ(e->modify_index, LogIndex(4));
  EXPECT_EQ(e->lock_index, 1u);
  EXPECT_THAT(d.store().TakeChanges().keys, IsEmpty());
}

// --- section 11, rows 8-9: release --------------------------------------------------

// Row 8.
TEST(StoreLockTest, ReleaseByHolderClearsSessionKeepsLockIndexAndReplacesContent) {
  StoreDriver d;
  SessionId a = d.NewSession();
  d.Acquire("k", a, "held", 9);              // 2
  ApplyResult r = d.Release("k", a, "", 0);  // 3: empty body wipes the value
  EXPECT_TRUE(r.status.ok());
  EXPECT_TRUE(r.ok);
  auto e = d.Get("k");
  EXPECT_EQ(e->session, SessionId());
  EXPECT_EQ(e->fence, LogIndex());
  EXPECT_EQ(e->lock_index, 1u);
  EXPECT_EQ(e->create_index, LogIndex(2));
  EXPECT_EQ(e->modify_index, LogIndex(3));
  EXPECT_EQ(e->value, "");
  EXPECT_EQ(e->flags, 0u);
  EXPECT_THAT(d.Held(a), IsEmpty());
  EXPECT_NE(d.store().FindSession(a), nullptr) << "release does not end the session";
}

TEST(StoreLockTest, ReleaseByHolderStoresTheRequestValueAndFlags) {
  StoreDriver d;
  SessionId a = d.NewSession();
  d.Acquire("k", a, "held", 1);
  d.Release("k", a, "released", testutil::kLockFlagValue);
  EXPECT_EQ(d.Get("k")->value, "released");
  EXPECT_EQ(d.Get("k")->flags, testutil::kLockFlagValue);
}

// Row 9, held by another session.
TEST(StoreLockTest, ReleaseByNonHolderFailsAndChangesNothing) {
  StoreDriver d;
  SessionId a = d.NewSession();
  SessionId b = d.NewSession();
  d.Acquire("k", a, "a");  // 3
  ApplyResult r = d.Release("k", b, "b");
  EXPECT_TRUE(r.status.ok());
  EXPECT_FALSE(r.ok);
  auto e = d.Get("k");
  EXPECT_EQ(e->session, a);
  EXPECT_EQ(e->value, "a");
  EXPECT_EQ(e->modify_index, LogIndex(3));
  EXPECT_EQ(e->fence, LogIndex(3));
}

// Row 9, unlocked key.
TEST(StoreLockTest, ReleaseOfUnlockedKeyFails) {
  StoreDriver d;
  SessionId a = d.NewSession();
  d.Set("k", "v");  // 2
  ApplyResult r = d.Release("k", a, "x");
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(d.Get("k")->value, "v");
  EXPECT_EQ(d.Get("k")->modify_index, LogIndex(2));
}

// Row 9, absent key.
TEST(StoreLockTest, ReleaseOfAbsentKeyFailsAndCreatesNothing) {
  StoreDriver d;
  SessionId a = d.NewSession();
  ApplyResult r = d.Release("k", a, "x");
  EXPECT_TRUE(r.status.ok());
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(d.store().FindKv("k"), nullptr);
  EXPECT_EQ(d.store().kv_index(), LogIndex());
}

// Section 2.5 release step 1: "Session existence is *not* checked".
TEST(StoreLockTest, ReleaseWithUnknownSessionAnswersFalseNotError) {
  StoreDriver d;
  d.Set("k", "v");
  ApplyResult r = d.Release("k", SessionId("unknown"));
  EXPECT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_FALSE(r.ok);
}

TEST(StoreLockTest, ReleaseWithEmptySessionIsMissingSessionError) {
  StoreDriver d;
  SessionId a = d.NewSession();
  d.Acquire("k", a);
  ApplyResult r = d.Release("k", SessionId());
  EXPECT_FALSE(r.status.ok());
  EXPECT_EQ(r.status.message(), "missing session");
  EXPECT_EQ(d.Get("k")->session, a);
}

// --- section 11, rows 10-12 on a locked key ---------------------------------------------

TEST(StoreLockTest, LockIndexCountsNewHoldersOnly) {
  StoreDriver d;
  SessionId a = d.NewSession();
  SessionId b = d.NewSession();
  d.Acquire("k", a, "1");
  EXPECT_EQ(d.Get("k")->lock_index, 1u);
  d.Acquire("k", a, "2");
  EXPECT_EQ(d.Get("k")->lock_index, 1u);
  d.Release("k", a);
  EXPECT_EQ(d.Get("k")->lock_index, 1u);
  d.Acquire("k", b);
  EXPECT_EQ(d.Get("k")->lock_index, 2u);
  d.Release("k", b);
  d.Acquire("k", a);
  EXPECT_EQ(d.Get("k")->lock_index, 3u);
}

TEST(StoreLockTest, LockIndexRestartsAtOneAfterDeleteAndRecreate) {
  StoreDriver d;
  SessionId a = d.NewSession();
  d.Acquire("k", a);
  d.Release("k", a);
  d.Acquire("k", a);
  ASSERT_EQ(d.Get("k")->lock_index, 2u);
  d.Delete("k");
  d.Acquire("k", a);
  EXPECT_EQ(d.Get("k")->lock_index, 1u);
}

TEST(StoreLockTest, AcquireAfterSetZeroedLockIndexCountsFromZero) {
  StoreDriver d;
  SessionId a = d.NewSession();
  SessionId b = d.NewSession();
  d.Acquire("k", a);    // LockIndex 1
  d.Set("k", "plain");  // LockIndex 0, still held by a
  d.Release("k", a);    // LockIndex kept (0)
  EXPECT_EQ(d.Get("k")->lock_index, 0u);
  d.Acquire("k", b);
  EXPECT_EQ(d.Get("k")->lock_index, 1u);
}

// --- section 11, rows 13-14: invalidation -------------------------------------------------

// Row 13.
TEST(StoreLockTest, DestroyWithReleaseBehaviorUnlocksHeldKeys) {
  StoreDriver d;
  SessionId a = d.NewSession(0, Behavior::kRelease);
  SessionId b = d.NewSession();
  d.Acquire("k1", a, "v1", 3);  // 3
  d.Acquire("k2", a, "v2");     // 4
  d.Acquire("kb", b, "vb");     // 5
  (void)d.store().TakeChanges();
  ApplyResult r = d.Destroy(a);  // 6
  EXPECT_TRUE(r.status.ok());
  for (const char* key : {"k1", "k2"}) {
    auto e = d.Get(key);
    ASSERT_TRUE(e.has_value()) << key;
    EXPECT_EQ(e->session, SessionId()) << key;
    EXPECT_EQ(e->fence, LogIndex()) << key;
    EXPECT_EQ(e->lock_index, 1u) << key;
    EXPECT_EQ(e->modify_index, LogIndex(6)) << key;
  }
  EXPECT_EQ(d.Get("k1")->value, "v1");
  EXPECT_EQ(d.Get("k1")->flags, 3u);
  auto kb = d.Get("kb");
  EXPECT_EQ(kb->session, b);
  EXPECT_EQ(kb->modify_index, LogIndex(5));
  EXPECT_EQ(d.store().FindSession(a), nullptr);
  EXPECT_THAT(d.Held(a), IsEmpty());
  EXPECT_EQ(d.Held(b), std::vector<std::string>{"kb"});
  EXPECT_EQ(d.store().kv_index(), LogIndex(6));
  EXPECT_EQ(d.store().sessions_index(), LogIndex(6));
  Changes changes = d.store().TakeChanges();
  EXPECT_EQ(ChangedKeys(changes), (std::vector<std::string>{"k1", "k2"}));
  EXPECT_TRUE(changes.sessions);
}

// Row 14.
TEST(StoreLockTest, DestroyWithDeleteBehaviorDeletesHeldKeys) {
  StoreDriver d;
  SessionId a = d.NewSession(0, Behavior::kDelete);
  d.Set("p/other", "x");         // 2
  d.Acquire("p/k", a, "v");      // 3
  d.Set("p/z", "z");             // 4
  ApplyResult r = d.Destroy(a);  // 5
  EXPECT_TRUE(r.status.ok());
  EXPECT_EQ(d.store().FindKv("p/k"), nullptr);
  EXPECT_NE(d.store().FindKv("p/other"), nullptr);
  EXPECT_EQ(d.store().KeyIndex("p/k"), LogIndex(5));
  EXPECT_EQ(d.store().PrefixIndex("p/"), LogIndex(5));
  EXPECT_EQ(d.store().PrefixIndex("p/k"), LogIndex(5));
  EXPECT_EQ(d.store().kv_index(), LogIndex(5));
  EXPECT_GE(d.store().tombstone_count(), 1u);
}

TEST(StoreLockTest, ExpiryInvalidatesExactlyLikeDestroy) {
  StoreDriver d1;
  StoreDriver d2;
  for (StoreDriver* d : {&d1, &d2}) {
    d->NewSession(3 * kSecond, Behavior::kRelease);
    d->NewSession(0, Behavior::kDelete);
    d->Acquire("a", testutil::TestSessionId(1));
    d->Acquire("b", testutil::TestSessionId(2));
  }
  d1.Destroy(testutil::TestSessionId(1), DestroyReason::kDestroyed);
  d1.Destroy(testutil::TestSessionId(2), DestroyReason::kDestroyed);
  d2.Destroy(testutil::TestSessionId(1), DestroyReason::kExpired);
  d2.Destroy(testutil::TestSessionId(2), DestroyReason::kExpired);
  EXPECT_EQ(d2.Get("a"), d1.Get("a"));
  EXPECT_EQ(d2.Get("b"), std::nullopt);
  EXPECT_EQ(d2.store().LockDelayUntil("a"), kC0 + 3000);
  // Only the lock history tells them apart (docs/history.md): its causes.
  EXPECT_NE(d2.store().Digest(), d1.store().Digest());
  for (const char* key : {"a", "b"}) {
    ASSERT_NE(d1.store().FindHistory(key), nullptr);
    ASSERT_NE(d2.store().FindHistory(key), nullptr);
    EXPECT_EQ(d1.store().FindHistory(key)->grants.back().end_cause, EndCause::kDestroy);
    EXPECT_EQ(d2.store().FindHistory(key)->grants.back().end_cause, EndCause::kTtlExpiry);
  }
}

// --- lock-delay ------------------------------------------------------------------------

TEST(StoreLockDelayTest, WindowStartsAtInvalidationAndLastsTheSessionLockDelay) {
  StoreDriver d;
  SessionId a = d.NewSession(10 * kSecond);
  d.Acquire("k", a);
  d.SetNowMs(kC0 + 1234);
  d.Destroy(a);
  EXPECT_EQ(d.store().LockDelayUntil("k"), kC0 + 1234 + 10'000);
  EXPECT_EQ(d.store().LockDelayUntil("never-held"), ClusterMs(0));
}

TEST(StoreLockDelayTest, AcquireJustBeforeWindowEndIsRefused) {
  StoreDriver d;
  SessionId a = d.NewSession(10 * kSecond);
  SessionId b = d.NewSession();
  d.Acquire("k", a);
  d.Destroy(a);
  d.SetNowMs(kC0 + 9'999);
  ApplyResult r = d.Acquire("k", b);
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(r.lock_delayed);
  EXPECT_EQ(d.Get("k")->session, SessionId());
}

// The window is [start, end): Consul refuses while `expires.After(now)`.
TEST(StoreLockDelayTest, AcquireAtWindowEndSucceeds) {
  StoreDriver d;
  SessionId a = d.NewSession(10 * kSecond);
  SessionId b = d.NewSession();
  d.Acquire("k", a);
  d.Destroy(a);
  d.SetNowMs(kC0 + 10'000);
  ApplyResult r = d.Acquire("k", b, "b");
  EXPECT_TRUE(r.status.ok());
  EXPECT_TRUE(r.ok);
  EXPECT_FALSE(r.lock_delayed);
  EXPECT_EQ(d.Get("k")->session, b);
}

TEST(StoreLockDelayTest, AcquireAfterWindowSucceeds) {
  StoreDriver d;
  SessionId a = d.NewSession(2 * kSecond);
  SessionId b = d.NewSession();
  d.Acquire("k", a);
  d.Destroy(a);
  d.AdvanceMs(1000);
  EXPECT_TRUE(d.Acquire("k", b).lock_delayed);
  d.AdvanceMs(1500);
  ApplyResult r = d.Acquire("k", b);
  EXPECT_TRUE(r.ok);
  EXPECT_FALSE(r.lock_delayed);
}

TEST(StoreLockDelayTest, LockDelayIsCappedAtSixtySeconds) {
  StoreDriver d;
  SessionId a = d.NewSession(5 * 60 * kSecond);
  SessionId b = d.NewSession();
  d.Acquire("k", a);
  d.Destroy(a);
  EXPECT_EQ(d.store().LockDelayUntil("k"), kC0 + 60'000);
  d.SetNowMs(kC0 + 59'999);
  EXPECT_TRUE(d.Acquire("k", b).lock_delayed);
  d.SetNowMs(kC0 + 60'000);
  EXPECT_TRUE(d.Acquire("k", b).ok);
}

TEST(StoreLockDelayTest, StoredLockDelayIsNotClamped) {
  StoreDriver d;
  SessionId a = d.NewSession(5 * 60 * kSecond);
  ASSERT_NE(d.store().FindSession(a), nullptr);
  EXPECT_EQ(d.store().FindSession(a)->lock_delay_ns, 5 * 60 * kSecond);
  EXPECT_GT(d.store().FindSession(a)->lock_delay_ns, limits::kLockDelayMaxNs);
}

TEST(StoreLockDelayTest, AppliesOnlyToKeysHeldAtInvalidation) {
  StoreDriver d;
  SessionId a = d.NewSession(10 * kSecond);
  SessionId b = d.NewSession();
  d.Acquire("held", a);
  d.Acquire("released-first", a);
  d.Release("released-first", a);  // Go api.Lock's Unlock: release, then destroy
  d.Set("never-held", "x");
  d.Destroy(a);
  EXPECT_GT(d.store().LockDelayUntil("held"), ClusterMs(0));
  EXPECT_EQ(d.store().LockDelayUntil("released-first"), ClusterMs(0));
  EXPECT_EQ(d.store().LockDelayUntil("never-held"), ClusterMs(0));
  d.AdvanceMs(1);
  EXPECT_TRUE(d.Acquire("released-first", b).ok);
  EXPECT_TRUE(d.Acquire("never-held", b).ok);
  EXPECT_TRUE(d.Acquire("absent", b).ok);
  EXPECT_TRUE(d.Acquire("held", b).lock_delayed);
}

TEST(StoreLockDelayTest, ZeroLockDelayLeavesNoWindow) {
  StoreDriver d;
  SessionId a = d.NewSession(0);
  SessionId b = d.NewSession();
  d.Acquire("k", a);
  d.Destroy(a);
  EXPECT_EQ(d.store().LockDelayUntil("k"), ClusterMs(0));
  ApplyResult r = d.Acquire("k", b);
  EXPECT_TRUE(r.ok);
  EXPECT_FALSE(r.lock_delayed);
}

// consul-api.md 1.1: "Negative/zero ⇒ no delay".
TEST(StoreLockDelayTest, NegativeLockDelayLeavesNoWindow) {
  StoreDriver d;
  SessionId a = d.NewSession(-5 * kSecond);
  SessionId b = d.NewSession();
  d.Acquire("k", a);
  d.Destroy(a);
  EXPECT_EQ(d.store().LockDelayUntil("k"), ClusterMs(0));
  EXPECT_TRUE(d.Acquire("k", b).ok);
}

TEST(StoreLockDelayTest, ExpiredSessionStartsWindowToo) {
  StoreDriver d;
  SessionId a = d.NewSession(15 * kSecond);
  SessionId b = d.NewSession();
  d.Acquire("k", a);
  d.Destroy(a, DestroyReason::kExpired);
  EXPECT_EQ(d.store().LockDelayUntil("k"), kC0 + 15'000);
  EXPECT_TRUE(d.Acquire("k", b).lock_delayed);
}

TEST(StoreLockDelayTest, DeleteBehaviorStillStartsWindowOnTheDeletedKey) {
  StoreDriver d;
  SessionId a = d.NewSession(10 * kSecond, Behavior::kDelete);
  SessionId b = d.NewSession();
  d.Acquire("k", a);
  d.Destroy(a);
  ASSERT_EQ(d.store().FindKv("k"), nullptr);
  ApplyResult r = d.Acquire("k", b, "b");
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(r.lock_delayed);
  EXPECT_EQ(d.store().FindKv("k"), nullptr) << "a refused acquire must not create the key";
}

TEST(StoreLockDelayTest, DoesNotBlockSetCasDeleteOrRelease) {
  StoreDriver d;
  SessionId a = d.NewSession(30 * kSecond);
  SessionId b = d.NewSession();
  d.Acquire("k", a, "a");
  d.Acquire("j", a, "a");
  d.Destroy(a);
  d.AdvanceMs(1);

  ApplyResult set = d.Set("k", "set");
  EXPECT_TRUE(set.ok);
  EXPECT_FALSE(set.lock_delayed);
  EXPECT_EQ(d.Get("k")->value, "set");

  ApplyResult cas = d.Cas("k", "cas", d.Get("k")->modify_index);
  EXPECT_TRUE(cas.ok);
  EXPECT_FALSE(cas.lock_delayed);
  EXPECT_EQ(d.Get("k")->value, "cas");

  ApplyResult release = d.Release("k", b);  // not the holder: false, but not delayed
  EXPECT_TRUE(release.status.ok());
  EXPECT_FALSE(release.lock_delayed);

  ApplyResult txn = d.RunTxn({testutil::SetOp("j", "txn")});
  EXPECT_TRUE(txn.txn.ok());
  EXPECT_EQ(d.Get("j")->value, "txn");

  ApplyResult del = d.Delete("k");
  EXPECT_TRUE(del.ok);
  EXPECT_FALSE(del.lock_delayed);
  EXPECT_EQ(d.store().FindKv("k"), nullptr);

  // ...while acquire stays blocked on both keys.
  EXPECT_TRUE(d.Acquire("k", b).lock_delayed);
  EXPECT_TRUE(d.Acquire("j", b).lock_delayed);
}

// Section 2.5: "Lock-delay check happens first" (kvs_endpoint.go checks it
// before the state store validates the session).
TEST(StoreLockDelayTest, AcquireDuringLockDelayIsRefusedBeforeSessionValidation) {
  StoreDriver d;
  SessionId a = d.NewSession(10 * kSecond);
  d.Acquire("k", a);
  d.Destroy(a);
  ApplyResult r = d.Acquire("k", SessionId("unknown-session"));
  EXPECT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(r.lock_delayed);
}

// The window is measured on the replicated clock: a command stamped by a
// leader whose clock is behind cannot reopen or extend it, nor end it early.
TEST(StoreLockDelayTest, WindowIsMeasuredOnTheReplicatedClock) {
  StoreDriver d;
  SessionId a = d.NewSession(5 * kSecond);
  SessionId b = d.NewSession();
  d.Acquire("k", a);
  d.SetNowMs(kC0 + 1000);
  d.Destroy(a);                                                      // window ends at kC0 + 6000
  d.ApplyAt(KvSet{"x", "tick", 0}, kC0 + 7000);                      // the clock passes the window
  ApplyResult r = d.ApplyAt(KvAcquire{"k", "b", 0, b}, kC0 + 2000);  // stale leader clock
  EXPECT_TRUE(r.status.ok());
  EXPECT_TRUE(r.ok) << "the replicated clock (" << d.store().now_ms().ms()
                    << ") is past the window end";
  EXPECT_FALSE(r.lock_delayed);
}

TEST(StoreLockDelayTest, WindowStartUsesTheReplicatedClock) {
  StoreDriver d;
  SessionId a = d.NewSession(5 * kSecond);
  d.Acquire("k", a);
  d.ApplyAt(KvSet{"x", "tick", 0}, kC0 + 10'000);
  d.ApplyAt(SessionDestroy{a, DestroyReason::kExpired}, kC0 + 3000);  // stale stamp
  EXPECT_EQ(d.store().LockDelayUntil("k"), kC0 + 15'000);
}

TEST(StoreLockDelayTest, TxnLockDuringLockDelayFailsWithConsulText) {
  StoreDriver d;
  SessionId a = d.NewSession(10 * kSecond);
  SessionId b = d.NewSession();
  d.Acquire("k", a);
  d.Destroy(a);
  ApplyResult r = d.RunTxn({testutil::SetOp("other", "x"), testutil::LockOp("k", b, "b")});
  EXPECT_TRUE(r.status.ok());
  ASSERT_FALSE(r.txn.ok());
  EXPECT_THAT(r.txn.errors,
              ::testing::Contains(TxnError{1, "failed to lock key \"k\" due to lock delay"}));
  EXPECT_THAT(r.txn.results, IsEmpty());
  EXPECT_EQ(d.store().FindKv("other"), nullptr);
  EXPECT_EQ(d.Get("k")->session, SessionId());
}

// --- fencing tokens -------------------------------------------------------------------

TEST(StoreFenceTest, FenceIsTheRaftIndexOfTheGrant) {
  StoreDriver d;
  SessionId a = d.NewSession();
  d.SkipIndexes(40);
  ApplyResult r = d.Acquire("k", a);  // index 42
  EXPECT_EQ(r.fence, LogIndex(42));
  EXPECT_EQ(d.Get("k")->fence, LogIndex(42));
}

TEST(StoreFenceTest, FenceUnchangedOnReacquireBySameHolder) {
  StoreDriver d;
  SessionId a = d.NewSession();
  d.Acquire("k", a, "v1");  // 2
  d.AdvanceMs(10);
  ApplyResult r = d.Acquire("k", a, "v2");  // 3: a real write, same holder
  EXPECT_EQ(r.fence, LogIndex(2));
  EXPECT_EQ(d.Get("k")->fence, LogIndex(2));
  EXPECT_EQ(d.Get("k")->modify_index, LogIndex(3));
}

TEST(StoreFenceTest, FenceIsZeroWhenUnlocked) {
  StoreDriver d;
  SessionId a = d.NewSession();
  d.Set("plain", "x");
  EXPECT_EQ(d.Get("plain")->fence, LogIndex());
  d.Acquire("k", a);
  ASSERT_NE(d.Get("k")->fence, LogIndex());
  d.Release("k", a);
  EXPECT_EQ(d.Get("k")->fence, LogIndex());
  d.Acquire("k", a);
  d.Destroy(a);
  EXPECT_EQ(d.Get("k")->fence, LogIndex());
}

TEST(StoreFenceTest, SetOnLockedKeyKeepsTheFence) {
  StoreDriver d;
  SessionId a = d.NewSession();
  d.Acquire("k", a);  // 2
  d.Set("k", "w");
  d.Cas("k", "z", d.Get("k")->modify_index);
  EXPECT_EQ(d.Get("k")->fence, LogIndex(2));
}

TEST(StoreFenceTest, EveryNewGrantExceedsEveryEarlierGrantEvenAfterRecreate) {
  StoreDriver d;
  SessionId a = d.NewSession();
  SessionId b = d.NewSession();
  std::vector<LogIndex> grants;
  grants.push_back(d.Acquire("k", a).fence);
  d.Release("k", a);
  grants.push_back(d.Acquire("k", b).fence);
  d.Delete("k");
  d.Set("k", "recreated");
  grants.push_back(d.Acquire("k", a).fence);
  d.Destroy(a);
  d.DeleteTree("");
  grants.push_back(d.Acquire("k", b).fence);
  for (std::size_t i = 1; i < grants.size(); ++i) {
    EXPECT_GT(grants[i], grants[i - 1]) << "grant " << i;
  }
  EXPECT_EQ(d.Get("k")->fence, grants.back());
}

TEST(StoreFenceTest, TxnLockGrantsTheTxnIndexAsFence) {
  StoreDriver d;
  SessionId a = d.NewSession();
  d.SkipIndexes(5);
  ApplyResult r = d.RunTxn({testutil::LockOp("k", a, "v")});  // index 7
  ASSERT_TRUE(r.txn.ok());
  EXPECT_EQ(d.Get("k")->fence, LogIndex(7));
  EXPECT_EQ(d.Get("k")->lock_index, 1u);
}

// --- held keys --------------------------------------------------------------------------

TEST(StoreLockTest, HeldKeysFollowAcquireReleaseDeleteAndDestroy) {
  StoreDriver d;
  SessionId a = d.NewSession();
  d.Acquire("x", a);
  d.Acquire("y", a);
  d.Acquire("z", a);
  EXPECT_EQ(d.Held(a), (std::vector<std::string>{"x", "y", "z"}));
  d.Release("y", a);
  EXPECT_EQ(d.Held(a), (std::vector<std::string>{"x", "z"}));
  d.Delete("z");
  EXPECT_EQ(d.Held(a), std::vector<std::string>{"x"});
  d.Destroy(a);
  EXPECT_THAT(d.Held(a), IsEmpty());
  EXPECT_THAT(d.Held(SessionId("never-existed")), IsEmpty());
}

}  // namespace
}  // namespace tenure::state

// Regression (found in review): a txn is one raft entry, so two grants of
// one key inside it would share a fencing token and the first holder's
// check-fence would pass while the second holds the lock.
namespace tenure::state {
namespace {

TEST(StoreFenceRegressionTest, SecondGrantOfAKeyInOneTxnIsRefused) {
  Store store;
  std::uint64_t index = 0;
  auto apply = [&](CommandBody body) {
    ApplyResult r =
        store.Apply(Command{ClusterMs(1'700'000'000'000), std::move(body)}, LogIndex(++index));
    store.CheckInvariants();
    return r;
  };
  Session a, b;
  a.id = SessionId("00000000-0000-4000-8000-00000000000a");
  b.id = SessionId("00000000-0000-4000-8000-00000000000b");
  apply(SessionCreate{a});
  apply(SessionCreate{b});
  TxnOp lock_a{TxnVerb::kLock, "k", "", 0, LogIndex(), a.id};
  TxnOp unlock_a{TxnVerb::kUnlock, "k", "", 0, LogIndex(), a.id};
  TxnOp lock_b{TxnVerb::kLock, "k", "", 0, LogIndex(), b.id};
  ApplyResult r = apply(Txn{{lock_a, unlock_a, lock_b}});
  ASSERT_EQ(r.txn.errors.size(), 1u);
  EXPECT_EQ(r.txn.errors[0].op_index, 2u);
  EXPECT_EQ(r.txn.errors[0].what,
            "failed to lock key \"k\", it was already granted in this transaction");
  EXPECT_EQ(store.FindKv("k"), nullptr);  // rolled back entirely

  // Separate entries: B's token is strictly larger than A's, and A's
  // check-fence fails while B holds the key.
  ApplyResult ra = apply(Txn{{lock_a}});
  LogIndex fence_a = ra.txn.results.at(0).entry.fence;
  apply(Txn{{unlock_a}});
  ApplyResult rb = apply(Txn{{lock_b}});
  EXPECT_GT(rb.txn.results.at(0).entry.fence, fence_a);
  TxnOp check_a{TxnVerb::kCheckFence, "k", "", 0, LogIndex(fence_a), SessionId()};
  EXPECT_FALSE(apply(Txn{{check_a}}).txn.ok());
}

TEST(StoreFenceRegressionTest, HandoffInOneTxnKeepsTokensIncreasing) {
  // resign --to: [unlock k A, lock k B] in one entry: A's grant is older.
  Store store;
  std::uint64_t index = 0;
  auto apply = [&](CommandBody body) {
    return store.Apply(Command{ClusterMs(1'700'000'000'000), std::move(body)}, LogIndex(++index));
  };
  Session a, b;
  a.id = SessionId("00000000-0000-4000-8000-00000000000a");
  b.id = SessionId("00000000-0000-4000-8000-00000000000b");
  apply(SessionCreate{a});
  apply(SessionCreate{b});
  LogIndex fence_a = apply(KvAcquire{"k", "", 0, a.id}).fence;
  TxnOp unlock_a{TxnVerb::kUnlock, "k", "", 0, LogIndex(), a.id};
  TxnOp lock_b{TxnVerb::kLock, "k", "", 0, LogIndex(), b.id};
  ApplyResult r = apply(Txn{{unlock_a, lock_b}});
  ASSERT_TRUE(r.txn.ok());
  EXPECT_GT(store.FindKv("k")->fence, fence_a);
  EXPECT_EQ(store.FindKv("k")->session, b.id);
}

}  // namespace
}  // namespace tenure::state
