// EtcdCompact in the Store (decision 0048 section 1): the replicated compact
// revision only rises, by etcd's rules on our revisions; it changes no key;
// snapshots carry it (version 9, only while it is set, so older states keep
// their bytes); the digest covers it; a restore never lowers it.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <string>

#include "common/coding.h"
#include "common/crc32.h"
#include "state/backup_file.h"
#include "state/store.h"
#include "unit/state/forged_states.h"
#include "unit/state/golden_hex.h"
#include "unit/state/state_compare.h"
#include "unit/state/store_fixture.h"

namespace tenure::state {
namespace {

using etcd_texts::GrpcCode;
using testutil::StoreDriver;

constexpr std::size_t kVersionAt = 7;  // after the magic "TNRSNAP"

std::string Encode(const Store& store) {
  std::string out;
  store.EncodeSnapshot(&out);
  return out;
}

ApplyResult Compact(StoreDriver& d, std::uint64_t revision) {
  return d.Apply(EtcdCompact{LogIndex(revision)});
}

TEST(StoreCompactTest, TheRevisionOnlyRisesAndNeverPastTheState) {
  StoreDriver d;
  for (int i = 0; i < 5; ++i) d.Set("k", std::to_string(i));  // indexes 1-5
  EXPECT_TRUE(d.store().compact_revision().is_none());

  // Revision 0 is at the compact revision a store starts with.
  ApplyResult zero = Compact(d, 0);  // index 6
  EXPECT_FALSE(zero.ok);
  EXPECT_EQ(zero.etcd_error.code, GrpcCode::kOutOfRange);
  EXPECT_EQ(zero.etcd_error.message, "etcdserver: mvcc: required revision has been compacted");

  // The entry's own revision is one no client can have seen.
  const LogIndex own = d.next_index();
  ApplyResult future = Compact(d, own.value());
  EXPECT_FALSE(future.ok);
  EXPECT_EQ(future.etcd_error.code, GrpcCode::kOutOfRange);
  EXPECT_EQ(future.etcd_error.message, "etcdserver: mvcc: required revision is a future revision");
  EXPECT_FALSE(Compact(d, 1'000'000).ok);
  EXPECT_TRUE(d.store().compact_revision().is_none());

  const std::uint64_t digest = d.store().Digest();
  d.store().TakeChanges();
  ApplyResult done = Compact(d, 4);
  EXPECT_TRUE(done.ok);
  EXPECT_TRUE(done.etcd_error.ok());
  EXPECT_EQ(d.store().compact_revision(), LogIndex(4));
  EXPECT_NE(d.store().Digest(), digest) << "replicas that disagree on it must differ";
  EXPECT_EQ(d.Get("k")->value, "4") << "a compaction changes no key";
  EXPECT_TRUE(d.store().TakeChanges().keys.empty());

  EXPECT_EQ(Compact(d, 4).etcd_error.message,
            "etcdserver: mvcc: required revision has been compacted");
  EXPECT_EQ(Compact(d, 2).etcd_error.code, GrpcCode::kOutOfRange);
  EXPECT_EQ(d.store().compact_revision(), LogIndex(4));
  // The newest revision before the entry compacts.
  EXPECT_TRUE(Compact(d, d.last_index().value()).ok);
  EXPECT_EQ(d.store().compact_revision(), LogIndex(d.last_index().value() - 1));
}

TEST(StoreCompactTest, SnapshotsCarryItAsVersion9OnlyWhileItIsSet) {
  StoreDriver d;
  d.Set("a", "1");
  d.Set("b", "2");
  d.Set("c", "3");
  EXPECT_EQ(static_cast<int>(Encode(d.store())[kVersionAt]), 3) << "no compaction: bytes as before";
  ASSERT_TRUE(Compact(d, 2).ok);
  const std::string bytes = Encode(d.store());
  EXPECT_EQ(static_cast<int>(bytes[kVersionAt]), 9);
  Result<Store> decoded = Store::DecodeSnapshot(bytes);
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(decoded->compact_revision(), LogIndex(2));
  EXPECT_EQ(decoded->Digest(), d.store().Digest());
  EXPECT_EQ(Encode(*decoded), bytes);
  EXPECT_EQ(testutil::CompareStores(*decoded, d.store(), {}), "");
}

// Bytes no encoder writes: version 9 with the revision 0, or one past the
// state's applied index.
TEST(StoreCompactTest, AForgedCompactRevisionIsRefused) {
  StoreDriver d;
  d.Set("a", "1");
  d.Set("b", "2");
  ASSERT_TRUE(Compact(d, 1).ok);
  const std::string bytes = Encode(d.store());
  ASSERT_EQ(static_cast<int>(bytes[kVersionAt]), 9);
  // The revision is the last varint before the checksum: 1.
  const std::size_t at = bytes.size() - 5;
  ASSERT_EQ(bytes[at], '\x01');
  auto with_revision = [&](char revision) {
    std::string forged = bytes.substr(0, bytes.size() - 4);
    forged[at] = revision;
    ByteWriter(&forged).PutFixed32(Crc32(forged));
    return Store::DecodeSnapshot(forged);
  };
  EXPECT_TRUE(with_revision('\x01').ok());
  EXPECT_TRUE(with_revision('\x03').ok()) << "the applied index itself (3) is a state's revision";
  Result<Store> zero = with_revision('\x00');
  ASSERT_FALSE(zero.ok());
  EXPECT_EQ(zero.status().message(), "snapshot: truncated or malformed");
  Result<Store> past = with_revision('\x04');
  ASSERT_FALSE(past.ok());
  EXPECT_NE(past.status().message().find("compact_revision_ <= applied_index_"),
            std::string_view::npos)
      << past.status().ToString();
}

TEST(StoreCompactTest, ARestoreNeverLowersIt) {
  StoreDriver older;
  older.Set("k", "old");
  older.Set("k", "older");
  const std::string uncompacted = Encode(older.store());
  ASSERT_TRUE(Compact(older, 1).ok);
  const std::string compacted_at_1 = Encode(older.store());

  StoreDriver d;
  d.SkipIndexes(10);
  for (int i = 0; i < 5; ++i) d.Set("x", std::to_string(i));
  ASSERT_TRUE(Compact(d, 12).ok);
  ASSERT_TRUE(d.Apply(RestoreState{uncompacted}).status.ok());
  EXPECT_EQ(d.store().compact_revision(), LogIndex(12)) << "a file without one keeps ours";
  ASSERT_TRUE(d.Apply(RestoreState{compacted_at_1}).status.ok());
  EXPECT_EQ(d.store().compact_revision(), LogIndex(12)) << "a lower one keeps ours";
  EXPECT_EQ(d.Get("k")->value, "older");

  // A file compacted further than we are raises it.
  StoreDriver ahead;
  ahead.SkipIndexes(100);
  ahead.Set("k", "ahead");
  ahead.Set("k", "further");
  ASSERT_TRUE(Compact(ahead, 101).ok);
  d.SkipIndexes(200);  // the driver's indexes go on after the file's
  ASSERT_TRUE(d.Apply(RestoreState{Encode(ahead.store())}).status.ok());
  EXPECT_EQ(d.store().compact_revision(), LogIndex(101));
  EXPECT_TRUE(d.store().Validate().ok());
}

// The format of version 9, pinned: the forged base state compacted at its
// applied index less one (tests/testdata/snapshots.golden).
TEST(StoreCompactTest, TheFormatMatchesTheGoldenFile) {
  Store store = testutil::ForgedBase();
  const LogIndex revision = LogIndex(store.applied_index().value() - 1);
  const LogIndex index = store.applied_index().Next();
  ASSERT_TRUE(
      store.Apply({testutil::kForgedNow, EtcdCompact{revision}, testutil::kForgedWall}, index).ok);
  const std::string got = EncodeBackup(store, 3, testutil::kForgedWall + 1000);
  std::ifstream file(std::string(TENURE_TESTDATA_DIR) + "/snapshots.golden");
  std::string line, want;
  while (std::getline(file, line)) {
    if (line.rfind("forged-base-v9 ", 0) == 0) want = testing::Unhex(line.substr(15));
  }
  ASSERT_FALSE(want.empty()) << "forged-base-v9 " << testing::Hex(got);
  EXPECT_EQ(testing::Hex(got), testing::Hex(want)) << "a changed format needs a new version";
  Result<OpenedBackup> opened = OpenBackup(want);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  EXPECT_EQ(static_cast<int>(opened->state[kVersionAt]), 9);
  EXPECT_EQ(opened->store.compact_revision(), revision);
}

}  // namespace
}  // namespace tenure::state
