// Frames out of a connection's bytes however the bytes arrive, the length
// limit ZooKeeper's server keeps (0xfffff), and the four-letter words.
#include "zk/framing.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace tenure::zk {
namespace {

std::string Framed(const std::string& body) {
  const auto n = static_cast<std::uint32_t>(body.size());
  std::string out;
  for (int shift = 24; shift >= 0; shift -= 8)
    out.push_back(static_cast<char>((n >> shift) & 0xff));
  return out + body;
}

std::vector<std::string> Drain(FrameSplitter& splitter) {
  std::vector<std::string> frames;
  std::string frame;
  while (splitter.Next(&frame)) frames.push_back(frame);
  return frames;
}

TEST(ZkFramingTest, FramesHoweverTheBytesArrive) {
  const std::string stream = Framed("first") + Framed("") + Framed(std::string(300, 'x'));
  for (const std::size_t chunk : {std::size_t{1}, std::size_t{3}, std::size_t{7}, stream.size()}) {
    FrameSplitter splitter;
    std::vector<std::string> frames;
    for (std::size_t at = 0; at < stream.size(); at += chunk) {
      splitter.Feed(stream.substr(at, chunk));
      for (std::string& f : Drain(splitter)) frames.push_back(std::move(f));
    }
    ASSERT_EQ(frames.size(), 3u) << "chunk " << chunk;
    EXPECT_EQ(frames[0], "first");
    EXPECT_EQ(frames[1], "");
    EXPECT_EQ(frames[2], std::string(300, 'x'));
    EXPECT_EQ(splitter.buffered(), 0u);
    EXPECT_EQ(splitter.error(), "");
  }
}

TEST(ZkFramingTest, TheLargestFrameIsJuteMaxBuffer) {
  FrameSplitter splitter;
  splitter.Feed(Framed(std::string(kFrameBytesMax, 'b')));
  std::string frame;
  ASSERT_TRUE(splitter.Next(&frame));
  EXPECT_EQ(frame.size(), 1048575u);
}

TEST(ZkFramingTest, ALengthPastTheLimitOrNegativeEndsTheConnection) {
  for (const std::string& length :
       {std::string("\x00\x10\x00\x00", 4), std::string("\x80\x00\x00\x00", 4),
        std::string("\xff\xff\xff\xff", 4), std::string("\x7f\xff\xff\xff", 4)}) {
    FrameSplitter splitter;
    splitter.Feed(length);
    std::string frame;
    EXPECT_FALSE(splitter.Next(&frame));
    EXPECT_NE(splitter.error().find("frames are 0 to 1048575 bytes"), std::string::npos)
        << splitter.error();
    EXPECT_EQ(splitter.buffered(), 0u);  // nothing kept for a connection that ends
    splitter.Feed(Framed("late"));
    EXPECT_FALSE(splitter.Next(&frame));
    EXPECT_EQ(splitter.buffered(), 0u);  // nor anything that comes after
  }
}

TEST(ZkFramingTest, FourLetterWordsAreTheOnesZooKeeperKnows) {
  for (const char* word : {"ruok", "srvr", "mntr", "stat", "isro", "conf", "wchs"}) {
    EXPECT_EQ(FourLetterWord(word), std::string_view(word));
  }
  for (const char* other : {"abcd", "RUOK", "ruo", "ruokk"}) {
    EXPECT_FALSE(FourLetterWord(other).has_value()) << other;
  }
  // A ConnectRequest's length (45 bytes) is no word.
  EXPECT_FALSE(FourLetterWord(std::string("\x00\x00\x00\x2d", 4)).has_value());
}

}  // namespace
}  // namespace tenure::zk
