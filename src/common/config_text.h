// One reader for configuration-shaped text, HCL or JSON: ACL rules (acl/)
// and agent config files (agent/). The text becomes one tree of objects,
// lists, strings, numbers, booleans and nulls, and every value and member
// knows where it was written (offset, line, column). Pure: text in, tree out.
//
// The two callers have promised different things to their users over the
// years (which JSON is refused, which repeats are allowed, how deep one may
// nest), so the reader takes options for those differences, and it reports
// what went wrong as data: what was expected, what was found, where. Each
// caller words the error in its own texts (acl/rules_text.cc,
// agent/config_text.cc). The reader itself refuses nothing that the options
// do not name, never recurses deeper than its max_depth, and reads each byte
// a bounded number of times; callers bound the size (docs/limits.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/hcl_lexer.h"

namespace tenure {

// Where something starts: byte offset, and line and column from 1 (the
// column counts bytes).
using TextPosition = HclPosition;

struct ConfigMember;  // complete below: std::vector allows that (C++17)

struct ConfigValue {
  enum class Kind : std::uint8_t { kNull, kBool, kNumber, kString, kList, kObject };
  Kind kind = Kind::kNull;
  TextPosition at;  // where the value starts: its first byte, "{" or "["
  bool boolean = false;
  std::string text;                   // a string's decoded bytes; a number or a boolean as written
  std::vector<ConfigValue> items;     // kList
  std::vector<ConfigMember> members;  // kObject, in the order written
};

struct ConfigMember {
  std::string name;
  TextPosition at;  // the name's
  // HCL's block label: `key "a/b" { ... }` is {name "key", label "a/b", value {...}}.
  std::optional<std::string> label;
  ConfigValue value;
};

// --- HCL -----------------------------------------------------------------------

// What may follow an item's name.
enum class HclItemShape : std::uint8_t {
  kAttributeOrBlock,         // name = value, or name { ... }
  kAttribute,                // name = value only
  kAttributeOrLabeledBlock,  // name = value, or name "label" { ... }
};

struct HclReadOptions {
  HclLexerOptions lexer;
  bool skip_byte_order_mark = false;  // a UTF-8 BOM before the text is not content
  // Blocks and lists nest at most this deep (the top level is depth 0).
  std::size_t max_depth = 64;
  // A block given twice at one level is one block, and any other name given
  // twice is kDuplicateName; when false, repeats are kept as written.
  bool merge_repeated_blocks = false;
  // Called with each top-level name before what follows it is read: the
  // shape it may take, or nullopt to refuse the name (kNameRefused). Unset:
  // every item is kAttributeOrBlock.
  std::function<std::optional<HclItemShape>(std::string_view name)> top_level_shape;
};

enum class HclReadErrorKind : std::uint8_t {
  kLex,                      // `lex` says what; `at` is lex.at
  kTooDeep,                  // open_at: the "{" or "[" one level too deep; at: the token there
  kUnclosedBlock,            // open_at: the "{"; at: the end of the text
  kUnclosedList,             // open_at: the "["; at: the end of the text
  kExpectedName,             // at an item: found is not a name (top_level says where)
  kExpectedAfterName,        // found after `name` is not what its shape allows
  kExpectedLabel,            // kAttributeOrLabeledBlock: found after `name` is no label or "="
  kExpectedBlockAfterLabel,  // found after `name` `label` is not "{"
  kExpectedValue,            // found where a value goes (in_list: as a list element)
  kExpectedListSeparator,    // found after a list element is not "," or "]"; open_at: the "["
  kNameRefused,              // top_level_shape refused `name`, written at `at`
  kDuplicateName,            // `name` at `at` was first given at first_at (merge_repeated_blocks)
};

struct HclReadError {
  HclReadErrorKind kind = HclReadErrorKind::kLex;
  TextPosition at;
  TextPosition open_at;
  TextPosition first_at;
  HclToken found;    // the token at `at`, for the kExpected* kinds
  HclLexError lex;   // kLex
  std::string name;  // the item's name, where the kind has one
  std::string label;
  bool top_level = false;  // kExpectedName
  bool in_list = false;    // kExpectedValue
};

// The whole text as one object of its top-level items; false with *error
// set when the text is not HCL as the options take it.
bool ReadHcl(std::string_view text, const HclReadOptions& options, ConfigValue* out,
             HclReadError* error);

// --- JSON ------------------------------------------------------------------------

struct JsonReadOptions {
  bool skip_byte_order_mark = false;
  // Values nest at most this deep (the top value is depth 0). When
  // depth_counts_scalars is false only objects and lists count: a scalar
  // inside the deepest object is fine.
  std::size_t max_depth = 64;
  bool depth_counts_scalars = true;
  bool refuse_duplicate_names = false;  // kDuplicateName, else repeats are kept
  bool check_utf8 = false;              // strings must be well-formed UTF-8 (kBadUtf8)
  bool nul_ends_text = false;           // a NUL byte where a token may start ends the text
  bool finite_numbers_only = false;     // a number past double's range is kNumberOverflow
  // "01": false reads the number 0 and then another token, true refuses it
  // in the number (kLeadingZero).
  bool refuse_digit_after_zero = false;
};

// A JSON token, as the reader found it.
enum class JsonTokenKind : std::uint8_t {
  kEnd,  // the end of the text (or a NUL, with nul_ends_text)
  kLBrace,
  kRBrace,
  kLBracket,
  kRBracket,
  kColon,
  kComma,
  kString,
  kNumber,
  kTrue,
  kFalse,
  kNull,
  kBad,  // no token: `lex` says why
};

enum class JsonLexErrorKind : std::uint8_t {
  kUnexpectedByte,     // no token starts with this byte
  kBadLiteral,         // true, false or null misspelt: at the first wrong byte (or the end)
  kMinus,              // a "-" without a digit after it
  kFraction,           // a "." without a digit after it
  kExponent,           // an "e" without a sign or digit after it
  kExponentSign,       // an exponent's sign without a digit after it
  kLeadingZero,        // a digit after a leading 0 (refuse_digit_after_zero)
  kUnclosedString,     // the end of the text inside a string
  kControlByte,        // a byte below 0x20 inside a string: `byte`
  kBadEscape,          // a backslash and `byte` (at the end of the text: at == text size)
  kHexDigits,          // \u without 4 hex digits
  kLoneLowSurrogate,   // \uDC00..\uDFFF first
  kLoneHighSurrogate,  // \uD800..\uDBFF not followed by "\u"
  kHighWithoutLow,     // \uD800..\uDBFF followed by \u of no low surrogate
  kBadUtf8,            // check_utf8: the first byte that breaks the sequence
};

struct JsonLexError {
  JsonLexErrorKind kind = JsonLexErrorKind::kUnexpectedByte;
  TextPosition at;         // the offending byte (or the end of the text)
  unsigned char byte = 0;  // kUnexpectedByte, kControlByte, kBadEscape
};

// Where the reader was when it stopped: what it wanted next.
enum class JsonContext : std::uint8_t {
  kValue,      // a value (the top one, after ":", "[" or "," in a list)
  kName,       // a member name, after "{" or "," in an object
  kColon,      // the ":" after member `name`
  kInList,     // "," or "]" after a list element
  kInObject,   // "," or "}" after a member
  kAfterText,  // the end of the text, after the top value
};

enum class JsonReadErrorKind : std::uint8_t {
  kUnexpected,      // found (or, when found is kBad, lex) is not what `context` wants
  kTooDeep,         // at: the value one level too deep
  kDuplicateName,   // member `name` at `at` was first given at first_at
  kNumberOverflow,  // found: a number past double's range (finite_numbers_only)
};

struct JsonReadError {
  JsonReadErrorKind kind = JsonReadErrorKind::kUnexpected;
  JsonContext context = JsonContext::kValue;
  TextPosition at;  // kUnexpected: where the found token starts
  TextPosition first_at;
  JsonTokenKind found = JsonTokenKind::kEnd;
  std::size_t found_end = 0;  // the offset just past the found token
  std::string found_text;     // a number as written
  JsonLexError lex;           // found == kBad
  std::size_t depth = 0;      // of the value wanted (kValue)
  std::string name;           // kColon, kDuplicateName: the member's name
  // Where the last string or number token began (0 if none yet), the
  // current one included: the "last read" bytes of some JSON libraries'
  // messages start there.
  std::size_t last_token_start = 0;
};

// One JSON value and nothing after it but white space; false with *error set
// when the text is not JSON as the options take it.
bool ReadJson(std::string_view text, const JsonReadOptions& options, ConfigValue* out,
              JsonReadError* error);

// The line and column of `offset` in `text` (the end of the text when offset
// is past it).
TextPosition PositionOf(std::string_view text, std::size_t offset);

}  // namespace tenure
