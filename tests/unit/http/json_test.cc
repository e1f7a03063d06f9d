#include "http/json.h"

#include <gtest/gtest.h>

#include <limits>
#include <nlohmann/json.hpp>

namespace tenure::http {
namespace {

std::string Quoted(std::string_view text) {
  std::string out;
  json::AppendString(&out, text);
  return out;
}

TEST(JsonTest, EscapesLikeGoEncodingJson) {
  EXPECT_EQ(Quoted("plain"), "\"plain\"");
  EXPECT_EQ(Quoted("a\"b\\c"), "\"a\\\"b\\\\c\"");
  EXPECT_EQ(Quoted("<a&b>"), "\"\\u003ca\\u0026b\\u003e\"");
  EXPECT_EQ(Quoted(std::string("\x01\n", 2)), "\"\\u0001\\n\"");
  EXPECT_EQ(Quoted("caf\xC3\xA9"), "\"caf\xC3\xA9\"");
  EXPECT_EQ(Quoted("\xE2\x80\xA8"), "\"\\u2028\"");
  EXPECT_EQ(Quoted("bad\xFF"), "\"bad\\ufffd\"");
  EXPECT_EQ(Quoted("\xC0\x80"), "\"\\ufffd\\ufffd\"");  // overlong encoding
}

TEST(JsonTest, KvEntryHasConsulFieldsAndFullUint64) {
  state::KvEntry entry;
  entry.key = "service/db/leader";
  entry.value = "body";
  entry.flags = 16210313421097356768ull;
  entry.create_index = LogIndex(28);
  entry.modify_index = LogIndex(29);
  entry.lock_index = 1;
  entry.session = state::SessionId("4ca8e74b-6350-7587-addf-a18084928f3c");
  entry.fence = LogIndex(29);
  std::string out;
  json::AppendKvEntry(&out, entry);
  EXPECT_EQ(out,
            "{\"LockIndex\":1,\"Key\":\"service/db/leader\",\"Flags\":16210313421097356768,"
            "\"Value\":\"Ym9keQ==\",\"Session\":\"4ca8e74b-6350-7587-addf-a18084928f3c\","
            "\"Fence\":29,\"CreateIndex\":28,\"ModifyIndex\":29}");
  auto parsed = nlohmann::json::parse(out);
  EXPECT_EQ(parsed["Flags"].get<std::uint64_t>(), 16210313421097356768ull);
}

TEST(JsonTest, UnlockedEntryOmitsSessionAndNullsEmptyValue) {
  state::KvEntry entry;
  entry.key = "k";
  entry.create_index = entry.modify_index = LogIndex(3);
  std::string out;
  json::AppendKvEntry(&out, entry);
  EXPECT_EQ(out,
            "{\"LockIndex\":0,\"Key\":\"k\",\"Flags\":0,\"Value\":null,\"CreateIndex\":3,"
            "\"ModifyIndex\":3}");
}

TEST(JsonTest, SessionHasConsul17Shape) {
  state::Session s;
  s.id = state::SessionId("d21d60ad-c2d2-b32a-7432-ca4048a4a7d6");
  s.name = "hashicups-db-0";
  s.node = "hashicups-db-0";
  s.lock_delay_ns = 15'000'000'000;
  s.checks.set_node({"serfHealth"});
  s.create_index = LogIndex(11956);
  std::string out;
  json::AppendSession(&out, s);
  EXPECT_EQ(out,
            "{\"ID\":\"d21d60ad-c2d2-b32a-7432-ca4048a4a7d6\",\"Name\":\"hashicups-db-0\","
            "\"Node\":\"hashicups-db-0\",\"LockDelay\":15000000000,\"Behavior\":\"release\","
            "\"TTL\":\"\",\"NodeChecks\":[\"serfHealth\"],\"ServiceChecks\":null,"
            "\"CreateIndex\":11956,\"ModifyIndex\":11956}");
}

TEST(JsonTest, SessionTtlRemainingAfterTtlWhenGiven) {
  state::Session s;
  s.id = state::SessionId("d21d60ad-c2d2-b32a-7432-ca4048a4a7d6");
  s.ttl = "10s";
  std::string out;
  json::AppendSession(&out, s, 19'500'000'000);
  EXPECT_NE(out.find("\"TTL\":\"10s\",\"TTLRemaining\":19500000000,\"NodeChecks\""),
            std::string::npos)
      << out;
  // Through Sessions: per session, left out where the function has none.
  state::Session other = s;
  other.id = state::SessionId("adf4238a-882b-9ddc-4a9d-5b6758e4159e");
  json::TtlRemaining remaining = [&](const state::Session& x) -> std::optional<std::int64_t> {
    if (x.id == s.id) return 7;
    return std::nullopt;
  };
  std::string both = *json::Sessions({&s, &other}, 1 << 20, remaining);
  EXPECT_EQ(both.find("\"TTLRemaining\":7,"), both.find("TTLRemaining") - 1);
  EXPECT_EQ(both.find("TTLRemaining", both.find("TTLRemaining") + 1), std::string::npos);
}

TEST(JsonTest, TxnOutcomeShapes) {
  state::TxnOutcome ok;
  EXPECT_EQ(json::TxnOutcome(ok), "{\"Results\":[],\"Errors\":null}");
  state::TxnOutcome failed;
  failed.errors.push_back({1, "failed to check index, key \"x\" doesn't exist"});
  EXPECT_EQ(json::TxnOutcome(failed),
            "{\"Results\":null,\"Errors\":[{\"OpIndex\":1,\"What\":\"failed to check index, key "
            "\\\"x\\\" doesn't exist\"}]}");
}

constexpr std::size_t kNoLimit = std::numeric_limits<std::size_t>::max();

TEST(JsonTest, PrettyIndentsWithFourSpacesAndNewline) {
  EXPECT_EQ(json::Pretty("[1]", kNoLimit), "[\n    1\n]\n");
  EXPECT_EQ(json::Pretty("{\"A\":{\"B\":[1,2],\"C\":{}},\"D\":[],\"E\":null}", kNoLimit),
            "{\n    \"A\": {\n        \"B\": [\n            1,\n            2\n        ],\n"
            "        \"C\": {}\n    },\n    \"D\": [],\n    \"E\": null\n}\n");
  EXPECT_EQ(json::Pretty("[]", kNoLimit), "[]\n");
}

TEST(JsonTest, PrettyCopiesStringsWithTheirEscapes) {
  // Brackets, commas, colons and escaped quotes inside strings are text.
  EXPECT_EQ(json::Pretty(R"({"K":"a,b:{[\"x\"]}\u003c\\"})", kNoLimit),
            "{\n    \"K\": \"a,b:{[\\\"x\\\"]}\\u003c\\\\\"\n}\n");
}

TEST(JsonTest, PrettyStopsAtTheLimit) {
  std::string compact = "[" + std::string(1000, '1') + "]";  // 1002 bytes, 1009 pretty
  EXPECT_EQ(json::Pretty(compact, 1009)->size(), 1009u);
  EXPECT_EQ(json::Pretty(compact, 1008), std::nullopt);
  EXPECT_EQ(json::Pretty("[1,2,3]", 5), std::nullopt);
}

TEST(JsonTest, SessionsStopAtTheLimit) {
  state::Session session;
  session.id = state::SessionId("adf4238a-882b-9ddc-4a9d-5b6758e4159e");
  std::string one = json::Sessions({&session});
  std::vector<const state::Session*> three = {&session, &session, &session};
  const std::size_t full = 3 * one.size() - 2;  // [S,S,S]
  EXPECT_EQ(json::Sessions(three, full)->size(), full);
  EXPECT_EQ(json::Sessions(three, full - 1), std::nullopt);
  EXPECT_EQ(json::Sessions(three, one.size()), std::nullopt);
}

}  // namespace
}  // namespace tenure::http
