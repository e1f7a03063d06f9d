// A small JSON reader for config files that remembers the line of every
// value and member, so an error can say "a.json:7: unknown key ..." (the
// general-purpose parsers forget lines). Strict RFC 8259: no comments, no
// trailing commas; a key twice in one object is an error, as a setting
// given twice in one file would be ambiguous. Pure: text in, tree out.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"

namespace tenure::agent {

struct JsonMember;  // complete below: std::vector allows that (C++17)

struct JsonNode {
  enum class Kind { kNull, kBool, kNumber, kString, kArray, kObject };
  Kind kind = Kind::kNull;
  int line = 0;
  bool boolean = false;
  std::string text;  // a string's value, or a number as written
  std::vector<JsonNode> items;
  std::vector<JsonMember> members;  // in the file's order
};

struct JsonMember {
  std::string key;
  int line = 0;  // the key's line
  JsonNode value;
};

// A Unicode code point (below 0x110000) as UTF-8, for the readers' escapes.
void AppendUtf8(std::uint32_t code_point, std::string* out);

// "an object", "a string", ... for messages.
std::string_view JsonKindName(JsonNode::Kind kind);

// Parses one JSON document. Errors are kInvalidArgument "NAME:LINE: why",
// NAME being what the caller calls the text (its path).
Result<JsonNode> ParseJsonWithLines(std::string_view name, std::string_view text);

}  // namespace tenure::agent
