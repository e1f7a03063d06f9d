// The lock history (state/lock_history.h, docs/history.md): every cause, the
// bounds, snapshots (round trip, older versions read as an empty history)
// and the digest.
#include "state/lock_history.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "unit/state/store_fixture.h"

namespace tenure::state {
namespace {

using testutil::kT0;
using testutil::StoreDriver;

std::vector<EndCause> Causes(const Store& s, const std::string& key) {
  std::vector<EndCause> out;
  const LockHistory::KeyHistory* h = s.FindHistory(key);
  if (h == nullptr) return out;
  for (const LockGrant& g : h->grants) out.push_back(g.end_cause);
  return out;
}

std::string Encode(const Store& s) {
  std::string out;
  s.EncodeSnapshot(&out);
  return out;
}

TEST(LockHistoryTest, CauseNamesAreTheWireNames) {
  EXPECT_EQ(EndCauseName(EndCause::kNone), "");
  EXPECT_EQ(EndCauseName(EndCause::kRelease), "release");
  EXPECT_EQ(EndCauseName(EndCause::kDestroy), "destroy");
  EXPECT_EQ(EndCauseName(EndCause::kTtlExpiry), "ttl-expiry");
  EXPECT_EQ(EndCauseName(EndCause::kHandoff), "handoff");
  EXPECT_EQ(EndCauseName(EndCause::kDelete), "delete");
  EXPECT_EQ(EndCauseName(EndCause::kLockDelay), "lock-delay");
}

TEST(LockHistoryTest, KeyThatNeverHeldALockHasNoHistory) {
  StoreDriver d;
  d.Set("plain", "v");
  EXPECT_EQ(d.store().FindHistory("plain"), nullptr);
  EXPECT_EQ(d.store().FindHistory("absent"), nullptr);
}

TEST(LockHistoryTest, GrantAndReleaseRecordHolderTimesAndIndexes) {
  StoreDriver d;
  d.SetNowMs(kT0);
  Session s = testutil::MakeSession(testutil::TestSessionId(1), "node-a");
  s.name = "candidate-a";
  SessionId a = d.CreateSession(s);
  ApplyResult granted = d.Acquire("service/leader", a);
  const LogIndex grant_index = d.last_index();
  ASSERT_EQ(granted.lock_events.size(), 1u);
  EXPECT_FALSE(granted.lock_events[0].ended);
  EXPECT_EQ(granted.lock_events[0].key, "service/leader");
  EXPECT_EQ(granted.lock_events[0].grant.session_name, "candidate-a");
  EXPECT_EQ(granted.lock_events[0].grant.node, "node-a");
  // A re-acquire by the holder is the same grant: nothing new.
  EXPECT_TRUE(d.Acquire("service/leader", a, "new value").lock_events.empty());
  d.AdvanceMs(1500);
  ApplyResult released = d.Release("service/leader", a);
  ASSERT_EQ(released.lock_events.size(), 1u);
  EXPECT_TRUE(released.lock_events[0].ended);

  const LockHistory::KeyHistory* h = d.store().FindHistory("service/leader");
  ASSERT_NE(h, nullptr);
  ASSERT_EQ(h->grants.size(), 1u);
  const LockGrant& g = h->grants[0];
  EXPECT_EQ(g.fence, grant_index);
  EXPECT_EQ(g.grant_index, grant_index);
  EXPECT_EQ(g.session, a);
  EXPECT_EQ(g.session_name, "candidate-a");
  EXPECT_EQ(g.node, "node-a");
  EXPECT_EQ(g.granted_at, kT0);
  EXPECT_EQ(g.ended_at, kT0 + 1500);
  EXPECT_EQ(g.end_index, d.last_index());
  EXPECT_EQ(g.end_cause, EndCause::kRelease);
  EXPECT_EQ(h->modify_index, d.last_index());
}

TEST(LockHistoryTest, HeldGrantIsOpen) {
  StoreDriver d;
  SessionId a = d.NewSession();
  d.Acquire("k", a);
  const LockHistory::KeyHistory* h = d.store().FindHistory("k");
  ASSERT_NE(h, nullptr);
  ASSERT_EQ(h->grants.size(), 1u);
  EXPECT_TRUE(h->grants[0].held());
  EXPECT_EQ(h->grants[0].end_index, LogIndex());
  EXPECT_EQ(h->grants[0].ended_at, UnixMs());
}

TEST(LockHistoryTest, DestroyAndTtlExpiryEndTheGrant) {
  StoreDriver d;
  SessionId a = d.NewSession();
  SessionId b = d.NewSession(0, Behavior::kDelete);
  d.Acquire("k", a);
  d.Destroy(a);
  d.Acquire("k", b);
  ApplyResult expired = d.Destroy(b, DestroyReason::kExpired);
  ASSERT_EQ(expired.lock_events.size(), 1u);
  EXPECT_EQ(expired.lock_events[0].grant.end_cause, EndCause::kTtlExpiry);
  EXPECT_EQ(Causes(d.store(), "k"),
            (std::vector<EndCause>{EndCause::kDestroy, EndCause::kTtlExpiry}));
  EXPECT_EQ(d.store().FindKv("k"), nullptr);  // behavior delete; the history stays
}

TEST(LockHistoryTest, DeleteWhileHeldEndsTheGrantAndKeepsTheHistory) {
  StoreDriver d;
  SessionId a = d.NewSession();
  d.Acquire("dir/k", a);
  d.Delete("dir/k");
  d.Acquire("dir/j", a);
  d.DeleteTree("dir/");
  d.Acquire("txn", a);
  d.RunTxn({testutil::DeleteOp("txn")});
  EXPECT_EQ(Causes(d.store(), "dir/k"), std::vector<EndCause>{EndCause::kDelete});
  EXPECT_EQ(Causes(d.store(), "dir/j"), std::vector<EndCause>{EndCause::kDelete});
  EXPECT_EQ(Causes(d.store(), "txn"), std::vector<EndCause>{EndCause::kDelete});
  // Deleting an unheld key records nothing.
  d.Set("free", "v");
  d.Delete("free");
  EXPECT_EQ(d.store().FindHistory("free"), nullptr);
}

TEST(LockHistoryTest, ReleaseAndGrantInOneTxnIsAHandoff) {
  StoreDriver d;
  SessionId a = d.NewSession();
  SessionId b = d.NewSession();
  d.Acquire("k", a);
  const LogIndex first = d.last_index();
  ApplyResult r = d.RunTxn({testutil::UnlockOp("k", a), testutil::LockOp("k", b)});
  ASSERT_TRUE(r.txn.ok());
  ASSERT_EQ(r.lock_events.size(), 2u);
  EXPECT_TRUE(r.lock_events[0].ended);
  EXPECT_EQ(r.lock_events[0].grant.end_cause, EndCause::kHandoff);
  EXPECT_FALSE(r.lock_events[1].ended);
  const LockHistory::KeyHistory* h = d.store().FindHistory("k");
  ASSERT_NE(h, nullptr);
  ASSERT_EQ(h->grants.size(), 2u);
  EXPECT_EQ(h->grants[0].fence, first);
  EXPECT_EQ(h->grants[0].end_cause, EndCause::kHandoff);
  EXPECT_EQ(h->grants[1].fence, d.last_index());
  EXPECT_EQ(h->grants[1].session, b);
  EXPECT_TRUE(h->grants[1].held());
}

TEST(LockHistoryTest, TxnUnlockAloneIsARelease) {
  StoreDriver d;
  SessionId a = d.NewSession();
  d.Acquire("k", a);
  d.RunTxn({testutil::UnlockOp("k", a)});
  EXPECT_EQ(Causes(d.store(), "k"), std::vector<EndCause>{EndCause::kRelease});
}

TEST(LockHistoryTest, RolledBackTxnRecordsNothing) {
  StoreDriver d;
  SessionId a = d.NewSession();
  ApplyResult r = d.RunTxn({testutil::LockOp("k", a), testutil::GetOp("missing")});
  EXPECT_FALSE(r.txn.ok());
  EXPECT_TRUE(r.lock_events.empty());
  EXPECT_EQ(d.store().FindHistory("k"), nullptr);
}

TEST(LockHistoryTest, RefusedAcquiresRecordNothing) {
  StoreDriver d;
  SessionId a = d.NewSession();
  SessionId b = d.NewSession(15 * kNsPerSecond);
  d.Acquire("k", a);
  EXPECT_TRUE(d.Acquire("k", b).lock_events.empty());  // held by a
  d.Acquire("delayed", b);
  d.Destroy(b);
  ApplyResult delayed = d.Acquire("delayed", a);  // inside b's lock-delay
  EXPECT_TRUE(delayed.lock_delayed);
  EXPECT_TRUE(delayed.lock_events.empty());
  EXPECT_EQ(d.store().FindHistory("k")->grants.size(), 1u);
  EXPECT_EQ(Causes(d.store(), "delayed"), std::vector<EndCause>{EndCause::kDestroy});
}

TEST(LockHistoryTest, GrantsPerKeyAreBoundedOldestDropped) {
  StoreDriver d;
  SessionId a = d.NewSession();
  std::vector<LogIndex> fences;
  for (std::size_t i = 0; i < LockHistory::kGrantsPerKey + 5; ++i) {
    d.Acquire("k", a);
    fences.push_back(d.last_index());
    d.Release("k", a);
  }
  const LockHistory::KeyHistory* h = d.store().FindHistory("k");
  ASSERT_NE(h, nullptr);
  ASSERT_EQ(h->grants.size(), LockHistory::kGrantsPerKey);
  EXPECT_EQ(h->grants.front().fence, fences[5]);
  EXPECT_EQ(h->grants.back().fence, fences.back());
  for (std::size_t i = 1; i < h->grants.size(); ++i) {
    EXPECT_LT(h->grants[i - 1].fence, h->grants[i].fence);
  }
}

TEST(LockHistoryTest, KeysAreBoundedLeastRecentlyChangedDropped) {
  StoreDriver d;
  SessionId a = d.NewSession();
  d.Acquire("held-old", a);       // changed first, but touched again below
  d.set_check_invariants(false);  // once, below
  for (std::size_t i = 0; i < LockHistory::kKeysMax; ++i) {
    const std::string key = "k" + std::to_string(i);
    d.RunTxn({testutil::LockOp(key, a), testutil::UnlockOp(key, a)});
    if (i == 10) d.Release("held-old", a);  // now newer than k0..k9
  }
  d.store().CheckInvariants();
  EXPECT_EQ(d.store().history().key_count(), LockHistory::kKeysMax);
  EXPECT_EQ(d.store().FindHistory("k0"), nullptr);
  EXPECT_NE(d.store().FindHistory("k1"), nullptr);
  EXPECT_NE(d.store().FindHistory("held-old"), nullptr);
  const std::string last = "k" + std::to_string(LockHistory::kKeysMax - 1);
  EXPECT_NE(d.store().FindHistory(last), nullptr);
}

TEST(LockHistoryTest, SnapshotRoundTripKeepsHistoryAndDigest) {
  StoreDriver d;
  d.SetNowMs(kT0);
  SessionId a = d.NewSession();
  SessionId b = d.NewSession();
  d.Acquire("k", a);
  d.AdvanceMs(10);
  d.RunTxn({testutil::UnlockOp("k", a), testutil::LockOp("k", b)});
  d.Acquire("j", a);
  d.Delete("j");
  const std::string bytes = Encode(d.store());
  EXPECT_EQ(Store::CheckSnapshotBytes(bytes).value(), 5);
  Result<Store> decoded = Store::DecodeSnapshot(bytes);
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_TRUE(decoded->history() == d.store().history());
  EXPECT_EQ(decoded->Digest(), d.store().Digest());
  EXPECT_EQ(Encode(*decoded), bytes);
  // The restored store goes on recording where the original left off.
  Store restored = std::move(*decoded);
  Command release{kT0 + 100, KvRelease{"k", "", 0, b}};
  ApplyResult r = restored.Apply(release, d.next_index());
  restored.CheckInvariants();
  ASSERT_EQ(r.lock_events.size(), 1u);
  EXPECT_EQ(restored.FindHistory("k")->grants.back().end_cause, EndCause::kRelease);
}

TEST(LockHistoryTest, StoreWithoutHistoryWritesTheOlderVersionAndReadsItAsEmpty) {
  StoreDriver d;
  d.Set("k", "v");
  d.NewSession();
  const std::string bytes = Encode(d.store());
  EXPECT_EQ(Store::CheckSnapshotBytes(bytes).value(), 3);  // as before the history
  Result<Store> decoded = Store::DecodeSnapshot(bytes);
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_TRUE(decoded->history().empty());
}

TEST(LockHistoryTest, CorruptHistoryBytesAreRefused) {
  StoreDriver d;
  SessionId a = d.NewSession();
  d.Acquire("k", a);
  std::string bytes = Encode(d.store());
  // Truncate inside the history section and fix nothing else: the checksum
  // refuses it; a version-5 body with an empty history is refused too.
  bytes.resize(bytes.size() - 6);
  EXPECT_FALSE(Store::DecodeSnapshot(bytes).ok());
}

TEST(LockHistoryTest, DigestCoversTheHistory) {
  // Two replicas whose KV and sessions end equal, and whose histories differ
  // only in how the grant ended (destroyed vs expired): digests differ.
  StoreDriver x;
  StoreDriver y;
  for (StoreDriver* d : {&x, &y}) {
    SessionId a = d->NewSession();
    d->Acquire("k", a);
  }
  EXPECT_EQ(x.store().Digest(), y.store().Digest());
  x.Destroy(testutil::TestSessionId(1), DestroyReason::kDestroyed);
  y.Destroy(testutil::TestSessionId(1), DestroyReason::kExpired);
  EXPECT_EQ(*x.store().FindKv("k"), *y.store().FindKv("k"));
  EXPECT_EQ(x.store().session_count(), y.store().session_count());
  EXPECT_NE(x.store().Digest(), y.store().Digest());
}

}  // namespace
}  // namespace tenure::state
