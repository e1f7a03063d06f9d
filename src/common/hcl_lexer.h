// The tokens of HCL as tenure reads it (the ACL rules language and config
// files): white space and comments (#..., //..., /* ... */), the punctuation
// = { } [ ] , , identifiers, quoted strings with Go's escapes, and numbers.
// Pure. The lexer reports what went wrong and where; the reader
// (common/config_text.h) parses its tokens, and each caller words the errors.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace tenure {

enum class HclTokenKind : std::uint8_t {
  kEnd,
  kIdent,
  kString,
  kNumber,
  kEquals,
  kLBrace,
  kRBrace,
  kLBracket,
  kRBracket,
  kComma
};

// Where a token or an error starts: its byte offset in the text, and its
// line and column (both from 1; the column counts bytes).
struct HclPosition {
  std::size_t offset = 0;
  int line = 1;
  int column = 1;
};

struct HclToken {
  HclTokenKind kind = HclTokenKind::kEnd;
  HclPosition at;
  std::string text;  // an identifier, a decoded string, a number as written
};

enum class HclLexErrorKind : std::uint8_t {
  kUnclosedComment,      // at the "/*"
  kUnclosedString,       // at the opening quote; strings end on their line
  kUnknownEscape,        // at the backslash; `escape` is the letter after it
  kHexEscapeDigits,      // \x, \u or \U without enough hex digits; `escape` is x, u or U
  kNotUnicode,           // \u or \U above U+10FFFF or a surrogate
  kOctalEscapeDigits,    // \NNN with fewer than 3 octal digits (octal_escapes only)
  kOctalEscapeTooLarge,  // \NNN above \377 (octal_escapes only)
  kBadNumber,            // at its start; `text` is the number as written
  kHeredoc,              // at the "<<"
  kUnexpectedCharacter,  // a printable ASCII character that starts no token: `escape`
  kUnexpectedByte        // any other byte: `escape`
};

struct HclLexError {
  HclLexErrorKind kind = HclLexErrorKind::kUnexpectedByte;
  HclPosition at;
  char escape = '\0';  // the escape letter, or the unexpected character or byte
  std::string text;    // kBadNumber: the number with the identifier characters after it
};

struct HclLexerOptions {
  // \NNN octal escapes in strings (Go's, as Consul's rules accept them).
  bool octal_escapes = false;
  // Numbers such as 007 (JSON has no leading zeros).
  bool leading_zeros = true;
};

class HclLexer {
 public:
  explicit HclLexer(std::string_view text, HclLexerOptions options = {});

  // The next token into *token (kEnd at the end of the text, and again after
  // it); false, with *error set, when the text there is not a token.
  bool Next(HclToken* token, HclLexError* error);

 private:
  bool At(std::size_t i, char c) const { return i < text_.size() && text_[i] == c; }
  HclPosition Here() const { return Position(pos_); }
  HclPosition Position(std::size_t offset) const;
  bool SkipSpace(HclLexError* error);
  bool Number(HclToken* token, HclLexError* error);
  bool String(HclToken* token, HclLexError* error);
  bool Fail(HclLexErrorKind kind, std::size_t offset, HclLexError* error, char escape = '\0');

  std::string_view text_;
  HclLexerOptions options_;
  std::size_t pos_ = 0;
  int line_ = 1;
  std::size_t line_start_ = 0;  // the offset of line_'s first byte
};

// Appends code point `cp` as UTF-8; false (and nothing appended) for a
// surrogate or a value above U+10FFFF.
bool AppendUtf8CodePoint(std::uint32_t cp, std::string* out);

}  // namespace tenure
