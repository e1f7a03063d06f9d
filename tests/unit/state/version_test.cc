// KvEntry::version, etcd's version (decision 0048): 1 when a key is created,
// one more at each change of the entry through any path (plain and CAS
// writes, acquires, releases, txn ops, fair-queue grants, a session's end),
// unchanged by writes that change nothing and by refused or rolled-back
// ones, and 1 again when a deleted key is created again.
#include <gtest/gtest.h>

#include <string>

#include "state/store.h"
#include "unit/state/store_fixture.h"

namespace tenure::state {
namespace {

using testutil::CasOp;
using testutil::DeleteOp;
using testutil::GetOp;
using testutil::LockOp;
using testutil::SetOp;
using testutil::StoreDriver;
using testutil::UnlockOp;

std::uint64_t VersionOf(const StoreDriver& d, std::string_view key) {
  std::optional<KvEntry> entry = d.Get(key);
  EXPECT_TRUE(entry.has_value()) << key;
  return entry ? entry->version : 0;
}

TEST(KvVersionTest, ASetCreatesAtOneAndEachChangeAddsOne) {
  StoreDriver d;
  d.Set("k", "a");
  EXPECT_EQ(VersionOf(d, "k"), 1u);
  d.Set("k", "b");
  EXPECT_EQ(VersionOf(d, "k"), 2u);
  d.Set("k", "b", 7);  // flags only
  EXPECT_EQ(VersionOf(d, "k"), 3u);
}

TEST(KvVersionTest, AWriteThatChangesNothingKeepsTheVersion) {
  StoreDriver d;
  d.Set("k", "a");
  d.Set("k", "a");  // Consul's no-op: ModifyIndex stays too
  EXPECT_EQ(VersionOf(d, "k"), 1u);
  EXPECT_EQ(d.Get("k")->modify_index, LogIndex(1));
}

TEST(KvVersionTest, ACasAddsOneAndAStaleOneNothing) {
  StoreDriver d;
  d.Set("k", "a");
  ASSERT_TRUE(d.Cas("k", "b", LogIndex(1)).ok);
  EXPECT_EQ(VersionOf(d, "k"), 2u);
  ASSERT_FALSE(d.Cas("k", "c", LogIndex(1)).ok);
  EXPECT_EQ(VersionOf(d, "k"), 2u);
  ASSERT_TRUE(d.Cas("new", "x", LogIndex()).ok);  // cas=0 creates
  EXPECT_EQ(VersionOf(d, "new"), 1u);
}

TEST(KvVersionTest, AcquiresAndReleasesEachAddOne) {
  StoreDriver d;
  SessionId a = d.NewSession();
  SessionId b = d.NewSession();
  ASSERT_TRUE(d.Acquire("k", a, "v").ok);  // creates the key
  EXPECT_EQ(VersionOf(d, "k"), 1u);
  ASSERT_TRUE(d.Acquire("k", a, "v").ok);  // the holder again, same content
  EXPECT_EQ(VersionOf(d, "k"), 1u);
  ASSERT_TRUE(d.Acquire("k", a, "w").ok);  // the holder, a new value
  EXPECT_EQ(VersionOf(d, "k"), 2u);
  ASSERT_FALSE(d.Acquire("k", b, "x").ok);  // held: refused
  EXPECT_EQ(VersionOf(d, "k"), 2u);
  ASSERT_FALSE(d.Release("k", b).ok);  // not the holder
  EXPECT_EQ(VersionOf(d, "k"), 2u);
  ASSERT_TRUE(d.Release("k", a, "w").ok);
  EXPECT_EQ(VersionOf(d, "k"), 3u);
  ASSERT_TRUE(d.Acquire("k", b, "w").ok);
  EXPECT_EQ(VersionOf(d, "k"), 4u);
  EXPECT_EQ(d.Get("k")->lock_index, 2u);
}

TEST(KvVersionTest, AKeyDeletedAndCreatedAgainStartsAtOne) {
  StoreDriver d;
  for (const char* v : {"1", "2", "3"}) d.Set("k", v);
  ASSERT_EQ(VersionOf(d, "k"), 3u);
  d.Delete("k");
  d.Set("k", "again");
  EXPECT_EQ(VersionOf(d, "k"), 1u);
  EXPECT_EQ(d.Get("k")->create_index, d.last_index());

  d.Set("k", "2");
  ASSERT_TRUE(d.DeleteCas("k", d.last_index()).ok);
  d.Set("k", "after cas delete");
  EXPECT_EQ(VersionOf(d, "k"), 1u);

  d.Set("dir/a", "2");
  d.Set("dir/a", "3");
  d.DeleteTree("dir/");
  SessionId s = d.NewSession();
  ASSERT_TRUE(d.Acquire("dir/a", s).ok);
  EXPECT_EQ(VersionOf(d, "dir/a"), 1u);
}

TEST(KvVersionTest, ASessionsEndReleasingItsKeysAddsOne) {
  StoreDriver d;
  SessionId s = d.NewSession(15 * kNsPerSecond);
  d.Set("k", "v");
  ASSERT_TRUE(d.Acquire("k", s, "v").ok);
  ASSERT_EQ(VersionOf(d, "k"), 2u);
  d.Destroy(s, DestroyReason::kExpired);
  EXPECT_TRUE(d.Get("k")->session.empty());
  EXPECT_EQ(VersionOf(d, "k"), 3u);
  // In its lock-delay window an acquire is refused and changes nothing; a
  // plain write is not held back and counts.
  SessionId t = d.NewSession();
  ApplyResult refused = d.Acquire("k", t, "x");
  ASSERT_TRUE(refused.lock_delayed);
  EXPECT_EQ(VersionOf(d, "k"), 3u);
  d.Set("k", "written in the window");
  EXPECT_EQ(VersionOf(d, "k"), 4u);
}

TEST(KvVersionTest, ASessionsEndDeletingItsKeysStartsThemOverAtOne) {
  StoreDriver d;
  SessionId s = d.NewSession(0, Behavior::kDelete);
  d.Set("k", "v");
  ASSERT_TRUE(d.Acquire("k", s, "w").ok);
  d.Destroy(s);
  ASSERT_FALSE(d.Get("k").has_value());
  d.Set("k", "v");
  EXPECT_EQ(VersionOf(d, "k"), 1u);
}

TEST(KvVersionTest, EachWriteOpOfATxnCountsAndTheResultsShowIt) {
  StoreDriver d;
  SessionId s = d.NewSession();
  d.Set("k", "a");
  // Two changes of one key in one entry count two (ModifyIndex moves once).
  ApplyResult r = d.RunTxn({SetOp("k", "b"), LockOp("k", s, "c"), UnlockOp("k", s, "d"),
                            CasOp("k", "e", d.next_index().value()), GetOp("k")});
  ASSERT_TRUE(r.txn.ok()) << testing::PrintToString(r.txn.errors);
  EXPECT_EQ(VersionOf(d, "k"), 5u);
  EXPECT_EQ(d.Get("k")->modify_index, d.last_index());
  ASSERT_EQ(r.txn.results.size(), 5u);
  EXPECT_EQ(r.txn.results[0].entry.version, 2u);  // after the set
  EXPECT_EQ(r.txn.results[2].entry.version, 4u);  // after the unlock
  EXPECT_EQ(r.txn.results[4].entry.version, 5u);  // the get
}

TEST(KvVersionTest, ADeleteAndASetInOneTxnStartTheKeyOverAtOne) {
  StoreDriver d;
  d.Set("k", "a");
  d.Set("k", "b");
  ASSERT_TRUE(d.RunTxn({DeleteOp("k"), SetOp("k", "new")}).txn.ok());
  EXPECT_EQ(VersionOf(d, "k"), 1u);
  EXPECT_EQ(d.Get("k")->create_index, d.last_index());
}

TEST(KvVersionTest, ARolledBackTxnLeavesEveryVersion) {
  StoreDriver d;
  SessionId a = d.NewSession();
  SessionId b = d.NewSession();
  d.Set("k", "a");
  ASSERT_TRUE(d.Acquire("held", a).ok);
  // The set runs, then the lock fails: the whole txn rolls back.
  ApplyResult r = d.RunTxn({SetOp("k", "b"), SetOp("fresh", "x"), LockOp("held", b)});
  ASSERT_FALSE(r.txn.ok());
  EXPECT_EQ(VersionOf(d, "k"), 1u);
  EXPECT_EQ(VersionOf(d, "held"), 1u);
  EXPECT_FALSE(d.Get("fresh").has_value());
}

TEST(KvVersionTest, AFairQueueGrantCountsAsTheChangeItIs) {
  StoreDriver d;
  SessionId holder = d.NewSession();
  SessionId waiter = d.NewSession();
  ASSERT_TRUE(d.Apply(KvEnqueue{"k", "mine", 0, holder}).ok);  // free: granted at once
  EXPECT_EQ(VersionOf(d, "k"), 1u);
  ASSERT_TRUE(d.Apply(KvEnqueue{"k", "yours", 0, waiter}).queued);
  EXPECT_EQ(VersionOf(d, "k"), 1u);
  // One entry, two changes: the holder's release, then the head's grant.
  ASSERT_TRUE(d.Release("k", holder, "mine").ok);
  EXPECT_EQ(d.Get("k")->session, waiter);
  EXPECT_EQ(VersionOf(d, "k"), 3u);
}

}  // namespace
}  // namespace tenure::state
