#include "common/duration.h"

#include <gtest/gtest.h>

namespace tenure {
namespace {

DurationNs Ok(std::string_view text) {
  auto parsed = ParseGoDuration(text);
  EXPECT_TRUE(parsed.ok()) << text << ": " << parsed.status().ToString();
  return parsed.ok() ? *parsed : -1;
}

std::string Error(std::string_view text) {
  auto parsed = ParseGoDuration(text);
  EXPECT_FALSE(parsed.ok()) << text;
  return parsed.ok() ? "" : std::string(parsed.status().message());
}

TEST(ParseGoDurationTest, AcceptsWhatConsulClientsSend) {
  EXPECT_EQ(Ok("15s"), 15 * kNsPerSecond);
  EXPECT_EQ(Ok("15.0s"), 15 * kNsPerSecond);  // Patroni
  EXPECT_EQ(Ok("0.001s"), kNsPerMs);          // Patroni's lock delay
  EXPECT_EQ(Ok("9.87s"), 9'870'000'000);
  EXPECT_EQ(Ok("15000ms"), 15 * kNsPerSecond);  // Go api
  EXPECT_EQ(Ok("1h30m"), 5400 * kNsPerSecond);
  EXPECT_EQ(Ok("1m0.5s"), 60'500'000'000);
  EXPECT_EQ(Ok("0"), 0);
  EXPECT_EQ(Ok("-5s"), -5 * kNsPerSecond);
  EXPECT_EQ(Ok("+5s"), 5 * kNsPerSecond);
  EXPECT_EQ(Ok("1us"), 1000);
  EXPECT_EQ(Ok("1\xC2\xB5s"), 1000);
  EXPECT_EQ(Ok("3ns"), 3);
  EXPECT_EQ(Ok(".5s"), 500 * kNsPerMs);
  EXPECT_EQ(Ok("5.s"), 5 * kNsPerSecond);
}

TEST(ParseGoDurationTest, RejectsWithGoTexts) {
  EXPECT_EQ(Error("15"), "time: missing unit in duration \"15\"");
  EXPECT_EQ(Error("15x"), "time: unknown unit \"x\" in duration \"15x\"");
  EXPECT_EQ(Error(""), "time: invalid duration \"\"");
  EXPECT_EQ(Error("s"), "time: invalid duration \"s\"");
  EXPECT_EQ(Error("."), "time: invalid duration \".\"");
  EXPECT_EQ(Error("-"), "time: invalid duration \"-\"");
  EXPECT_EQ(Error("1.2.3s"), "time: missing unit in duration \"1.2.3s\"");
  EXPECT_EQ(Error("9999999999999h"), "time: invalid duration \"9999999999999h\"");
  EXPECT_EQ(Error("18446744073709551616ns"), "time: invalid duration \"18446744073709551616ns\"");
}

TEST(ParseGoDurationTest, HandlesTheInt64Edges) {
  EXPECT_EQ(Ok("9223372036854775807ns"), INT64_MAX);
  EXPECT_EQ(Ok("-9223372036854775808ns"), INT64_MIN);
  EXPECT_FALSE(ParseGoDuration("9223372036854775808ns").ok());
}

// Each component fits, the sum does not: 2^63 + 2^63 wraps a uint64 to 0,
// which once made a session without a TTL out of a huge one.
TEST(ParseGoDurationTest, RejectsASumOfComponentsThatOverflows) {
  EXPECT_EQ(Error("9223372036854775808ns9223372036854775808ns"),
            "time: invalid duration \"9223372036854775808ns9223372036854775808ns\"");
  EXPECT_EQ(Error("2562047h47m16.854775808s"),
            "time: invalid duration \"2562047h47m16.854775808s\"");
  EXPECT_EQ(Error("9223372036854775807ns1ns"),
            "time: invalid duration \"9223372036854775807ns1ns\"");
  EXPECT_EQ(Error("2562047h2562047h"), "time: invalid duration \"2562047h2562047h\"");
  EXPECT_EQ(Error("9223372036854775808ns9223372036854775.808us"),
            "time: invalid duration \"9223372036854775808ns9223372036854775.808us\"");
  // The largest sums that fit are still accepted, and -2^63 stays reachable.
  EXPECT_EQ(Ok("2562047h47m16.854775807s"), INT64_MAX);
  EXPECT_EQ(Ok("9223372036854775806ns1ns"), INT64_MAX);
  EXPECT_EQ(Ok("-9223372036854775807ns1ns"), INT64_MIN);
  EXPECT_FALSE(ParseGoDuration("-9223372036854775808ns9223372036854775808ns").ok());
}

// Found by the text fuzz target: leading zeros of a fraction scale it by ten
// each, and past 19 of them an integer scale wrapped to 0 (a division by
// zero, then undefined behaviour). Go's scale is a float: the tiny fraction
// just rounds to nothing.
TEST(ParseGoDurationTest, LongFractionsOfZerosRoundToNothing) {
  EXPECT_EQ(Ok("0." + std::string(30, '0') + "1s"), 0);
  EXPECT_EQ(Ok("1." + std::string(400, '0') + "5h"), 3600LL * kNsPerSecond);
  EXPECT_EQ(Ok("2m.0" + std::string(100, '0') + "35m"), 120LL * kNsPerSecond);
  EXPECT_EQ(Ok("0.5" + std::string(40, '0') + "s"), kNsPerSecond / 2);
}

TEST(FormatGoDurationTest, MatchesGoDurationString) {
  EXPECT_EQ(FormatGoDuration(0), "0s");
  EXPECT_EQ(FormatGoDuration(15 * kNsPerSecond), "15s");
  EXPECT_EQ(FormatGoDuration(24 * 3600 * kNsPerSecond), "24h0m0s");
  EXPECT_EQ(FormatGoDuration(90 * kNsPerSecond), "1m30s");
  EXPECT_EQ(FormatGoDuration(1'500'000'000), "1.5s");
  EXPECT_EQ(FormatGoDuration(kNsPerMs), "1ms");
  EXPECT_EQ(FormatGoDuration(1500), "1.5\xC2\xB5s");
  EXPECT_EQ(FormatGoDuration(7), "7ns");
  EXPECT_EQ(FormatGoDuration(-2 * kNsPerSecond), "-2s");
}

TEST(FormatGoDurationTest, RoundTripsThroughParse) {
  for (DurationNs ns : {DurationNs{1}, DurationNs{999}, DurationNs{123'456'789},
                        DurationNs{3'723'000'000'000}, INT64_MAX, -kNsPerSecond}) {
    EXPECT_EQ(Ok(FormatGoDuration(ns)), ns) << FormatGoDuration(ns);
  }
}

}  // namespace
}  // namespace tenure
