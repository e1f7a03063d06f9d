// The rules' options for the common reader, and its errors in the rules'
// words. HCL errors name what was expected and what was found; JSON errors
// are the texts nlohmann::json 3.11 gave when it read the rules' JSON (its
// SAX parser: the context, the token or the lexer's complaint, what was
// expected), at the byte where it stopped, so that no answer changes.
#include "acl/rules_text.h"

#include <cstdio>
#include <string>

#include "acl/rule_resources.h"
#include "common/limits.h"
#include "common/strings.h"

namespace tenure::acl {
namespace {

std::string TooDeep() {
  return "rules nest deeper than " + std::to_string(limits::kAclRulesNestingMax) + " levels";
}

// --- HCL -----------------------------------------------------------------------

// What the token is, for "found ..." in errors.
std::string Found(const HclToken& token) {
  switch (token.kind) {
    case HclTokenKind::kEnd:
      return "the end of the rules";
    case HclTokenKind::kIdent:
      return token.text;
    case HclTokenKind::kString:
      return GoQuote(token.text);
    case HclTokenKind::kNumber:
      return "the number " + token.text;
    case HclTokenKind::kEquals:
      return "\"=\"";
    case HclTokenKind::kLBrace:
      return "\"{\"";
    case HclTokenKind::kRBrace:
      return "\"}\"";
    case HclTokenKind::kLBracket:
      return "\"[\"";
    case HclTokenKind::kRBracket:
      return "\"]\"";
    case HclTokenKind::kComma:
      return "\",\"";
  }
  return "?";
}

Status HclLexErrorText(std::string_view text, const HclLexError& error) {
  const std::size_t at = error.at.offset;
  const std::string e(1, error.escape);
  switch (error.kind) {
    case HclLexErrorKind::kUnclosedComment:
      return RulesErrorAt(text, at, "this /* comment is never closed with */");
    case HclLexErrorKind::kUnclosedString:
      return RulesErrorAt(text, at,
                          "this string is never closed: expected '\"' before the end of the "
                          "line");
    case HclLexErrorKind::kUnknownEscape:
      return RulesErrorAt(text, at,
                          "unknown escape \\" + e + " in a string; use \\\\ for a backslash");
    case HclLexErrorKind::kHexEscapeDigits:
      return RulesErrorAt(text, at,
                          "\\" + e + " needs " +
                              std::to_string(e == "x"   ? 2
                                             : e == "u" ? 4
                                                        : 8) +
                              " hexadecimal digits");
    case HclLexErrorKind::kNotUnicode:
      return RulesErrorAt(text, at, "\\" + e + " escape is not a Unicode code point");
    case HclLexErrorKind::kOctalEscapeDigits:
      return RulesErrorAt(text, at, "an octal escape needs 3 digits");
    case HclLexErrorKind::kOctalEscapeTooLarge:
      return RulesErrorAt(text, at, "an octal escape above \\377");
    case HclLexErrorKind::kBadNumber:
      return RulesErrorAt(text, at, "malformed number");
    case HclLexErrorKind::kHeredoc:
      return RulesErrorAt(text, at,
                          "heredoc strings (<<) are not supported in ACL rules; use a quoted "
                          "string");
    case HclLexErrorKind::kUnexpectedCharacter:
      return RulesErrorAt(text, at, "unexpected character '" + e + "'");
    case HclLexErrorKind::kUnexpectedByte:
      break;
  }
  static constexpr char kHex[] = "0123456789abcdef";
  const auto byte = static_cast<unsigned char>(error.escape);
  return RulesErrorAt(text, at,
                      std::string("unexpected byte 0x") + kHex[byte >> 4] + kHex[byte & 15]);
}

// --- JSON: nlohmann::json's texts ----------------------------------------------------

std::string_view TokenName(JsonTokenKind kind) {
  switch (kind) {
    case JsonTokenKind::kEnd:
      return "end of input";
    case JsonTokenKind::kLBrace:
      return "'{'";
    case JsonTokenKind::kRBrace:
      return "'}'";
    case JsonTokenKind::kLBracket:
      return "'['";
    case JsonTokenKind::kRBracket:
      return "']'";
    case JsonTokenKind::kColon:
      return "':'";
    case JsonTokenKind::kComma:
      return "','";
    case JsonTokenKind::kString:
      return "string literal";
    case JsonTokenKind::kNumber:
      return "number literal";
    case JsonTokenKind::kTrue:
      return "true literal";
    case JsonTokenKind::kFalse:
      return "false literal";
    case JsonTokenKind::kNull:
      return "null literal";
    case JsonTokenKind::kBad:
      return "<parse error>";
  }
  return "unknown token";
}

std::string ControlByteText(unsigned char byte) {
  static constexpr const char* kNames[32] = {"NUL", "SOH", "STX", "ETX", "EOT", "ENQ", "ACK", "BEL",
                                             "BS",  "HT",  "LF",  "VT",  "FF",  "CR",  "SO",  "SI",
                                             "DLE", "DC1", "DC2", "DC3", "DC4", "NAK", "SYN", "ETB",
                                             "CAN", "EM",  "SUB", "ESC", "FS",  "GS",  "RS",  "US"};
  char code[8];
  std::snprintf(code, sizeof code, "%.4X", static_cast<unsigned>(byte));
  std::string out = std::string("invalid string: control character U+") + code + " (" +
                    kNames[byte & 31] + ") must be escaped to \\u" + code;
  const std::string_view short_form = byte == '\b'   ? "\\b"
                                      : byte == '\t' ? "\\t"
                                      : byte == '\n' ? "\\n"
                                      : byte == '\f' ? "\\f"
                                      : byte == '\r' ? "\\r"
                                                     : "";
  if (!short_form.empty()) out += " or " + std::string(short_form);
  return out;
}

std::string LexErrorText(const JsonLexError& error) {
  switch (error.kind) {
    case JsonLexErrorKind::kUnexpectedByte:
    case JsonLexErrorKind::kBadLiteral:
    case JsonLexErrorKind::kLeadingZero:  // not an option of the rules
      return "invalid literal";
    case JsonLexErrorKind::kMinus:
      return "invalid number; expected digit after '-'";
    case JsonLexErrorKind::kFraction:
      return "invalid number; expected digit after '.'";
    case JsonLexErrorKind::kExponent:
      return "invalid number; expected '+', '-', or digit after exponent";
    case JsonLexErrorKind::kExponentSign:
      return "invalid number; expected digit after exponent sign";
    case JsonLexErrorKind::kUnclosedString:
      return "invalid string: missing closing quote";
    case JsonLexErrorKind::kControlByte:
      return ControlByteText(error.byte);
    case JsonLexErrorKind::kBadEscape:
      return "invalid string: forbidden character after backslash";
    case JsonLexErrorKind::kHexDigits:
      return "invalid string: '\\u' must be followed by 4 hex digits";
    case JsonLexErrorKind::kLoneLowSurrogate:
      return "invalid string: surrogate U+DC00..U+DFFF must follow U+D800..U+DBFF";
    case JsonLexErrorKind::kLoneHighSurrogate:
    case JsonLexErrorKind::kHighWithoutLow:
      return "invalid string: surrogate U+D800..U+DBFF must be followed by U+DC00..U+DFFF";
    case JsonLexErrorKind::kBadUtf8:
      return "invalid string: ill-formed UTF-8 byte";
  }
  return "invalid literal";
}

// The bytes read since the last string or number began, up to `position`,
// control bytes as <U+XXXX>: the library's "last read".
std::string LastRead(std::string_view text, std::size_t from, std::size_t position) {
  std::string out;
  const std::size_t end = position < text.size() ? position : text.size();
  for (std::size_t i = from; i < end; ++i) {
    const auto byte = static_cast<unsigned char>(text[i]);
    if (byte <= 0x1F) {
      char code[12];
      std::snprintf(code, sizeof code, "<U+%.4X>", static_cast<unsigned>(byte));
      out += code;
    } else {
      out.push_back(text[i]);
    }
  }
  return out;
}

// The message less its "; last read: '...'", which holds the bytes since
// the last token began and may start tokens earlier: the line and column
// say it better.
std::string WithoutLastRead(std::string what) {
  const std::size_t last_read = what.find("; last read: '");
  if (last_read != std::string::npos) {
    const std::size_t expected = what.find("'; expected ", last_read);
    what.erase(last_read,
               expected == std::string::npos ? std::string::npos : expected + 1 - last_read);
  }
  return what;
}

}  // namespace

Status RulesErrorAt(std::string_view text, std::size_t offset, std::string_view what) {
  const TextPosition at = PositionOf(text, offset);
  return Status::InvalidArgument("line " + std::to_string(at.line) + ", column " +
                                 std::to_string(at.column) + ": " + std::string(what));
}

Status RulesHclError(std::string_view text, const HclReadError& error) {
  using Kind = HclReadErrorKind;
  auto expected = [&](const std::string& what) {
    return RulesErrorAt(text, error.found.at.offset,
                        "expected " + what + ", found " + Found(error.found));
  };
  switch (error.kind) {
    case Kind::kLex:
      return HclLexErrorText(text, error.lex);
    case Kind::kTooDeep:
      return RulesErrorAt(text, error.open_at.offset, TooDeep());
    case Kind::kUnclosedBlock:
      return RulesErrorAt(text, error.open_at.offset,
                          "this \"{\" is never closed: expected \"}\", found the end of the rules");
    case Kind::kUnclosedList:
      return RulesErrorAt(text, error.open_at.offset,
                          "this \"[\" is never closed: expected \"]\", found the end of the rules");
    case Kind::kExpectedName:
      return expected(error.top_level ? "a resource name such as key_prefix"
                                      : "an attribute name or \"}\"");
    case Kind::kExpectedAfterName:
      return expected("\"=\" after " + GoQuote(error.name));
    case Kind::kExpectedLabel:
      return expected("a quoted label or \"=\" after " + GoQuote(error.name));
    case Kind::kExpectedBlockAfterLabel:
      return expected("\"{\" after " + error.name + " " + GoQuote(error.label));
    case Kind::kExpectedValue:
      return expected(std::string("a value ") +
                      (error.in_list ? "or \"]\" in a list" : "after \"=\""));
    case Kind::kExpectedListSeparator:
      return expected("\",\" or \"]\" after a list element");
    case Kind::kNameRefused:
      return RulesErrorAt(text, error.at.offset, UnknownResource(error.name));
    case Kind::kDuplicateName:  // not an option of the rules: repeats are kept
      break;
  }
  return RulesErrorAt(text, error.at.offset, "invalid rules");
}

Status RulesJsonError(std::string_view text, const JsonReadError& error) {
  if (error.kind == JsonReadErrorKind::kTooDeep) {
    return RulesErrorAt(text, error.at.offset, TooDeep());
  }
  if (error.kind == JsonReadErrorKind::kNumberOverflow) {
    return RulesErrorAt(
        text, error.found_end - 1,
        "invalid JSON: [json.exception.out_of_range.406] number overflow parsing '" +
            error.found_text + "'");
  }
  std::string_view context = "value";
  std::string_view expected;
  switch (error.context) {
    case JsonContext::kValue:
      expected = error.found == JsonTokenKind::kBad ? "" : "'[', '{', or a literal";
      break;
    case JsonContext::kName:
      context = "object key";
      expected = "string literal";
      break;
    case JsonContext::kColon:
      context = "object separator";
      expected = "':'";
      break;
    case JsonContext::kInList:
      context = "array";
      expected = "']'";
      break;
    case JsonContext::kInObject:
      context = "object";
      expected = "'}'";
      break;
    case JsonContext::kAfterText:
      expected = "end of input";
      break;
  }
  // Where the library stopped: just past the token, or past the byte its
  // lexer refused; the error names the byte before that.
  const bool bad = error.found == JsonTokenKind::kBad;
  const std::size_t position = bad ? error.lex.at.offset + 1 : error.found_end;
  std::string what = "syntax error while parsing " + std::string(context) + " - ";
  if (bad) {
    what += LexErrorText(error.lex) + "; last read: '" +
            LastRead(text, error.last_token_start, position) + "'";
  } else {
    what += "unexpected " + std::string(TokenName(error.found));
  }
  if (!expected.empty()) what += "; expected " + std::string(expected);
  return RulesErrorAt(text, position - 1, "invalid JSON: " + WithoutLastRead(std::move(what)));
}

Result<ConfigValue> ReadRulesText(std::string_view text) {
  ConfigValue tree;
  const std::size_t first = text.find_first_not_of(" \t\r\n");
  if (first != std::string_view::npos && text[first] == '{') {
    JsonReadOptions options;
    // As nlohmann::json read it: at most kAclRulesNestingMax objects and
    // lists inside each other, UTF-8 checked, a NUL ends the text, numbers
    // within double's range, repeats kept.
    options.max_depth = limits::kAclRulesNestingMax - 1;
    options.depth_counts_scalars = false;
    options.check_utf8 = true;
    options.nul_ends_text = true;
    options.finite_numbers_only = true;
    JsonReadError error;
    if (!ReadJson(text, options, &tree, &error)) return RulesJsonError(text, error);
    return tree;
  }
  HclReadOptions options;
  options.lexer = HclLexerOptions{.octal_escapes = true, .leading_zeros = true};
  options.max_depth = limits::kAclRulesNestingMax;
  options.top_level_shape = [](std::string_view name) -> std::optional<HclItemShape> {
    const ResourceInfo* info = FindResource(name);
    if (info == nullptr) return std::nullopt;
    return info->labeled ? HclItemShape::kAttributeOrLabeledBlock : HclItemShape::kAttribute;
  };
  HclReadError error;
  if (!ReadHcl(text, options, &tree, &error)) return RulesHclError(text, error);
  return tree;
}

}  // namespace tenure::acl
