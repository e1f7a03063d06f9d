#include "agent/config_json.h"

#include <cstdint>

namespace tenure::agent {
namespace {

// Deep enough for any config file, shallow enough that recursion cannot
// exhaust the stack on a hostile one.
constexpr int kMaxDepth = 64;

class Parser {
 public:
  Parser(std::string_view name, std::string_view text) : name_(name), text_(text) {}

  Result<JsonNode> Document() {
    // A UTF-8 byte order mark, as some editors write, is not content.
    if (text_.substr(0, 3) == "\xEF\xBB\xBF") pos_ = 3;
    SkipSpace();
    if (pos_ == text_.size()) return Fail("empty file: expected a JSON object");
    JsonNode root;
    TENURE_RETURN_IF_ERROR(Value(&root, 0));
    SkipSpace();
    if (pos_ != text_.size()) return Fail("unexpected " + Describe() + " after the JSON value");
    return root;
  }

 private:
  Status Fail(const std::string& why) const {
    return Status::InvalidArgument(std::string(name_) + ":" + std::to_string(line_) + ": " + why);
  }

  // What is at pos_, for messages.
  std::string Describe() const {
    if (pos_ >= text_.size()) return "end of file";
    const char c = text_[pos_];
    if (c >= 0x20 && c < 0x7f) return std::string("'") + c + "'";
    return "byte 0x" + std::string(1, "0123456789abcdef"[(c >> 4) & 0xf]) +
           std::string(1, "0123456789abcdef"[c & 0xf]);
  }

  void SkipSpace() {
    while (pos_ < text_.size()) {
      const char c = text_[pos_];
      if (c == '\n') {
        ++line_;
      } else if (c != ' ' && c != '\t' && c != '\r') {
        return;
      }
      ++pos_;
    }
  }

  bool Literal(std::string_view word) {
    if (text_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }

  Status Value(JsonNode* node, int depth) {
    if (depth > kMaxDepth) return Fail("nested too deeply");
    node->line = line_;
    if (pos_ >= text_.size()) return Fail("unexpected end of file: expected a value");
    const char c = text_[pos_];
    if (c == '{') return Object(node, depth);
    if (c == '[') return Array(node, depth);
    if (c == '"') {
      node->kind = JsonNode::Kind::kString;
      return String(&node->text);
    }
    if (c == '-' || (c >= '0' && c <= '9')) return Number(node);
    if (Literal("true") || Literal("false")) {
      node->kind = JsonNode::Kind::kBool;
      node->boolean = c == 't';
      return Status::Ok();
    }
    if (Literal("null")) return Status::Ok();
    if (c == '/') return Fail("comments are not JSON");
    return Fail("unexpected " + Describe() + ": expected a value");
  }

  Status Object(JsonNode* node, int depth) {
    node->kind = JsonNode::Kind::kObject;
    ++pos_;  // '{'
    SkipSpace();
    if (pos_ < text_.size() && text_[pos_] == '}') {
      ++pos_;
      return Status::Ok();
    }
    while (true) {
      SkipSpace();
      if (pos_ >= text_.size() || text_[pos_] != '"') {
        return Fail("unexpected " + Describe() + ": expected a key in double quotes");
      }
      JsonMember member;
      member.line = line_;
      TENURE_RETURN_IF_ERROR(String(&member.key));
      for (const JsonMember& earlier : node->members) {
        if (earlier.key == member.key) {
          return Fail("duplicate key \"" + member.key + "\" (first at line " +
                      std::to_string(earlier.line) + ")");
        }
      }
      SkipSpace();
      if (pos_ >= text_.size() || text_[pos_] != ':') {
        return Fail("unexpected " + Describe() + ": expected ':' after \"" + member.key + "\"");
      }
      ++pos_;
      SkipSpace();
      TENURE_RETURN_IF_ERROR(Value(&member.value, depth + 1));
      node->members.push_back(std::move(member));
      SkipSpace();
      if (pos_ < text_.size() && text_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (pos_ < text_.size() && text_[pos_] == '}') {
        ++pos_;
        return Status::Ok();
      }
      return Fail("unexpected " + Describe() + ": expected ',' or '}'");
    }
  }

  Status Array(JsonNode* node, int depth) {
    node->kind = JsonNode::Kind::kArray;
    ++pos_;  // '['
    SkipSpace();
    if (pos_ < text_.size() && text_[pos_] == ']') {
      ++pos_;
      return Status::Ok();
    }
    while (true) {
      SkipSpace();
      JsonNode item;
      TENURE_RETURN_IF_ERROR(Value(&item, depth + 1));
      node->items.push_back(std::move(item));
      SkipSpace();
      if (pos_ < text_.size() && text_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (pos_ < text_.size() && text_[pos_] == ']') {
        ++pos_;
        return Status::Ok();
      }
      return Fail("unexpected " + Describe() + ": expected ',' or ']'");
    }
  }

  // The grammar of RFC 8259; the value stays text (the caller knows the
  // type it wants and its range).
  Status Number(JsonNode* node) {
    node->kind = JsonNode::Kind::kNumber;
    const std::size_t start = pos_;
    auto digits = [&] {
      const std::size_t from = pos_;
      while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') ++pos_;
      return pos_ > from;
    };
    if (text_[pos_] == '-') ++pos_;
    if (pos_ < text_.size() && text_[pos_] == '0') {
      ++pos_;
    } else if (!digits()) {
      return Fail("bad number: expected a digit after '-'");
    }
    if (pos_ < text_.size() && text_[pos_] == '.') {
      ++pos_;
      if (!digits()) return Fail("bad number: expected a digit after '.'");
    }
    if (pos_ < text_.size() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
      ++pos_;
      if (pos_ < text_.size() && (text_[pos_] == '+' || text_[pos_] == '-')) ++pos_;
      if (!digits()) return Fail("bad number: expected a digit in the exponent");
    }
    if (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') {
      return Fail("bad number: a leading zero");
    }
    node->text = std::string(text_.substr(start, pos_ - start));
    return Status::Ok();
  }

  Result<std::uint32_t> Hex4() {
    if (pos_ + 4 > text_.size()) return Fail("bad \\u escape: expected 4 hex digits");
    std::uint32_t value = 0;
    for (int i = 0; i < 4; ++i) {
      const char c = text_[pos_++];
      std::uint32_t digit = 0;
      if (c >= '0' && c <= '9') {
        digit = static_cast<std::uint32_t>(c - '0');
      } else if (c >= 'a' && c <= 'f') {
        digit = static_cast<std::uint32_t>(c - 'a' + 10);
      } else if (c >= 'A' && c <= 'F') {
        digit = static_cast<std::uint32_t>(c - 'A' + 10);
      } else {
        return Fail("bad \\u escape: expected 4 hex digits");
      }
      value = value * 16 + digit;
    }
    return value;
  }

  Status String(std::string* out) {
    ++pos_;  // '"'
    while (true) {
      if (pos_ >= text_.size()) return Fail("unterminated string");
      const char c = text_[pos_++];
      if (c == '"') return Status::Ok();
      if (static_cast<unsigned char>(c) < 0x20) {
        return Fail(c == '\n' ? "unterminated string (a line break inside it)"
                              : "a control character inside a string (escape it)");
      }
      if (c != '\\') {
        out->push_back(c);
        continue;
      }
      if (pos_ >= text_.size()) return Fail("unterminated string");
      const char e = text_[pos_++];
      switch (e) {
        case '"':
        case '\\':
        case '/':
          out->push_back(e);
          break;
        case 'b':
          out->push_back('\b');
          break;
        case 'f':
          out->push_back('\f');
          break;
        case 'n':
          out->push_back('\n');
          break;
        case 'r':
          out->push_back('\r');
          break;
        case 't':
          out->push_back('\t');
          break;
        case 'u': {
          TENURE_ASSIGN_OR_RETURN(std::uint32_t cp, Hex4());
          if (cp >= 0xDC00 && cp <= 0xDFFF) return Fail("bad \\u escape: a lone low surrogate");
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            if (!Literal("\\u")) return Fail("bad \\u escape: a lone high surrogate");
            TENURE_ASSIGN_OR_RETURN(std::uint32_t low, Hex4());
            if (low < 0xDC00 || low > 0xDFFF) {
              return Fail("bad \\u escape: a high surrogate without its low one");
            }
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
          }
          AppendUtf8(cp, out);
          break;
        }
        default:
          --pos_;
          return Fail("bad escape in a string: backslash and " + Describe());
      }
    }
  }

  std::string_view name_;
  std::string_view text_;
  std::size_t pos_ = 0;
  int line_ = 1;
};

}  // namespace

void AppendUtf8(std::uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

std::string_view JsonKindName(JsonNode::Kind kind) {
  switch (kind) {
    case JsonNode::Kind::kNull:
      return "null";
    case JsonNode::Kind::kBool:
      return "a boolean";
    case JsonNode::Kind::kNumber:
      return "a number";
    case JsonNode::Kind::kString:
      return "a string";
    case JsonNode::Kind::kArray:
      return "an array";
    case JsonNode::Kind::kObject:
      return "an object";
  }
  return "a value";
}

Result<JsonNode> ParseJsonWithLines(std::string_view name, std::string_view text) {
  return Parser(name, text).Document();
}

}  // namespace tenure::agent
