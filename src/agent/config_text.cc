// The common reader's options for config files, and its errors in the
// config files' words ("a.json:7: unexpected '}': expected a value").
#include "agent/config_text.h"

#include <string>

namespace tenure::agent {
namespace {

// Deep enough for any config file (the deepest setting nests 3), shallow
// enough that the reader's recursion stays small on a hostile one.
constexpr std::size_t kMaxDepth = 64;

Status Fail(std::string_view name, int line, const std::string& why) {
  return Status::InvalidArgument(std::string(name) + ":" + std::to_string(line) + ": " + why);
}

std::string Hex(unsigned char byte) {
  static constexpr char kHex[] = "0123456789abcdef";
  return std::string("0x") + kHex[byte >> 4] + kHex[byte & 15];
}

// --- JSON -------------------------------------------------------------------------

// The byte at `offset`, for messages.
std::string Describe(std::string_view text, std::size_t offset) {
  if (offset >= text.size()) return "end of file";
  const auto c = static_cast<unsigned char>(text[offset]);
  if (c >= 0x20 && c < 0x7f) return std::string("'") + text[offset] + "'";
  return "byte " + Hex(c);
}

// A string's or a number's own complaint; empty for any other.
std::string LexWhy(std::string_view text, const JsonLexError& lex) {
  switch (lex.kind) {
    case JsonLexErrorKind::kUnclosedString:
      return "unterminated string";
    case JsonLexErrorKind::kControlByte:
      return lex.byte == '\n' ? "unterminated string (a line break inside it)"
                              : "a control character inside a string (escape it)";
    case JsonLexErrorKind::kBadEscape:
      if (lex.at.offset >= text.size()) return "unterminated string";
      return "bad escape in a string: backslash and " + Describe(text, lex.at.offset);
    case JsonLexErrorKind::kHexDigits:
      return "bad \\u escape: expected 4 hex digits";
    case JsonLexErrorKind::kLoneLowSurrogate:
      return "bad \\u escape: a lone low surrogate";
    case JsonLexErrorKind::kLoneHighSurrogate:
      return "bad \\u escape: a lone high surrogate";
    case JsonLexErrorKind::kHighWithoutLow:
      return "bad \\u escape: a high surrogate without its low one";
    case JsonLexErrorKind::kMinus:
      return "bad number: expected a digit after '-'";
    case JsonLexErrorKind::kFraction:
      return "bad number: expected a digit after '.'";
    case JsonLexErrorKind::kExponent:
    case JsonLexErrorKind::kExponentSign:
      return "bad number: expected a digit in the exponent";
    case JsonLexErrorKind::kLeadingZero:
      return "bad number: a leading zero";
    case JsonLexErrorKind::kUnexpectedByte:
    case JsonLexErrorKind::kBadLiteral:
    case JsonLexErrorKind::kBadUtf8:  // not checked in config files
      break;
  }
  return "";
}

Status JsonError(std::string_view name, std::string_view text, const JsonReadError& error) {
  const int line = error.at.line;
  switch (error.kind) {
    case JsonReadErrorKind::kTooDeep:
      return Fail(name, line, "nested too deeply");
    case JsonReadErrorKind::kDuplicateName:
      return Fail(name, line,
                  "duplicate key \"" + error.name + "\" (first at line " +
                      std::to_string(error.first_at.line) + ")");
    case JsonReadErrorKind::kNumberOverflow:  // not checked in config files
    case JsonReadErrorKind::kUnexpected:
      break;
  }
  const std::string found = Describe(text, error.at.offset);
  const bool bad = error.found == JsonTokenKind::kBad;
  switch (error.context) {
    case JsonContext::kValue: {
      if (error.found == JsonTokenKind::kEnd && error.depth == 0) {
        return Fail(name, line, "empty file: expected a JSON object");
      }
      if (bad) {
        if (std::string why = LexWhy(text, error.lex); !why.empty()) return Fail(name, line, why);
      }
      if (error.at.offset < text.size() && text[error.at.offset] == '/') {
        return Fail(name, line, "comments are not JSON");
      }
      return Fail(name, line, "unexpected " + found + ": expected a value");
    }
    case JsonContext::kName:
      if (bad && text[error.at.offset] == '"') {
        return Fail(name, line, LexWhy(text, error.lex));
      }
      return Fail(name, line, "unexpected " + found + ": expected a key in double quotes");
    case JsonContext::kColon:
      return Fail(name, line,
                  "unexpected " + found + ": expected ':' after \"" + error.name + "\"");
    case JsonContext::kInList:
      return Fail(name, line, "unexpected " + found + ": expected ',' or ']'");
    case JsonContext::kInObject:
      return Fail(name, line, "unexpected " + found + ": expected ',' or '}'");
    case JsonContext::kAfterText:
      return Fail(name, line, "unexpected " + found + " after the JSON value");
  }
  return Fail(name, line, "unexpected " + found);
}

// --- HCL --------------------------------------------------------------------------

std::string Found(const HclToken& token) {
  switch (token.kind) {
    case HclTokenKind::kEnd:
      return "end of file";
    case HclTokenKind::kIdent:
      return token.text;
    case HclTokenKind::kString:
      return "\"" + token.text + "\"";
    case HclTokenKind::kNumber:
      return token.text;
    case HclTokenKind::kEquals:
      return "'='";
    case HclTokenKind::kLBrace:
      return "'{'";
    case HclTokenKind::kRBrace:
      return "'}'";
    case HclTokenKind::kLBracket:
      return "'['";
    case HclTokenKind::kRBracket:
      return "']'";
    case HclTokenKind::kComma:
      return "','";
  }
  return "?";
}

Status HclLexWhy(std::string_view name, const HclLexError& error) {
  const int line = error.at.line;
  const char e = error.escape;
  switch (error.kind) {
    case HclLexErrorKind::kUnclosedComment:
      return Fail(name, line, "this /* comment is never closed");
    case HclLexErrorKind::kUnclosedString:
      return Fail(name, line, "unterminated string (it must end on its line)");
    case HclLexErrorKind::kUnknownEscape:
    case HclLexErrorKind::kOctalEscapeDigits:  // octal escapes are off
    case HclLexErrorKind::kOctalEscapeTooLarge:
      return Fail(name, line, std::string("bad escape in a string: backslash and '") + e + "'");
    case HclLexErrorKind::kHexEscapeDigits:
      return Fail(name, line, std::string("bad \\") + e + " escape: hex digits");
    case HclLexErrorKind::kNotUnicode:
      return Fail(name, line, "bad \\" + std::string(1, e) + " escape: not a Unicode character");
    case HclLexErrorKind::kBadNumber:
      return Fail(name, line, "bad number " + error.text);
    case HclLexErrorKind::kHeredoc:
      return Fail(name, line, "heredocs (<<) are not read: quote it");
    case HclLexErrorKind::kUnexpectedCharacter:
      return Fail(name, line, std::string("unexpected '") + e + "'");
    case HclLexErrorKind::kUnexpectedByte:
      break;
  }
  return Fail(name, line, "unexpected byte " + Hex(static_cast<unsigned char>(e)));
}

Status HclError(std::string_view name, const HclReadError& error) {
  using Kind = HclReadErrorKind;
  const HclToken& found = error.found;
  auto expected = [&](const std::string& what) {
    return Fail(name, found.at.line, "unexpected " + Found(found) + ": expected " + what);
  };
  switch (error.kind) {
    case Kind::kLex:
      return HclLexWhy(name, error.lex);
    case Kind::kTooDeep:
      return Fail(name, error.at.line, "nested too deeply");
    case Kind::kUnclosedBlock:
      return Fail(name, error.open_at.line, "this '{' is never closed");
    case Kind::kUnclosedList:
      return Fail(name, error.open_at.line, "this '[' is never closed");
    case Kind::kExpectedName:
      return expected(error.top_level ? "a key" : "a key or '}'");
    case Kind::kExpectedAfterName:
    case Kind::kExpectedLabel:  // labels are not offered to config files
    case Kind::kExpectedBlockAfterLabel:
      if (found.kind == HclTokenKind::kString || found.kind == HclTokenKind::kIdent) {
        return Fail(name, found.at.line,
                    "a block label (" + error.name + " " + Found(found) +
                        " { }) is not a setting of tenure server");
      }
      return expected("'=' or '{' after " + error.name);
    case Kind::kExpectedValue:
      return expected("a value");
    case Kind::kExpectedListSeparator:
      if (found.kind == HclTokenKind::kEnd) {
        return Fail(name, error.open_at.line, "this '[' is never closed");
      }
      return expected("',' or ']'");
    case Kind::kDuplicateName:
      return Fail(name, error.at.line,
                  "duplicate key \"" + error.name + "\" (first at line " +
                      std::to_string(error.first_at.line) + ")");
    case Kind::kNameRefused:  // every name is offered
      break;
  }
  return Fail(name, error.at.line, "unexpected " + Found(found));
}

}  // namespace

Result<ConfigValue> ParseJsonWithLines(std::string_view name, std::string_view text) {
  JsonReadOptions options;
  options.skip_byte_order_mark = true;
  options.max_depth = kMaxDepth;
  options.depth_counts_scalars = true;
  options.refuse_duplicate_names = true;
  options.refuse_digit_after_zero = true;
  ConfigValue root;
  JsonReadError error;
  if (!ReadJson(text, options, &root, &error)) return JsonError(name, text, error);
  return root;
}

Result<ConfigValue> ParseHclWithLines(std::string_view name, std::string_view text) {
  HclReadOptions options;
  options.lexer = HclLexerOptions{.octal_escapes = false, .leading_zeros = false};
  options.skip_byte_order_mark = true;
  options.max_depth = kMaxDepth;
  options.merge_repeated_blocks = true;
  ConfigValue root;
  HclReadError error;
  if (!ReadHcl(text, options, &root, &error)) return HclError(name, error);
  return root;
}

std::string_view JsonKindName(ConfigValue::Kind kind) {
  switch (kind) {
    case ConfigValue::Kind::kNull:
      return "null";
    case ConfigValue::Kind::kBool:
      return "a boolean";
    case ConfigValue::Kind::kNumber:
      return "a number";
    case ConfigValue::Kind::kString:
      return "a string";
    case ConfigValue::Kind::kList:
      return "an array";
    case ConfigValue::Kind::kObject:
      return "an object";
  }
  return "a value";
}

}  // namespace tenure::agent
