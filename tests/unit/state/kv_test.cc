// Scenario tests for plain KV writes (set, cas, delete, delete-tree), reads,
// listing, the X-Consul-Index rules of store.h, tombstones, TakeChanges and
// the replicated clock. docs/consul-api.md sections 2.2-2.4, 2.7 and 11.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "unit/state/store_fixture.h"

namespace tenure::state {
namespace {

using ::testing::IsEmpty;
using testutil::ChangedKeys;
using testutil::kLockFlagValue;
using testutil::kSemaphoreFlagValue;
using testutil::StoreDriver;

// --- set ------------------------------------------------------------------------------

TEST(StoreKvTest, SetCreatesEntryAtApplyIndex) {
  StoreDriver d;
  ApplyResult r = d.Set("k", "v", 7);
  EXPECT_TRUE(r.status.ok());
  EXPECT_TRUE(r.ok);
  auto e = d.Get("k");
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->key, "k");
  EXPECT_EQ(e->value, "v");
  EXPECT_EQ(e->flags, 7u);
  EXPECT_EQ(e->create_index, LogIndex(1));
  EXPECT_EQ(e->modify_index, LogIndex(1));
  EXPECT_EQ(e->lock_index, 0u);
  EXPECT_EQ(e->session, SessionId());
  EXPECT_EQ(e->fence, LogIndex());
  EXPECT_EQ(d.store().kv_index(), LogIndex(1));
  EXPECT_EQ(d.store().kv_count(), 1u);
}

TEST(StoreKvTest, IndexesAreTheRaftIndexesEvenWithGaps) {
  StoreDriver d;
  d.SkipIndexes(4);
  d.Set("k", "v1");  // index 5
  d.SkipIndexes(3);
  d.Set("k", "v2");  // index 9
  auto e = d.Get("k");
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->create_index, LogIndex(5));
  EXPECT_EQ(e->modify_index, LogIndex(9));
  EXPECT_EQ(d.store().kv_index(), LogIndex(9));
  EXPECT_EQ(d.store().applied_index(), LogIndex(9));
}

TEST(StoreKvTest, OverwriteKeepsCreateIndexAndMovesModifyIndex) {
  StoreDriver d;
  d.Set("k", "v1");
  d.Set("other", "x");
  d.Set("k", "v2", 3);
  auto e = d.Get("k");
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->value, "v2");
  EXPECT_EQ(e->flags, 3u);
  EXPECT_EQ(e->create_index, LogIndex(1));
  EXPECT_EQ(e->modify_index, LogIndex(3));
}

TEST(StoreKvTest, SetWithoutFlagsResetsFlagsToZero) {
  StoreDriver d;
  d.Set("k", "v", 42);
  d.Set("k", "v");
  EXPECT_EQ(d.Get("k")->flags, 0u);
  EXPECT_EQ(d.Get("k")->modify_index, LogIndex(2));
}

TEST(StoreKvTest, IdenticalSetIsNoOpKeepingModifyIndexAndTouchingNothing) {
  StoreDriver d;
  d.Set("k", "v", 5);
  d.Set("j", "x");
  (void)d.store().TakeChanges();

  ApplyResult r = d.Set("k", "v", 5);  // index 3, same content
  EXPECT_TRUE(r.status.ok());
  EXPECT_TRUE(r.ok);
  EXPECT_EQ(d.Get("k")->modify_index, LogIndex(1));
  EXPECT_EQ(d.store().kv_index(), LogIndex(2));
  EXPECT_EQ(d.store().KeyIndex("k"), LogIndex(1));
  Changes changes = d.store().TakeChanges();
  EXPECT_THAT(changes.keys, IsEmpty());
  EXPECT_FALSE(changes.sessions);
  EXPECT_EQ(d.store().applied_index(), LogIndex(3));
}

TEST(StoreKvTest, SetDifferingOnlyInFlagsIsARealWrite) {
  StoreDriver d;
  d.Set("k", "v", 1);
  d.Set("k", "v", 2);
  EXPECT_EQ(d.Get("k")->modify_index, LogIndex(2));
  EXPECT_EQ(d.Get("k")->flags, 2u);
}

TEST(StoreKvTest, SetDifferingOnlyInValueIsARealWrite) {
  StoreDriver d;
  d.Set("k", "v");
  d.Set("k", std::string("v\0", 2));
  EXPECT_EQ(d.Get("k")->modify_index, LogIndex(2));
  EXPECT_EQ(d.Get("k")->value, std::string("v\0", 2));
}

TEST(StoreKvTest, FlagsRoundTripFullUint64Range) {
  StoreDriver d;
  d.Set("sem", "", kSemaphoreFlagValue);
  d.Set("lock", "", kLockFlagValue);
  d.Set("max", "", std::numeric_limits<std::uint64_t>::max());
  EXPECT_EQ(d.Get("sem")->flags, 16210313421097356768ull);
  EXPECT_EQ(d.Get("lock")->flags, 3304740253564472344ull);
  EXPECT_EQ(d.Get("max")->flags, 18446744073709551615ull);
}

TEST(StoreKvTest, BinaryValuesAndKeysAreStoredVerbatim) {
  StoreDriver d;
  const std::string key("bin\0key\xff", 8);
  const std::string value("\0\x01\x02\xff\0", 5);
  d.Set(key, value);
  auto e = d.Get(key);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->key, key);
  EXPECT_EQ(e->value, value);
  EXPECT_EQ(d.store().FindKv("bin"), nullptr);
}

TEST(StoreKvTest, EmptyValueIsStoredAsEmpty) {
  StoreDriver d;
  d.Set("k", "");
  ASSERT_TRUE(d.Get("k").has_value());
  EXPECT_EQ(d.Get("k")->value, "");
}

// Row 10 of the state-transition table: a plain set keeps the holder (locks
// are advisory) and takes LockIndex from the request, i.e. 0.
TEST(StoreKvTest, SetOnLockedKeyKeepsHolderAndFenceAndZeroesLockIndex) {
  StoreDriver d;
  SessionId a = d.NewSession();
  d.Acquire("k", a, "held");  // index 2
  ApplyResult r = d.Set("k", "overwritten", 9);
  EXPECT_TRUE(r.ok);
  auto e = d.Get("k");
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->session, a);
  EXPECT_EQ(e->fence, LogIndex(2));
  EXPECT_EQ(e->lock_index, 0u);
  EXPECT_EQ(e->value, "overwritten");
  EXPECT_EQ(e->flags, 9u);
  EXPECT_EQ(e->modify_index, LogIndex(3));
  EXPECT_EQ(e->create_index, LogIndex(2));
  EXPECT_EQ(d.Held(a), std::vector<std::string>{"k"});
}

// consul-api.md 2.4, no-op detection: "if the resulting entry equals the
// stored one (same LockIndex, Key, Flags, Value bytes, Session) nothing is
// written". A plain set keeps the holder, so its resulting entry carries the
// holder's Session (Consul's kvsSetTxn copies existing.Session into the
// entry before the Equal check); once LockIndex is 0 an identical set on a
// locked key is a no-op.
TEST(StoreKvTest, IdenticalSetOnLockedKeyIsNoOp) {
  StoreDriver d;
  SessionId a = d.NewSession();
  d.Acquire("k", a, "held");  // 2, LockIndex 1
  d.Set("k", "held");         // 3, LockIndex 0: a real write
  ASSERT_EQ(d.Get("k")->modify_index, LogIndex(3));
  (void)d.store().TakeChanges();
  ApplyResult r = d.Set("k", "held");  // 4: same LockIndex, Key, Flags, Value, Session
  EXPECT_TRUE(r.ok);
  EXPECT_EQ(d.Get("k")->modify_index, LogIndex(3));
  EXPECT_EQ(d.store().kv_index(), LogIndex(3));
  EXPECT_THAT(d.store().TakeChanges().keys, IsEmpty());
}

// --- cas --------------------------------------------------------------------------------

// Row 11 (N = 0 and the key absent).
TEST(StoreKvTest, CasZeroCreatesAbsentKey) {
  StoreDriver d;
  ApplyResult r = d.Cas("k", "v", LogIndex(), 4);
  EXPECT_TRUE(r.status.ok());
  EXPECT_TRUE(r.ok);
  auto e = d.Get("k");
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->value, "v");
  EXPECT_EQ(e->flags, 4u);
  EXPECT_EQ(e->create_index, LogIndex(1));
  EXPECT_EQ(e->modify_index, LogIndex(1));
}

TEST(StoreKvTest, CasZeroOnExistingKeyFailsAndChangesNothing) {
  StoreDriver d;
  d.Set("k", "v");
  (void)d.store().TakeChanges();
  ApplyResult r = d.Cas("k", "other", LogIndex());
  EXPECT_TRUE(r.status.ok());
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(d.Get("k")->value, "v");
  EXPECT_EQ(d.Get("k")->modify_index, LogIndex(1));
  EXPECT_EQ(d.store().kv_index(), LogIndex(1));
  EXPECT_THAT(d.store().TakeChanges().keys, IsEmpty());
}

// Row 11 (N matches).
TEST(StoreKvTest, CasWithMatchingIndexWrites) {
  StoreDriver d;
  d.Set("k", "v1");
  d.Set("k", "v2");  // modify 2
  ApplyResult r = d.Cas("k", "v3", LogIndex(2), 8);
  EXPECT_TRUE(r.ok);
  EXPECT_EQ(d.Get("k")->value, "v3");
  EXPECT_EQ(d.Get("k")->flags, 8u);
  EXPECT_EQ(d.Get("k")->modify_index, LogIndex(3));
  EXPECT_EQ(d.Get("k")->create_index, LogIndex(1));
}

TEST(StoreKvTest, CasWithStaleIndexFails) {
  StoreDriver d;
  d.Set("k", "v1");
  d.Set("k", "v2");  // modify 2
  ApplyResult r = d.Cas("k", "v3", LogIndex(1));
  EXPECT_TRUE(r.status.ok());
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(d.Get("k")->value, "v2");
  EXPECT_EQ(d.Get("k")->modify_index, LogIndex(2));
}

TEST(StoreKvTest, CasWithNonZeroIndexOnMissingKeyFails) {
  StoreDriver d;
  d.Set("other", "x");
  ApplyResult r = d.Cas("k", "v", LogIndex(1));
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(d.store().FindKv("k"), nullptr);
  EXPECT_EQ(d.store().kv_index(), LogIndex(1));
}

// Row 11: Session unchanged, LockIndex as row 10.
TEST(StoreKvTest, CasOnLockedKeyKeepsHolderAndZeroesLockIndex) {
  StoreDriver d;
  SessionId a = d.NewSession();
  d.Acquire("k", a, "v");  // 2
  ApplyResult r = d.Cas("k", "w", LogIndex(2));
  EXPECT_TRUE(r.ok);
  auto e = d.Get("k");
  EXPECT_EQ(e->session, a);
  EXPECT_EQ(e->fence, LogIndex(2));
  EXPECT_EQ(e->lock_index, 0u);
  EXPECT_EQ(e->value, "w");
  EXPECT_EQ(e->modify_index, LogIndex(3));
}

TEST(StoreKvTest, CasMatchingButIdenticalIsNoOpThatSucceeds) {
  StoreDriver d;
  d.Set("k", "v");
  d.Set("j", "x");
  ApplyResult r = d.Cas("k", "v", LogIndex(1));
  EXPECT_TRUE(r.ok);
  EXPECT_EQ(d.Get("k")->modify_index, LogIndex(1));
  EXPECT_EQ(d.store().kv_index(), LogIndex(2));
}

// --- delete ------------------------------------------------------------------------------

// Row 12.
TEST(StoreKvTest, DeleteRemovesKeyAndLeavesTombstoneIndex) {
  StoreDriver d;
  d.Set("k", "v");
  d.Set("j", "x");
  ApplyResult r = d.Delete("k");  // 3
  EXPECT_TRUE(r.status.ok());
  EXPECT_TRUE(r.ok);
  EXPECT_EQ(d.store().FindKv("k"), nullptr);
  EXPECT_EQ(d.store().kv_count(), 1u);
  EXPECT_EQ(d.store().kv_index(), LogIndex(3));
  EXPECT_EQ(d.store().KeyIndex("k"), LogIndex(3));
  EXPECT_EQ(d.store().tombstone_count(), 1u);
}

TEST(StoreKvTest, DeleteOfMissingKeySucceedsAndChangesNothing) {
  StoreDriver d;
  d.Set("j", "x");
  (void)d.store().TakeChanges();
  ApplyResult r = d.Delete("k");
  EXPECT_TRUE(r.status.ok());
  EXPECT_TRUE(r.ok);
  EXPECT_EQ(d.store().kv_index(), LogIndex(1));
  EXPECT_EQ(d.store().tombstone_count(), 0u);
  EXPECT_THAT(d.store().TakeChanges().keys, IsEmpty());
}

TEST(StoreKvTest, DeleteOfLockedKeyIsAllowedAndForgetsTheHolder) {
  StoreDriver d;
  SessionId a = d.NewSession();
  d.Acquire("k", a);
  ApplyResult r = d.Delete("k");
  EXPECT_TRUE(r.ok);
  EXPECT_EQ(d.store().FindKv("k"), nullptr);
  EXPECT_THAT(d.Held(a), IsEmpty());
  EXPECT_NE(d.store().FindSession(a), nullptr);
}

TEST(StoreKvTest, DeleteCasWithMatchingIndexDeletes) {
  StoreDriver d;
  d.Set("k", "v");
  d.Set("k", "w");  // modify 2
  ApplyResult r = d.DeleteCas("k", LogIndex(2));
  EXPECT_TRUE(r.ok);
  EXPECT_EQ(d.store().FindKv("k"), nullptr);
  EXPECT_EQ(d.store().KeyIndex("k"), LogIndex(3));
}

TEST(StoreKvTest, DeleteCasWithStaleIndexFailsAndKeepsKey) {
  StoreDriver d;
  d.Set("k", "v");
  d.Set("k", "w");  // modify 2
  ApplyResult r = d.DeleteCas("k", LogIndex(1));
  EXPECT_TRUE(r.status.ok());
  EXPECT_FALSE(r.ok);
  ASSERT_NE(d.store().FindKv("k"), nullptr);
  EXPECT_EQ(d.store().kv_index(), LogIndex(2));
}

// consul-api.md 2.7: "cas=0 never deletes an existing key".
TEST(StoreKvTest, DeleteCasZeroNeverDeletesExistingKey) {
  StoreDriver d;
  d.Set("k", "v");
  ApplyResult r = d.DeleteCas("k", LogIndex());
  EXPECT_FALSE(r.ok);
  EXPECT_NE(d.store().FindKv("k"), nullptr);
}

// consul-api.md 2.7: a cas-delete of a key that does not exist returns true
// (kvsDeleteCASTxn returns `entry == nil`).
TEST(StoreKvTest, DeleteCasOfMissingKeySucceedsWithoutWriting) {
  StoreDriver d;
  d.Set("j", "x");
  ApplyResult r = d.DeleteCas("k", LogIndex(5));
  EXPECT_TRUE(r.status.ok());
  EXPECT_TRUE(r.ok);
  EXPECT_EQ(d.store().kv_index(), LogIndex(1));
  EXPECT_EQ(d.store().tombstone_count(), 0u);
}

TEST(StoreKvTest, DeleteTreeRemovesExactlyTheKeysUnderPrefix) {
  StoreDriver d;
  d.Set("web/a", "1");
  d.Set("web/b/c", "2");
  d.Set("web", "3");
  d.Set("webx", "4");
  d.Set("api/a", "5");
  ApplyResult r = d.DeleteTree("web/");  // 6
  EXPECT_TRUE(r.ok);
  EXPECT_EQ(d.ListedKeys(""), (std::vector<std::string>{"api/a", "web", "webx"}));
  EXPECT_EQ(d.store().kv_index(), LogIndex(6));
  EXPECT_EQ(d.store().KeyIndex("web/a"), LogIndex(6));
  EXPECT_EQ(d.store().PrefixIndex("web/"), LogIndex(6));
  EXPECT_EQ(d.store().PrefixIndex("web/b"), LogIndex(6))
      << "a deleted key under web/b moves its index";
  EXPECT_EQ(d.store().PrefixIndex("api/"), LogIndex(5));
}

TEST(StoreKvTest, DeleteTreeWithEmptyPrefixDeletesEverything) {
  StoreDriver d;
  d.Set("a", "1");
  d.Set("b/c", "2");
  d.DeleteTree("");
  EXPECT_EQ(d.store().kv_count(), 0u);
  EXPECT_EQ(d.store().kv_index(), LogIndex(3));
}

TEST(StoreKvTest, DeleteTreeOfEmptyPrefixRangeChangesNothing) {
  StoreDriver d;
  d.Set("a", "1");
  (void)d.store().TakeChanges();
  d.DeleteTree("zzz/");
  EXPECT_EQ(d.store().kv_index(), LogIndex(1));
  EXPECT_EQ(d.store().kv_count(), 1u);
  EXPECT_THAT(d.store().TakeChanges().keys, IsEmpty());
}

TEST(StoreKvTest, RecreatedKeyStartsWithFreshCreateIndex) {
  StoreDriver d;
  d.Set("k", "v");
  d.Delete("k");
  d.Set("k", "v");
  auto e = d.Get("k");
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->create_index, LogIndex(3));
  EXPECT_EQ(e->modify_index, LogIndex(3));
}

// --- reads and listing --------------------------------------------------------------

TEST(StoreKvTest, ListKvReturnsPrefixMatchesInKeyByteOrder) {
  StoreDriver d;
  d.Set("a\xff", "1");
  d.Set("a/z", "2");
  d.Set("a", "3");
  d.Set("a/b", "4");
  d.Set("a0", "5");
  d.Set("b", "6");
  EXPECT_EQ(d.ListedKeys("a"), (std::vector<std::string>{"a", "a/b", "a/z", "a0", "a\xff"}));
  EXPECT_EQ(d.ListedKeys("a/"), (std::vector<std::string>{"a/b", "a/z"}));
  EXPECT_THAT(d.ListedKeys("c"), IsEmpty());
  EXPECT_EQ(d.ListedKeys("").size(), 6u);
}

TEST(StoreKvTest, ListKeysWithSeparatorCutsAfterFirstSeparatorAndDeduplicates) {
  StoreDriver d;
  d.Set("web/bar", "");
  d.Set("web/subdir/a", "");
  d.Set("web/subdir/b/c", "");
  d.Set("web/subdir/", "");
  d.Set("other/x", "");
  EXPECT_EQ(d.store().ListKeys("web/", "/"), (std::vector<std::string>{"web/bar", "web/subdir/"}));
}

TEST(StoreKvTest, ListKeysWithoutSeparatorListsEveryKey) {
  StoreDriver d;
  d.Set("web/bar", "");
  d.Set("web/subdir/a", "");
  d.Set("web/subdir/b", "");
  EXPECT_EQ(d.store().ListKeys("web/", ""),
            (std::vector<std::string>{"web/bar", "web/subdir/a", "web/subdir/b"}));
}

TEST(StoreKvTest, ListKeysSeparatorSearchStartsPastThePrefix) {
  StoreDriver d;
  d.Set("a/b/c", "");
  d.Set("a/b/d/e", "");
  d.Set("a/bx", "");
  // The "/" inside the prefix "a/b" does not count; the next one does.
  EXPECT_EQ(d.store().ListKeys("a/b", "/"), (std::vector<std::string>{"a/b/", "a/bx"}));
  EXPECT_EQ(d.store().ListKeys("", "/"), (std::vector<std::string>{"a/"}));
}

TEST(StoreKvTest, ListKeysSupportsMultiCharacterSeparators) {
  StoreDriver d;
  d.Set("x::y::z", "");
  d.Set("x::w", "");
  d.Set("x:q", "");
  EXPECT_EQ(d.store().ListKeys("x", "::"), (std::vector<std::string>{"x::", "x:q"}));
}

// --- indexes ------------------------------------------------------------------------

TEST(StoreKvTest, KeyIndexOfExistingKeyIsItsModifyIndex) {
  StoreDriver d;
  d.Set("k", "v");
  d.Set("j", "x");
  EXPECT_EQ(d.store().KeyIndex("k"), LogIndex(1));
  EXPECT_EQ(d.store().KeyIndex("j"), LogIndex(2));
}

TEST(StoreKvTest, KeyIndexOfMissingKeyIsKvTableIndex) {
  StoreDriver d;
  d.Set("k", "v");
  d.Set("j", "x");
  SessionId a = d.NewSession();  // index 3 is not a KV change
  EXPECT_EQ(d.store().kv_index(), LogIndex(2));
  EXPECT_EQ(d.store().KeyIndex("missing"), LogIndex(2));
  (void)a;
}

TEST(StoreKvTest, PrefixIndexIsHighestModifyIndexUnderPrefix) {
  StoreDriver d;
  d.Set("a/x", "1");  // 1
  d.Set("b/y", "2");  // 2
  d.Set("a/z", "3");  // 3
  d.Set("b/y", "4");  // 4
  EXPECT_EQ(d.store().PrefixIndex("a/"), LogIndex(3));
  EXPECT_EQ(d.store().PrefixIndex("b/"), LogIndex(4));
  EXPECT_EQ(d.store().PrefixIndex("a/x"), LogIndex(1));
}

TEST(StoreKvTest, PrefixIndexIncludesTombstones) {
  StoreDriver d;
  d.Set("a/x", "1");  // 1
  d.Set("a/y", "2");  // 2
  d.Set("b", "3");    // 3
  d.Delete("a/y");    // 4
  d.Set("b", "5");    // 5
  EXPECT_EQ(d.store().PrefixIndex("a/"), LogIndex(4));
  EXPECT_EQ(d.store().PrefixIndex("a/y"), LogIndex(4));
  EXPECT_EQ(d.store().PrefixIndex("a/x"), LogIndex(1));
}

TEST(StoreKvTest, PrefixIndexOfEmptyPrefixIsKvTableIndex) {
  StoreDriver d;
  d.Set("a", "1");
  d.Set("b", "2");
  d.Delete("b");   // 3
  d.NewSession();  // 4, not KV
  EXPECT_EQ(d.store().PrefixIndex(""), LogIndex(3));
  EXPECT_EQ(d.store().PrefixIndex(""), d.store().kv_index());
}

TEST(StoreKvTest, ReapTombstonesForgetsTombstonesAtOrBelowIndex) {
  StoreDriver d;
  d.Set("a", "1");  // 1
  d.Set("b", "1");  // 2
  d.Set("c", "1");  // 3
  d.Delete("a");    // 4
  d.Delete("b");    // 5
  d.Delete("c");    // 6
  EXPECT_EQ(d.store().tombstone_count(), 3u);
  d.Reap(5);
  EXPECT_EQ(d.store().tombstone_count(), 1u);
  EXPECT_EQ(d.store().PrefixIndex("c"), LogIndex(6));
  d.Reap(6);
  EXPECT_EQ(d.store().tombstone_count(), 0u);
}

TEST(StoreKvTest, PrefixIndexNeverGoesBackwardsAfterReap) {
  StoreDriver d;
  d.Set("a/x", "1");  // 1
  d.Set("a/y", "2");  // 2
  d.Delete("a/y");    // 3
  d.Set("b", "4");    // 4
  ASSERT_EQ(d.store().PrefixIndex("a/"), LogIndex(3));
  ASSERT_EQ(d.store().PrefixIndex("a/y"), LogIndex(3));
  d.Reap(3);
  EXPECT_EQ(d.store().tombstone_count(), 0u);
  EXPECT_GE(d.store().PrefixIndex("a/"), LogIndex(3));
  EXPECT_GE(d.store().PrefixIndex("a/y"), LogIndex(3));
  EXPECT_EQ(d.store().PrefixIndex(""), LogIndex(4));
  // Reap does not rewrite the KV table index.
  EXPECT_EQ(d.store().kv_index(), LogIndex(4));
}

TEST(StoreKvTest, ReapAtLowerIndexDoesNotLowerTheFloor) {
  StoreDriver d;
  d.Set("a/x", "1");  // 1
  d.Delete("a/x");    // 2
  d.Set("b/x", "1");  // 3
  d.Delete("b/x");    // 4
  d.Reap(4);
  d.Reap(1);
  EXPECT_GE(d.store().PrefixIndex("a/"), LogIndex(4));
  EXPECT_GE(d.store().PrefixIndex("b/"), LogIndex(4));
}

// --- changes --------------------------------------------------------------------------

TEST(StoreKvTest, TakeChangesReportsWrittenAndDeletedKeysThenClears) {
  StoreDriver d;
  d.Set("a", "1");
  d.Set("b", "1");
  d.Delete("a");
  Changes changes = d.store().TakeChanges();
  EXPECT_EQ(ChangedKeys(changes), (std::vector<std::string>{"a", "b"}));
  EXPECT_FALSE(changes.sessions);
  Changes again = d.store().TakeChanges();
  EXPECT_THAT(again.keys, IsEmpty());
  EXPECT_FALSE(again.sessions);
}

TEST(StoreKvTest, TakeChangesReportsEveryKeyOfADeleteTree) {
  StoreDriver d;
  d.Set("p/a", "1");
  d.Set("p/b", "1");
  d.Set("q", "1");
  (void)d.store().TakeChanges();
  d.DeleteTree("p/");
  EXPECT_EQ(ChangedKeys(d.store().TakeChanges()), (std::vector<std::string>{"p/a", "p/b"}));
}

// --- the replicated clock ----------------------------------------------------------------

TEST(StoreClockTest, ClockIsLargestNowMsAndNeverGoesBackwards) {
  StoreDriver d;
  EXPECT_EQ(d.store().now_ms(), ClusterMs(0));
  d.ApplyAt(KvSet{"a", "1", 0}, ClusterMs(5000));
  EXPECT_EQ(d.store().now_ms(), ClusterMs(5000));
  d.ApplyAt(KvSet{"a", "2", 0}, ClusterMs(4000));  // an older leader's clock
  EXPECT_EQ(d.store().now_ms(), ClusterMs(5000));
  d.ApplyAt(KvSet{"a", "3", 0}, ClusterMs(7000));
  EXPECT_EQ(d.store().now_ms(), ClusterMs(7000));
}

TEST(StoreClockTest, EveryCommandKindAdvancesClockAndAppliedIndex) {
  StoreDriver d;
  d.SetNowMs(ClusterMs(100));
  SessionId a = d.NewSession();
  d.SetNowMs(ClusterMs(200));
  d.Acquire("k", a);
  d.SetNowMs(ClusterMs(300));
  d.Acquire("k", SessionId("unknown-session"));  // an error result still applies
  EXPECT_EQ(d.store().now_ms(), ClusterMs(300));
  EXPECT_EQ(d.store().applied_index(), LogIndex(3));
  d.SetNowMs(ClusterMs(400));
  d.Reap(0);
  EXPECT_EQ(d.store().now_ms(), ClusterMs(400));
  d.SetNowMs(ClusterMs(500));
  d.Destroy(SessionId("never-existed"));
  EXPECT_EQ(d.store().now_ms(), ClusterMs(500));
  EXPECT_EQ(d.store().applied_index(), LogIndex(5));
}

}  // namespace
}  // namespace tenure::state
