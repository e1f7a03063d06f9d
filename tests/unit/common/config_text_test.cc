// common/config_text: HCL and JSON into one tree with positions, the
// errors as data, and the options its two callers need. The callers' own
// texts are tested beside them (tests/unit/acl/rules_test.cc,
// tests/unit/agent/config_json_test.cc and config_hcl_test.cc).
#include "common/config_text.h"

#include <gtest/gtest.h>

#include <string>

namespace tenure {
namespace {

using Kind = ConfigValue::Kind;

ConfigValue Hcl(std::string_view text, const HclReadOptions& options = {}) {
  ConfigValue tree;
  HclReadError error;
  EXPECT_TRUE(ReadHcl(text, options, &tree, &error))
      << "error " << static_cast<int>(error.kind) << " at " << error.at.offset;
  return tree;
}

HclReadError HclError(std::string_view text, const HclReadOptions& options = {}) {
  ConfigValue tree;
  HclReadError error;
  EXPECT_FALSE(ReadHcl(text, options, &tree, &error)) << text;
  return error;
}

ConfigValue Json(std::string_view text, const JsonReadOptions& options = {}) {
  ConfigValue tree;
  JsonReadError error;
  EXPECT_TRUE(ReadJson(text, options, &tree, &error))
      << "error " << static_cast<int>(error.kind) << " at " << error.at.offset;
  return tree;
}

JsonReadError JsonError(std::string_view text, const JsonReadOptions& options = {}) {
  ConfigValue tree;
  JsonReadError error;
  EXPECT_FALSE(ReadJson(text, options, &tree, &error)) << text;
  return error;
}

void ExpectAt(const TextPosition& at, std::size_t offset, int line, int column) {
  EXPECT_EQ(at.offset, offset);
  EXPECT_EQ(at.line, line);
  EXPECT_EQ(at.column, column);
}

TEST(ConfigTextTest, HclGivesEveryValueAndMemberItsPlace) {
  const ConfigValue top = Hcl(
      "a = \"x\"\n"
      "b { c = [1, true] }\n"
      "  key \"l\" { policy = \"read\" }\n",
      HclReadOptions{.top_level_shape = [](std::string_view name) -> std::optional<HclItemShape> {
        return name == "key" ? HclItemShape::kAttributeOrLabeledBlock
                             : HclItemShape::kAttributeOrBlock;
      }});
  ASSERT_EQ(top.kind, Kind::kObject);
  ASSERT_EQ(top.members.size(), 3u);
  const ConfigMember& a = top.members[0];
  EXPECT_EQ(a.name, "a");
  ExpectAt(a.at, 0, 1, 1);
  EXPECT_EQ(a.value.kind, Kind::kString);
  EXPECT_EQ(a.value.text, "x");
  ExpectAt(a.value.at, 4, 1, 5);
  const ConfigMember& b = top.members[1];
  EXPECT_EQ(b.value.kind, Kind::kObject);
  ExpectAt(b.value.at, 10, 2, 3);  // the "{"
  const ConfigValue& list = b.value.members[0].value;
  ASSERT_EQ(list.kind, Kind::kList);
  ASSERT_EQ(list.items.size(), 2u);
  EXPECT_EQ(list.items[0].kind, Kind::kNumber);
  EXPECT_EQ(list.items[0].text, "1");
  ExpectAt(list.items[0].at, 17, 2, 10);
  EXPECT_EQ(list.items[1].kind, Kind::kBool);
  EXPECT_TRUE(list.items[1].boolean);
  const ConfigMember& key = top.members[2];
  ASSERT_TRUE(key.label.has_value());
  EXPECT_EQ(*key.label, "l");
  ExpectAt(key.at, 30, 3, 3);
}

TEST(ConfigTextTest, JsonGivesEveryValueAndMemberItsPlace) {
  const ConfigValue top = Json("{\n \"a\": [1.5, \"\\u00e9\", null],\n \"b\": {\"c\": false}}");
  ASSERT_EQ(top.kind, Kind::kObject);
  ExpectAt(top.at, 0, 1, 1);
  ASSERT_EQ(top.members.size(), 2u);
  ExpectAt(top.members[0].at, 3, 2, 2);
  const ConfigValue& list = top.members[0].value;
  ASSERT_EQ(list.items.size(), 3u);
  EXPECT_EQ(list.items[0].text, "1.5");
  ExpectAt(list.items[0].at, 9, 2, 8);
  EXPECT_EQ(list.items[1].text, "\xC3\xA9");
  EXPECT_EQ(list.items[2].kind, Kind::kNull);
  const ConfigValue& b = top.members[1].value;
  ExpectAt(b.at, 37, 3, 7);
  EXPECT_EQ(b.members[0].value.kind, Kind::kBool);
  EXPECT_FALSE(b.members[0].value.boolean);
}

TEST(ConfigTextTest, HclErrorsSayWhatWasExpectedAndWhatWasFound) {
  HclReadError e = HclError("a = ");
  EXPECT_EQ(e.kind, HclReadErrorKind::kExpectedValue);
  EXPECT_EQ(e.found.kind, HclTokenKind::kEnd);
  ExpectAt(e.at, 4, 1, 5);

  e = HclError("a {\n b = 1\n");
  EXPECT_EQ(e.kind, HclReadErrorKind::kUnclosedBlock);
  ExpectAt(e.open_at, 2, 1, 3);

  e = HclError("x = [1 2]");
  EXPECT_EQ(e.kind, HclReadErrorKind::kExpectedListSeparator);
  EXPECT_EQ(e.found.text, "2");
  ExpectAt(e.open_at, 4, 1, 5);

  e = HclError("a \"label\" { }");
  EXPECT_EQ(e.kind, HclReadErrorKind::kExpectedAfterName);
  EXPECT_EQ(e.name, "a");
  EXPECT_EQ(e.found.kind, HclTokenKind::kString);

  e = HclError("a = \"open\n");
  EXPECT_EQ(e.kind, HclReadErrorKind::kLex);
  EXPECT_EQ(e.lex.kind, HclLexErrorKind::kUnclosedString);
  ExpectAt(e.at, 4, 1, 5);
}

TEST(ConfigTextTest, HclTopLevelShapesAndRefusals) {
  HclReadOptions options;
  options.top_level_shape = [](std::string_view name) -> std::optional<HclItemShape> {
    if (name == "key") return HclItemShape::kAttributeOrLabeledBlock;
    if (name == "operator") return HclItemShape::kAttribute;
    return std::nullopt;
  };
  HclReadError e = HclError("\n nope = 1", options);
  EXPECT_EQ(e.kind, HclReadErrorKind::kNameRefused);
  EXPECT_EQ(e.name, "nope");
  ExpectAt(e.at, 2, 2, 2);
  EXPECT_EQ(HclError("operator { }", options).kind, HclReadErrorKind::kExpectedAfterName);
  EXPECT_EQ(HclError("key { }", options).kind, HclReadErrorKind::kExpectedLabel);
  e = HclError("key \"a\" = 1", options);
  EXPECT_EQ(e.kind, HclReadErrorKind::kExpectedBlockAfterLabel);
  EXPECT_EQ(e.label, "a");
  // Below the top level every item is an attribute or a block.
  EXPECT_EQ(Hcl("key \"a\" { b { c = 1 } }", options).members[0].value.members[0].name, "b");
}

TEST(ConfigTextTest, HclRepeatsAreKeptOrMergedAsAsked) {
  EXPECT_EQ(Hcl("a { x = 1 }\na { y = 2 }\nb = 1\nb = 2").members.size(), 4u);
  HclReadOptions merge;
  merge.merge_repeated_blocks = true;
  const ConfigValue merged = Hcl("a { x = 1 }\na { y = 2 }", merge);
  ASSERT_EQ(merged.members.size(), 1u);
  EXPECT_EQ(merged.members[0].value.members.size(), 2u);
  const HclReadError e = HclError("b = 1\nb = 2", merge);
  EXPECT_EQ(e.kind, HclReadErrorKind::kDuplicateName);
  EXPECT_EQ(e.at.line, 2);
  EXPECT_EQ(e.first_at.line, 1);
}

TEST(ConfigTextTest, JsonErrorsSayWhereTheReaderStoodAndWhatItFound) {
  JsonReadError e = JsonError("{\"a\" 1}");
  EXPECT_EQ(e.context, JsonContext::kColon);
  EXPECT_EQ(e.name, "a");
  EXPECT_EQ(e.found, JsonTokenKind::kNumber);
  ExpectAt(e.at, 5, 1, 6);
  EXPECT_EQ(e.found_end, 6u);

  e = JsonError("[1,]");
  EXPECT_EQ(e.context, JsonContext::kValue);
  EXPECT_EQ(e.found, JsonTokenKind::kRBracket);
  EXPECT_EQ(e.depth, 1u);

  e = JsonError("{\"a\": 1} x");
  EXPECT_EQ(e.context, JsonContext::kAfterText);
  EXPECT_EQ(e.found, JsonTokenKind::kBad);
  EXPECT_EQ(e.lex.kind, JsonLexErrorKind::kUnexpectedByte);

  e = JsonError("\n[\"ab\\q\"]");
  EXPECT_EQ(e.lex.kind, JsonLexErrorKind::kBadEscape);
  EXPECT_EQ(e.lex.byte, 'q');
  ExpectAt(e.lex.at, 6, 2, 6);
  EXPECT_EQ(e.last_token_start, 2u);  // the string's opening quote

  EXPECT_EQ(JsonError("[tru]").lex.kind, JsonLexErrorKind::kBadLiteral);
  EXPECT_EQ(JsonError("[-x]").lex.kind, JsonLexErrorKind::kMinus);
  EXPECT_EQ(JsonError("[1.]").lex.kind, JsonLexErrorKind::kFraction);
  EXPECT_EQ(JsonError("[1e]").lex.kind, JsonLexErrorKind::kExponent);
  EXPECT_EQ(JsonError("[1e+]").lex.kind, JsonLexErrorKind::kExponentSign);
  EXPECT_EQ(JsonError("[\"\\ud800\"]").lex.kind, JsonLexErrorKind::kLoneHighSurrogate);
  EXPECT_EQ(JsonError("[\"\\udc00\"]").lex.kind, JsonLexErrorKind::kLoneLowSurrogate);
  EXPECT_EQ(JsonError("[\"\\ud800\\u0041\"]").lex.kind, JsonLexErrorKind::kHighWithoutLow);
  EXPECT_EQ(JsonError("[\"\\u12\"]").lex.kind, JsonLexErrorKind::kHexDigits);
  EXPECT_EQ(JsonError("[\"a\nb\"]").lex.kind, JsonLexErrorKind::kControlByte);
  EXPECT_EQ(JsonError("[\"ab").lex.kind, JsonLexErrorKind::kUnclosedString);
  EXPECT_EQ(JsonError("").found, JsonTokenKind::kEnd);
}

TEST(ConfigTextTest, JsonOptions) {
  // Repeats are kept unless refused.
  EXPECT_EQ(Json("{\"a\": 1, \"a\": 2}").members.size(), 2u);
  const JsonReadError dup =
      JsonError("{\"a\": 1,\n \"a\": 2}", JsonReadOptions{.refuse_duplicate_names = true});
  EXPECT_EQ(dup.kind, JsonReadErrorKind::kDuplicateName);
  EXPECT_EQ(dup.first_at.line, 1);
  EXPECT_EQ(dup.at.line, 2);
  // UTF-8 is checked only when asked.
  EXPECT_EQ(Json("[\"\xC3(\"]").items[0].text, "\xC3(");
  const JsonReadError utf8 = JsonError("[\"\xC3(\"]", JsonReadOptions{.check_utf8 = true});
  EXPECT_EQ(utf8.lex.kind, JsonLexErrorKind::kBadUtf8);
  EXPECT_EQ(utf8.lex.at.offset, 3u);
  EXPECT_EQ(Json("[\"\xF0\x9F\x98\x80\"]", JsonReadOptions{.check_utf8 = true}).items[0].text,
            "\xF0\x9F\x98\x80");
  // A NUL ends the text only when asked.
  EXPECT_EQ(JsonError(std::string_view("{}\0x", 4)).lex.kind, JsonLexErrorKind::kUnexpectedByte);
  Json(std::string_view("{}\0x", 4), JsonReadOptions{.nul_ends_text = true});
  // Numbers past double's range, and "01".
  Json("[1e999]");
  EXPECT_EQ(JsonError("[1e999]", JsonReadOptions{.finite_numbers_only = true}).kind,
            JsonReadErrorKind::kNumberOverflow);
  EXPECT_EQ(JsonError("[01]").context, JsonContext::kInList);
  EXPECT_EQ(JsonError("[01]", JsonReadOptions{.refuse_digit_after_zero = true}).lex.kind,
            JsonLexErrorKind::kLeadingZero);
  // A byte order mark is content unless skipped.
  JsonError("\xEF\xBB\xBF{}");
  Json("\xEF\xBB\xBF{}", JsonReadOptions{.skip_byte_order_mark = true});
}

// The nesting limit holds in both forms whatever the text, and the reader
// stops at it rather than recursing further (a deep text is cheap to send).
TEST(ConfigTextTest, NestingStopsAtTheLimit) {
  auto nested_json = [](std::size_t levels) {
    return std::string(levels, '[') + "1" + std::string(levels, ']');
  };
  JsonReadOptions json;
  json.max_depth = 3;
  EXPECT_EQ(Json(nested_json(3), json).kind, Kind::kList);  // the 1 is at depth 3
  JsonReadError e = JsonError(nested_json(4), json);
  EXPECT_EQ(e.kind, JsonReadErrorKind::kTooDeep);
  EXPECT_EQ(e.at.offset, 4u);  // the 1
  json.depth_counts_scalars = false;
  Json(nested_json(4), json);
  e = JsonError(nested_json(5), json);
  EXPECT_EQ(e.kind, JsonReadErrorKind::kTooDeep);
  EXPECT_EQ(e.at.offset, 4u);  // the fifth "["
  // A hostile depth is refused, not recursed into.
  EXPECT_EQ(JsonError(std::string(1'000'000, '[')).kind, JsonReadErrorKind::kTooDeep);

  HclReadOptions hcl;
  hcl.max_depth = 2;
  Hcl("a { b { c = 1 } }", hcl);
  HclReadError h = HclError("a { b { c { } } }", hcl);
  EXPECT_EQ(h.kind, HclReadErrorKind::kTooDeep);
  EXPECT_EQ(h.open_at.offset, 10u);  // the third "{"
  h = HclError("a = [[[1]]]", hcl);
  EXPECT_EQ(h.kind, HclReadErrorKind::kTooDeep);
  EXPECT_EQ(h.open_at.offset, 6u);  // the third "["
  std::string deep;
  for (int i = 0; i < 100'000; ++i) deep += "a {";
  EXPECT_EQ(HclError(deep).kind, HclReadErrorKind::kTooDeep);
}

TEST(ConfigTextTest, PositionOfCountsLinesAndBytes) {
  ExpectAt(PositionOf("ab\ncd", 4), 4, 2, 2);
  ExpectAt(PositionOf("ab\n", 2), 2, 1, 3);  // the newline ends line 1
  ExpectAt(PositionOf("ab", 2), 2, 1, 3);    // the end of the text
}

}  // namespace
}  // namespace tenure
