#include "common/coding.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "common/strings.h"

namespace tenure {
namespace {

TEST(CodingTest, RoundTripsEveryWidth) {
  std::string out;
  ByteWriter w(&out);
  w.PutU8(0xab);
  w.PutFixed32(0xdeadbeef);
  w.PutFixed64(UINT64_MAX);
  w.PutVarint(0);
  w.PutVarint(300);
  w.PutVarint(UINT64_MAX);
  w.PutSignedVarint(INT64_MIN);
  w.PutSignedVarint(-1);
  w.PutBytes(std::string("a\0b", 3));
  w.PutBool(true);

  ByteReader r(out);
  EXPECT_EQ(r.GetU8(), 0xab);
  EXPECT_EQ(r.GetFixed32(), 0xdeadbeefu);
  EXPECT_EQ(r.GetFixed64(), UINT64_MAX);
  EXPECT_EQ(r.GetVarint(), 0u);
  EXPECT_EQ(r.GetVarint(), 300u);
  EXPECT_EQ(r.GetVarint(), UINT64_MAX);
  EXPECT_EQ(r.GetSignedVarint(), INT64_MIN);
  EXPECT_EQ(r.GetSignedVarint(), -1);
  EXPECT_EQ(r.GetBytes(), std::string_view("a\0b", 3));
  EXPECT_TRUE(r.GetBool());
  EXPECT_FALSE(r.failed());
  EXPECT_TRUE(r.done());
}

TEST(CodingTest, ShortInputFailsInsteadOfReadingPastTheEnd) {
  std::string out;
  ByteWriter w(&out);
  w.PutBytes("hello");
  ByteReader r(std::string_view(out).substr(0, 3));
  EXPECT_EQ(r.GetBytes(), "");
  EXPECT_TRUE(r.failed());
  EXPECT_EQ(r.GetFixed64(), 0u);  // every later read is harmless
}

TEST(CodingTest, OverlongVarintFails) {
  std::string eleven(11, '\xff');
  ByteReader r(eleven);
  r.GetVarint();
  EXPECT_TRUE(r.failed());
}

TEST(StringsTest, GoQuoteEscapesLikeGo) {
  EXPECT_EQ(GoQuote("abc"), "\"abc\"");
  EXPECT_EQ(GoQuote("a\"b\\c"), "\"a\\\"b\\\\c\"");
  EXPECT_EQ(GoQuote("\n\t\x01"), "\"\\n\\t\\x01\"");
}

TEST(StringsTest, EqualsIgnoreCase) {
  EXPECT_TRUE(EqualsIgnoreCase("LockDelay", "lockdelay"));
  EXPECT_FALSE(EqualsIgnoreCase("TTL", "TTLs"));
}

// AsciiLower works 8 bytes at a time: every byte value, at every position
// of every length up to two words and a tail, against the byte-wise rule.
TEST(StringsTest, AsciiLowerChangesOnlyCapitalsAtEveryPosition) {
  for (std::size_t length = 0; length <= 19; ++length) {
    for (std::size_t at = 0; at < length; ++at) {
      for (int value = 0; value < 256; ++value) {
        std::string text(length, 'Q');
        text[at] = static_cast<char>(value);
        std::string expected = text;
        for (char& c : expected) {
          if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
        }
        ASSERT_EQ(AsciiLower(text), expected)
            << "length " << length << " at " << at << " byte " << value;
      }
    }
  }
  EXPECT_EQ(AsciiLower("X-Consul-Token"), "x-consul-token");
  EXPECT_EQ(AsciiLower("@[`{\x80\xc1Z"), "@[`{\x80\xc1z");  // neighbours of A-Z, high bytes
}

TEST(StringsTest, SplitNonEmptyDropsEmptyParts) {
  using V = std::vector<std::string>;
  EXPECT_EQ(SplitNonEmpty("a,b", ','), (V{"a", "b"}));
  EXPECT_EQ(SplitNonEmpty(",a,,b,", ','), (V{"a", "b"}));
  EXPECT_EQ(SplitNonEmpty("", ','), V{});
  EXPECT_EQ(SplitNonEmpty(",,", ','), V{});
  EXPECT_EQ(SplitNonEmpty("127.0.0.1:8500", ','), V{"127.0.0.1:8500"});
}

}  // namespace
}  // namespace tenure
