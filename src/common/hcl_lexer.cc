#include "common/hcl_lexer.h"

#include <utility>

namespace tenure {
namespace {

bool IsIdentStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsIdentChar(char c) { return IsIdentStart(c) || IsDigit(c) || c == '-' || c == '.'; }

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

bool AppendUtf8CodePoint(std::uint32_t cp, std::string* out) {
  if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
  auto put = [out](std::uint32_t byte) { out->push_back(static_cast<char>(byte)); };
  if (cp < 0x80) {
    put(cp);
  } else if (cp < 0x800) {
    put(0xC0 | (cp >> 6));
    put(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    put(0xE0 | (cp >> 12));
    put(0x80 | ((cp >> 6) & 0x3F));
    put(0x80 | (cp & 0x3F));
  } else {
    put(0xF0 | (cp >> 18));
    put(0x80 | ((cp >> 12) & 0x3F));
    put(0x80 | ((cp >> 6) & 0x3F));
    put(0x80 | (cp & 0x3F));
  }
  return true;
}

HclLexer::HclLexer(std::string_view text, HclLexerOptions options)
    : text_(text), options_(options) {}

// Tokens and errors never span a newline, so every offset asked about is on
// the current line.
HclPosition HclLexer::Position(std::size_t offset) const {
  HclPosition at;
  at.offset = offset;
  at.line = line_;
  at.column = static_cast<int>(offset - line_start_) + 1;
  return at;
}

bool HclLexer::Fail(HclLexErrorKind kind, std::size_t offset, HclLexError* error, char escape) {
  error->kind = kind;
  error->at = Position(offset);
  error->escape = escape;
  error->text.clear();
  return false;
}

// White space and the three kinds of comments: #..., //..., /* ... */.
bool HclLexer::SkipSpace(HclLexError* error) {
  while (pos_ < text_.size()) {
    const char c = text_[pos_];
    if (c == '\n') {
      ++pos_;
      ++line_;
      line_start_ = pos_;
    } else if (c == ' ' || c == '\t' || c == '\r') {
      ++pos_;
    } else if (c == '#' || (c == '/' && At(pos_ + 1, '/'))) {
      while (pos_ < text_.size() && text_[pos_] != '\n') ++pos_;
    } else if (c == '/' && At(pos_ + 1, '*')) {
      const std::size_t end = text_.find("*/", pos_ + 2);
      if (end == std::string_view::npos)
        return Fail(HclLexErrorKind::kUnclosedComment, pos_, error);
      for (std::size_t i = pos_; i < end; ++i) {
        if (text_[i] == '\n') {
          ++line_;
          line_start_ = i + 1;
        }
      }
      pos_ = end + 2;
    } else {
      break;
    }
  }
  return true;
}

bool HclLexer::Next(HclToken* token, HclLexError* error) {
  if (!SkipSpace(error)) return false;
  token->at = Here();
  token->text.clear();
  if (pos_ >= text_.size()) {
    token->kind = HclTokenKind::kEnd;
    return true;
  }
  const char c = text_[pos_];
  const std::string_view punct = "={}[],";
  if (const std::size_t i = punct.find(c); i != std::string_view::npos) {
    constexpr HclTokenKind kinds[] = {HclTokenKind::kEquals,   HclTokenKind::kLBrace,
                                      HclTokenKind::kRBrace,   HclTokenKind::kLBracket,
                                      HclTokenKind::kRBracket, HclTokenKind::kComma};
    token->kind = kinds[i];
    ++pos_;
    return true;
  }
  if (c == '"') return String(token, error);
  if (IsIdentStart(c)) {
    const std::size_t start = pos_;
    while (pos_ < text_.size() && IsIdentChar(text_[pos_])) ++pos_;
    token->kind = HclTokenKind::kIdent;
    token->text = std::string(text_.substr(start, pos_ - start));
    return true;
  }
  if (IsDigit(c) || (c == '-' && pos_ + 1 < text_.size() && IsDigit(text_[pos_ + 1]))) {
    return Number(token, error);
  }
  if (c == '<' && At(pos_ + 1, '<')) return Fail(HclLexErrorKind::kHeredoc, pos_, error);
  const auto byte = static_cast<unsigned char>(c);
  if (byte >= 0x21 && byte < 0x7f) {
    return Fail(HclLexErrorKind::kUnexpectedCharacter, pos_, error, c);
  }
  return Fail(HclLexErrorKind::kUnexpectedByte, pos_, error, c);
}

// -?digits[.digits][(e|E)[+-]digits], not followed by an identifier character.
bool HclLexer::Number(HclToken* token, HclLexError* error) {
  const std::size_t start = pos_;
  if (text_[pos_] == '-') ++pos_;
  auto digits = [&] {
    const std::size_t from = pos_;
    while (pos_ < text_.size() && IsDigit(text_[pos_])) ++pos_;
    return pos_ - from;
  };
  const std::size_t whole = digits();
  bool ok = options_.leading_zeros || !(whole > 1 && text_[pos_ - whole] == '0');
  if (ok && At(pos_, '.')) {
    ++pos_;
    ok = digits() > 0;
  }
  if (ok && (At(pos_, 'e') || At(pos_, 'E'))) {
    ++pos_;
    if (At(pos_, '+') || At(pos_, '-')) ++pos_;
    ok = digits() > 0;
  }
  while (pos_ < text_.size() && IsIdentChar(text_[pos_])) {
    ok = false;
    ++pos_;
  }
  std::string text(text_.substr(start, pos_ - start));
  if (!ok) {
    Fail(HclLexErrorKind::kBadNumber, start, error);
    error->text = std::move(text);
    return false;
  }
  token->kind = HclTokenKind::kNumber;
  token->text = std::move(text);
  return true;
}

// A quoted string on one line, with Go's escapes (as HCL has them):
// \a \b \f \n \r \t \v \\ \" \xHH \uHHHH \UHHHHHHHH, and \NNN (octal) when
// the options allow it.
bool HclLexer::String(HclToken* token, HclLexError* error) {
  const std::size_t open = pos_++;
  std::string out;
  for (;;) {
    if (pos_ >= text_.size() || text_[pos_] == '\n') {
      return Fail(HclLexErrorKind::kUnclosedString, open, error);
    }
    const char c = text_[pos_];
    if (c == '"') {
      ++pos_;
      break;
    }
    if (c != '\\') {
      out.push_back(c);
      ++pos_;
      continue;
    }
    const std::size_t escape_at = pos_++;
    if (pos_ >= text_.size()) continue;  // reported as an unclosed string above
    const char e = text_[pos_++];
    const std::string_view simple = "abfnrtv\\\"";
    const std::string_view meaning = "\a\b\f\n\r\t\v\\\"";
    if (const std::size_t i = simple.find(e); i != std::string_view::npos) {
      out.push_back(meaning[i]);
      continue;
    }
    if (e == 'x' || e == 'u' || e == 'U') {
      const int count = e == 'x' ? 2 : e == 'u' ? 4 : 8;
      std::uint32_t value = 0;
      for (int i = 0; i < count; ++i, ++pos_) {
        const int h = pos_ < text_.size() ? HexValue(text_[pos_]) : -1;
        if (h < 0) return Fail(HclLexErrorKind::kHexEscapeDigits, escape_at, error, e);
        value = value * 16 + static_cast<std::uint32_t>(h);
      }
      if (e == 'x') {
        out.push_back(static_cast<char>(value));
      } else if (!AppendUtf8CodePoint(value, &out)) {
        return Fail(HclLexErrorKind::kNotUnicode, escape_at, error, e);
      }
      continue;
    }
    if (options_.octal_escapes && e >= '0' && e <= '7') {
      auto value = static_cast<std::uint32_t>(e - '0');
      for (int i = 0; i < 2; ++i, ++pos_) {
        if (pos_ >= text_.size() || text_[pos_] < '0' || text_[pos_] > '7') {
          return Fail(HclLexErrorKind::kOctalEscapeDigits, escape_at, error, e);
        }
        value = value * 8 + static_cast<std::uint32_t>(text_[pos_] - '0');
      }
      if (value > 255) return Fail(HclLexErrorKind::kOctalEscapeTooLarge, escape_at, error, e);
      out.push_back(static_cast<char>(value));
      continue;
    }
    return Fail(HclLexErrorKind::kUnknownEscape, escape_at, error, e);
  }
  token->kind = HclTokenKind::kString;
  token->text = std::move(out);
  return true;
}

}  // namespace tenure
