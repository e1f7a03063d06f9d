// The lock history (state/lock_history.h, docs/history.md): every cause, the
// bounds (counts, names cut, the byte budget), snapshots (round trip, older
// versions read as an empty history, an over-budget history trimmed) and the
// digest.
#include "state/lock_history.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/coding.h"
#include "common/crc32.h"
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
  d.SetNowMs(testutil::kC0);
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
  d.SetNowMs(testutil::kC0);
  SessionId a = d.NewSession();
  SessionId b = d.NewSession();
  d.Acquire("k", a);
  d.AdvanceMs(10);
  d.RunTxn({testutil::UnlockOp("k", a), testutil::LockOp("k", b)});
  d.Acquire("j", a);
  d.Delete("j");
  const std::string bytes = Encode(d.store());
  // Version 8: the history as in version 5, and k's version (3) with it.
  EXPECT_EQ(Store::CheckSnapshotBytes(bytes).value(), 8);
  Result<Store> decoded = Store::DecodeSnapshot(bytes);
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_TRUE(decoded->history() == d.store().history());
  EXPECT_EQ(decoded->Digest(), d.store().Digest());
  EXPECT_EQ(Encode(*decoded), bytes);
  // The restored store goes on recording where the original left off.
  Store restored = std::move(*decoded);
  Command release{testutil::kC0 + 100, KvRelease{"k", "", 0, b}};
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

// --- the byte bound (decision 0025, 2026-11-27) ---------------------------

const std::string kMark = "\xE2\x80\xA6";  // U+2026, what a cut name ends with

TEST(LockHistoryTest, CutNameKeepsNamesUpTo128BytesAndCutsLongerOnesOnAUtf8Boundary) {
  EXPECT_EQ(LockHistory::CutName(""), "");
  const std::string exact(128, 'a');
  EXPECT_EQ(LockHistory::CutName(exact), exact);
  EXPECT_EQ(LockHistory::CutName(exact + "b"), std::string(125, 'a') + kMark);
  EXPECT_EQ(LockHistory::CutName(std::string(1024, 'n')).size(), 128u);
  // A character starting at byte 125 (the first dropped) is dropped whole.
  EXPECT_EQ(LockHistory::CutName(std::string(125, 'a') + "\xC3\xA9" + "tail"),
            std::string(125, 'a') + kMark);
  // A 2-, 3- and 4-byte character straddling the cut: the cut moves before it.
  EXPECT_EQ(LockHistory::CutName(std::string(124, 'a') + "\xC3\xA9" + "tail"),
            std::string(124, 'a') + kMark);
  EXPECT_EQ(LockHistory::CutName(std::string(123, 'a') + "\xE2\x82\xAC" + "tail"),
            std::string(123, 'a') + kMark);
  EXPECT_EQ(LockHistory::CutName(std::string(122, 'a') + "\xF0\x9F\x98\x80" + "tail"),
            std::string(122, 'a') + kMark);
  // A character ending exactly at byte 125 is kept.
  EXPECT_EQ(LockHistory::CutName(std::string(122, 'a') + "\xE2\x82\xAC" + "tail"),
            std::string(122, 'a') + "\xE2\x82\xAC" + kMark);
  // Not UTF-8 (continuation bytes only): at most 3 steps back, still bounded.
  EXPECT_EQ(LockHistory::CutName(std::string(200, '\x80')), std::string(122, '\x80') + kMark);
  // Idempotent: what a restore recuts stays as it was.
  for (const std::string& name :
       {exact + "b", std::string(123, 'a') + "\xE2\x82\xAC" + "tail", std::string(200, '\x80')}) {
    const std::string once = LockHistory::CutName(name);
    EXPECT_LE(once.size(), LockHistory::kNameBytesMax);
    EXPECT_EQ(LockHistory::CutName(once), once);
  }
}

Session LongNamedSession(std::uint64_t n) {
  Session s = testutil::MakeSession(testutil::TestSessionId(n), std::string(1024, 'N'));
  s.name = std::string(1000, 'S') + "\xE2\x82\xAC";
  return s;
}

TEST(LockHistoryTest, GrantsKeepCutCopiesOfLongNames) {
  StoreDriver d;
  SessionId a = d.CreateSession(LongNamedSession(1));
  ApplyResult r = d.Acquire("k", a);
  ASSERT_EQ(r.lock_events.size(), 1u);
  EXPECT_EQ(r.lock_events[0].grant.node, std::string(125, 'N') + kMark);
  EXPECT_EQ(r.lock_events[0].grant.session_name, std::string(125, 'S') + kMark);
  const LockGrant& g = d.store().FindHistory("k")->grants.back();
  EXPECT_EQ(g, r.lock_events[0].grant);
  EXPECT_EQ(d.store().FindSession(a)->name.size(), 1003u);  // the session keeps its name
  EXPECT_EQ(d.store().history().bytes(),
            LockHistory::KeyBytes("k") + 64 + a.view().size() + 128 + 128);
}

// A key of about 3 KiB: with names cut, each key with one grant counts
// 64 + 3000 + 64 + 36 + 128 + 128 = 3420 bytes, so about 2450 fill 8 MiB.
std::string BigKey(std::size_t i) {
  std::string key = "big/" + std::to_string(100000 + i) + "/";
  key.resize(3000, 'k');
  return key;
}

struct Filled {
  std::vector<LogIndex> first_fences;  // the 32 grants of "first"
  std::vector<std::string> keys;       // the big keys, in the order granted
  std::size_t first_cut_at = 0;        // keys granted when "first" first lost a grant
  std::size_t first_gone_at = 0;       // keys granted when "first" was gone
  std::string check;                   // what was wrong at an eviction, if anything
};

// Fills a store past the byte budget with long keys and names: an early key
// with 32 grants ("first", 69 + 32 * 356 = 11461 counted bytes, more than
// three big keys), then one grant per big key, until "first" is gone and 200
// keys more.
Filled FillPastTheBudget(StoreDriver& d) {
  d.set_check_invariants(false);  // once, by the caller
  Filled f;
  SessionId a = d.CreateSession(LongNamedSession(1));
  for (std::size_t i = 0; i < LockHistory::kGrantsPerKey; ++i) {
    d.Acquire("first", a);
    f.first_fences.push_back(d.last_index());
    d.Release("first", a);
  }
  const LockHistory& h = d.store().history();
  for (std::size_t i = 0;
       i < 5000 && (f.first_gone_at == 0 || f.keys.size() < f.first_gone_at + 200); ++i) {
    const std::size_t before = h.bytes();
    f.keys.push_back(BigKey(i));
    d.RunTxn({testutil::LockOp(f.keys.back(), a), testutil::UnlockOp(f.keys.back(), a)});
    EXPECT_LE(h.bytes(), LockHistory::kBytesMax);
    const LockHistory::KeyHistory* first = h.Find("first");
    if (f.first_cut_at == 0 && (first == nullptr || first->grants.size() < 32)) {
      f.first_cut_at = f.keys.size();
    }
    if (f.first_gone_at == 0 && first == nullptr) f.first_gone_at = f.keys.size();
    // While "first" (changed least recently) has grants, it loses its
    // oldest ones and no big key goes.
    if (first != nullptr) {
      for (std::size_t j = 0; j < first->grants.size(); ++j) {
        if (first->grants[j].fence != f.first_fences[32 - first->grants.size() + j]) {
          f.check = "\"first\" lost a grant other than its oldest";
        }
      }
      if (h.key_count() != f.keys.size() + 1) f.check = "a big key went before \"first\"";
      // Grants go one at a time: one more (356 bytes) would have fitted.
      if (h.bytes() < before + 3420 && h.bytes() + 356 <= LockHistory::kBytesMax) {
        f.check = "evicted more grants of \"first\" than needed at key " + std::to_string(i);
      }
    }
    // An eviction drops no more than it must: the last unit it dropped (a
    // grant, or a key with its last grant) is at most 3420 bytes.
    if (h.bytes() < before + 3420 && h.bytes() + 3420 <= LockHistory::kBytesMax) {
      f.check = "evicted more than needed at key " + std::to_string(i);
    }
  }
  return f;
}

TEST(LockHistoryTest, ByteBudgetDropsTheLeastRecentlyChangedKeysOldestGrantsFirst) {
  StoreDriver x;
  StoreDriver y;
  const Filled f = FillPastTheBudget(x);
  x.store().CheckInvariants();
  // 3420 counted bytes per big key: the budget holds about 2450.
  EXPECT_GT(f.first_cut_at, 2400u);
  EXPECT_LT(f.first_cut_at, 2500u);
  EXPECT_EQ(f.check, "");
  // "first" (11461 bytes) goes over 3 or 4 big keys (3420 bytes each).
  EXPECT_GE(f.first_gone_at, f.first_cut_at + 3);
  EXPECT_LE(f.first_gone_at, f.first_cut_at + 4);
  const LockHistory& h = x.store().history();
  EXPECT_LE(h.bytes(), LockHistory::kBytesMax);
  EXPECT_GT(h.bytes(), LockHistory::kBytesMax - 3420);
  // The keys kept are exactly the most recently changed ones.
  std::size_t kept_from = 0;
  while (kept_from < f.keys.size() && h.Find(f.keys[kept_from]) == nullptr) ++kept_from;
  EXPECT_GE(kept_from, 150u);
  for (std::size_t i = kept_from; i < f.keys.size(); ++i) {
    ASSERT_NE(h.Find(f.keys[i]), nullptr) << i;
  }
  EXPECT_EQ(h.key_count(), f.keys.size() - kept_from);
  // The snapshot's history part is at most the counted bytes (plus the
  // key count's varint): the documented worst case.
  std::string encoded;
  ByteWriter w(&encoded);
  h.Encode(w);
  EXPECT_LE(encoded.size(), h.bytes() + 10);
  // Deterministic: a second replica applying the same commands agrees.
  (void)FillPastTheBudget(y);
  EXPECT_TRUE(y.store().history() == h);
  EXPECT_EQ(y.store().history().bytes(), h.bytes());
  EXPECT_EQ(y.store().Digest(), x.store().Digest());

  // Snapshot round trip at the bound: the same history, count and digest,
  // and the restored store goes on evicting the same way.
  const std::string bytes = Encode(x.store());
  Result<Store> decoded = Store::DecodeSnapshot(bytes);
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_TRUE(decoded->history() == h);
  EXPECT_EQ(decoded->history().bytes(), h.bytes());
  EXPECT_EQ(Encode(*decoded), bytes);
  Store restored = std::move(*decoded);
  const std::string next = BigKey(9999);
  std::vector<TxnOp> ops = {testutil::LockOp(next, testutil::TestSessionId(1)),
                            testutil::UnlockOp(next, testutil::TestSessionId(1))};
  (void)restored.Apply(Command{x.now_ms(), Txn{ops}, x.wall_ms()}, x.next_index());
  x.RunTxn(ops);
  restored.CheckInvariants();
  EXPECT_EQ(restored.Digest(), x.store().Digest());
  EXPECT_EQ(restored.history().Find(f.keys[kept_from]), nullptr);  // the oldest kept went
}

// The history section of a version-5 snapshot replaced by `history` (the
// section is last, before the checksum), checksum recomputed.
std::string WithHistory(const Store& s, const std::string& history) {
  std::string bytes = Encode(s);
  std::string own;
  ByteWriter ow(&own);
  s.history().Encode(ow);
  EXPECT_EQ(bytes.substr(bytes.size() - 4 - own.size(), own.size()), own);
  bytes.resize(bytes.size() - 4 - own.size());
  bytes += history;
  ByteWriter(&bytes).PutFixed32(Crc32(bytes));
  return bytes;
}

// A history as the build before the byte bound could write it: names kept
// whole (1 KiB), no byte budget. `keys` keys with one ended grant each, the
// i-th changed at index base + i.
std::string OldBuildHistory(std::size_t keys, std::uint64_t base) {
  std::string out;
  ByteWriter w(&out);
  w.PutVarint(keys);
  for (std::size_t i = 0; i < keys; ++i) {
    w.PutBytes(BigKey(i));
    w.PutIndex(LogIndex(base + i));
    w.PutVarint(1);
    w.PutIndex(LogIndex(base + i));  // fence
    w.PutBytes(testutil::TestSessionId(1).view());
    w.PutBytes(std::string(1000, 'S'));
    w.PutBytes(std::string(1024, 'N'));
    w.PutSignedVarint(kT0.ms());
    w.PutIndex(LogIndex(base + i));
    w.PutSignedVarint(kT0.ms() + 1);
    w.PutIndex(LogIndex(base + i));
    w.PutU8(static_cast<std::uint8_t>(EndCause::kRelease));
  }
  return out;
}

TEST(LockHistoryTest, DecodedHistoryOverTheBudgetIsTrimmedAsAnApplyWould) {
  StoreDriver d;
  SessionId a = d.NewSession();
  d.Acquire("small", a);
  d.Delete("small");  // no key past version 1: version 5, as the old build wrote
  d.SkipIndexes(100000);
  d.AdvanceMs(1);  // the replicated clock as the old build's grants ended
  d.Set("plain", "v");
  // 3000 keys: 10.3 MB counted after the cut, 15 MB as written.
  const std::string bytes = WithHistory(d.store(), OldBuildHistory(3000, 1000));
  Result<Store> decoded = Store::DecodeSnapshot(bytes);
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  const LockHistory& h = decoded->history();
  EXPECT_LE(h.bytes(), LockHistory::kBytesMax);
  EXPECT_TRUE(h.Validate(decoded->applied_index()).ok());
  // The least recently changed keys went; the newest stayed, names cut.
  EXPECT_EQ(h.Find(BigKey(0)), nullptr);
  ASSERT_NE(h.Find(BigKey(2999)), nullptr);
  EXPECT_EQ(h.Find(BigKey(2999))->grants[0].session_name, std::string(125, 'S') + kMark);
  EXPECT_EQ(h.Find(BigKey(2999))->grants[0].node, std::string(125, 'N') + kMark);
  std::size_t kept_from = 0;
  while (h.Find(BigKey(kept_from)) == nullptr) ++kept_from;
  EXPECT_EQ(h.key_count(), 3000 - kept_from);
  EXPECT_GT(kept_from, 500u);
  // Every replica restoring these bytes gets the same state; re-encoding it
  // gives a snapshot that decodes to itself.
  Result<Store> again = Store::DecodeSnapshot(bytes);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->Digest(), decoded->Digest());
  Result<Store> round = Store::DecodeSnapshot(Encode(*decoded));
  ASSERT_TRUE(round.ok());
  EXPECT_TRUE(round->history() == h);
  EXPECT_EQ(round->Digest(), decoded->Digest());
  // Under the budget, an older build's history only has its names cut.
  Result<Store> small = Store::DecodeSnapshot(WithHistory(d.store(), OldBuildHistory(10, 1000)));
  ASSERT_TRUE(small.ok()) << small.status().ToString();
  EXPECT_EQ(small->history().key_count(), 10u);
  // A key without grants no build writes: refused.
  std::string empty_key;
  ByteWriter ew(&empty_key);
  ew.PutVarint(1);
  ew.PutBytes("k");
  ew.PutIndex(LogIndex(5));
  ew.PutVarint(0);
  EXPECT_FALSE(Store::DecodeSnapshot(WithHistory(d.store(), empty_key)).ok());
}

}  // namespace
}  // namespace tenure::state
