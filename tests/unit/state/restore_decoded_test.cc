// A restore applied from a state decoded ahead (off the loop thread,
// decision 0046) decides exactly what decoding at the apply decides: the
// same state, the same refusals. And the pieces that let the bytes travel
// without copies encode and decode what EncodeCommand and DecodeCommand do.
#include <gtest/gtest.h>

#include <string>

#include "state/command.h"
#include "state/store.h"
#include "unit/state/store_fixture.h"

namespace tenure::state {
namespace {

using testutil::StoreDriver;

Command RestoreOf(const Store& source, ClusterMs now) {
  Command command;
  command.now_ms = now;
  command.wall_ms = UnixMs(1'700'000'000'000);
  RestoreState restore;
  source.EncodeSnapshot(&restore.snapshot);
  command.body = std::move(restore);
  return command;
}

StoreDriver Target() {
  StoreDriver d;
  d.SetNowMs(ClusterMs(5'000));
  d.Set("old/a", "1");
  SessionId s = d.NewSession(15 * kNsPerSecond);
  EXPECT_TRUE(d.Acquire("old/lock", s, "me").ok);
  return d;
}

StoreDriver Source() {
  StoreDriver d;
  d.SetNowMs(ClusterMs(9'000));
  d.Set("new/a", "1");
  d.Set("new/b", "2");
  SessionId s = d.NewSession(15 * kNsPerSecond);
  EXPECT_TRUE(d.Acquire("new/lock", s, "me").ok);
  SessionId t = d.NewSession(15 * kNsPerSecond);
  EXPECT_TRUE(d.Acquire("new/other", t).ok);
  d.Destroy(t);  // a lock-delay window
  return d;
}

// Both ways from the same starting state, at the same index.
void ExpectSameOutcome(const Command& command) {
  StoreDriver a = Target();
  StoreDriver b = Target();
  const LogIndex at = a.next_index();
  ApplyResult decoding = a.store().Apply(command, at);

  Result<Store> decoded = Store::DecodeSnapshot(std::get<RestoreState>(command.body).snapshot);
  Command stripped = command;
  std::get<RestoreState>(stripped.body).snapshot.clear();  // not read when decoded is given
  ApplyResult predecoded = b.store().Apply(stripped, at, &decoded);

  EXPECT_EQ(decoding.status.ok(), predecoded.status.ok());
  EXPECT_EQ(decoding.status.message(), predecoded.status.message());
  EXPECT_EQ(a.store().Digest(), b.store().Digest());
  std::string bytes_a;
  std::string bytes_b;
  a.store().EncodeSnapshot(&bytes_a);
  b.store().EncodeSnapshot(&bytes_b);
  EXPECT_EQ(bytes_a, bytes_b);
  // The short check after the adjustments leaves a state the whole
  // Validate accepts.
  EXPECT_TRUE(b.store().Validate().ok()) << b.store().Validate().ToString();
}

TEST(RestoreDecodedTest, AValidStateRestoresTheSameEitherWay) {
  ExpectSameOutcome(RestoreOf(Source().store(), ClusterMs(10'000)));
}

TEST(RestoreDecodedTest, AClockBehindOursMovesTheWindowsUpTheSameEitherWay) {
  // The target's clock (5 s) is ahead of nothing here; put the file's
  // behind the target's instead.
  StoreDriver behind;
  behind.SetNowMs(ClusterMs(1'000));
  behind.Set("k", "v");
  SessionId t = behind.NewSession(15 * kNsPerSecond);
  EXPECT_TRUE(behind.Acquire("held", t).ok);
  behind.Destroy(t);
  ExpectSameOutcome(RestoreOf(behind.store(), ClusterMs(6'000)));
}

TEST(RestoreDecodedTest, BytesThatDoNotDecodeAreRefusedTheSameEitherWay) {
  Command command = RestoreOf(Source().store(), ClusterMs(10'000));
  std::get<RestoreState>(command.body).snapshot[20] ^= 0x40;
  ExpectSameOutcome(command);
  StoreDriver a = Target();
  EXPECT_FALSE(a.store().Apply(command, a.next_index()).status.ok());
}

TEST(RestoreDecodedTest, TheRestoreEncodesInPiecesAsEncodeCommandDoes) {
  const Command command = RestoreOf(Source().store(), ClusterMs(10'000));
  std::string whole;
  EncodeCommand(command, &whole);
  std::string head;
  std::string tail;
  EncodeRestoreAround(command, &head, &tail);
  EXPECT_EQ(head + std::get<RestoreState>(command.body).snapshot + tail, whole);
  EXPECT_TRUE(LooksLikeRestore(whole));

  std::string_view snapshot;
  Result<Command> viewed = DecodeRestoreCommand(whole, &snapshot);
  ASSERT_TRUE(viewed.ok()) << viewed.status().ToString();
  EXPECT_EQ(snapshot, std::get<RestoreState>(command.body).snapshot);
  EXPECT_EQ(viewed->now_ms, command.now_ms);
  EXPECT_EQ(viewed->wall_ms, command.wall_ms);
  EXPECT_TRUE(std::get<RestoreState>(viewed->body).snapshot.empty());
}

TEST(RestoreDecodedTest, TheViewDecoderRefusesWhatDecodeCommandRefuses) {
  const Command command = RestoreOf(Source().store(), ClusterMs(10'000));
  std::string whole;
  EncodeCommand(command, &whole);
  std::string_view snapshot;
  // Every truncation, and a trailing byte.
  for (std::size_t n = 0; n < whole.size(); n += 7) {
    const std::string_view cut(whole.data(), n);
    EXPECT_EQ(DecodeRestoreCommand(cut, &snapshot).ok(), DecodeCommand(cut).ok()) << n;
  }
  const std::string longer = whole + "x";
  EXPECT_FALSE(DecodeRestoreCommand(longer, &snapshot).ok());
  EXPECT_FALSE(DecodeCommand(longer).ok());
  // Another command is not a restore.
  Command set;
  set.body = KvSet{"k", "v", 0};
  std::string other;
  EncodeCommand(set, &other);
  EXPECT_FALSE(LooksLikeRestore(other));
  EXPECT_FALSE(DecodeRestoreCommand(other, &snapshot).ok());
}

}  // namespace
}  // namespace tenure::state
