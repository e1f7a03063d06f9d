// Scenario tests for transactions: every verb of txn.h with Consul's error
// texts (docs/consul-api.md 4.2), results (4.3), atomic rollback reporting all
// failing ops, tenure's check-fence, and the read-only ReadTxn.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "unit/state/store_fixture.h"

namespace tenure::state {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using testutil::CasOp;
using testutil::CheckFenceOp;
using testutil::CheckIndexOp;
using testutil::CheckNotExistsOp;
using testutil::CheckSessionOp;
using testutil::DeleteCasOp;
using testutil::DeleteOp;
using testutil::DeleteTreeOp;
using testutil::GetOp;
using testutil::GetOrEmptyOp;
using testutil::GetTreeOp;
using testutil::LockOp;
using testutil::SetOp;
using testutil::StoreDriver;
using testutil::UnlockOp;

constexpr TxnVerb kAllVerbs[] = {
    TxnVerb::kSet,          TxnVerb::kCas,
    TxnVerb::kLock,         TxnVerb::kUnlock,
    TxnVerb::kGet,          TxnVerb::kGetOrEmpty,
    TxnVerb::kGetTree,      TxnVerb::kCheckIndex,
    TxnVerb::kCheckSession, TxnVerb::kCheckNotExists,
    TxnVerb::kDelete,       TxnVerb::kDeleteTree,
    TxnVerb::kDeleteCas,    TxnVerb::kCheckFence,
};

// The single error of a failed txn.
TxnError OnlyError(const ApplyResult& r) {
  EXPECT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_EQ(r.txn.errors.size(), 1u);
  EXPECT_THAT(r.txn.results, IsEmpty()) << "a rolled-back txn reports no results";
  if (r.txn.errors.empty()) return {};
  return r.txn.errors[0];
}

// --- verb names ------------------------------------------------------------------------

TEST(TxnVerbTest, ConsulVerbNamesRoundTrip) {
  const std::vector<std::pair<std::string, TxnVerb>> names = {
      {"set", TxnVerb::kSet},
      {"cas", TxnVerb::kCas},
      {"lock", TxnVerb::kLock},
      {"unlock", TxnVerb::kUnlock},
      {"get", TxnVerb::kGet},
      {"get-or-empty", TxnVerb::kGetOrEmpty},
      {"get-tree", TxnVerb::kGetTree},
      {"check-index", TxnVerb::kCheckIndex},
      {"check-session", TxnVerb::kCheckSession},
      {"check-not-exists", TxnVerb::kCheckNotExists},
      {"delete", TxnVerb::kDelete},
      {"delete-tree", TxnVerb::kDeleteTree},
      {"delete-cas", TxnVerb::kDeleteCas},
      {"check-fence", TxnVerb::kCheckFence},
  };
  for (const auto& [name, verb] : names) {
    EXPECT_EQ(ParseTxnVerb(name), verb) << name;
    EXPECT_EQ(TxnVerbName(verb), name);
  }
  EXPECT_EQ(names.size(), std::size(kAllVerbs));
}

TEST(TxnVerbTest, UnknownVerbNamesAreRejected) {
  EXPECT_EQ(ParseTxnVerb(""), std::nullopt);
  EXPECT_EQ(ParseTxnVerb("bogus"), std::nullopt);
  EXPECT_EQ(ParseTxnVerb("check"), std::nullopt);
  EXPECT_EQ(ParseTxnVerb("set "), std::nullopt);
  EXPECT_EQ(ParseTxnVerb(std::string_view("set\0", 4)), std::nullopt);
}

TEST(TxnVerbTest, WriteVerbsAreExactlyConsulsRaftVerbs) {
  for (TxnVerb verb : kAllVerbs) {
    const bool want = verb == TxnVerb::kSet || verb == TxnVerb::kCas || verb == TxnVerb::kLock ||
                      verb == TxnVerb::kUnlock || verb == TxnVerb::kDelete ||
                      verb == TxnVerb::kDeleteTree || verb == TxnVerb::kDeleteCas;
    EXPECT_EQ(IsWriteVerb(verb), want) << TxnVerbName(verb);
  }
}

// --- write verbs ----------------------------------------------------------------------

TEST(StoreTxnTest, SetBehavesLikePlainPutAndReportsEntryWithoutValue) {
  StoreDriver d;
  SessionId a = d.NewSession();
  d.Acquire("k", a, "held");                                              // 2
  ApplyResult r = d.RunTxn({SetOp("k", "new", 5), SetOp("n", "fresh")});  // 3
  ASSERT_TRUE(r.txn.ok());
  ASSERT_EQ(r.txn.results.size(), 2u);
  const TxnResultEntry& k = r.txn.results[0];
  EXPECT_FALSE(k.with_value);
  EXPECT_EQ(k.entry.key, "k");
  EXPECT_EQ(k.entry.session, a);
  EXPECT_EQ(k.entry.lock_index, 0u);
  EXPECT_EQ(k.entry.flags, 5u);
  EXPECT_EQ(k.entry.create_index, LogIndex(2));
  EXPECT_EQ(k.entry.modify_index, LogIndex(3));
  EXPECT_EQ(r.txn.results[1].entry.key, "n");
  EXPECT_EQ(r.txn.results[1].entry.create_index, LogIndex(3));
  EXPECT_EQ(d.Get("k")->value, "new");
  EXPECT_EQ(d.Get("k")->session, a);
  EXPECT_EQ(d.Get("n")->value, "fresh");
}

TEST(StoreTxnTest, WritesOfOneTxnShareItsIndex) {
  StoreDriver d;
  d.SkipIndexes(9);
  ApplyResult r = d.RunTxn({SetOp("a", "1"), SetOp("b", "2"), DeleteOp("missing")});  // 10
  ASSERT_TRUE(r.txn.ok());
  EXPECT_EQ(d.Get("a")->modify_index, LogIndex(10));
  EXPECT_EQ(d.Get("b")->modify_index, LogIndex(10));
  EXPECT_EQ(d.store().kv_index(), LogIndex(10));
}

TEST(StoreTxnTest, CasStaleFailsWithConsulText) {
  StoreDriver d;
  d.Set("k", "v");  // 1
  d.Set("k", "w");  // 2
  TxnError e = OnlyError(d.RunTxn({CasOp("k", "x", 1)}));
  EXPECT_EQ(e.op_index, 0u);
  EXPECT_EQ(e.what, "failed to set key \"k\", index is stale");
}

TEST(StoreTxnTest, CasZeroOnExistingKeyFailsAndCasZeroOnAbsentKeyCreates) {
  StoreDriver d;
  d.Set("k", "v");
  TxnError e = OnlyError(d.RunTxn({CasOp("k", "x", 0)}));
  EXPECT_EQ(e.what, "failed to set key \"k\", index is stale");
  ApplyResult r = d.RunTxn({CasOp("n", "x", 0)});
  ASSERT_TRUE(r.txn.ok());
  ASSERT_EQ(r.txn.results.size(), 1u);
  EXPECT_EQ(r.txn.results[0].entry.key, "n");
  EXPECT_EQ(d.Get("n")->value, "x");
}

TEST(StoreTxnTest, LockAcquiresAndReportsTheLockedEntry) {
  StoreDriver d;
  SessionId a = d.NewSession();
  ApplyResult r = d.RunTxn({LockOp("k", a, "v")});  // 2
  ASSERT_TRUE(r.txn.ok());
  ASSERT_EQ(r.txn.results.size(), 1u);
  EXPECT_FALSE(r.txn.results[0].with_value);
  EXPECT_EQ(r.txn.results[0].entry.session, a);
  EXPECT_EQ(r.txn.results[0].entry.lock_index, 1u);
  EXPECT_EQ(r.txn.results[0].entry.fence, LogIndex(2));
  EXPECT_EQ(d.Held(a), std::vector<std::string>{"k"});
}

TEST(StoreTxnTest, LockHeldByOtherFailsWithConsulText) {
  StoreDriver d;
  SessionId a = d.NewSession();
  SessionId b = d.NewSession();
  d.Acquire("k", a);
  TxnError e = OnlyError(d.RunTxn({LockOp("k", b)}));
  EXPECT_EQ(e.what, "failed to lock key \"k\", lock is already held");
}

TEST(StoreTxnTest, LockWithUnknownSessionFailsWithInvalidSession) {
  StoreDriver d;
  TxnError e = OnlyError(d.RunTxn({LockOp("k", SessionId("ghost"))}));
  EXPECT_EQ(e.what, "invalid session \"ghost\"");
  EXPECT_EQ(d.store().FindKv("k"), nullptr);
}

TEST(StoreTxnTest, LockWithEmptySessionFailsWithMissingSession) {
  StoreDriver d;
  TxnError e = OnlyError(d.RunTxn({LockOp("k", SessionId())}));
  EXPECT_EQ(e.what, "missing session");
}

TEST(StoreTxnTest, UnlockByHolderReleases) {
  StoreDriver d;
  SessionId a = d.NewSession();
  d.Acquire("k", a, "v");
  ApplyResult r = d.RunTxn({UnlockOp("k", a, "after")});
  ASSERT_TRUE(r.txn.ok());
  ASSERT_EQ(r.txn.results.size(), 1u);
  EXPECT_EQ(r.txn.results[0].entry.session, SessionId());
  EXPECT_EQ(d.Get("k")->session, SessionId());
  EXPECT_EQ(d.Get("k")->value, "after");
  EXPECT_EQ(d.Get("k")->fence, LogIndex());
}

TEST(StoreTxnTest, UnlockByNonHolderFailsWithConsulText) {
  StoreDriver d;
  SessionId a = d.NewSession();
  SessionId b = d.NewSession();
  d.Acquire("k", a);
  TxnError e = OnlyError(d.RunTxn({UnlockOp("k", b)}));
  EXPECT_EQ(e.what, "failed to unlock key \"k\", lock isn't held, or is held by another session");
  TxnError absent = OnlyError(d.RunTxn({UnlockOp("absent", b)}));
  EXPECT_EQ(absent.what,
            "failed to unlock key \"absent\", lock isn't held, or is held by another session");
}

TEST(StoreTxnTest, UnlockWithEmptySessionFailsWithMissingSession) {
  StoreDriver d;
  d.Set("k", "v");
  TxnError e = OnlyError(d.RunTxn({UnlockOp("k", SessionId())}));
  EXPECT_EQ(e.what, "missing session");
}

TEST(StoreTxnTest, DeleteVerbsAddNoResults) {
  StoreDriver d;
  d.Set("a", "1");    // 1
  d.Set("t/x", "2");  // 2
  d.Set("t/y", "3");  // 3
  d.Set("c", "4");    // 4
  ApplyResult r =
      d.RunTxn({DeleteOp("a"), DeleteTreeOp("t/"), DeleteCasOp("c", 4), CheckNotExistsOp("a")});
  ASSERT_TRUE(r.txn.ok()) << r.txn.errors.size();
  EXPECT_THAT(r.txn.results, IsEmpty());
  EXPECT_EQ(d.store().kv_count(), 0u);
  EXPECT_EQ(d.store().PrefixIndex("t/"), LogIndex(5));
}

TEST(StoreTxnTest, DeleteCasStaleFailsWithConsulText) {
  StoreDriver d;
  d.Set("k", "v");  // 1
  TxnError e = OnlyError(d.RunTxn({DeleteCasOp("k", 7)}));
  EXPECT_EQ(e.what, "failed to delete key \"k\", index is stale");
  EXPECT_NE(d.store().FindKv("k"), nullptr);
}

// --- read and check verbs --------------------------------------------------------------

TEST(StoreTxnTest, GetReportsEntryWithValue) {
  StoreDriver d;
  d.Set("k", std::string("v\0w", 3), 9);
  ApplyResult r = d.RunTxn({SetOp("other", "x"), GetOp("k")});
  ASSERT_TRUE(r.txn.ok());
  ASSERT_EQ(r.txn.results.size(), 2u);
  EXPECT_TRUE(r.txn.results[1].with_value);
  EXPECT_EQ(r.txn.results[1].entry, *d.Get("k"));
}

TEST(StoreTxnTest, GetOfMissingKeyFailsWithConsulText) {
  StoreDriver d;
  TxnError e = OnlyError(d.RunTxn({SetOp("a", "1"), GetOp("k")}));
  EXPECT_EQ(e.op_index, 1u);
  EXPECT_EQ(e.what, "key \"k\" doesn't exist");
  EXPECT_EQ(d.store().FindKv("a"), nullptr);
}

TEST(StoreTxnTest, GetOrEmptyOfMissingKeyReportsEmptyEntry) {
  StoreDriver d;
  d.Set("present", "p");
  ApplyResult r = d.RunTxn({SetOp("x", "1"), GetOrEmptyOp("k"), GetOrEmptyOp("present")});
  ASSERT_TRUE(r.txn.ok());
  ASSERT_EQ(r.txn.results.size(), 3u);
  KvEntry empty;
  empty.key = "k";
  EXPECT_EQ(r.txn.results[1].entry, empty);
  EXPECT_EQ(r.txn.results[2].entry, *d.Get("present"));
  EXPECT_TRUE(r.txn.results[2].with_value);
}

TEST(StoreTxnTest, GetTreeReportsOneEntryPerKeyInOrderWithValues) {
  StoreDriver d;
  d.Set("t/b", "2");
  d.Set("t/a", "1");
  d.Set("u", "3");
  ApplyResult r = d.RunTxn({SetOp("t/c", "c"), GetTreeOp("t/"), GetTreeOp("none/")});
  ASSERT_TRUE(r.txn.ok());
  ASSERT_EQ(r.txn.results.size(), 4u);
  EXPECT_EQ(r.txn.results[1].entry, *d.Get("t/a"));
  EXPECT_EQ(r.txn.results[2].entry, *d.Get("t/b"));
  EXPECT_EQ(r.txn.results[3].entry, *d.Get("t/c")) << "get-tree sees the earlier set";
  for (std::size_t i = 1; i < 4; ++i) EXPECT_TRUE(r.txn.results[i].with_value);
}

TEST(StoreTxnTest, CheckIndexPassesOnMatchAndReportsEntry) {
  StoreDriver d;
  d.Set("k", "v");  // 1
  ApplyResult r = d.RunTxn({CheckIndexOp("k", 1), SetOp("z", "1")});
  ASSERT_TRUE(r.txn.ok());
  ASSERT_EQ(r.txn.results.size(), 2u);
  EXPECT_EQ(r.txn.results[0].entry.key, "k");
  EXPECT_EQ(r.txn.results[0].entry.modify_index, LogIndex(1));
  EXPECT_FALSE(r.txn.results[0].with_value);
}

TEST(StoreTxnTest, CheckIndexFailuresUseConsulTexts) {
  StoreDriver d;
  d.Set("k", "v");  // 1
  d.Set("k", "w");  // 2
  TxnError mismatch = OnlyError(d.RunTxn({CheckIndexOp("k", 1)}));
  EXPECT_EQ(mismatch.what, "failed index check for key \"k\", current modify index 2 != 1");
  TxnError missing = OnlyError(d.RunTxn({CheckIndexOp("x", 5)}));
  EXPECT_EQ(missing.what, "failed to check index, key \"x\" doesn't exist");
}

TEST(StoreTxnTest, CheckSessionPassesForTheHolder) {
  StoreDriver d;
  SessionId a = d.NewSession();
  d.Acquire("k", a);
  ApplyResult r = d.RunTxn({CheckSessionOp("k", a), SetOp("guarded", "w")});
  ASSERT_TRUE(r.txn.ok());
  ASSERT_EQ(r.txn.results.size(), 2u);
  EXPECT_EQ(r.txn.results[0].entry.session, a);
  EXPECT_EQ(d.Get("guarded")->value, "w");
}

TEST(StoreTxnTest, CheckSessionFailuresUseConsulTexts) {
  StoreDriver d;
  SessionId a = d.NewSession();
  SessionId b = d.NewSession();
  d.Acquire("k", a);
  TxnError mismatch = OnlyError(d.RunTxn({CheckSessionOp("k", b)}));
  EXPECT_EQ(mismatch.what, "failed session check for key \"k\", current session \"" + a.str() +
                               "\" != \"" + b.str() + "\"");
  TxnError missing = OnlyError(d.RunTxn({CheckSessionOp("x", a)}));
  EXPECT_EQ(missing.what, "failed to check session, key \"x\" doesn't exist");
  d.Release("k", a);
  TxnError unlocked = OnlyError(d.RunTxn({CheckSessionOp("k", a)}));
  EXPECT_EQ(unlocked.what,
            "failed session check for key \"k\", current session \"\" != \"" + a.str() + "\"");
}

TEST(StoreTxnTest, CheckNotExistsFailsWithConsulTextWhenKeyExists) {
  StoreDriver d;
  d.Set("k", "v");
  TxnError e = OnlyError(d.RunTxn({CheckNotExistsOp("k")}));
  EXPECT_EQ(e.what, "key \"k\" exists");
  ApplyResult r = d.RunTxn({CheckNotExistsOp("absent"), SetOp("absent", "now")});
  ASSERT_TRUE(r.txn.ok());
  EXPECT_EQ(r.txn.results.size(), 1u) << "check-not-exists adds no result";
}

// Consul formats keys with Go's %q: quotes and control bytes are escaped.
TEST(StoreTxnTest, ErrorTextsQuoteKeysLikeGo) {
  StoreDriver d;
  const std::string key("a\"b\\c\n\0", 7);
  TxnError e = OnlyError(d.RunTxn({GetOp(key)}));
  EXPECT_EQ(e.what, "key \"a\\\"b\\\\c\\n\\x00\" doesn't exist");
}

// Go's %q keeps printable UTF-8 and escapes bytes that are not UTF-8.
TEST(StoreTxnTest, ErrorTextsQuoteNonAsciiKeysLikeGo) {
  StoreDriver d;
  TxnError utf8 = OnlyError(d.RunTxn({GetOp("caf\xc3\xa9")}));
  EXPECT_EQ(utf8.what, "key \"caf\xc3\xa9\" doesn't exist");
  TxnError invalid = OnlyError(d.RunTxn({GetOp("k\xff")}));
  EXPECT_EQ(invalid.what, "key \"k\\xff\" doesn't exist");
}

// --- check-fence (tenure extension) ----------------------------------------------------

TEST(StoreTxnTest, CheckFencePassesForTheCurrentToken) {
  StoreDriver d;
  SessionId a = d.NewSession();
  const LogIndex token = d.Acquire("k", a).fence;
  ASSERT_FALSE(token.is_none());
  ApplyResult r = d.RunTxn({CheckFenceOp("k", token), SetOp("db/row", "written")});
  EXPECT_TRUE(r.txn.ok());
  EXPECT_EQ(d.Get("db/row")->value, "written");
}

TEST(StoreTxnTest, CheckFenceRejectsAnOldTokenAfterANewGrant) {
  StoreDriver d;
  SessionId a = d.NewSession();
  SessionId b = d.NewSession();
  const LogIndex old_token = d.Acquire("k", a).fence;
  d.Destroy(a);
  const LogIndex new_token = d.Acquire("k", b).fence;
  ASSERT_GT(new_token, old_token);
  // A paused ex-leader's late write.
  ApplyResult r = d.RunTxn({SetOp("db/row", "late"), CheckFenceOp("k", old_token)});
  ASSERT_FALSE(r.txn.ok());
  ASSERT_EQ(r.txn.errors.size(), 1u);
  EXPECT_EQ(r.txn.errors[0].op_index, 1u);
  EXPECT_FALSE(r.txn.errors[0].what.empty());
  EXPECT_EQ(d.store().FindKv("db/row"), nullptr);
}

TEST(StoreTxnTest, CheckFenceFailsOnUnlockedOrMissingKey) {
  StoreDriver d;
  SessionId a = d.NewSession();
  const LogIndex token = d.Acquire("k", a).fence;
  d.Release("k", a);
  ApplyResult unlocked = d.RunTxn({CheckFenceOp("k", token)});
  EXPECT_FALSE(unlocked.txn.ok());
  ApplyResult zero = d.RunTxn({CheckFenceOp("k", LogIndex())});
  EXPECT_FALSE(zero.txn.ok()) << "an unlocked key (fence 0) never passes, even for token 0";
  ApplyResult missing = d.RunTxn({CheckFenceOp("absent", token)});
  EXPECT_FALSE(missing.txn.ok());
  ASSERT_EQ(missing.txn.errors.size(), 1u);
  EXPECT_EQ(missing.txn.errors[0].op_index, 0u);
}

TEST(StoreTxnTest, CheckFenceRejectsAFutureToken) {
  StoreDriver d;
  SessionId a = d.NewSession();
  const LogIndex token = d.Acquire("k", a).fence;
  EXPECT_FALSE(d.RunTxn({CheckFenceOp("k", token.Next())}).txn.ok());
}

TEST(StoreTxnTest, CheckFenceWorksInReadTxn) {
  StoreDriver d;
  SessionId a = d.NewSession();
  const LogIndex token = d.Acquire("k", a).fence;
  EXPECT_TRUE(d.store().ReadTxn({CheckFenceOp("k", token)}).ok());
  EXPECT_FALSE(d.store().ReadTxn({CheckFenceOp("k", LogIndex(token.value() - 1))}).ok());
}

// --- atomicity ---------------------------------------------------------------------------

TEST(StoreTxnTest, FailingOpRollsBackEveryOp) {
  StoreDriver d;
  SessionId a = d.NewSession();
  d.Set("k", "orig");  // 2
  (void)d.store().TakeChanges();
  ApplyResult r = d.RunTxn({SetOp("k", "changed"), SetOp("new", "x"), LockOp("l", a), DeleteOp("k"),
                            CasOp("c", "x", 99)});  // 3
  ASSERT_FALSE(r.txn.ok());
  EXPECT_THAT(r.txn.errors, ElementsAre(TxnError{4, "failed to set key \"c\", index is stale"}));
  EXPECT_THAT(r.txn.results, IsEmpty());
  EXPECT_EQ(d.Get("k")->value, "orig");
  EXPECT_EQ(d.Get("k")->modify_index, LogIndex(2));
  EXPECT_EQ(d.store().FindKv("new"), nullptr);
  EXPECT_EQ(d.store().FindKv("l"), nullptr);
  EXPECT_THAT(d.Held(a), IsEmpty());
  EXPECT_EQ(d.store().kv_index(), LogIndex(2));
  EXPECT_EQ(d.store().tombstone_count(), 0u);
  EXPECT_THAT(d.store().TakeChanges().keys, IsEmpty());
  EXPECT_EQ(d.store().applied_index(), LogIndex(3));
}

TEST(StoreTxnTest, EveryFailingOpIsReportedWithItsOpIndex) {
  StoreDriver d;
  d.Set("k", "v");  // 1
  ApplyResult r = d.RunTxn({SetOp("a", "1"), GetOp("missing"), SetOp("b", "2"),
                            CheckNotExistsOp("k"), CasOp("k", "x", 0)});
  ASSERT_FALSE(r.txn.ok());
  EXPECT_THAT(r.txn.errors, ElementsAre(TxnError{1, "key \"missing\" doesn't exist"},
                                        TxnError{3, "key \"k\" exists"},
                                        TxnError{4, "failed to set key \"k\", index is stale"}));
  EXPECT_EQ(d.store().FindKv("a"), nullptr);
  EXPECT_EQ(d.store().FindKv("b"), nullptr);
}

// The wire sketch of consul-api.md section 13.
TEST(StoreTxnTest, ConsulRollbackSketch) {
  StoreDriver d;
  SessionId sid = d.NewSession();
  ApplyResult r = d.RunTxn({LockOp("k", sid), CheckIndexOp("x", 5)});
  ASSERT_FALSE(r.txn.ok());
  EXPECT_THAT(r.txn.errors,
              ElementsAre(TxnError{1, "failed to check index, key \"x\" doesn't exist"}));
  EXPECT_EQ(d.store().FindKv("k"), nullptr);
}

TEST(StoreTxnTest, LaterOpsSeeEarlierOpsEffects) {
  StoreDriver d;
  d.SkipIndexes(2);
  // All at index 3: set, then cas and check-index against the new ModifyIndex.
  ApplyResult r = d.RunTxn({SetOp("k", "1"), CheckIndexOp("k", 3), CasOp("k", "2", 3), GetOp("k"),
                            DeleteOp("k"), CheckNotExistsOp("k")});
  ASSERT_TRUE(r.txn.ok()) << (r.txn.errors.empty() ? "" : r.txn.errors[0].what);
  ASSERT_EQ(r.txn.results.size(), 4u);
  EXPECT_EQ(r.txn.results[3].entry.value, "2");
  EXPECT_EQ(d.store().FindKv("k"), nullptr);
}

TEST(StoreTxnTest, FailedOpDoesNotAffectLaterOps) {
  StoreDriver d;
  d.Set("k", "v");  // 1
  // op 0 fails (k exists), so op 1 still sees the original k.
  ApplyResult r = d.RunTxn({CasOp("k", "x", 0), CheckIndexOp("k", 1)});
  EXPECT_THAT(r.txn.errors, ElementsAre(TxnError{0, "failed to set key \"k\", index is stale"}));
}

TEST(StoreTxnTest, TxnOfNoOpWritesKeepsKvIndex) {
  StoreDriver d;
  d.Set("k", "v");  // 1
  d.NewSession();   // 2
  ApplyResult r = d.RunTxn({SetOp("k", "v"), DeleteOp("absent")});
  ASSERT_TRUE(r.txn.ok());
  ASSERT_EQ(r.txn.results.size(), 1u);
  EXPECT_EQ(r.txn.results[0].entry.modify_index, LogIndex(1));
  EXPECT_EQ(d.Get("k")->modify_index, LogIndex(1));
  EXPECT_EQ(d.store().kv_index(), LogIndex(1));
}

TEST(StoreTxnTest, SuccessfulTxnReportsChangedKeys) {
  StoreDriver d;
  d.Set("gone", "x");
  (void)d.store().TakeChanges();
  ASSERT_TRUE(d.RunTxn({SetOp("a", "1"), DeleteOp("gone"), GetOp("a")}).txn.ok());
  EXPECT_EQ(testutil::ChangedKeys(d.store().TakeChanges()),
            (std::vector<std::string>{"a", "gone"}));
}

// --- read-only transactions ------------------------------------------------------------

TEST(StoreReadTxnTest, ReadTxnEvaluatesWithoutChangingState) {
  StoreDriver d;
  SessionId a = d.NewSession();
  d.Acquire("k", a, "v");
  d.Set("t/1", "one");
  (void)d.store().TakeChanges();
  const std::uint64_t digest = d.store().Digest();
  const LogIndex applied = d.store().applied_index();
  TxnOutcome out =
      d.store().ReadTxn({GetOp("k"), GetTreeOp("t/"), CheckSessionOp("k", a),
                         CheckIndexOp("t/1", 3), GetOrEmptyOp("nope"), CheckNotExistsOp("nope")});
  ASSERT_TRUE(out.ok());
  ASSERT_EQ(out.results.size(), 5u);
  EXPECT_EQ(out.results[0].entry, *d.Get("k"));
  EXPECT_TRUE(out.results[0].with_value);
  EXPECT_EQ(out.results[1].entry, *d.Get("t/1"));
  EXPECT_EQ(d.store().Digest(), digest);
  EXPECT_EQ(d.store().applied_index(), applied);
  EXPECT_THAT(d.store().TakeChanges().keys, IsEmpty());
}

TEST(StoreReadTxnTest, ReadTxnReportsEveryFailingCheck) {
  StoreDriver d;
  d.Set("k", "v");  // 1
  TxnOutcome out = d.store().ReadTxn({GetOp("k"), GetOp("x"), CheckIndexOp("k", 2)});
  EXPECT_FALSE(out.ok());
  EXPECT_THAT(out.results, IsEmpty());
  EXPECT_THAT(out.errors,
              ElementsAre(TxnError{1, "key \"x\" doesn't exist"},
                          TxnError{2,
                                   "failed index check for key \"k\", current modify index "
                                   "1 != 2"}));
}

}  // namespace
}  // namespace tenure::state
