// ReadJson: a lexer that knows where every token starts and ends, and a
// recursive descent that says, when it stops, what it wanted (JsonContext).
// Depth is checked before a value is read, so recursion is bounded by
// max_depth whatever the text.
#include <cmath>
#include <cstdlib>
#include <string>
#include <utility>

#include "common/config_text.h"

namespace tenure {
namespace {

constexpr std::string_view kByteOrderMark = "\xEF\xBB\xBF";

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

struct Token {
  JsonTokenKind kind = JsonTokenKind::kEnd;
  TextPosition at;
  std::size_t end = 0;  // just past the token; the end of the text counts one byte
  std::string text;     // a string decoded, a number as written
  JsonLexError lex;     // kBad
};

class JsonReader {
 public:
  JsonReader(std::string_view text, const JsonReadOptions& options, JsonReadError* error)
      : text_(text), options_(options), error_(error) {}

  bool Document(ConfigValue* root) {
    if (options_.skip_byte_order_mark && text_.substr(0, 3) == kByteOrderMark) pos_ = 3;
    if (!Value(root, 0)) return false;
    Token token;
    Lex(&token);
    if (token.kind != JsonTokenKind::kEnd) return Unexpected(JsonContext::kAfterText, token);
    return true;
  }

 private:
  using Tok = JsonTokenKind;
  using Lx = JsonLexErrorKind;

  TextPosition Here(std::size_t offset) const {
    TextPosition at;
    at.offset = offset;
    at.line = line_;
    at.column = static_cast<int>(offset - line_start_) + 1;
    return at;
  }

  bool At(std::size_t i, char c) const { return i < text_.size() && text_[i] == c; }

  bool Unexpected(JsonContext context, Token& token) {
    error_->kind = JsonReadErrorKind::kUnexpected;
    error_->context = context;
    error_->at = token.at;
    error_->found = token.kind;
    error_->found_end = token.end;
    error_->found_text = std::move(token.text);
    error_->lex = token.lex;
    error_->last_token_start = last_token_start_;
    return false;
  }

  // value, after white space; depth is checked before its token is read.
  bool Value(ConfigValue* out, std::size_t depth) {
    SkipSpace();
    if (depth > options_.max_depth &&
        (options_.depth_counts_scalars || At(pos_, '{') || At(pos_, '['))) {
      error_->kind = JsonReadErrorKind::kTooDeep;
      error_->at = Here(pos_);
      error_->depth = depth;
      return false;
    }
    Token token;
    Lex(&token);
    out->at = token.at;
    switch (token.kind) {
      case Tok::kLBrace:
        return Object(out, depth);
      case Tok::kLBracket:
        return List(out, depth);
      case Tok::kString:
        out->kind = ConfigValue::Kind::kString;
        out->text = std::move(token.text);
        return true;
      case Tok::kNumber:
        if (options_.finite_numbers_only &&
            !std::isfinite(std::strtod(token.text.c_str(), nullptr))) {
          error_->depth = depth;
          Unexpected(JsonContext::kValue, token);
          error_->kind = JsonReadErrorKind::kNumberOverflow;
          return false;
        }
        out->kind = ConfigValue::Kind::kNumber;
        out->text = std::move(token.text);
        return true;
      case Tok::kTrue:
      case Tok::kFalse:
        out->kind = ConfigValue::Kind::kBool;
        out->boolean = token.kind == Tok::kTrue;
        out->text = out->boolean ? "true" : "false";
        return true;
      case Tok::kNull:
        out->kind = ConfigValue::Kind::kNull;
        return true;
      default:
        error_->depth = depth;
        return Unexpected(JsonContext::kValue, token);
    }
  }

  // After "{".
  bool Object(ConfigValue* out, std::size_t depth) {
    out->kind = ConfigValue::Kind::kObject;
    Token token;
    Lex(&token);
    if (token.kind == Tok::kRBrace) return true;
    for (;;) {
      if (token.kind != Tok::kString) return Unexpected(JsonContext::kName, token);
      ConfigMember member;
      member.name = std::move(token.text);
      member.at = token.at;
      if (options_.refuse_duplicate_names) {
        for (const ConfigMember& earlier : out->members) {
          if (earlier.name != member.name) continue;
          error_->kind = JsonReadErrorKind::kDuplicateName;
          error_->at = member.at;
          error_->first_at = earlier.at;
          error_->name = member.name;
          return false;
        }
      }
      Lex(&token);
      if (token.kind != Tok::kColon) {
        error_->name = member.name;
        return Unexpected(JsonContext::kColon, token);
      }
      if (!Value(&member.value, depth + 1)) return false;
      out->members.push_back(std::move(member));
      Lex(&token);
      if (token.kind == Tok::kRBrace) return true;
      if (token.kind != Tok::kComma) return Unexpected(JsonContext::kInObject, token);
      Lex(&token);
    }
  }

  // After "[".
  bool List(ConfigValue* out, std::size_t depth) {
    out->kind = ConfigValue::Kind::kList;
    SkipSpace();
    if (At(pos_, ']')) {
      ++pos_;
      return true;
    }
    for (;;) {
      out->items.emplace_back();
      if (!Value(&out->items.back(), depth + 1)) return false;
      Token token;
      Lex(&token);
      if (token.kind == Tok::kRBracket) return true;
      if (token.kind != Tok::kComma) return Unexpected(JsonContext::kInList, token);
    }
  }

  // --- the tokens ---

  void SkipSpace() {
    while (pos_ < text_.size()) {
      const char c = text_[pos_];
      if (c == '\n') {
        ++line_;
        line_start_ = pos_ + 1;
      } else if (c != ' ' && c != '\t' && c != '\r') {
        return;
      }
      ++pos_;
    }
  }

  // The token after white space into *token; kBad with token->lex set when
  // no token starts there. pos_ moves past what was read.
  void Lex(Token* token) {
    SkipSpace();
    token->at = Here(pos_);
    token->text.clear();
    if (pos_ >= text_.size()) {
      token->kind = Tok::kEnd;
      token->end = text_.size() + 1;
      return;
    }
    const char c = text_[pos_];
    const std::string_view punct = "{}[]:,";
    if (const std::size_t i = punct.find(c); i != std::string_view::npos) {
      constexpr Tok kinds[] = {Tok::kLBrace,   Tok::kRBrace, Tok::kLBracket,
                               Tok::kRBracket, Tok::kColon,  Tok::kComma};
      token->kind = kinds[i];
      token->end = ++pos_;
      return;
    }
    if (c == '"') return String(token);
    if (c == '-' || IsDigit(c)) return Number(token);
    if (c == 't') return Literal("true", Tok::kTrue, token);
    if (c == 'f') return Literal("false", Tok::kFalse, token);
    if (c == 'n') return Literal("null", Tok::kNull, token);
    if (c == '\0' && options_.nul_ends_text) {
      token->kind = Tok::kEnd;
      token->end = pos_ + 1;
      return;
    }
    Bad(token, Lx::kUnexpectedByte, pos_, static_cast<unsigned char>(c));
  }

  void Bad(Token* token, Lx kind, std::size_t offset, unsigned char byte = 0) {
    token->kind = Tok::kBad;
    token->lex.kind = kind;
    token->lex.at = Here(offset < text_.size() ? offset : text_.size());
    token->lex.byte = byte;
    token->end = offset + 1;
    pos_ = offset < text_.size() ? offset : text_.size();
  }

  void Literal(std::string_view word, Tok kind, Token* token) {
    for (std::size_t i = 1; i < word.size(); ++i) {
      if (!At(pos_ + i, word[i])) return Bad(token, Lx::kBadLiteral, pos_ + i);
    }
    token->kind = kind;
    pos_ += word.size();
    token->end = pos_;
  }

  // RFC 8259's grammar; the value stays text (the caller knows the type it
  // wants and its range).
  void Number(Token* token) {
    const std::size_t start = pos_;
    last_token_start_ = start;
    std::size_t p = pos_;
    auto digits = [&] {
      while (p < text_.size() && IsDigit(text_[p])) ++p;
    };
    if (text_[p] == '-') {
      ++p;
      if (p >= text_.size() || !IsDigit(text_[p])) return Bad(token, Lx::kMinus, p);
    }
    if (text_[p] == '0') {
      ++p;
    } else {
      digits();
    }
    if (At(p, '.')) {
      ++p;
      if (p >= text_.size() || !IsDigit(text_[p])) return Bad(token, Lx::kFraction, p);
      digits();
    }
    if (At(p, 'e') || At(p, 'E')) {
      ++p;
      if (At(p, '+') || At(p, '-')) {
        ++p;
        if (p >= text_.size() || !IsDigit(text_[p])) return Bad(token, Lx::kExponentSign, p);
      } else if (p >= text_.size() || !IsDigit(text_[p])) {
        return Bad(token, Lx::kExponent, p);
      }
      digits();
    }
    if (options_.refuse_digit_after_zero && p < text_.size() && IsDigit(text_[p])) {
      return Bad(token, Lx::kLeadingZero, p);
    }
    token->kind = Tok::kNumber;
    token->text = std::string(text_.substr(start, p - start));
    token->end = pos_ = p;
  }

  // Four hex digits at p; -1 with *bad set to the first that is not one.
  int Hex4(std::size_t p, std::size_t* bad) const {
    int value = 0;
    for (std::size_t i = 0; i < 4; ++i) {
      const int h = p + i < text_.size() ? HexValue(text_[p + i]) : -1;
      if (h < 0) {
        *bad = p + i;
        return -1;
      }
      value = value * 16 + h;
    }
    return value;
  }

  // The bytes of one UTF-8 sequence starting at p (check_utf8); 0 with *bad
  // set to the first byte that breaks it.
  std::size_t Utf8Length(std::size_t p, std::size_t* bad) const {
    auto byte = [&](std::size_t i) {
      return i < text_.size() ? static_cast<unsigned char>(text_[i]) : 0x100u;
    };
    const unsigned lead = byte(p);
    unsigned lo = 0x80;
    unsigned hi = 0xBF;
    std::size_t length = 0;
    if (lead >= 0xC2 && lead <= 0xDF) {
      length = 2;
    } else if (lead >= 0xE0 && lead <= 0xEF) {
      length = 3;
      if (lead == 0xE0) lo = 0xA0;
      if (lead == 0xED) hi = 0x9F;
    } else if (lead >= 0xF0 && lead <= 0xF4) {
      length = 4;
      if (lead == 0xF0) lo = 0x90;
      if (lead == 0xF4) hi = 0x8F;
    } else {
      *bad = p;
      return 0;
    }
    for (std::size_t i = 1; i < length; ++i) {
      const unsigned b = byte(p + i);
      if (b < (i == 1 ? lo : 0x80) || b > (i == 1 ? hi : 0xBF)) {
        *bad = p + i;
        return 0;
      }
    }
    return length;
  }

  void String(Token* token) {
    last_token_start_ = pos_;
    std::size_t p = pos_ + 1;
    std::string out;
    for (;;) {
      if (p >= text_.size()) return Bad(token, Lx::kUnclosedString, p);
      const char c = text_[p];
      const auto uc = static_cast<unsigned char>(c);
      if (c == '"') break;
      if (uc < 0x20) return Bad(token, Lx::kControlByte, p, uc);
      if (uc >= 0x80 && options_.check_utf8) {
        std::size_t bad = 0;
        const std::size_t length = Utf8Length(p, &bad);
        if (length == 0) return Bad(token, Lx::kBadUtf8, bad);
        out.append(text_.substr(p, length));
        p += length;
        continue;
      }
      if (c != '\\') {
        out.push_back(c);
        ++p;
        continue;
      }
      ++p;
      if (p >= text_.size()) return Bad(token, Lx::kBadEscape, p);
      const char e = text_[p];
      const std::string_view simple = "\"\\/bfnrt";
      const std::string_view meaning = "\"\\/\b\f\n\r\t";
      if (const std::size_t i = simple.find(e); i != std::string_view::npos) {
        out.push_back(meaning[i]);
        ++p;
        continue;
      }
      if (e != 'u') return Bad(token, Lx::kBadEscape, p, static_cast<unsigned char>(e));
      std::size_t bad = 0;
      const int first = Hex4(p + 1, &bad);
      if (first < 0) return Bad(token, Lx::kHexDigits, bad);
      p += 5;  // past the 4 digits
      auto cp = static_cast<std::uint32_t>(first);
      if (cp >= 0xDC00 && cp <= 0xDFFF) return Bad(token, Lx::kLoneLowSurrogate, p - 1);
      if (cp >= 0xD800 && cp <= 0xDBFF) {
        if (!At(p, '\\')) return Bad(token, Lx::kLoneHighSurrogate, p);
        if (!At(p + 1, 'u')) return Bad(token, Lx::kLoneHighSurrogate, p + 1);
        const int second = Hex4(p + 2, &bad);
        if (second < 0) return Bad(token, Lx::kHexDigits, bad);
        p += 6;
        if (second < 0xDC00 || second > 0xDFFF) return Bad(token, Lx::kHighWithoutLow, p - 1);
        cp = 0x10000 + ((cp - 0xD800) << 10) + (static_cast<std::uint32_t>(second) - 0xDC00);
      }
      AppendUtf8CodePoint(cp, &out);
    }
    token->kind = Tok::kString;
    token->text = std::move(out);
    token->end = pos_ = p + 1;
  }

  std::string_view text_;
  const JsonReadOptions& options_;
  JsonReadError* error_;
  std::size_t pos_ = 0;
  int line_ = 1;
  std::size_t line_start_ = 0;
  std::size_t last_token_start_ = 0;
};

}  // namespace

bool ReadJson(std::string_view text, const JsonReadOptions& options, ConfigValue* out,
              JsonReadError* error) {
  *error = JsonReadError{};
  *out = ConfigValue{};
  return JsonReader(text, options, error).Document(out);
}

TextPosition PositionOf(std::string_view text, std::size_t offset) {
  TextPosition at;
  const std::size_t end = offset < text.size() ? offset : text.size();
  std::size_t line_start = 0;
  for (std::size_t i = 0; i < end; ++i) {
    if (text[i] == '\n') {
      ++at.line;
      line_start = i + 1;
    }
  }
  at.offset = offset;
  at.column = static_cast<int>(offset - line_start) + 1;
  return at;
}

}  // namespace tenure
