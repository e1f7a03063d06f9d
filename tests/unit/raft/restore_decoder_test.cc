// RestoreDecoder (raft/restore_decoder.h, decision 0046): a state decoded on
// its own thread is handed to the apply only for exactly the bytes it was
// decoded from; jobs are bounded; a state offered by the leader's check is
// used as is; and the EncodeToRaftBuffer frame of a restore is EncodeEntry's.
#include "raft/restore_decoder.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include "raft/entry_codec.h"
#include "raft/fsm.h"
#include "state/command.h"
#include "state/store.h"

namespace tenure::raft {
namespace {

std::string SnapshotWithKeys(int n) {
  state::Store store;
  for (int i = 0; i < n; ++i) {
    state::Command command;
    command.now_ms = ClusterMs(1000);
    command.body = state::KvSet{"k/" + std::to_string(i), "v", 0};
    store.Apply(command, LogIndex(static_cast<std::uint64_t>(i) + 1));
  }
  std::string bytes;
  store.EncodeSnapshot(&bytes);
  return bytes;
}

bool WaitDone(const RestoreDecoder::JobPtr& job) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!RestoreDecoder::Done(job)) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

TEST(RestoreDecoderTest, AStartedDecodeIsTakenForItsOwnBytesOnly) {
  std::atomic<int> done_calls{0};
  RestoreDecoder decoder([&done_calls] { ++done_calls; });
  const std::string bytes = SnapshotWithKeys(50);
  RestoreDecoder::JobPtr job = decoder.Start(bytes);
  ASSERT_NE(job, nullptr);
  EXPECT_EQ(decoder.Start(bytes), job);  // the same bytes: the same job
  ASSERT_TRUE(WaitDone(job));
  // The worker calls on_done just after it marks the job done.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (done_calls.load() == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(done_calls.load(), 1);

  std::string other = bytes;
  other.back() ^= 1;
  EXPECT_FALSE(decoder.Take(other).has_value());
  std::optional<Result<state::Store>> taken = decoder.Take(bytes);
  ASSERT_TRUE(taken.has_value());
  ASSERT_TRUE(taken->ok()) << taken->status().ToString();
  EXPECT_EQ((*taken)->kv_count(), 50u);
  EXPECT_EQ(decoder.jobs(), 0u);
  EXPECT_FALSE(decoder.Take(bytes).has_value());  // taken once
}

TEST(RestoreDecoderTest, BytesThatDoNotDecodeGiveTheDecodersRefusal) {
  RestoreDecoder decoder;
  std::string bytes = SnapshotWithKeys(3);
  bytes[bytes.size() / 2] ^= 0x10;
  ASSERT_NE(decoder.Start(bytes), nullptr);
  std::optional<Result<state::Store>> taken = decoder.Take(bytes);  // waits for the job
  ASSERT_TRUE(taken.has_value());
  ASSERT_FALSE(taken->ok());
  EXPECT_EQ(taken->status().message(), state::Store::DecodeSnapshot(bytes).status().message());
}

TEST(RestoreDecoderTest, AnOfferedStateIsTakenWithoutADecode) {
  RestoreDecoder decoder;
  const std::string bytes = SnapshotWithKeys(5);
  decoder.Offer(bytes, state::Store::DecodeSnapshot(bytes));
  RestoreDecoder::JobPtr job = decoder.Start(bytes);
  ASSERT_NE(job, nullptr);
  EXPECT_TRUE(RestoreDecoder::Done(job));
  std::optional<Result<state::Store>> taken = decoder.Take(bytes);
  ASSERT_TRUE(taken.has_value() && taken->ok());
  EXPECT_EQ((*taken)->kv_count(), 5u);
}

TEST(RestoreDecoderTest, FinishedJobsMakeRoomAndAtMostTwoAreKept) {
  RestoreDecoder decoder;
  const std::string a = SnapshotWithKeys(1);
  const std::string b = SnapshotWithKeys(2);
  const std::string c = SnapshotWithKeys(3);
  RestoreDecoder::JobPtr ja = decoder.Start(a);
  RestoreDecoder::JobPtr jb = decoder.Start(b);
  ASSERT_TRUE(WaitDone(ja) && WaitDone(jb));
  RestoreDecoder::JobPtr jc = decoder.Start(c);  // forgets the oldest finished (a)
  ASSERT_NE(jc, nullptr);
  EXPECT_EQ(decoder.jobs(), RestoreDecoder::kJobsMax);
  EXPECT_FALSE(decoder.Take(a).has_value());
  EXPECT_TRUE(decoder.Take(b).has_value());
  EXPECT_TRUE(decoder.Take(c).has_value());
}

TEST(RestoreDecoderTest, ARestoreFramedIntoARaftBufferIsEncodeEntrysFrame) {
  state::Command command;
  command.now_ms = ClusterMs(77);
  command.wall_ms = UnixMs(1'700'000'000'000);
  command.body = state::RestoreState{SnapshotWithKeys(20)};
  std::string framed;
  EncodeEntry(command, &framed);
  struct raft_buffer buf = EncodeToRaftBuffer(command);
  ASSERT_NE(buf.base, nullptr);
  EXPECT_EQ(std::string_view(static_cast<const char*>(buf.base), buf.len), framed);
  raft_free(buf.base);

  state::Command set;
  set.body = state::KvSet{"k", "v", 0};
  EncodeEntry(set, &framed);
  buf = EncodeToRaftBuffer(set);
  ASSERT_NE(buf.base, nullptr);
  EXPECT_EQ(std::string_view(static_cast<const char*>(buf.base), buf.len), framed);
  raft_free(buf.base);
}

}  // namespace
}  // namespace tenure::raft
