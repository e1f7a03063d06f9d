#include "common/log.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

namespace tenure::log {
namespace {

constexpr long long kNoonMs = 1'764'158'400'123;  // 2025-11-26T12:00:00.123Z

TEST(LogTest, TextKeepsThePrefixesTheLinesAlwaysHad) {
  const Options text;
  EXPECT_EQ(FormatLine(text, kNoonMs, Level::kInfo, "raft", "node 1 is leader of term 2",
                       {Num("term", 2)}),
            "tenure raft: node 1 is leader of term 2");
  EXPECT_EQ(FormatLine(text, kNoonMs, Level::kWarn, "http", "refused", {}), "http: refused");
  EXPECT_EQ(FormatLine(text, kNoonMs, Level::kInfo, "server", "leader", {}), "tenure: leader");
}

TEST(LogTest, JsonIsOneObjectWithTimeLevelComponentMessageAndFields) {
  const Options json{Level::kInfo, true};
  const std::string line =
      FormatLine(json, kNoonMs, Level::kWarn, "server", "session \"a\"\nexpired",
                 {{"session", "a\tb\x01"}, Num("term", 7ULL), Num("delay_ms", -1)});
  EXPECT_EQ(line.find('\n'), std::string::npos);  // one line, whatever the message holds
  const auto parsed = nlohmann::json::parse(line);
  EXPECT_EQ(parsed["time"], "2025-11-26T12:00:00.123Z");
  EXPECT_EQ(parsed["level"], "warn");
  EXPECT_EQ(parsed["component"], "server");
  EXPECT_EQ(parsed["message"], "session \"a\"\nexpired");
  EXPECT_EQ(parsed["session"], "a\tb\x01");
  EXPECT_EQ(parsed["term"], 7);
  EXPECT_EQ(parsed["delay_ms"], -1);
}

TEST(LogTest, LevelsParseInAnyCaseAndFilter) {
  EXPECT_EQ(*ParseLevel("TRACE"), Level::kTrace);
  EXPECT_EQ(*ParseLevel("warn"), Level::kWarn);
  const auto bad = ParseLevel("verbose");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            "unknown log level \"verbose\" (trace, debug, info, warn or error)");
  Configure({Level::kWarn, false});
  EXPECT_FALSE(Enabled(Level::kInfo));
  EXPECT_TRUE(Enabled(Level::kWarn));
  EXPECT_TRUE(Enabled(Level::kError));
  Configure({});
  EXPECT_TRUE(Enabled(Level::kInfo));
  EXPECT_FALSE(Enabled(Level::kDebug));
}

}  // namespace
}  // namespace tenure::log
