// RFC 3339 as Go's time.Time JSON: what Consul's clients send and read back.
#include "common/rfc3339.h"

#include <gtest/gtest.h>

namespace tenure {
namespace {

TEST(Rfc3339Test, FormatsUtcWithTheFractionTrimmedAsGoDoes) {
  EXPECT_EQ(FormatRfc3339(UnixMs(0)), "1970-01-01T00:00:00Z");
  EXPECT_EQ(FormatRfc3339(UnixMs(1'700'000'000'000)), "2023-11-14T22:13:20Z");
  EXPECT_EQ(FormatRfc3339(UnixMs(1'700'000'000'100)), "2023-11-14T22:13:20.1Z");
  EXPECT_EQ(FormatRfc3339(UnixMs(1'700'000'000'123)), "2023-11-14T22:13:20.123Z");
  EXPECT_EQ(FormatRfc3339(UnixMs(951'782'400'000)), "2000-02-29T00:00:00Z");  // a leap day
}

TEST(Rfc3339Test, ParsesWhatItFormatsAndOffsets) {
  for (std::int64_t ms :
       {0LL, 1'700'000'000'000LL, 1'700'000'000'123LL, 951'782'400'000LL, 4'102'444'799'999LL}) {
    Result<UnixMs> back = ParseRfc3339(FormatRfc3339(UnixMs(ms)));
    ASSERT_TRUE(back.ok()) << ms;
    EXPECT_EQ(back->ms(), ms);
  }
  EXPECT_EQ(ParseRfc3339("2023-11-14T23:13:20+01:00")->ms(), 1'700'000'000'000);
  EXPECT_EQ(ParseRfc3339("2023-11-14T21:13:20.5-01:00")->ms(), 1'700'000'000'500);
  EXPECT_EQ(ParseRfc3339("2023-11-14T22:13:20.123456789Z")->ms(), 1'700'000'000'123);
}

TEST(Rfc3339Test, RefusesWhatIsNotRfc3339) {
  for (const char* bad :
       {"", "2023-11-14", "2023-11-14T22:13:20", "2023-13-01T00:00:00Z", "2023-02-29T00:00:00Z",
        "2023-11-14T24:00:00Z", "1969-12-31T23:59:59Z", "2023-11-14T22:13:20.Z",
        "2023-11-14T22:13:20Zjunk", "2023-11-14T22:13:20+0100", "tomorrow"}) {
    Result<UnixMs> parsed = ParseRfc3339(bad);
    EXPECT_FALSE(parsed.ok()) << bad;
    if (!parsed.ok()) {
      EXPECT_EQ(parsed.status().code(), Code::kInvalidArgument) << bad;
    }
  }
}

}  // namespace
}  // namespace tenure
