#include "common/hcl_lexer.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace tenure {
namespace {

// Every token of `text`, up to and including kEnd; fails the test on an error.
std::vector<HclToken> Tokens(std::string_view text, HclLexerOptions options = {}) {
  HclLexer lexer(text, options);
  std::vector<HclToken> tokens;
  for (;;) {
    HclToken token;
    HclLexError error;
    if (!lexer.Next(&token, &error)) {
      ADD_FAILURE() << "error " << static_cast<int>(error.kind) << " at " << error.at.offset;
      return tokens;
    }
    tokens.push_back(token);
    if (token.kind == HclTokenKind::kEnd) return tokens;
  }
}

// The first error in `text`; fails the test when there is none.
HclLexError FirstError(std::string_view text, HclLexerOptions options = {}) {
  HclLexer lexer(text, options);
  HclToken token;
  HclLexError error;
  while (lexer.Next(&token, &error)) {
    if (token.kind == HclTokenKind::kEnd) {
      ADD_FAILURE() << "no error in " << text;
      return error;
    }
  }
  return error;
}

std::string DecodedString(std::string_view text, HclLexerOptions options = {}) {
  std::vector<HclToken> tokens = Tokens(text, options);
  EXPECT_EQ(tokens.size(), 2u);
  if (tokens.empty()) return "";
  EXPECT_EQ(tokens[0].kind, HclTokenKind::kString);
  return tokens[0].text;
}

TEST(HclLexerTest, ReadsEveryTokenKind) {
  std::vector<HclToken> tokens = Tokens("key_prefix \"a/b\" = { } [ ] , -1.5e3 true");
  const std::vector<HclTokenKind> kinds = {
      HclTokenKind::kIdent,    HclTokenKind::kString, HclTokenKind::kEquals,
      HclTokenKind::kLBrace,   HclTokenKind::kRBrace, HclTokenKind::kLBracket,
      HclTokenKind::kRBracket, HclTokenKind::kComma,  HclTokenKind::kNumber,
      HclTokenKind::kIdent,    HclTokenKind::kEnd};
  ASSERT_EQ(tokens.size(), kinds.size());
  for (std::size_t i = 0; i < kinds.size(); ++i) EXPECT_EQ(tokens[i].kind, kinds[i]) << i;
  EXPECT_EQ(tokens[0].text, "key_prefix");
  EXPECT_EQ(tokens[1].text, "a/b");
  EXPECT_EQ(tokens[8].text, "-1.5e3");
  EXPECT_EQ(tokens[9].text, "true");  // booleans are identifiers to the parsers
}

TEST(HclLexerTest, IdentifiersTakeDigitsDashesAndDots) {
  std::vector<HclToken> tokens = Tokens("_a-b.c9 x");
  ASSERT_EQ(tokens.size(), 3u);
  EXPECT_EQ(tokens[0].text, "_a-b.c9");
  EXPECT_EQ(tokens[1].text, "x");
}

TEST(HclLexerTest, EndRepeatsAtTheEnd) {
  HclLexer lexer("  ");
  HclToken token;
  HclLexError error;
  ASSERT_TRUE(lexer.Next(&token, &error));
  EXPECT_EQ(token.kind, HclTokenKind::kEnd);
  EXPECT_EQ(token.at.offset, 2u);
  ASSERT_TRUE(lexer.Next(&token, &error));
  EXPECT_EQ(token.kind, HclTokenKind::kEnd);
}

TEST(HclLexerTest, SkipsTheThreeKindsOfComments) {
  std::vector<HclToken> tokens = Tokens("# one\na // two\n/* three\nfour */ b /**/c");
  ASSERT_EQ(tokens.size(), 4u);
  EXPECT_EQ(tokens[0].text, "a");
  EXPECT_EQ(tokens[1].text, "b");
  EXPECT_EQ(tokens[2].text, "c");
  EXPECT_EQ(tokens[0].at.line, 2);
  EXPECT_EQ(tokens[1].at.line, 4);  // the newline inside /* */ counts
  EXPECT_EQ(tokens[1].at.column, 9);
}

TEST(HclLexerTest, GivesOffsetsLinesAndColumns) {
  std::vector<HclToken> tokens = Tokens("a = 1\n\r\n  b\t= \"x\"");
  ASSERT_EQ(tokens.size(), 7u);
  EXPECT_EQ(tokens[0].at.offset, 0u);
  EXPECT_EQ(tokens[0].at.line, 1);
  EXPECT_EQ(tokens[0].at.column, 1);
  EXPECT_EQ(tokens[2].at.offset, 4u);
  EXPECT_EQ(tokens[2].at.column, 5);
  EXPECT_EQ(tokens[3].at.offset, 10u);  // b
  EXPECT_EQ(tokens[3].at.line, 3);
  EXPECT_EQ(tokens[3].at.column, 3);
  EXPECT_EQ(tokens[5].at.offset, 14u);  // "x"
  EXPECT_EQ(tokens[5].at.column, 7);
  EXPECT_EQ(tokens[6].at.offset, 17u);  // the end
}

TEST(HclLexerTest, DecodesGoEscapes) {
  EXPECT_EQ(DecodedString(R"("\a\b\f\n\r\t\v\\\"")"), "\a\b\f\n\r\t\v\\\"");
  EXPECT_EQ(DecodedString(R"("\x41\u00e9\U0001F600")"), "A\xC3\xA9\xF0\x9F\x98\x80");
  EXPECT_EQ(DecodedString(R"("plain")"), "plain");
  EXPECT_EQ(DecodedString(R"("")"), "");
}

TEST(HclLexerTest, OctalEscapesOnlyWhenAsked) {
  EXPECT_EQ(DecodedString(R"("\101\000x")", {.octal_escapes = true}), std::string("A\0x", 3));
  HclLexError error = FirstError(R"("\101")");
  EXPECT_EQ(error.kind, HclLexErrorKind::kUnknownEscape);
  EXPECT_EQ(error.escape, '1');
  error = FirstError(R"("\12")", {.octal_escapes = true});
  EXPECT_EQ(error.kind, HclLexErrorKind::kOctalEscapeDigits);
  error = FirstError(R"("\400")", {.octal_escapes = true});
  EXPECT_EQ(error.kind, HclLexErrorKind::kOctalEscapeTooLarge);
  EXPECT_EQ(error.at.offset, 1u);
}

TEST(HclLexerTest, ReportsBadEscapesAtTheBackslash) {
  HclLexError error = FirstError(R"(a = "x\q")");
  EXPECT_EQ(error.kind, HclLexErrorKind::kUnknownEscape);
  EXPECT_EQ(error.escape, 'q');
  EXPECT_EQ(error.at.offset, 6u);
  EXPECT_EQ(error.at.column, 7);
  error = FirstError(R"("\x4")");
  EXPECT_EQ(error.kind, HclLexErrorKind::kHexEscapeDigits);
  EXPECT_EQ(error.escape, 'x');
  error = FirstError(R"("\u12G4")");
  EXPECT_EQ(error.kind, HclLexErrorKind::kHexEscapeDigits);
  EXPECT_EQ(error.escape, 'u');
  error = FirstError(R"("\uD800")");
  EXPECT_EQ(error.kind, HclLexErrorKind::kNotUnicode);
  EXPECT_EQ(error.escape, 'u');
  error = FirstError(R"("\U00110000")");
  EXPECT_EQ(error.kind, HclLexErrorKind::kNotUnicode);
  EXPECT_EQ(error.escape, 'U');
}

TEST(HclLexerTest, StringsEndOnTheirLine) {
  HclLexError error = FirstError("a\n  \"abc\ndef\"");
  EXPECT_EQ(error.kind, HclLexErrorKind::kUnclosedString);
  EXPECT_EQ(error.at.offset, 4u);  // the opening quote
  EXPECT_EQ(error.at.line, 2);
  EXPECT_EQ(error.at.column, 3);
  EXPECT_EQ(FirstError("\"abc").kind, HclLexErrorKind::kUnclosedString);
  EXPECT_EQ(FirstError("\"abc\\").kind, HclLexErrorKind::kUnclosedString);
}

TEST(HclLexerTest, ReportsAnUnclosedCommentAtItsStart) {
  HclLexError error = FirstError("a\nb /* c\nd");
  EXPECT_EQ(error.kind, HclLexErrorKind::kUnclosedComment);
  EXPECT_EQ(error.at.offset, 4u);
  EXPECT_EQ(error.at.line, 2);
  EXPECT_EQ(error.at.column, 3);
}

TEST(HclLexerTest, ReadsNumbers) {
  for (std::string_view number : {"0", "7", "-3", "1.25", "2e10", "2E-3", "-0.5e+2", "007"}) {
    std::vector<HclToken> tokens = Tokens(number);
    ASSERT_EQ(tokens.size(), 2u) << number;
    EXPECT_EQ(tokens[0].kind, HclTokenKind::kNumber) << number;
    EXPECT_EQ(tokens[0].text, number);
  }
}

TEST(HclLexerTest, RefusesMalformedNumbers) {
  for (std::string_view number : {"1.", "1.x", "2e", "2e+", "12abc", "3.5.1"}) {
    HclLexError error = FirstError(std::string("x = ") + std::string(number));
    EXPECT_EQ(error.kind, HclLexErrorKind::kBadNumber) << number;
    EXPECT_EQ(error.at.offset, 4u) << number;
  }
  HclLexError error = FirstError("12abc,");
  EXPECT_EQ(error.text, "12abc");  // with the identifier characters after it
  error = FirstError("-012", {.leading_zeros = false});
  EXPECT_EQ(error.kind, HclLexErrorKind::kBadNumber);
  EXPECT_EQ(error.text, "-012");
  EXPECT_EQ(Tokens("0 -0 10", {.leading_zeros = false}).size(), 4u);
}

TEST(HclLexerTest, RefusesHeredocsAndStrayBytes) {
  HclLexError error = FirstError("a = <<EOF");
  EXPECT_EQ(error.kind, HclLexErrorKind::kHeredoc);
  EXPECT_EQ(error.at.offset, 4u);
  error = FirstError("a ; b");
  EXPECT_EQ(error.kind, HclLexErrorKind::kUnexpectedCharacter);
  EXPECT_EQ(error.escape, ';');
  EXPECT_EQ(error.at.column, 3);
  error = FirstError("a <");
  EXPECT_EQ(error.kind, HclLexErrorKind::kUnexpectedCharacter);
  EXPECT_EQ(error.escape, '<');
  error = FirstError("a \x01");
  EXPECT_EQ(error.kind, HclLexErrorKind::kUnexpectedByte);
  EXPECT_EQ(error.escape, '\x01');
  error = FirstError("\xC3\xA9");
  EXPECT_EQ(error.kind, HclLexErrorKind::kUnexpectedByte);
  EXPECT_EQ(static_cast<unsigned char>(error.escape), 0xC3);
}

TEST(HclLexerTest, AppendsUtf8) {
  std::string out;
  EXPECT_TRUE(AppendUtf8CodePoint(0x24, &out));
  EXPECT_TRUE(AppendUtf8CodePoint(0x20AC, &out));
  EXPECT_FALSE(AppendUtf8CodePoint(0xDC00, &out));
  EXPECT_FALSE(AppendUtf8CodePoint(0x110000, &out));
  EXPECT_EQ(out, "$\xE2\x82\xAC");
}

}  // namespace
}  // namespace tenure
