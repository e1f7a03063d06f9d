// A restore carried by bounded entries (decision 0050): RestoreChunks stage
// the state's bytes, RestoreStaged swaps them in exactly as one RestoreState
// of the same bytes would; a chunk that does not continue the staging, a
// swap of incomplete bytes and a staging no chunk continued for 1,024
// entries are refused or dropped, and change nothing else.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/limits.h"
#include "state/command.h"
#include "state/store.h"
#include "unit/state/store_fixture.h"

namespace tenure::state {
namespace {

using testutil::StoreDriver;

// The state a restore replaces: three keys.
StoreDriver Target() {
  StoreDriver d;
  d.SetNowMs(ClusterMs(5'000));
  for (const char* key : {"old/a", "old/b", "old/c"}) d.Set(key, key);
  return d;
}

std::string SourceBytes() {
  StoreDriver d;
  d.SetNowMs(ClusterMs(9'000));
  for (int i = 0; i < 200; ++i) d.Set("new/" + std::to_string(i), std::string(100, 'v'));
  SessionId s = d.NewSession(15 * kNsPerSecond);
  EXPECT_TRUE(d.Acquire("new/lock", s, "me").ok);
  std::string bytes;
  d.store().EncodeSnapshot(&bytes);
  return bytes;
}

// What a refused chunk or swap must leave as it was: every entry.
std::vector<KvEntry> Entries(const Store& store) {
  std::vector<KvEntry> out;
  for (const KvEntry* entry : store.ListKv("")) out.push_back(*entry);
  return out;
}

// A restore, applied around the driver: the restored applied index may run
// ahead of the driver's count (decision 0024), which its Apply would flag.
ApplyResult Swap(StoreDriver& d, CommandBody body) {
  Command command;
  command.now_ms = ClusterMs(5'000);
  command.wall_ms = UnixMs(1'700'000'000'000);
  command.body = std::move(body);
  return d.store().Apply(command, d.next_index());
}

// The chunks of `bytes`, `size` bytes each (the last shorter).
std::vector<RestoreChunk> Chunks(std::uint64_t id, const std::string& bytes, std::size_t size) {
  std::vector<RestoreChunk> chunks;
  for (std::size_t at = 0; at < bytes.size(); at += size) {
    chunks.push_back({id, at, bytes.size(), bytes.substr(at, size)});
  }
  return chunks;
}

TEST(RestoreChunksTest, StagedChunksSwapInWhatOneRestoreStateSwapsIn) {
  const std::string bytes = SourceBytes();
  ASSERT_GT(bytes.size(), 3000u);
  StoreDriver whole = Target();
  StoreDriver chunked = Target();
  for (const RestoreChunk& chunk : Chunks(7, bytes, 1000)) {
    ApplyResult r = chunked.Apply(chunk);
    ASSERT_TRUE(r.status.ok()) << r.status.message();
    ASSERT_NE(chunked.store().staging(), nullptr);
    whole.Set("unrelated", "keeps the indexes in step");  // one entry each way
  }
  EXPECT_EQ(chunked.store().staging()->bytes, bytes);
  EXPECT_EQ(chunked.store().FindKv("new/1"), nullptr);  // nothing swapped in yet
  // Both restores at the same index, from the same bytes.
  ASSERT_EQ(whole.next_index(), chunked.next_index());
  ApplyResult by_state = Swap(whole, RestoreState{bytes});
  ApplyResult by_chunks = Swap(chunked, RestoreStaged{7, bytes.size()});
  ASSERT_TRUE(by_state.status.ok()) << by_state.status.message();
  ASSERT_TRUE(by_chunks.status.ok()) << by_chunks.status.message();
  EXPECT_EQ(chunked.store().staging(), nullptr);
  EXPECT_EQ(chunked.store().Digest(), whole.store().Digest());
  EXPECT_EQ(chunked.store().applied_index(), whole.store().applied_index());
  EXPECT_NE(chunked.store().FindKv("new/1"), nullptr);
  chunked.store().CheckInvariants();
}

TEST(RestoreChunksTest, ADecodedStateIsSwappedInAndTheReplacedOneHandedBack) {
  const std::string bytes = SourceBytes();
  StoreDriver d = Target();
  for (const RestoreChunk& chunk : Chunks(3, bytes, 4096)) ASSERT_TRUE(d.Apply(chunk).ok);
  Result<Store> decoded = Store::DecodeSnapshot(bytes);
  ASSERT_TRUE(decoded.ok());
  Command command;
  command.now_ms = ClusterMs(5'000);
  command.body = RestoreStaged{3, bytes.size()};
  ApplyResult r = d.store().Apply(command, d.next_index(), &decoded);
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  ASSERT_TRUE(decoded.ok());
  EXPECT_NE(decoded->FindKv("old/a"), nullptr);  // the replaced state, for the caller
  EXPECT_NE(d.store().FindKv("new/1"), nullptr);
}

TEST(RestoreChunksTest, AChunkThatDoesNotContinueTheStagingIsRefusedAndDropsIt) {
  const std::string bytes = SourceBytes();
  StoreDriver d = Target();
  const std::vector<KvEntry> before = Entries(d.store());
  std::vector<RestoreChunk> chunks = Chunks(5, bytes, 1000);
  ASSERT_TRUE(d.Apply(chunks[0]).ok);
  ApplyResult gap = d.Apply(chunks[2]);  // chunk 1 lost
  EXPECT_EQ(gap.status.code(), Code::kConflict);
  EXPECT_NE(gap.status.message().find("does not continue the staged bytes (1000)"),
            std::string_view::npos)
      << gap.status.message();
  EXPECT_EQ(d.store().staging(), nullptr);
  ApplyResult swap = d.Apply(RestoreStaged{5, bytes.size()});
  EXPECT_EQ(swap.status.code(), Code::kConflict);
  EXPECT_NE(swap.status.message().find("no longer staged"), std::string_view::npos);
  EXPECT_EQ(Entries(d.store()), before);
  EXPECT_NE(d.store().FindKv("old/a"), nullptr);
}

TEST(RestoreChunksTest, AnotherRestoresFirstChunkReplacesTheStaging) {
  const std::string bytes = SourceBytes();
  StoreDriver d = Target();
  std::vector<RestoreChunk> first = Chunks(1, bytes, 1000);
  std::vector<RestoreChunk> second = Chunks(2, bytes, 1000);
  ASSERT_TRUE(d.Apply(first[0]).ok);
  ASSERT_TRUE(d.Apply(second[0]).ok);  // a new leader's restore starts afresh
  EXPECT_EQ(d.Apply(first[1]).status.code(), Code::kConflict);
  EXPECT_EQ(d.store().staging()->id, 2u);  // the other restore's staging stays
  for (std::size_t i = 1; i < second.size(); ++i) ASSERT_TRUE(d.Apply(second[i]).ok);
  EXPECT_EQ(d.Apply(RestoreStaged{1, bytes.size()}).status.code(), Code::kConflict);
  ApplyResult r = Swap(d, RestoreStaged{2, bytes.size()});
  EXPECT_TRUE(r.status.ok()) << r.status.message();
  EXPECT_NE(d.store().FindKv("new/1"), nullptr);
}

TEST(RestoreChunksTest, ASwapOfIncompleteBytesIsRefusedAndDropsTheStaging) {
  const std::string bytes = SourceBytes();
  StoreDriver d = Target();
  const std::vector<KvEntry> before = Entries(d.store());
  std::vector<RestoreChunk> chunks = Chunks(9, bytes, 1000);
  chunks.pop_back();
  for (const RestoreChunk& chunk : chunks) ASSERT_TRUE(d.Apply(chunk).ok);
  ApplyResult r = d.Apply(RestoreStaged{9, bytes.size()});
  EXPECT_EQ(r.status.code(), Code::kConflict);
  EXPECT_NE(
      r.status.message().find(" of its " + std::to_string(bytes.size()) + " bytes are staged"),
      std::string_view::npos)
      << r.status.message();
  EXPECT_EQ(d.store().staging(), nullptr);
  EXPECT_EQ(Entries(d.store()), before);
}

TEST(RestoreChunksTest, AStagingNoChunkContinuesFor10SecondsOfReplicatedClockIsDropped) {
  const std::string bytes = SourceBytes();
  StoreDriver d = Target();
  std::vector<RestoreChunk> chunks = Chunks(4, bytes, 1000);
  ASSERT_TRUE(d.Apply(chunks[0]).ok);  // at 5,000 ms
  // Entries do not count, time does: 2,000 writes inside the window keep it.
  for (int i = 0; i < 2000; ++i) d.Set("other", std::to_string(i));
  d.SetNowMs(ClusterMs(15'000));  // exactly 10 s after the chunk: kept
  d.Set("other", "at 15,000 ms");
  ASSERT_NE(d.store().staging(), nullptr);
  ASSERT_TRUE(d.Apply(chunks[1]).ok);  // at 15,000 ms
  EXPECT_EQ(d.store().staging()->last_chunk_ms, ClusterMs(15'000));
  d.SetNowMs(ClusterMs(25'001));
  d.Set("other", "at 25,001 ms");  // 10,001 ms after the last chunk
  EXPECT_EQ(d.store().staging(), nullptr);
  EXPECT_EQ(d.Apply(chunks[2]).status.code(), Code::kConflict);
}

TEST(RestoreChunksTest, StagingForAnswersWhatTheSwapWillFind) {
  const std::string bytes = SourceBytes();
  StoreDriver d = Target();
  for (const RestoreChunk& chunk : Chunks(6, bytes, 4096)) ASSERT_TRUE(d.Apply(chunk).ok);
  Command swap;
  swap.now_ms = ClusterMs(5'000);
  swap.body = RestoreStaged{6, bytes.size()};
  ASSERT_NE(d.store().StagingFor(swap), nullptr);
  EXPECT_EQ(d.store().StagingFor(swap)->bytes, bytes);
  swap.body = RestoreStaged{6, bytes.size() - 1};  // not all of it
  EXPECT_EQ(d.store().StagingFor(swap), nullptr);
  swap.body = RestoreStaged{6, bytes.size()};
  swap.now_ms = ClusterMs(15'001);  // its own clock lapses the staging
  EXPECT_EQ(d.store().StagingFor(swap), nullptr);
  ApplyResult r = Swap(d, RestoreStaged{6, bytes.size()});  // at 5,000 ms: swapped in
  EXPECT_TRUE(r.status.ok()) << r.status.message();
  EXPECT_EQ(d.store().replaced_at(), d.store().applied_index());
}

TEST(RestoreChunksTest, ChunksAndSwapsPastTheLimitsAreRefusedNamingThem) {
  StoreDriver d = Target();
  const std::vector<KvEntry> before = Entries(d.store());
  const std::uint64_t max = limits::kSnapshotBytesMax;
  struct Case {
    CommandBody body;
    std::string says;
  } cases[] = {
      {RestoreChunk{0, 0, 10, "abc"}, "restore id 0"},
      {RestoreChunk{1, 0, max + 1, "abc"}, "outside [1, "},
      {RestoreChunk{1, 0, 0, ""}, "outside [1, "},
      {RestoreChunk{1, 0, 10, ""}, "a chunk of 0 bytes"},
      {RestoreChunk{1, 8, 10, "abc"}, "a chunk of 3 bytes at offset 8 of 10"},
      {RestoreChunk{1, 11, 10, "a"}, "at offset 11 of 10"},
      {RestoreChunk{1, 0, max, std::string(limits::kRestoreChunkBytesMax + 1, 'x')},
       "a chunk of 1048577 bytes"},
      {RestoreStaged{0, 10}, "restore id 0"},
      {RestoreStaged{1, max + 1}, "outside [1, "},
  };
  for (Case& c : cases) {
    ApplyResult r = d.Apply(c.body);
    EXPECT_EQ(r.status.code(), Code::kInvalidArgument) << c.says;
    EXPECT_NE(r.status.message().find(c.says), std::string_view::npos) << r.status.message();
    EXPECT_EQ(d.store().staging(), nullptr);
  }
  EXPECT_EQ(Entries(d.store()), before);
}

TEST(RestoreChunksTest, BothCommandsRoundTripThroughTheLogFormat) {
  for (CommandBody body : {CommandBody(RestoreChunk{0x1234567890abcdefull, 1 << 20, 3 << 20,
                                                    std::string("\0\xff chunk", 8)}),
                           CommandBody(RestoreStaged{42, 3 << 20})}) {
    Command command;
    command.now_ms = ClusterMs(77);
    command.wall_ms = UnixMs(1'700'000'000'000);
    command.body = body;
    std::string bytes;
    EncodeCommand(command, &bytes);
    EXPECT_TRUE(LooksLikeStagedRestore(bytes));
    EXPECT_FALSE(LooksLikeRestore(bytes));
    Result<Command> decoded = DecodeCommand(bytes);
    ASSERT_TRUE(decoded.ok()) << decoded.status().message();
    EXPECT_EQ(*decoded, command);
    for (std::size_t cut = 0; cut < bytes.size(); ++cut) {
      EXPECT_FALSE(DecodeCommand(std::string_view(bytes).substr(0, cut)).ok()) << cut;
    }
  }
  Command set;
  set.body = KvSet{"k", "v", 0};
  std::string bytes;
  EncodeCommand(set, &bytes);
  EXPECT_FALSE(LooksLikeStagedRestore(bytes));
}

}  // namespace
}  // namespace tenure::state
