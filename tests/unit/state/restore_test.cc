// Snapshot files (state/backup_file.h) and the RestoreState command
// (state/store_restore.cc): a file round-trips; every truncation, every
// flipped byte and a newer format version are refused with a sentence; a
// restore replaces the state whole or changes nothing, and indexes and
// fencing tokens never go backwards (decision 0024).
#include <gtest/gtest.h>

#include <string>

#include "state/backup_file.h"
#include "state/store.h"
#include "unit/state/store_fixture.h"

namespace tenure::state {
namespace {

using testutil::MakeSession;
using testutil::StoreDriver;
using testutil::TestSessionId;

ApplyResult ApplyAt(Store* store, CommandBody body, std::uint64_t index,
                    ClusterMs now = ClusterMs(1)) {
  Command command;
  command.now_ms = now;
  command.body = std::move(body);
  ApplyResult result = store->Apply(command, LogIndex(index));
  store->CheckInvariants();
  return result;
}

// A small state with keys, a tombstone, a session holding a lock, a
// lock-delay, at applied index `last` (the driver skips up to it).
StoreDriver SourceState(std::uint64_t last) {
  StoreDriver d;
  d.SetNowMs(ClusterMs(1'700'000'000'000));
  d.Set("config/a", "1");
  d.Set("config/b", "2");
  d.Set("gone", "x");
  d.Delete("gone");
  SessionId s = d.NewSession(15 * kNsPerSecond);
  EXPECT_TRUE(d.Acquire("service/leader", s, "me").ok);
  SessionId t = d.NewSession(15 * kNsPerSecond);
  EXPECT_TRUE(d.Acquire("service/other", t).ok);
  d.Destroy(t);  // starts a lock-delay on service/other
  if (last > d.next_index().value()) d.SkipIndexes(last - d.next_index().value());
  d.Set("config/c", "3");
  EXPECT_EQ(d.last_index().value(), std::max<std::uint64_t>(last, 10));
  return d;
}

std::string Snapshot(const Store& store) {
  std::string out;
  store.EncodeSnapshot(&out);
  return out;
}

TEST(BackupFileTest, RoundTripsWithItsCountsAndChecksum) {
  StoreDriver d = SourceState(100);
  const std::string file = EncodeBackup(d.store(), 7, UnixMs(1234));
  Result<OpenedBackup> opened = OpenBackup(file);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  const BackupInfo& info = opened->info;
  EXPECT_EQ(info.version, kBackupFormatVersion);
  EXPECT_EQ(info.index, 100u);
  EXPECT_EQ(info.term, 7u);
  EXPECT_EQ(info.saved_at_ms, 1234);
  EXPECT_EQ(info.keys, 5u);  // config/a b c, service/leader, service/other (released)
  EXPECT_EQ(info.tombstones, 1u);
  EXPECT_EQ(info.sessions, 1u);
  EXPECT_EQ(info.locks, 1u);
  EXPECT_EQ(info.lock_delays, 1u);
  EXPECT_EQ(info.sha256.size(), 64u);
  EXPECT_EQ(info.state_bytes, opened->state.size());
  EXPECT_EQ(opened->state, Snapshot(d.store()));
  EXPECT_EQ(opened->store.Digest(), d.store().Digest());
}

TEST(BackupFileTest, EveryTruncationIsRefused) {
  StoreDriver d = SourceState(20);
  const std::string file = EncodeBackup(d.store(), 2, UnixMs(5));
  for (std::size_t n = 0; n < file.size(); ++n) {
    Result<OpenedBackup> opened = OpenBackup(std::string_view(file).substr(0, n));
    ASSERT_FALSE(opened.ok()) << "a file cut to " << n << " of " << file.size()
                              << " bytes was accepted";
    EXPECT_NE(opened.status().message().find("snapshot file: "), std::string::npos);
    if (n >= 8) {
      EXPECT_NE(opened.status().message().find("truncated"), std::string::npos)
          << n << ": " << opened.status().message();
    }
  }
}

TEST(BackupFileTest, EveryFlippedByteIsRefused) {
  StoreDriver d = SourceState(20);
  const std::string file = EncodeBackup(d.store(), 2, UnixMs(5));
  for (std::size_t at = 0; at < file.size(); ++at) {
    for (unsigned char bit : {0x01, 0x80}) {
      std::string bad = file;
      bad[at] = static_cast<char>(static_cast<unsigned char>(bad[at]) ^ bit);
      Result<OpenedBackup> opened = OpenBackup(bad);
      ASSERT_FALSE(opened.ok()) << "byte " << at << " flipped (" << int(bit) << ") was accepted";
    }
  }
  EXPECT_TRUE(OpenBackup(file + "x").status().message().find("after the end") != std::string::npos);
}

TEST(BackupFileTest, GarbageAndNewerVersionsAreRefusedByName) {
  EXPECT_EQ(OpenBackup("").status().message(),
            "snapshot file: truncated (0 bytes, not even the header)");
  EXPECT_EQ(OpenBackup("{\"hello\": 1}").status().message(),
            "snapshot file: not a tenure snapshot (it does not start with TNRBKUP)");
  StoreDriver d = SourceState(20);
  std::string file = EncodeBackup(d.store(), 2, UnixMs(5));
  file[8] = 2;  // the version, right after the magic
  EXPECT_EQ(OpenBackup(file).status().message(),
            "snapshot file: format version 2 is newer than this tenure reads (1); restore it "
            "with a newer tenure");
  file[8] = 0;
  EXPECT_NE(OpenBackup(file).status().message().find("unknown format version 0"),
            std::string::npos);
}

TEST(RestoreStateTest, IntoAFreshStoreGivesTheSnapshotsStateAndIndexesAfterIt) {
  StoreDriver source = SourceState(1000);
  Store fresh;
  ApplyAt(&fresh, SetMember{{1, "n1", "127.0.0.1:8300", "127.0.0.1:8500", "", "", LogIndex()}}, 2);
  ApplyResult r = ApplyAt(&fresh, RestoreState{Snapshot(source.store())}, 3);
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_EQ(fresh.applied_index(), LogIndex(1000));
  EXPECT_EQ(fresh.kv_index(), source.store().kv_index());
  EXPECT_EQ(fresh.sessions_index(), source.store().sessions_index());
  ASSERT_NE(fresh.FindKv("service/leader"), nullptr);
  EXPECT_EQ(*fresh.FindKv("service/leader"), *source.store().FindKv("service/leader"));
  EXPECT_EQ(fresh.ListSessions().size(), 1u);
  EXPECT_GT(fresh.LockDelayUntil("service/other"), ClusterMs());
  // This server's members stay; everything else is the snapshot's.
  ASSERT_NE(fresh.FindMember(1), nullptr);
  EXPECT_EQ(fresh.ListMembers().size(), 1u);
  Changes changes = fresh.TakeChanges();
  EXPECT_TRUE(changes.everything);
  // The raft log would number the next entry 4; the FSM numbers it after
  // the Store's index (raft/fsm.cc), so a new grant's fence is above every
  // fence the snapshot's cluster gave out.
  const LogIndex fence_before = fresh.FindKv("service/leader")->fence;
  const SessionId s = fresh.ListSessions()[0]->id;
  ApplyAt(&fresh, KvRelease{"service/leader", "", 0, s}, 1001);
  ApplyResult again =
      ApplyAt(&fresh, KvAcquire{"service/leader", "", 0, s}, 1002, ClusterMs(1'800'000'000'000));
  ASSERT_TRUE(again.ok);
  EXPECT_GT(again.fence, fence_before);
  EXPECT_EQ(again.fence, LogIndex(1002));
}

TEST(RestoreStateTest, IntoAStoreThatMovedOnKeepsEveryIndexAboveWhatClientsSaw) {
  StoreDriver source = SourceState(30);
  StoreDriver target = SourceState(5000);  // its service/leader fence is far above source's
  const LogIndex target_fence = target.store().FindKv("service/leader")->fence;
  const std::uint64_t at = target.next_index().value();
  Store& store = target.store();
  ApplyResult r = ApplyAt(&store, RestoreState{Snapshot(source.store())}, at);
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_EQ(store.applied_index(), LogIndex(at));
  EXPECT_EQ(store.kv_index(), LogIndex(at));
  EXPECT_EQ(store.sessions_index(), LogIndex(at));
  EXPECT_EQ(store.PrefixIndex(""), LogIndex(at));
  // The restored holder keeps the token it had; a new grant is above both
  // clusters' tokens.
  const SessionId s = store.ListSessions()[0]->id;
  ApplyAt(&store, KvRelease{"service/leader", "", 0, s}, at + 1);
  ApplyResult again =
      ApplyAt(&store, KvAcquire{"service/leader", "", 0, s}, at + 2, ClusterMs(1'800'000'000'000));
  ASSERT_TRUE(again.ok);
  EXPECT_GT(again.fence, target_fence);
  EXPECT_GT(again.fence, LogIndex(at));
}

TEST(RestoreStateTest, BadBytesChangeNothingButTheIndex) {
  StoreDriver target = SourceState(50);
  const std::string before = Snapshot(target.store());
  std::string bad = Snapshot(SourceState(20).store());
  bad[bad.size() / 2] ^= 0x10;
  const std::uint64_t at = target.next_index().value();
  ApplyResult r = ApplyAt(&target.store(), RestoreState{bad}, at);
  EXPECT_FALSE(r.status.ok());
  EXPECT_NE(r.status.message().find("snapshot restore refused: snapshot: checksum mismatch"),
            std::string::npos)
      << r.status.message();
  EXPECT_EQ(target.store().applied_index(), LogIndex(at));
  // Apart from the applied index (the entry was applied, as a refusal), the
  // same state: decode the old bytes and compare what a snapshot carries.
  Result<Store> old = Store::DecodeSnapshot(before);
  ASSERT_TRUE(old.ok());
  EXPECT_EQ(target.store().kv_count(), old->kv_count());
  EXPECT_EQ(*target.store().FindKv("config/c"), *old->FindKv("config/c"));
  EXPECT_EQ(target.store().kv_index(), old->kv_index());
  EXPECT_FALSE(target.store().TakeChanges().everything);
}

TEST(RestoreStateTest, ReplicasRestoringTheSameBytesEndEqual) {
  StoreDriver source = SourceState(300);
  const std::string bytes = Snapshot(source.store());
  StoreDriver a = SourceState(40);
  StoreDriver b = SourceState(40);
  ApplyAt(&a.store(), RestoreState{bytes}, 41);
  ApplyAt(&b.store(), RestoreState{bytes}, 41);
  EXPECT_EQ(a.store().Digest(), b.store().Digest());
  EXPECT_EQ(Snapshot(a.store()), Snapshot(b.store()));
}

// A crafted file (the SHA-256 is not a signature) could carry an index so
// large that numbering the entries after it wraps; every decode refuses it.
TEST(RestoreStateTest, AnIndexNoClusterReachesIsRefused) {
  Store huge;
  Command command;
  command.now_ms = ClusterMs(1);
  command.body = KvSet{"k", "v", 0};
  huge.Apply(command, LogIndex(std::uint64_t{1} << 62));  // no invariant check here
  std::string bytes;
  huge.EncodeSnapshot(&bytes);
  Result<Store> decoded = Store::DecodeSnapshot(bytes);
  ASSERT_FALSE(decoded.ok());
  EXPECT_EQ(decoded.status().message(),
            "snapshot: applied index 4611686018427387904 is above 9007199254740991 (2^53 - 1), "
            "the largest a snapshot may carry");
  StoreDriver target = SourceState(50);
  const std::uint64_t at = target.next_index().value();
  ApplyResult r = ApplyAt(&target.store(), RestoreState{bytes}, at);
  EXPECT_FALSE(r.status.ok());
  EXPECT_EQ(target.store().applied_index(), LogIndex(at));
}

}  // namespace
}  // namespace tenure::state
