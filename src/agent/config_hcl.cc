#include "agent/config_hcl.h"

#include <string>
#include <utility>

#include "common/hcl_lexer.h"

namespace tenure::agent {
namespace {

constexpr int kMaxDepth = 64;  // as the JSON reader's

class HclParser {
 public:
  // A UTF-8 byte order mark before the text is skipped.
  HclParser(std::string_view name, std::string_view text)
      : name_(name),
        lexer_(text.substr(0, 3) == "\xEF\xBB\xBF" ? text.substr(3) : text,
               HclLexerOptions{.octal_escapes = false, .leading_zeros = false}) {}

  Result<JsonNode> Document() {
    TENURE_RETURN_IF_ERROR(Next());
    JsonNode root;
    root.kind = JsonNode::Kind::kObject;
    root.line = tok_.at.line;
    TENURE_RETURN_IF_ERROR(Body(&root, /*top_level=*/true, 0, 0));
    return root;
  }

 private:
  using Tok = HclTokenKind;

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
    return Fail(tok_.at.line, "unexpected " + Found() + ": expected " + what);
  }

  // body := { key ("=" value | "{" body "}") [","] } ("}" | end of file at the top)
  Status Body(JsonNode* object, bool top_level, int depth, int open_line) {
    if (depth > kMaxDepth) return Fail(tok_.at.line, "nested too deeply");
    while (true) {
      if (top_level && tok_.kind == Tok::kEnd) return Status::Ok();
      if (!top_level && tok_.kind == Tok::kRBrace) return Next();
      if (tok_.kind == Tok::kEnd) return Fail(open_line, "this '{' is never closed");
      if (tok_.kind != Tok::kIdent && tok_.kind != Tok::kString) {
        return Expected(top_level ? "a key" : "a key or '}'");
      }
      JsonMember member;
      member.key = tok_.text;
      member.line = tok_.at.line;
      TENURE_RETURN_IF_ERROR(Next());
      if (tok_.kind == Tok::kEquals) {
        TENURE_RETURN_IF_ERROR(Next());
        TENURE_RETURN_IF_ERROR(Value(&member.value, depth + 1));
      } else if (tok_.kind == Tok::kLBrace) {
        TENURE_RETURN_IF_ERROR(Block(&member.value, depth + 1));
      } else if (tok_.kind == Tok::kString || tok_.kind == Tok::kIdent) {
        return Fail(tok_.at.line, "a block label (" + member.key + " " + Found() +
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
    node->line = tok_.at.line;
    TENURE_RETURN_IF_ERROR(Next());
    return Body(node, /*top_level=*/false, depth, node->line);
  }

  // value := string | number | true | false | "{" body "}" | "[" [value {"," value} [","]] "]"
  Status Value(JsonNode* node, int depth) {
    node->line = tok_.at.line;
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
    if (depth > kMaxDepth) return Fail(tok_.at.line, "nested too deeply");
    node->kind = JsonNode::Kind::kArray;
    const int open_line = tok_.at.line;
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

  // --- the tokens ---

  // The next token into tok_; the lexer's errors in this reader's words.
  Status Next() {
    HclLexError error;
    if (lexer_.Next(&tok_, &error)) return Status::Ok();
    const int line = error.at.line;
    const char e = error.escape;
    switch (error.kind) {
      case HclLexErrorKind::kUnclosedComment:
        return Fail(line, "this /* comment is never closed");
      case HclLexErrorKind::kUnclosedString:
        return Fail(line, "unterminated string (it must end on its line)");
      case HclLexErrorKind::kUnknownEscape:
      case HclLexErrorKind::kOctalEscapeDigits:  // octal escapes are off
      case HclLexErrorKind::kOctalEscapeTooLarge:
        return Fail(line, std::string("bad escape in a string: backslash and '") + e + "'");
      case HclLexErrorKind::kHexEscapeDigits:
        return Fail(line, std::string("bad \\") + e + " escape: hex digits");
      case HclLexErrorKind::kNotUnicode:
        return Fail(line, "bad \\" + std::string(1, e) + " escape: not a Unicode character");
      case HclLexErrorKind::kBadNumber:
        return Fail(line, "bad number " + error.text);
      case HclLexErrorKind::kHeredoc:
        return Fail(line, "heredocs (<<) are not read: quote it");
      case HclLexErrorKind::kUnexpectedCharacter:
        return Fail(line, std::string("unexpected '") + e + "'");
      case HclLexErrorKind::kUnexpectedByte:
        break;
    }
    static constexpr char kHex[] = "0123456789abcdef";
    const auto byte = static_cast<unsigned char>(e);
    return Fail(line, std::string("unexpected byte 0x") + kHex[byte >> 4] + kHex[byte & 15]);
  }

  std::string_view name_;
  HclLexer lexer_;
  HclToken tok_;
};

}  // namespace

Result<JsonNode> ParseHclWithLines(std::string_view name, std::string_view text) {
  return HclParser(name, text).Document();
}

}  // namespace tenure::agent
