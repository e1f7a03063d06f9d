// agent::ParseJsonWithLines: the config files' JSON reader. Every value
// knows its line, and every refusal says "NAME:LINE: why".
#include <gtest/gtest.h>

#include <string>

#include "agent/config_text.h"

namespace tenure::agent {
namespace {

std::string Refusal(std::string_view text) {
  Result<ConfigValue> parsed = ParseJsonWithLines("a.json", text);
  if (parsed.ok()) return "accepted";
  EXPECT_EQ(parsed.status().code(), Code::kInvalidArgument);
  return std::string(parsed.status().message());
}

TEST(ConfigJsonTest, ValuesAndTheirLines) {
  Result<ConfigValue> root = ParseJsonWithLines("a.json",
                                                "{\n"
                                                "  \"s\": \"x\\\"y\\u00e9\\ud83d\\ude00\",\n"
                                                "  \"n\": -12.5e3,\n"
                                                "  \"b\": false,\n"
                                                "  \"z\": null,\n"
                                                "  \"a\": [1,\n"
                                                "        \"two\"],\n"
                                                "  \"o\": {}\n"
                                                "}\n");
  ASSERT_TRUE(root.ok()) << root.status().ToString();
  ASSERT_EQ(root->kind, ConfigValue::Kind::kObject);
  ASSERT_EQ(root->members.size(), 6u);
  const auto& m = root->members;
  EXPECT_EQ(m[0].name, "s");
  EXPECT_EQ(m[0].at.line, 2);
  EXPECT_EQ(m[0].value.text, "x\"y\xC3\xA9\xF0\x9F\x98\x80");
  EXPECT_EQ(m[1].value.kind, ConfigValue::Kind::kNumber);
  EXPECT_EQ(m[1].value.text, "-12.5e3");
  EXPECT_EQ(m[1].at.line, 3);
  EXPECT_EQ(m[2].value.kind, ConfigValue::Kind::kBool);
  EXPECT_FALSE(m[2].value.boolean);
  EXPECT_EQ(m[3].value.kind, ConfigValue::Kind::kNull);
  ASSERT_EQ(m[4].value.items.size(), 2u);
  EXPECT_EQ(m[4].value.items[1].at.line, 7);
  EXPECT_EQ(m[5].value.kind, ConfigValue::Kind::kObject);
  EXPECT_EQ(m[5].at.line, 8);
}

TEST(ConfigJsonTest, AByteOrderMarkIsNotContent) {
  EXPECT_EQ(Refusal("\xEF\xBB\xBF{\"a\": 1}"), "accepted");
}

TEST(ConfigJsonTest, EveryBadInputNamesItsLine) {
  EXPECT_EQ(Refusal(""), "a.json:1: empty file: expected a JSON object");
  EXPECT_EQ(Refusal("\n\n  "), "a.json:3: empty file: expected a JSON object");
  EXPECT_EQ(Refusal("{\n\"a\": 1,\n\"a\": 2}"), "a.json:3: duplicate key \"a\" (first at line 2)");
  EXPECT_EQ(Refusal("{\"a\": 1,\n}"), "a.json:2: unexpected '}': expected a key in double quotes");
  EXPECT_EQ(Refusal("{\"a\": [1,]}"), "a.json:1: unexpected ']': expected a value");
  EXPECT_EQ(Refusal("{\"a\" 1}"), "a.json:1: unexpected '1': expected ':' after \"a\"");
  EXPECT_EQ(Refusal("{\"a\": 1\n\"b\": 2}"), "a.json:2: unexpected '\"': expected ',' or '}'");
  EXPECT_EQ(Refusal("{\n// a comment\n}"),
            "a.json:2: unexpected '/': expected a key in double quotes");
  EXPECT_EQ(Refusal("{\"a\": // no\n1}"), "a.json:1: comments are not JSON");
  EXPECT_EQ(Refusal("{a: 1}"), "a.json:1: unexpected 'a': expected a key in double quotes");
  EXPECT_EQ(Refusal("{\"a\": 'x'}"), "a.json:1: unexpected ''': expected a value");
  EXPECT_EQ(Refusal("{\"a\": \"x\n\"}"), "a.json:1: unterminated string (a line break inside it)");
  EXPECT_EQ(Refusal("{\"a\": \"x\ty\"}"),
            "a.json:1: a control character inside a string (escape it)");
  EXPECT_EQ(Refusal("{\"a\": \"x"), "a.json:1: unterminated string");
  EXPECT_EQ(Refusal("{\"a\": \"\\x\"}"), "a.json:1: bad escape in a string: backslash and 'x'");
  EXPECT_EQ(Refusal("{\"a\": \"\\u12\"}"), "a.json:1: bad \\u escape: expected 4 hex digits");
  EXPECT_EQ(Refusal("{\"a\": \"\\udc00\"}"), "a.json:1: bad \\u escape: a lone low surrogate");
  EXPECT_EQ(Refusal("{\"a\": \"\\ud800x\"}"), "a.json:1: bad \\u escape: a lone high surrogate");
  EXPECT_EQ(Refusal("{\"a\": 01}"), "a.json:1: bad number: a leading zero");
  EXPECT_EQ(Refusal("{\"a\": -}"), "a.json:1: bad number: expected a digit after '-'");
  EXPECT_EQ(Refusal("{\"a\": 1.}"), "a.json:1: bad number: expected a digit after '.'");
  EXPECT_EQ(Refusal("{\"a\": 1e}"), "a.json:1: bad number: expected a digit in the exponent");
  EXPECT_EQ(Refusal("{\"a\": tru}"), "a.json:1: unexpected 't': expected a value");
  EXPECT_EQ(Refusal("{\"a\": 1}\n}"), "a.json:2: unexpected '}' after the JSON value");
  EXPECT_EQ(Refusal("{\"a\": 1"), "a.json:1: unexpected end of file: expected ',' or '}'");
  EXPECT_EQ(Refusal("{\"a\": \x01}"), "a.json:1: unexpected byte 0x01: expected a value");
  EXPECT_EQ(Refusal(std::string(100, '[')), "a.json:1: nested too deeply");
}

}  // namespace
}  // namespace tenure::agent
