#include "agent/config_hcl.h"

#include <cstdint>
#include <string>
#include <utility>

namespace tenure::agent {
namespace {

constexpr int kMaxDepth = 64;  // as the JSON reader's

class HclParser {
 public:
  HclParser(std::string_view name, std::string_view text) : name_(name), text_(text) {}

  Result<JsonNode> Document() {
    if (text_.substr(0, 3) == "\xEF\xBB\xBF") pos_ = 3;
    TENURE_RETURN_IF_ERROR(Next());
    JsonNode root;
    root.kind = JsonNode::Kind::kObject;
    root.line = tok_.line;
    TENURE_RETURN_IF_ERROR(Body(&root, /*top_level=*/true, 0, 0));
    return root;
  }

 private:
  enum class Tok {
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
  struct Token {
    Tok kind = Tok::kEnd;
    int line = 1;
    std::string text;  // an identifier, a decoded string, a number as written
  };

  Status Fail(int line, const std::string& why) const {
    return Status::InvalidArgument(std::string(name_) + ":" + std::to_string(line) + ": " + why);
  }

  std::string Found() const {
    switch (tok_.kind) {
      case Tok::kEnd:
        return "end of file";
      case Tok::kIdent:
        return tok_.text;
      case Tok::kString:
        return "\"" + tok_.text + "\"";
      case Tok::kNumber:
        return tok_.text;
      case Tok::kEquals:
        return "'='";
      case Tok::kLBrace:
        return "'{'";
      case Tok::kRBrace:
        return "'}'";
      case Tok::kLBracket:
        return "'['";
      case Tok::kRBracket:
        return "']'";
      case Tok::kComma:
        return "','";
    }
    return "?";
  }

  Status Expected(const std::string& what) const {
    return Fail(tok_.line, "unexpected " + Found() + ": expected " + what);
  }

  // body := { key ("=" value | "{" body "}") [","] } ("}" | end of file at the top)
  Status Body(JsonNode* object, bool top_level, int depth, int open_line) {
    if (depth > kMaxDepth) return Fail(tok_.line, "nested too deeply");
    while (true) {
      if (top_level && tok_.kind == Tok::kEnd) return Status::Ok();
      if (!top_level && tok_.kind == Tok::kRBrace) return Next();
      if (tok_.kind == Tok::kEnd) return Fail(open_line, "this '{' is never closed");
      if (tok_.kind != Tok::kIdent && tok_.kind != Tok::kString) {
        return Expected(top_level ? "a key" : "a key or '}'");
      }
      JsonMember member;
      member.key = tok_.text;
      member.line = tok_.line;
      TENURE_RETURN_IF_ERROR(Next());
      if (tok_.kind == Tok::kEquals) {
        TENURE_RETURN_IF_ERROR(Next());
        TENURE_RETURN_IF_ERROR(Value(&member.value, depth + 1));
      } else if (tok_.kind == Tok::kLBrace) {
        TENURE_RETURN_IF_ERROR(Block(&member.value, depth + 1));
      } else if (tok_.kind == Tok::kString || tok_.kind == Tok::kIdent) {
        return Fail(tok_.line, "a block label (" + member.key + " " + Found() +
                                   " { }) is not a setting of tenure server");
      } else {
        return Expected("'=' or '{' after " + member.key);
      }
      TENURE_RETURN_IF_ERROR(Add(object, std::move(member)));
      if (tok_.kind == Tok::kComma) TENURE_RETURN_IF_ERROR(Next());
    }
  }

  // A block twice is one block; anything else twice is an error.
  Status Add(JsonNode* object, JsonMember member) {
    for (JsonMember& earlier : object->members) {
      if (earlier.key != member.key) continue;
      if (earlier.value.kind == JsonNode::Kind::kObject &&
          member.value.kind == JsonNode::Kind::kObject) {
        for (JsonMember& inner : member.value.members) {
          TENURE_RETURN_IF_ERROR(Add(&earlier.value, std::move(inner)));
        }
        return Status::Ok();
      }
      return Fail(member.line, "duplicate key \"" + member.key + "\" (first at line " +
                                   std::to_string(earlier.line) + ")");
    }
    object->members.push_back(std::move(member));
    return Status::Ok();
  }

  Status Block(JsonNode* node, int depth) {
    node->kind = JsonNode::Kind::kObject;
    node->line = tok_.line;
    TENURE_RETURN_IF_ERROR(Next());
    return Body(node, /*top_level=*/false, depth, node->line);
  }

  // value := string | number | true | false | "{" body "}" | "[" [value {"," value} [","]] "]"
  Status Value(JsonNode* node, int depth) {
    node->line = tok_.line;
    switch (tok_.kind) {
      case Tok::kString:
        node->kind = JsonNode::Kind::kString;
        node->text = std::move(tok_.text);
        return Next();
      case Tok::kNumber:
        node->kind = JsonNode::Kind::kNumber;
        node->text = std::move(tok_.text);
        return Next();
      case Tok::kIdent:
        if (tok_.text == "true" || tok_.text == "false") {
          node->kind = JsonNode::Kind::kBool;
          node->boolean = tok_.text == "true";
          return Next();
        }
        break;
      case Tok::kLBrace:
        return Block(node, depth);
      case Tok::kLBracket:
        return List(node, depth);
      default:
        break;
    }
    return Expected("a value");
  }

  Status List(JsonNode* node, int depth) {
    if (depth > kMaxDepth) return Fail(tok_.line, "nested too deeply");
    node->kind = JsonNode::Kind::kArray;
    const int open_line = tok_.line;
    TENURE_RETURN_IF_ERROR(Next());
    while (true) {
      if (tok_.kind == Tok::kRBracket) return Next();
      if (tok_.kind == Tok::kEnd) return Fail(open_line, "this '[' is never closed");
      JsonNode item;
      TENURE_RETURN_IF_ERROR(Value(&item, depth + 1));
      node->items.push_back(std::move(item));
      if (tok_.kind == Tok::kComma) {
        TENURE_RETURN_IF_ERROR(Next());
      } else if (tok_.kind == Tok::kEnd) {
        return Fail(open_line, "this '[' is never closed");
      } else if (tok_.kind != Tok::kRBracket) {
        return Expected("',' or ']'");
      }
    }
  }

  // --- the lexer ---

  static bool IdentStart(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
  }
  static bool Digit(char c) { return c >= '0' && c <= '9'; }
  static bool IdentChar(char c) { return IdentStart(c) || Digit(c) || c == '-' || c == '.'; }
  bool At(std::size_t i, char c) const { return i < text_.size() && text_[i] == c; }

  // White space and comments: #..., //..., /* ... */.
  Status SkipSpace() {
    while (pos_ < text_.size()) {
      const char c = text_[pos_];
      if (c == '\n') {
        ++line_;
        ++pos_;
      } else if (c == ' ' || c == '\t' || c == '\r') {
        ++pos_;
      } else if (c == '#' || (c == '/' && At(pos_ + 1, '/'))) {
        while (pos_ < text_.size() && text_[pos_] != '\n') ++pos_;
      } else if (c == '/' && At(pos_ + 1, '*')) {
        const std::size_t end = text_.find("*/", pos_ + 2);
        if (end == std::string_view::npos) return Fail(line_, "this /* comment is never closed");
        for (std::size_t i = pos_; i < end; ++i) line_ += text_[i] == '\n' ? 1 : 0;
        pos_ = end + 2;
      } else {
        break;
      }
    }
    return Status::Ok();
  }

  Status Next() {
    TENURE_RETURN_IF_ERROR(SkipSpace());
    tok_.line = line_;
    tok_.text.clear();
    if (pos_ >= text_.size()) {
      tok_.kind = Tok::kEnd;
      return Status::Ok();
    }
    const char c = text_[pos_];
    const std::string_view punct = "={}[],";
    if (punct.find(c) != std::string_view::npos) {
      constexpr Tok kinds[] = {Tok::kEquals,   Tok::kLBrace,   Tok::kRBrace,
                               Tok::kLBracket, Tok::kRBracket, Tok::kComma};
      tok_.kind = kinds[punct.find(c)];
      ++pos_;
      return Status::Ok();
    }
    if (c == '"') return String();
    if (IdentStart(c)) {
      const std::size_t start = pos_;
      while (pos_ < text_.size() && IdentChar(text_[pos_])) ++pos_;
      tok_.kind = Tok::kIdent;
      tok_.text = std::string(text_.substr(start, pos_ - start));
      return Status::Ok();
    }
    if (Digit(c) || (c == '-' && pos_ + 1 < text_.size() && Digit(text_[pos_ + 1]))) {
      return Number();
    }
    if (c == '<' && At(pos_ + 1, '<')) return Fail(line_, "heredocs (<<) are not read: quote it");
    const auto byte = static_cast<unsigned char>(c);
    if (byte >= 0x21 && byte < 0x7f) return Fail(line_, std::string("unexpected '") + c + "'");
    static constexpr char kHex[] = "0123456789abcdef";
    return Fail(line_, std::string("unexpected byte 0x") + kHex[byte >> 4] + kHex[byte & 15]);
  }

  // -?digits[.digits][(e|E)[+-]digits], without a leading zero (as JSON).
  Status Number() {
    const std::size_t start = pos_;
    if (text_[pos_] == '-') ++pos_;
    auto digits = [&] {
      const std::size_t from = pos_;
      while (pos_ < text_.size() && Digit(text_[pos_])) ++pos_;
      return pos_ - from;
    };
    const std::size_t whole = digits();
    bool ok = !(whole > 1 && text_[pos_ - whole] == '0');
    if (ok && At(pos_, '.')) {
      ++pos_;
      ok = digits() > 0;
    }
    if (ok && (At(pos_, 'e') || At(pos_, 'E'))) {
      ++pos_;
      if (At(pos_, '+') || At(pos_, '-')) ++pos_;
      ok = digits() > 0;
    }
    while (pos_ < text_.size() && IdentChar(text_[pos_])) {
      ok = false;
      ++pos_;
    }
    tok_.text = std::string(text_.substr(start, pos_ - start));
    if (!ok) return Fail(line_, "bad number " + tok_.text);
    tok_.kind = Tok::kNumber;
    return Status::Ok();
  }

  // A quoted string on one line, with Go's escapes (as HCL has them).
  Status String() {
    ++pos_;
    std::string out;
    while (true) {
      if (pos_ >= text_.size() || text_[pos_] == '\n') {
        return Fail(line_, "unterminated string (it must end on its line)");
      }
      const char c = text_[pos_++];
      if (c == '"') break;
      if (c != '\\') {
        out.push_back(c);
        continue;
      }
      if (pos_ >= text_.size()) continue;  // reported as unterminated above
      const char e = text_[pos_++];
      const std::string_view simple = "abfnrtv\\\"";
      const std::string_view meaning = "\a\b\f\n\r\t\v\\\"";
      if (simple.find(e) != std::string_view::npos) {
        out.push_back(meaning[simple.find(e)]);
        continue;
      }
      const int count = e == 'x' ? 2 : e == 'u' ? 4 : e == 'U' ? 8 : 0;
      if (count == 0) {
        return Fail(line_, std::string("bad escape in a string: backslash and '") + e + "'");
      }
      std::uint32_t value = 0;
      for (int i = 0; i < count; ++i) {
        const char h = pos_ < text_.size() ? text_[pos_++] : '\0';
        const int digit = (h >= '0' && h <= '9')   ? h - '0'
                          : (h >= 'a' && h <= 'f') ? h - 'a' + 10
                          : (h >= 'A' && h <= 'F') ? h - 'A' + 10
                                                   : -1;
        if (digit < 0) return Fail(line_, std::string("bad \\") + e + " escape: hex digits");
        value = value * 16 + static_cast<std::uint32_t>(digit);
      }
      if (e == 'x') {
        out.push_back(static_cast<char>(value));
      } else if (value > 0x10FFFF || (value >= 0xD800 && value <= 0xDFFF)) {
        return Fail(line_, "bad \\" + std::string(1, e) + " escape: not a Unicode character");
      } else {
        AppendUtf8(value, &out);
      }
    }
    tok_.kind = Tok::kString;
    tok_.text = std::move(out);
    return Status::Ok();
  }

  std::string_view name_;
  std::string_view text_;
  std::size_t pos_ = 0;
  int line_ = 1;
  Token tok_;
};

}  // namespace

Result<JsonNode> ParseHclWithLines(std::string_view name, std::string_view text) {
  return HclParser(name, text).Document();
}

}  // namespace tenure::agent
