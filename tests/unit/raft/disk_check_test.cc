// The data-dir check (src/raft/disk) on directories built byte by byte in
// libraft 0.15's layout: every classification of docs/recovery.md, the exact
// torn-tail boundaries, and the repair of each damage.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common/crc32.h"
#include "raft/disk/check.h"
#include "raft/disk/layout.h"
#include "raft/disk/repair.h"
#include "state/store.h"

namespace tenure::raft::disk {
namespace {

namespace fs = std::filesystem;

constexpr std::uint64_t kTestSegmentSize = 64 * 1024;

void Put64(std::string* out, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
void Put32(std::string* out, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

struct Entry {
  std::uint64_t term = 1;
  std::uint8_t type = kEntryCommand;
  std::string data;  // padded to 8 here
};

std::string Batch(std::vector<Entry> entries) {
  std::string header, data;
  Put64(&header, entries.size());
  for (Entry& e : entries) {
    e.data.resize((e.data.size() + 7) / 8 * 8, '\0');
    Put64(&header, e.term);
    header.push_back(static_cast<char>(e.type));
    header.append(3, '\0');
    Put32(&header, static_cast<std::uint32_t>(e.data.size()));
    data += e.data;
  }
  std::string out;
  Put32(&out, Crc32(header));
  Put32(&out, Crc32(data));
  return out + header + data;
}

// Deterministic, never-zero filler so that no sector is zero by accident.
std::string Filler(std::size_t n, int seed) {
  std::string s(n, 'x');
  for (std::size_t i = 0; i < n; ++i) s[i] = static_cast<char>('A' + (i * 7 + seed) % 26);
  return s;
}

std::string ConfigurationBytes(int voters) {
  std::string c(1, '\1');
  Put64(&c, static_cast<std::uint64_t>(voters));
  for (int i = 1; i <= voters; ++i) {
    Put64(&c, static_cast<std::uint64_t>(i));
    c += "127.0.0.1:830" + std::to_string(i);
    c.push_back('\0');
    c.push_back(static_cast<char>(kRoleVoter));
  }
  return c;
}

struct Dir {
  fs::path path;
  Dir() {
    std::string pattern = (fs::temp_directory_path() / "tenure-diskcheck-XXXXXX").string();
    path = ::mkdtemp(pattern.data());
  }
  ~Dir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string str() const { return path.string(); }
  void Write(const std::string& name, const std::string& bytes) const {
    std::ofstream(path / name, std::ios::binary | std::ios::trunc) << bytes;
  }
  std::string Read(const std::string& name) const {
    std::ifstream in(path / name, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  void Patch(const std::string& name, std::size_t at, const std::string& bytes) const {
    std::string all = Read(name);
    all.replace(at, bytes.size(), bytes);
    Write(name, all);
  }
};

// A server's dir: metadata (term 2), the bootstrap segment 1-1 holding the
// configuration, and open-1 with `batches` one-entry batches of ~1500 bytes
// (entries 2..batches+1), then open-2 preallocated and never written.
struct Layout {
  std::vector<std::size_t> starts;  // offset of each batch in open-1
  std::size_t end = 0;              // end of the last batch
};

Layout MakeServerDir(const Dir& dir, int batches, int voters = 1) {
  dir.Write("metadata1", EncodeMetadata({1, 2, 1}));
  std::string closed;
  Put64(&closed, kDiskFormat);
  closed += Batch({{1, kEntryChange, ConfigurationBytes(voters)}});
  dir.Write(ClosedSegmentName(1, 1), closed);
  std::string open;
  Put64(&open, kDiskFormat);
  Layout layout;
  for (int i = 0; i < batches; ++i) {
    layout.starts.push_back(open.size());
    open += Batch({{2, kEntryCommand, Filler(1500 + static_cast<std::size_t>(i % 7), i)}});
  }
  layout.end = open.size();
  open.resize(kTestSegmentSize, '\0');
  dir.Write("open-1", open);
  dir.Write("open-2", std::string(kTestSegmentSize, '\0'));
  return layout;
}

CheckOptions TestOptions() {
  CheckOptions options;
  options.segment_size = kTestSegmentSize;
  return options;
}

Report Check(const Dir& dir) {
  Result<Report> r = CheckDataDir(dir.str(), TestOptions());
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : Report{};
}

std::string AllDamage(const Report& r) {
  std::string out;
  for (const Damage& d : r.damage) out += d.ToString() + "\n";
  return out;
}

// The first sector boundary inside batch i of the layout.
std::size_t SectorInside(const Layout& l, std::size_t i) {
  return (l.starts[i] / kSectorSize + 1) * kSectorSize;
}

TEST(DiskCheckTest, AnEmptyDirIsAFirstStart) {
  Dir dir;
  Report r = Check(dir);
  EXPECT_TRUE(r.ok());
  EXPECT_TRUE(r.fresh);
}

TEST(DiskCheckTest, ACleanDirPassesWithItsIndexRangeAndConfiguration) {
  Dir dir;
  MakeServerDir(dir, 20, 3);
  Report r = Check(dir);
  EXPECT_TRUE(r.ok()) << AllDamage(r);
  EXPECT_FALSE(r.torn);
  EXPECT_EQ(r.first_index, 1u);
  EXPECT_EQ(r.last_index, 21u);
  EXPECT_EQ(r.max_term, 2u);
  ASSERT_TRUE(r.configuration);
  EXPECT_EQ(r.configuration->Voters(), 3u);
  EXPECT_EQ(r.configuration_index, 1u);
}

TEST(DiskCheckTest, ZerosFromASectorBoundaryInsideTheLastBatchAreATornTailAndCut) {
  Dir dir;
  Layout l = MakeServerDir(dir, 20);
  const std::size_t s = SectorInside(l, 19);
  ASSERT_LT(s, l.end);
  dir.Patch("open-1", s, std::string(l.end - s, '\0'));
  Report r = Check(dir);
  ASSERT_TRUE(r.ok()) << AllDamage(r);
  ASSERT_TRUE(r.torn);
  EXPECT_EQ(r.torn->file, "open-1");
  EXPECT_EQ(r.torn->offset, l.starts[19]);
  EXPECT_EQ(r.torn->bytes, l.end - l.starts[19]);
  EXPECT_EQ(r.torn->first_index, 21u);
  EXPECT_EQ(r.torn->entries, 1u);
  EXPECT_EQ(r.last_index, 20u);

  ASSERT_TRUE(CutTornTail(dir.str(), *r.torn).ok());
  Report after = Check(dir);
  EXPECT_TRUE(after.ok());
  EXPECT_FALSE(after.torn);
  EXPECT_EQ(after.last_index, 20u);
  EXPECT_EQ(dir.Read("open-1").size(), kTestSegmentSize);  // zeroed in place, not truncated
}

TEST(DiskCheckTest, AMissingSectorInTheMiddleOfTheLastBatchIsATornTail) {
  Dir dir;
  Layout l = MakeServerDir(dir, 20);
  // A 3000-byte last batch: zero one whole sector in its middle, data after.
  std::string open = dir.Read("open-1");
  std::string big = Batch({{2, kEntryCommand, Filler(3000, 5)}});
  open.replace(l.starts[19], big.size(), big);
  dir.Write("open-1", open);
  const std::size_t s = SectorInside(l, 19) + kSectorSize;
  dir.Patch("open-1", s, std::string(kSectorSize, '\0'));
  Report r = Check(dir);
  ASSERT_TRUE(r.ok()) << AllDamage(r);
  ASSERT_TRUE(r.torn);
  EXPECT_EQ(r.torn->entries, 1u);
}

TEST(DiskCheckTest, ZerosFromMidSectorAreDamage) {
  Dir dir;
  Layout l = MakeServerDir(dir, 20);
  // Zeros from 100 bytes into the last batch's first full sector to its end:
  // no sector of the batch lost whole from its boundary.
  const std::size_t from = SectorInside(l, 19) + 100;
  dir.Patch("open-1", from, std::string(l.end - from, '\0'));
  Report r = Check(dir);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.damage[0].file, "open-1");
  EXPECT_EQ(r.damage[0].offset, l.starts[19]);
  EXPECT_EQ(r.damage[0].first_bad_index, 21u);
  EXPECT_NE(r.damage[0].found.find("no whole zeroed sector"), std::string::npos) << AllDamage(r);
}

TEST(DiskCheckTest, ZerosFromMidSectorThatCoverALaterSectorAreStillDamage) {
  Dir dir;
  Layout l = MakeServerDir(dir, 20);
  // Zeros that start 100 bytes before a boundary and run to the end: the
  // sector after the boundary is zero, but its zeros began mid-sector.
  const std::size_t from = SectorInside(l, 19) - 100;
  ASSERT_GT(from, l.starts[19]);
  dir.Patch("open-1", from, std::string(l.end - from, '\0'));
  Report r = Check(dir);
  ASSERT_FALSE(r.ok()) << "a mid-sector zeroing was taken for a torn write";
  EXPECT_FALSE(r.torn);
}

// The damage scenario "last 321 bytes zeroed" (test_disk_damage.py): even
// when the zeros start exactly at the batch's last sector boundary, a partial
// sector could as well be a few zeroed bytes of an acknowledged batch.
// Refused, never cut.
TEST(DiskCheckTest, AZeroedPartialLastSectorIsDamage) {
  Dir dir;
  Layout l = MakeServerDir(dir, 20);
  const std::size_t last_boundary = l.end / kSectorSize * kSectorSize;
  ASSERT_GT(last_boundary, l.starts[19]);
  ASSERT_LT(l.end - last_boundary, kSectorSize);
  dir.Patch("open-1", last_boundary, std::string(l.end - last_boundary, '\0'));
  Report r = Check(dir);
  ASSERT_FALSE(r.ok()) << "a zeroed partial sector was cut as a torn write";
  EXPECT_FALSE(r.torn);
  EXPECT_EQ(r.damage[0].first_bad_index, 21u);
  // ... and so are the last 321 bytes, wherever they start.
  Dir dir2;
  l = MakeServerDir(dir2, 20);
  dir2.Patch("open-1", l.end - 321, std::string(321, '\0'));
  r = Check(dir2);
  ASSERT_FALSE(r.ok());
  EXPECT_FALSE(r.torn);
}

TEST(DiskCheckTest, AFlippedByteInTheLastBatchIsDamage) {
  Dir dir;
  Layout l = MakeServerDir(dir, 20);
  const std::size_t at = l.starts[19] + 700;
  std::string byte = dir.Read("open-1").substr(at, 1);
  byte[0] = static_cast<char>(byte[0] ^ 0x04);
  dir.Patch("open-1", at, byte);
  Report r = Check(dir);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.damage[0].offset, l.starts[19]);
  EXPECT_NE(r.damage[0].found.find("data checksum mismatch"), std::string::npos);
  EXPECT_NE(r.damage[0].found.find("no whole zeroed sector"), std::string::npos);
}

TEST(DiskCheckTest, AValidBatchAfterABadOneIsDamage) {
  Dir dir;
  Layout l = MakeServerDir(dir, 20);
  // A zeroed sector inside batch 10: alone it would look torn, but batches
  // 11..19 follow, so their writes (and this one) completed.
  dir.Patch("open-1", SectorInside(l, 10), std::string(kSectorSize, '\0'));
  Report r = Check(dir);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.damage[0].offset, l.starts[10]);
  EXPECT_EQ(r.damage[0].first_bad_index, 12u);
  EXPECT_NE(r.damage[0].found.find("a valid batch"), std::string::npos) << AllDamage(r);
}

TEST(DiskCheckTest, AFlippedHeaderByteInTheMiddleIsDamage) {
  Dir dir;
  Layout l = MakeServerDir(dir, 20);
  dir.Patch("open-1", l.starts[5] + 20, "\x7f");
  Report r = Check(dir);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.damage[0].offset, l.starts[5]);
  EXPECT_NE(r.damage[0].found.find("header checksum mismatch"), std::string::npos);
}

TEST(DiskCheckTest, ATruncatedOpenSegmentIsDamage) {
  Dir dir;
  Layout l = MakeServerDir(dir, 20);
  std::string open = dir.Read("open-1");
  dir.Write("open-1", open.substr(0, l.starts[12] + 40));  // mid-entry
  Report r = Check(dir);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.damage[0].what.find("truncated"), std::string::npos) << AllDamage(r);
  EXPECT_EQ(r.damage[0].first_bad_index, 14u);
}

// libraft closes an open segment by truncating it to the bytes it used and
// then renaming it; a kill -9 between the two leaves an open segment that
// ends exactly after its last batch. libraft loads it, so must we (the crash
// test's writer was killed there once). Only a cut mid-batch is damage.
TEST(DiskCheckTest, AnOpenSegmentCutAtABatchBoundaryIsAnInterruptedClose) {
  Dir dir;
  Layout l = MakeServerDir(dir, 20);
  std::string open = dir.Read("open-1");
  dir.Write("open-1", open.substr(0, l.starts[12]));
  Report r = Check(dir);
  ASSERT_TRUE(r.ok()) << AllDamage(r);
  EXPECT_EQ(r.last_index, 13u);
  // Just its format word, no batch: not something a close leaves.
  dir.Write("open-1", open.substr(0, 8));
  r = Check(dir);
  EXPECT_FALSE(r.ok());
}

TEST(DiskCheckTest, ABadBatchInAnOpenSegmentFollowedByAnotherWithDataIsDamage) {
  Dir dir;
  Layout l = MakeServerDir(dir, 20);
  const std::size_t s = SectorInside(l, 19);
  dir.Patch("open-1", s, std::string(l.end - s, '\0'));  // torn-looking
  std::string open2;
  Put64(&open2, kDiskFormat);
  open2 += Batch({{2, kEntryCommand, Filler(100, 1)}});
  open2.resize(kTestSegmentSize, '\0');
  dir.Write("open-2", open2);
  Report r = Check(dir);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.damage[0].found.find("open-2 which holds data"), std::string::npos) << AllDamage(r);
}

class ClosedSegmentTest : public ::testing::Test {
 protected:
  void SetUp() override {
    MakeServerDir(dir_, 0);
    std::string closed;
    Put64(&closed, kDiskFormat);
    for (int i = 0; i < 10; ++i) {
      starts_.push_back(closed.size());
      closed += Batch({{2, kEntryCommand, Filler(600, i)}});
    }
    bytes_ = closed;
    dir_.Write(ClosedSegmentName(2, 11), closed);
  }
  Dir dir_;
  std::string bytes_;
  std::vector<std::size_t> starts_;
};

TEST_F(ClosedSegmentTest, IsCleanAsWritten) {
  Report r = Check(dir_);
  EXPECT_TRUE(r.ok()) << AllDamage(r);
  EXPECT_EQ(r.last_index, 11u);
}

TEST_F(ClosedSegmentTest, TruncatedIsDamage) {
  dir_.Write(ClosedSegmentName(2, 11), bytes_.substr(0, starts_[6] + 100));
  Report r = Check(dir_);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.damage[0].what.find("truncated"), std::string::npos) << AllDamage(r);
  EXPECT_EQ(r.damage[0].first_bad_index, 8u);
}

TEST_F(ClosedSegmentTest, TruncatedAtABatchBoundaryIsDamageByItsCount) {
  dir_.Write(ClosedSegmentName(2, 11), bytes_.substr(0, starts_[6]));
  Report r = Check(dir_);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.damage[0].what.find("holds 6 entries, its name says 10"), std::string::npos)
      << AllDamage(r);
  EXPECT_EQ(r.damage[0].first_bad_index, 8u);
}

TEST_F(ClosedSegmentTest, AFlippedByteIsDamageEvenAsTheLastBatch) {
  dir_.Patch(ClosedSegmentName(2, 11), starts_[9] + 300, "\x01");
  Report r = Check(dir_);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.damage[0].offset, starts_[9]);
  EXPECT_EQ(r.damage[0].first_bad_index, 11u);
}

TEST_F(ClosedSegmentTest, AGapBetweenSegmentsIsDamage) {
  std::string later;
  Put64(&later, kDiskFormat);
  later += Batch({{2, kEntryCommand, Filler(64, 3)}});
  dir_.Write(ClosedSegmentName(13, 13), later);  // 12 is missing
  Report r = Check(dir_);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.damage[0].what.find("entries 12..12 are missing"), std::string::npos) << AllDamage(r);
  EXPECT_EQ(r.damage[0].first_bad_index, 12u);
}

TEST_F(ClosedSegmentTest, AnOverlapIsDamage) {
  std::string later;
  Put64(&later, kDiskFormat);
  later += Batch({{2, kEntryCommand, Filler(64, 3)}});
  dir_.Write(ClosedSegmentName(11, 11), later);
  Report r = Check(dir_);
  ASSERT_FALSE(r.ok()) << "segments 2-11 and 11-11 overlap";
}

TEST(DiskCheckTest, MissingMetadataBesideALogIsDamage) {
  Dir dir;
  MakeServerDir(dir, 5);
  fs::remove(dir.path / "metadata1");
  Report r = Check(dir);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.damage[0].kind, Damage::Kind::kMetadata);
  EXPECT_NE(r.damage[0].what.find("forgot its term and its vote"), std::string::npos);
}

TEST(DiskCheckTest, MetadataBelowTheLogsTermIsDamage) {
  Dir dir;
  MakeServerDir(dir, 5);
  dir.Write("metadata1", EncodeMetadata({1, 1, 0}));  // entries are of term 2
  Report r = Check(dir);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.damage[0].kind, Damage::Kind::kMetadata);
}

std::string SnapshotMetaBytes(int voters) {
  std::string conf = ConfigurationBytes(voters);
  std::string tail;
  Put64(&tail, 1);  // configuration index
  Put64(&tail, conf.size());
  std::uint32_t crc = Crc32(tail);
  crc = Crc32(conf, crc);
  std::string out;
  Put64(&out, kDiskFormat);
  Put64(&out, crc);
  return out + tail + conf;
}

TEST(DiskCheckTest, ASnapshotIsVerifiedAndADamagedOneRefused) {
  Dir dir;
  dir.Write("metadata1", EncodeMetadata({1, 2, 0}));
  state::Store store;
  (void)store.Apply({ClusterMs(1), state::KvSet{"key", "a value to flip", 0}}, LogIndex(1));
  std::string data;
  store.EncodeSnapshot(&data);
  dir.Write("snapshot-2-100-12345", data);
  dir.Write("snapshot-2-100-12345.meta", SnapshotMetaBytes(1));
  Report r = Check(dir);
  ASSERT_TRUE(r.ok()) << AllDamage(r);
  EXPECT_EQ(r.snapshot_index, 100u);
  EXPECT_EQ(r.snapshots.back().format_version, 3);

  dir.Patch("snapshot-2-100-12345", data.find("flip"), "FLIP");
  r = Check(dir);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.damage[0].kind, Damage::Kind::kSnapshot);
  EXPECT_NE(r.damage[0].found.find("checksum mismatch"), std::string::npos) << AllDamage(r);
}

TEST(DiskRepairTest, ACutKeepsTheEntriesBeforeTheDamageAndMovesTheRest) {
  Dir dir;
  Layout l = MakeServerDir(dir, 20);
  dir.Patch("open-1", l.starts[8] + 100, "\x01");
  Report r = Check(dir);
  ASSERT_FALSE(r.ok());
  Result<RepairPlan> plan = PlanRepair(dir.str(), r, TestOptions());
  ASSERT_TRUE(plan.ok());
  EXPECT_TRUE(plan->refused.empty());
  ASSERT_TRUE(plan->prefix);
  EXPECT_EQ(plan->prefix->to, ClosedSegmentName(2, 9));
  EXPECT_EQ(plan->drop_first, 10u);
  EXPECT_TRUE(plan->loses_entries());
  Result<std::string> folder = ApplyRepair(dir.str(), *plan, 1700000000);
  ASSERT_TRUE(folder.ok()) << folder.status().ToString();
  EXPECT_EQ(*folder, "damaged-1700000000");
  EXPECT_TRUE(fs::exists(dir.path / *folder / "open-1"));
  EXPECT_TRUE(fs::exists(dir.path / *folder / "open-2"));
  Report after = Check(dir);
  EXPECT_TRUE(after.ok()) << AllDamage(after);
  EXPECT_EQ(after.last_index, 9u);
}

TEST(DiskRepairTest, MissingMetadataGetsTheHighestTermAndNoVote) {
  Dir dir;
  MakeServerDir(dir, 5, 3);
  fs::remove(dir.path / "metadata1");
  Report r = Check(dir);
  Result<RepairPlan> plan = PlanRepair(dir.str(), r, TestOptions());
  ASSERT_TRUE(plan.ok());
  ASSERT_TRUE(plan->metadata);
  EXPECT_EQ(plan->metadata->term, 2u);
  EXPECT_EQ(plan->metadata->voted_for, 0u);
  EXPECT_EQ(plan->voters, 3u);
  EXPECT_TRUE(plan->risky_on_cluster());
  EXPECT_FALSE(plan->loses_entries());
  ASSERT_TRUE(ApplyRepair(dir.str(), *plan, 1700000001).ok());
  Report after = Check(dir);
  EXPECT_TRUE(after.ok()) << AllDamage(after);
  ASSERT_TRUE(after.metadata);
  EXPECT_EQ(after.metadata->term, 2u);
}

TEST(DiskRepairTest, ATornTailAloneNeedsNoCutOfAcknowledgedEntries) {
  Dir dir;
  Layout l = MakeServerDir(dir, 20);
  const std::size_t s = SectorInside(l, 19);
  dir.Patch("open-1", s, std::string(l.end - s, '\0'));
  Report r = Check(dir);
  Result<RepairPlan> plan = PlanRepair(dir.str(), r, TestOptions());
  ASSERT_TRUE(plan.ok());
  EXPECT_TRUE(plan->torn);
  EXPECT_FALSE(plan->loses_entries());
  EXPECT_TRUE(plan->move.empty());
}

}  // namespace
}  // namespace tenure::raft::disk
