#include "raft/entry_codec.h"

#include <gtest/gtest.h>

#include <string>

#include "raft/raft_test_util.h"

namespace tenure::raft {
namespace {

TEST(EntryCodec, FramesAreMultiplesOfEightForEveryPayloadSize) {
  for (std::size_t n = 0; n < 64; ++n) {
    std::string payload(n, 'x');
    std::string framed;
    FrameEntry(payload, &framed);
    EXPECT_EQ(framed.size() % 8, 0u) << n;
    EXPECT_EQ(framed.size(), FramedEntrySize(n));
    EXPECT_LT(framed.size(), n + 4 + 8);
    Result<std::string_view> back = UnframeEntry(framed);
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(*back, payload);
  }
}

TEST(EntryCodec, CommandRoundTripsThroughFrame) {
  for (int i = 0; i < 50; ++i) {
    state::Command command = testing::KvSetCommand("key", testing::OddValueSize(i), i);
    std::string framed;
    EncodeEntry(command, &framed);
    EXPECT_EQ(framed.size() % 8, 0u);
    Result<state::Command> back = DecodeEntry(framed);
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(*back, command);
  }
}

TEST(EntryCodec, RejectsMalformedFrames) {
  std::string framed;
  FrameEntry("hello", &framed);  // 4 + 5 + 7 padding = 16
  ASSERT_EQ(framed.size(), 16u);

  EXPECT_EQ(UnframeEntry("").status().code(), Code::kCorruption);
  EXPECT_EQ(UnframeEntry(framed.substr(0, 12)).status().code(), Code::kCorruption);

  std::string bad_padding = framed;
  bad_padding[15] = 'z';
  EXPECT_EQ(UnframeEntry(bad_padding).status().code(), Code::kCorruption);

  std::string long_length = framed;
  long_length[0] = 13;  // 4 + 13 rounds up to 24, not 16
  EXPECT_EQ(UnframeEntry(long_length).status().code(), Code::kCorruption);

  std::string short_length = framed;
  short_length[0] = 1;  // 4 + 1 rounds up to 8: extra padding is refused
  EXPECT_EQ(UnframeEntry(short_length).status().code(), Code::kCorruption);

  std::string extra = framed + std::string(8, '\0');
  EXPECT_EQ(UnframeEntry(extra).status().code(), Code::kCorruption);
}

TEST(EntryCodec, UndecodablePayloadIsCorruption) {
  std::string framed;
  FrameEntry("\xff\xff\xff not a command", &framed);
  Result<state::Command> decoded = DecodeEntry(framed);
  ASSERT_FALSE(decoded.ok());
  EXPECT_EQ(decoded.status().code(), Code::kCorruption);
}

}  // namespace
}  // namespace tenure::raft
