// Keys' versions in snapshots (docs/formats.md, decision 0048): version 8
// carries them while a key's version is above 1, a state whose keys are all
// at 1 still writes its older format byte for byte, files written before
// versions existed read every key as version 1, and the digest tells two
// versions apart. The files of tests/testdata/snapshots.golden pin both.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <string>

#include "common/coding.h"
#include "common/crc32.h"
#include "state/backup_file.h"
#include "state/codec.h"
#include "state/store.h"
#include "unit/state/forged_states.h"
#include "unit/state/golden_hex.h"
#include "unit/state/state_compare.h"
#include "unit/state/store_fixture.h"

namespace tenure::state {
namespace {

using testing::Hex;
using testing::Unhex;

using testutil::StoreDriver;

constexpr std::size_t kVersionAt = 7;  // after the magic "TNRSNAP"

std::string Encode(const Store& store) {
  std::string out;
  store.EncodeSnapshot(&out);
  return out;
}

// name -> bytes; lines starting with '#' are comments.
std::map<std::string, std::string> ReadGolden() {
  std::ifstream file(std::string(TENURE_TESTDATA_DIR) + "/snapshots.golden");
  EXPECT_TRUE(file.good()) << "missing tests/testdata/snapshots.golden";
  std::map<std::string, std::string> golden;
  std::string line;
  while (std::getline(file, line)) {
    if (line.empty() || line[0] == '#') continue;
    const std::size_t space = line.find(' ');
    golden[line.substr(0, space)] = Unhex(line.substr(space + 1));
  }
  return golden;
}

constexpr std::uint64_t kGoldenTerm = 3;
constexpr UnixMs kGoldenSavedAt = testutil::kForgedWall + 1000;

TEST(SnapshotVersionTest, VersionsSurviveASnapshotAsVersion8) {
  StoreDriver d;
  SessionId s = d.NewSession();
  for (const char* v : {"1", "2", "3"}) d.Set("k", v);
  ASSERT_TRUE(d.Acquire("held", s).ok);
  ASSERT_TRUE(d.Release("held", s).ok);
  d.Set("once", "x");
  const std::string bytes = Encode(d.store());
  EXPECT_EQ(static_cast<int>(bytes[kVersionAt]), 8);
  Result<Store> decoded = Store::DecodeSnapshot(bytes);
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(decoded->FindKv("k")->version, 3u);
  EXPECT_EQ(decoded->FindKv("held")->version, 2u);
  EXPECT_EQ(decoded->FindKv("once")->version, 1u);
  EXPECT_EQ(testutil::CompareStores(*decoded, d.store(), {s}), "");
  EXPECT_EQ(decoded->Digest(), d.store().Digest());
  EXPECT_EQ(Encode(*decoded), bytes);
}

TEST(SnapshotVersionTest, KeysAllAtVersionOneKeepTheOlderFormat) {
  StoreDriver d;
  d.Set("a", "1");
  d.Set("b", "2");
  d.Delete("a");
  EXPECT_EQ(static_cast<int>(Encode(d.store())[kVersionAt]), 3);
  d.Set("b", "changed");
  EXPECT_EQ(static_cast<int>(Encode(d.store())[kVersionAt]), 8);
  d.Delete("b");  // no key above 1 again
  EXPECT_EQ(static_cast<int>(Encode(d.store())[kVersionAt]), 3);
}

// A file the encoder before versions wrote (ACL state, a lock history and
// a queue: snapshot version 6) opens with every key at version 1, encodes
// back to the same bytes, and counts on from 1.
TEST(SnapshotVersionTest, AFileWrittenBeforeVersionsReadsEveryKeyAsVersionOne) {
  const std::string file = ReadGolden()["forged-base-v6"];
  ASSERT_FALSE(file.empty());
  Result<OpenedBackup> opened = OpenBackup(file);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  EXPECT_EQ(static_cast<int>(opened->state[kVersionAt]), 6);
  const Store& old = opened->store;
  ASSERT_GT(old.kv_count(), 2u);
  for (const KvEntry* e : old.ListKv("")) EXPECT_EQ(e->version, 1u) << e->key;
  EXPECT_EQ(Encode(old), opened->state) << "re-encoded byte for byte";
  // The same history applied today: config/b was written 26 times.
  const Store today = testutil::ForgedBase();
  EXPECT_EQ(today.FindKv("config/b")->version, 26u);
  ASSERT_EQ(today.kv_count(), old.kv_count());
  for (const KvEntry* e : old.ListKv("")) {
    KvEntry mine = *today.FindKv(e->key);
    mine.version = 1;
    EXPECT_EQ(mine, *e) << e->key;
  }
  // Restored, the old state counts on from version 1.
  StoreDriver d;
  d.SkipIndexes(old.applied_index().value());  // the driver's indexes go on after the file's
  ASSERT_TRUE(d.Apply(RestoreState{std::string(opened->state)}).status.ok());
  d.Set("config/b", "next");
  EXPECT_EQ(d.Get("config/b")->version, 2u);
  EXPECT_EQ(d.Get("config/a")->version, 1u);
}

TEST(SnapshotVersionTest, TheFormatMatchesTheGoldenFile) {
  const std::string want = ReadGolden()["forged-base-v8"];
  const std::string got = EncodeBackup(testutil::ForgedBase(), kGoldenTerm, kGoldenSavedAt);
  EXPECT_EQ(Hex(got), Hex(want)) << "a changed format needs a new snapshot version";
  Result<OpenedBackup> opened = OpenBackup(want);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  EXPECT_EQ(static_cast<int>(opened->state[kVersionAt]), 8);
  EXPECT_EQ(opened->store.FindKv("config/b")->version, 26u);
}

TEST(SnapshotVersionTest, TheDigestCoversTheVersion) {
  StoreDriver d;
  d.Set("k", "a");
  d.Set("k", "b");
  d.Set("j", "x");
  Result<Store> copy = Store::DecodeSnapshot(Encode(d.store()));
  ASSERT_TRUE(copy.ok());
  ASSERT_EQ(copy->Digest(), d.store().Digest());
  TEST_StoreEditor(&*copy).Entry("k").version = 3;
  EXPECT_NE(copy->Digest(), d.store().Digest());
  TEST_StoreEditor(&*copy).Entry("k").version = 2;
  TEST_StoreEditor(&*copy).Entry("j").version = 2;
  EXPECT_NE(copy->Digest(), d.store().Digest());
}

// Version 8 is written only while a key's version is above 1: the same
// state in version 8 with every key at 1 is a file no encoder writes.
TEST(SnapshotVersionTest, Version8WithEveryKeyAtOneIsRefused) {
  StoreDriver d;
  d.Set("k", "a");
  d.Set("k", "b");
  std::string bytes = Encode(d.store());
  ASSERT_EQ(static_cast<int>(bytes[kVersionAt]), 8);
  std::string entry;
  ByteWriter w(&entry);
  EncodeKvEntry(*d.store().FindKv("k"), true, w);
  const std::size_t at = bytes.find(entry);
  ASSERT_NE(at, std::string::npos);
  ASSERT_EQ(bytes[at + entry.size() - 1], '\x02');
  bytes[at + entry.size() - 1] = '\x01';
  bytes.resize(bytes.size() - 4);
  ByteWriter(&bytes).PutFixed32(Crc32(bytes));
  Result<Store> decoded = Store::DecodeSnapshot(bytes);
  ASSERT_FALSE(decoded.ok());
  EXPECT_EQ(decoded.status().message(), "snapshot: truncated or malformed");
  // The same bytes with the version left at 2 decode.
  bytes[at + entry.size() - 1] = '\x02';
  bytes.resize(bytes.size() - 4);
  ByteWriter(&bytes).PutFixed32(Crc32(bytes));
  EXPECT_TRUE(Store::DecodeSnapshot(bytes).ok());
}

}  // namespace
}  // namespace tenure::state
