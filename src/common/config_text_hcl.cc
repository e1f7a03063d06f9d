// ReadHcl: recursive descent over HclLexer's tokens. Depth is counted as
// blocks and lists open, and checked before each opens a level, so the
// recursion is bounded by max_depth whatever the text.
#include <string>
#include <utility>

#include "common/config_text.h"

namespace tenure {
namespace {

constexpr std::string_view kByteOrderMark = "\xEF\xBB\xBF";

class HclReader {
 public:
  HclReader(std::string_view text, const HclReadOptions& options, HclReadError* error)
      : skipped_(options.skip_byte_order_mark && text.substr(0, 3) == kByteOrderMark ? 3 : 0),
        options_(options),
        lexer_(text.substr(skipped_), options.lexer),
        error_(error) {}

  bool Document(ConfigValue* root) {
    if (!Next()) return false;
    root->kind = ConfigValue::Kind::kObject;
    root->at = tok_.at;
    return Body(root, /*top_level=*/true, tok_.at, 0);
  }

 private:
  using Tok = HclTokenKind;
  using Kind = HclReadErrorKind;

  // Fails with `kind` at the current token.
  bool Fail(Kind kind) {
    error_->kind = kind;
    error_->at = tok_.at;
    error_->found = tok_;
    return false;
  }

  bool IsName() const { return tok_.kind == Tok::kIdent || tok_.kind == Tok::kString; }

  // body := { item [","] } ("}" | the end of the text at the top level)
  bool Body(ConfigValue* object, bool top_level, TextPosition open_at, std::size_t depth) {
    if (depth > options_.max_depth) {
      error_->open_at = open_at;
      return Fail(Kind::kTooDeep);
    }
    for (;;) {
      if (top_level && tok_.kind == Tok::kEnd) return true;
      if (!top_level && tok_.kind == Tok::kRBrace) return Next();
      if (tok_.kind == Tok::kEnd) {
        error_->open_at = open_at;
        return Fail(Kind::kUnclosedBlock);
      }
      if (!IsName()) {
        error_->top_level = top_level;
        return Fail(Kind::kExpectedName);
      }
      ConfigMember member;
      member.name = tok_.text;
      member.at = tok_.at;
      if (!Next()) return false;
      HclItemShape shape = HclItemShape::kAttributeOrBlock;
      if (top_level && options_.top_level_shape) {
        const std::optional<HclItemShape> allowed = options_.top_level_shape(member.name);
        if (!allowed.has_value()) {
          error_->kind = Kind::kNameRefused;
          error_->at = member.at;
          error_->name = member.name;
          return false;
        }
        shape = *allowed;
      }
      if (!Item(shape, &member, depth)) return false;
      if (!Add(object, std::move(member))) return false;
      if (tok_.kind == Tok::kComma && !Next()) return false;
    }
  }

  // After an item's name: "=" value, or a block as its shape allows.
  bool Item(HclItemShape shape, ConfigMember* member, std::size_t depth) {
    error_->name = member->name;
    if (tok_.kind == Tok::kEquals) return Next() && Value(&member->value, false, depth + 1);
    switch (shape) {
      case HclItemShape::kAttribute:
        return Fail(Kind::kExpectedAfterName);
      case HclItemShape::kAttributeOrBlock:
        if (tok_.kind != Tok::kLBrace) return Fail(Kind::kExpectedAfterName);
        return Block(&member->value, depth + 1);
      case HclItemShape::kAttributeOrLabeledBlock:
        if (!IsName()) return Fail(Kind::kExpectedLabel);
        member->label = tok_.text;
        if (!Next()) return false;
        if (tok_.kind != Tok::kLBrace) {
          error_->label = *member->label;
          return Fail(Kind::kExpectedBlockAfterLabel);
        }
        return Block(&member->value, depth + 1);
    }
    return Fail(Kind::kExpectedAfterName);
  }

  // Keeps every member as written, or (merge_repeated_blocks) merges a
  // repeated block into the first and refuses any other repeat.
  bool Add(ConfigValue* object, ConfigMember member) {
    if (options_.merge_repeated_blocks) {
      for (ConfigMember& earlier : object->members) {
        if (earlier.name != member.name) continue;
        if (earlier.value.kind == ConfigValue::Kind::kObject &&
            member.value.kind == ConfigValue::Kind::kObject) {
          for (ConfigMember& inner : member.value.members) {
            if (!Add(&earlier.value, std::move(inner))) return false;
          }
          return true;
        }
        error_->kind = Kind::kDuplicateName;
        error_->at = member.at;
        error_->first_at = earlier.at;
        error_->name = member.name;
        return false;
      }
    }
    object->members.push_back(std::move(member));
    return true;
  }

  // At "{": the body up to its "}".
  bool Block(ConfigValue* value, std::size_t depth) {
    value->kind = ConfigValue::Kind::kObject;
    value->at = tok_.at;
    return Next() && Body(value, /*top_level=*/false, value->at, depth);
  }

  // value := string | number | true | false | "{" body "}" | "[" [value {"," value} [","]] "]"
  bool Value(ConfigValue* value, bool in_list, std::size_t depth) {
    value->at = tok_.at;
    switch (tok_.kind) {
      case Tok::kString:
        value->kind = ConfigValue::Kind::kString;
        value->text = std::move(tok_.text);
        return Next();
      case Tok::kNumber:
        value->kind = ConfigValue::Kind::kNumber;
        value->text = std::move(tok_.text);
        return Next();
      case Tok::kIdent:
        if (tok_.text == "true" || tok_.text == "false") {
          value->kind = ConfigValue::Kind::kBool;
          value->boolean = tok_.text == "true";
          value->text = std::move(tok_.text);
          return Next();
        }
        break;
      case Tok::kLBrace:
        return Block(value, depth);
      case Tok::kLBracket:
        return List(value, depth);
      default:
        break;
    }
    error_->in_list = in_list;
    return Fail(Kind::kExpectedValue);
  }

  bool List(ConfigValue* value, std::size_t depth) {
    const TextPosition open_at = tok_.at;
    error_->open_at = open_at;
    if (depth > options_.max_depth) return Fail(Kind::kTooDeep);
    value->kind = ConfigValue::Kind::kList;
    if (!Next()) return false;
    for (;;) {
      if (tok_.kind == Tok::kRBracket) return Next();
      if (tok_.kind == Tok::kEnd) {
        error_->open_at = open_at;
        return Fail(Kind::kUnclosedList);
      }
      value->items.emplace_back();
      if (!Value(&value->items.back(), /*in_list=*/true, depth + 1)) return false;
      if (tok_.kind == Tok::kComma) {
        if (!Next()) return false;
      } else if (tok_.kind != Tok::kRBracket) {
        error_->open_at = open_at;
        return Fail(Kind::kExpectedListSeparator);
      }
    }
  }

  // Positions in the whole text, the byte order mark counted.
  TextPosition Whole(TextPosition at) const {
    at.offset += skipped_;
    if (at.line == 1) at.column += static_cast<int>(skipped_);
    return at;
  }

  bool Next() {
    if (!lexer_.Next(&tok_, &error_->lex)) {
      error_->lex.at = Whole(error_->lex.at);
      error_->kind = Kind::kLex;
      error_->at = error_->lex.at;
      return false;
    }
    tok_.at = Whole(tok_.at);
    return true;
  }

  std::size_t skipped_;
  const HclReadOptions& options_;
  HclLexer lexer_;
  HclToken tok_;
  HclReadError* error_;
};

}  // namespace

bool ReadHcl(std::string_view text, const HclReadOptions& options, ConfigValue* out,
             HclReadError* error) {
  *error = HclReadError{};
  *out = ConfigValue{};
  return HclReader(text, options, error).Document(out);
}

}  // namespace tenure
