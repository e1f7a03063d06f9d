#include "common/base64.h"

#include <gtest/gtest.h>

#include <random>

namespace tenure {
namespace {

TEST(Base64Test, MatchesRfc4648Vectors) {
  EXPECT_EQ(Base64Encode(""), "");
  EXPECT_EQ(Base64Encode("f"), "Zg==");
  EXPECT_EQ(Base64Encode("fo"), "Zm8=");
  EXPECT_EQ(Base64Encode("foo"), "Zm9v");
  EXPECT_EQ(Base64Encode("foob"), "Zm9vYg==");
  EXPECT_EQ(Base64Encode("fooba"), "Zm9vYmE=");
  EXPECT_EQ(Base64Encode("foobar"), "Zm9vYmFy");
  EXPECT_EQ(Base64Encode("body"), "Ym9keQ==");  // the leader value in Consul's guide
}

TEST(Base64Test, RoundTripsRandomBytes) {
  std::mt19937 random(7);
  for (int n = 0; n < 300; ++n) {
    std::string bytes(static_cast<std::size_t>(n), '\0');
    for (char& c : bytes) c = static_cast<char>(random());
    auto decoded = Base64Decode(Base64Encode(bytes));
    ASSERT_TRUE(decoded.has_value());
    EXPECT_EQ(*decoded, bytes);
  }
}

TEST(Base64Test, RejectsMalformedInput) {
  EXPECT_FALSE(Base64Decode("Zg=").has_value());   // length
  EXPECT_FALSE(Base64Decode("Z===").has_value());  // too much padding
  EXPECT_FALSE(Base64Decode("Zm9v!A==").has_value());
  EXPECT_FALSE(Base64Decode("Zg==Zg==").has_value());  // padding mid-stream
  EXPECT_FALSE(Base64Decode("=Zg=").has_value());
}

}  // namespace
}  // namespace tenure
