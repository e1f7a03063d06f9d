// Parsing rules: the text (HCL or JSON) becomes a small tree of objects,
// lists and scalars, each with its byte offset; one interpreter then reads
// the tree into Rules, so both forms accept the same policies and give the
// same errors. HCL is parsed here by recursive descent, JSON by
// nlohmann::json's SAX parser; both stop at limits::kAclRulesNestingMax.
#include "acl/rules.h"

#include <cstddef>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "common/hcl_lexer.h"
#include "common/limits.h"
#include "common/strings.h"

namespace tenure::acl {

std::string_view DispositionName(Disposition disposition) {
  switch (disposition) {
    case Disposition::kRead:
      return "read";
    case Disposition::kList:
      return "list";
    case Disposition::kWrite:
      return "write";
    case Disposition::kDeny:
      return "deny";
  }
  return "deny";
}

Disposition MergeDispositions(Disposition a, Disposition b) {
  // Consul's order (acl/policy.go, takesPrecedenceOver): deny, write, list, read.
  auto rank = [](Disposition d) {
    switch (d) {
      case Disposition::kRead:
        return 0;
      case Disposition::kList:
        return 1;
      case Disposition::kWrite:
        return 2;
      case Disposition::kDeny:
        return 3;
    }
    return 3;
  };
  return rank(a) >= rank(b) ? a : b;
}

std::string_view GlobalManagementRulesText() {
  return "key_prefix \"\" { policy = \"write\" }\n"
         "session_prefix \"\" { policy = \"write\" }\n"
         "node_prefix \"\" { policy = \"write\" }\n"
         "agent_prefix \"\" { policy = \"write\" }\n"
         "operator = \"write\"\n"
         "acl = \"write\"\n";
}

Rules GlobalManagementRules() {
  Rules rules;
  rules.keys.push_back({"", true, Disposition::kWrite});
  rules.sessions.push_back({"", true, Disposition::kWrite});
  rules.nodes.push_back({"", true, Disposition::kWrite});
  rules.agents.push_back({"", true, Disposition::kWrite});
  rules.operator_rule = Disposition::kWrite;
  rules.acl_rule = Disposition::kWrite;
  return rules;
}

namespace {

// --- The tree both forms parse into ------------------------------------------

struct Member;

struct Value {
  enum class Kind : std::uint8_t { kString, kNumber, kBool, kNull, kObject, kList };
  Kind kind = Kind::kNull;
  std::size_t at = 0;           // byte offset where the value starts
  std::string text;             // a string's decoded bytes
  std::vector<Member> members;  // kObject, in the order written (repeats kept)
  std::vector<Value> items;     // kList
};

struct Member {
  std::string name;
  std::size_t name_at = 0;
  // HCL's block label: `key "a/b" { ... }` is {name "key", label "a/b", value {...}}.
  std::optional<std::string> label;
  Value value;
};

std::string_view KindName(Value::Kind kind) {
  switch (kind) {
    case Value::Kind::kString:
      return "a string";
    case Value::Kind::kNumber:
      return "a number";
    case Value::Kind::kBool:
      return "a boolean";
    case Value::Kind::kNull:
      return "null";
    case Value::Kind::kObject:
      return "an object";
    case Value::Kind::kList:
      return "a list";
  }
  return "a value";
}

// "line 3, column 12: <what>" for the byte at `offset` (the end of the text
// when offset is its size).
Status ErrorAt(std::string_view text, std::size_t offset, std::string_view what) {
  std::size_t line = 1;
  std::size_t line_start = 0;
  const std::size_t end = offset < text.size() ? offset : text.size();
  for (std::size_t i = 0; i < end; ++i) {
    if (text[i] == '\n') {
      ++line;
      line_start = i + 1;
    }
  }
  return Status::InvalidArgument("line " + std::to_string(line) + ", column " +
                                 std::to_string(offset - line_start + 1) + ": " +
                                 std::string(what));
}

std::string Quote(std::string_view text) { return GoQuote(text); }

std::string TooDeep() {
  return "rules nest deeper than " + std::to_string(limits::kAclRulesNestingMax) + " levels";
}

// --- The resources -----------------------------------------------------------

// Every resource name Consul's rules accept. Those tenure enforces say where
// their rules go; the others are checked as Consul checks them and dropped.
struct ResourceInfo {
  std::string_view name;
  bool labeled;
  bool prefix;
  bool allows_list;                                // key and key_prefix only
  bool has_intentions;                             // service rules may also set `intentions`
  std::vector<LabeledRule> Rules::*labeled_rules;  // enforced labeled resources
  std::optional<Disposition> Rules::*single_rule;  // enforced unlabeled resources
};

constexpr bool kLabeled = true;
constexpr bool kUnlabeled = false;

constexpr ResourceInfo kResources[] = {
    {"acl", kUnlabeled, false, false, false, nullptr, &Rules::acl_rule},
    {"agent", kLabeled, false, false, false, &Rules::agents, nullptr},
    {"agent_prefix", kLabeled, true, false, false, &Rules::agents, nullptr},
    {"event", kLabeled, false, false, false, nullptr, nullptr},
    {"event_prefix", kLabeled, true, false, false, nullptr, nullptr},
    {"identity", kLabeled, false, false, true, nullptr, nullptr},
    {"identity_prefix", kLabeled, true, false, true, nullptr, nullptr},
    {"key", kLabeled, false, true, false, &Rules::keys, nullptr},
    {"key_prefix", kLabeled, true, true, false, &Rules::keys, nullptr},
    {"keyring", kUnlabeled, false, false, false, nullptr, nullptr},
    {"mesh", kUnlabeled, false, false, false, nullptr, nullptr},
    {"node", kLabeled, false, false, false, &Rules::nodes, nullptr},
    {"node_prefix", kLabeled, true, false, false, &Rules::nodes, nullptr},
    {"operator", kUnlabeled, false, false, false, nullptr, &Rules::operator_rule},
    {"peering", kUnlabeled, false, false, false, nullptr, nullptr},
    {"query", kLabeled, false, false, false, nullptr, nullptr},
    {"query_prefix", kLabeled, true, false, false, nullptr, nullptr},
    {"service", kLabeled, false, false, true, nullptr, nullptr},
    {"service_prefix", kLabeled, true, false, true, nullptr, nullptr},
    {"session", kLabeled, false, false, false, &Rules::sessions, nullptr},
    {"session_prefix", kLabeled, true, false, false, &Rules::sessions, nullptr},
};

const ResourceInfo* FindResource(std::string_view name) {
  for (const ResourceInfo& info : kResources) {
    if (info.name == name) return &info;
  }
  return nullptr;
}

// The error for a top-level name that is not a resource.
std::string UnknownResource(std::string_view name) {
  if (name == "namespace" || name == "namespace_prefix" || name == "partition" ||
      name == "partition_prefix") {
    return Quote(name) +
           " rules are a Consul Enterprise feature; tenure has no namespaces or "
           "partitions";
  }
  std::string known;
  for (const ResourceInfo& info : kResources) {
    if (!known.empty()) known += ", ";
    known += info.name;
  }
  return "unknown resource " + Quote(name) + "; expected one of " + known;
}

// --- HCL ---------------------------------------------------------------------

class HclParser {
 public:
  explicit HclParser(std::string_view text)
      : text_(text), lexer_(text, HclLexerOptions{.octal_escapes = true, .leading_zeros = true}) {}

  // The whole text as one object: its top-level items.
  Result<Value> Parse() {
    TENURE_RETURN_IF_ERROR(Next());
    Value top;
    top.kind = Value::Kind::kObject;
    TENURE_RETURN_IF_ERROR(ParseBody(top, /*top_level=*/true, 0, 0));
    return top;
  }

 private:
  using Tok = HclTokenKind;

  Status Error(std::size_t at, std::string_view what) const { return ErrorAt(text_, at, what); }

  // What the current token is, for "found ..." in errors.
  std::string Found() const {
    switch (tok_.kind) {
      case Tok::kEnd:
        return "the end of the rules";
      case Tok::kIdent:
        return tok_.text;
      case Tok::kString:
        return Quote(tok_.text);
      case Tok::kNumber:
        return "the number " + tok_.text;
      case Tok::kEquals:
        return "\"=\"";
      case Tok::kLBrace:
        return "\"{\"";
      case Tok::kRBrace:
        return "\"}\"";
      case Tok::kLBracket:
        return "\"[\"";
      case Tok::kRBracket:
        return "\"]\"";
      case Tok::kComma:
        return "\",\"";
    }
    return "?";
  }

  // "expected <what>, found <the current token>", at the current token.
  Status Expected(std::string_view what) const {
    return Error(tok_.at.offset, "expected " + std::string(what) + ", found " + Found());
  }

  // body := { item [","] } ("}" | the end of the text at the top level)
  // item := name label? ("=" value | "{" body "}")
  Status ParseBody(Value& object, bool top_level, std::size_t open_at, std::size_t depth) {
    if (depth > limits::kAclRulesNestingMax) return Error(open_at, TooDeep());
    for (;;) {
      if (top_level && tok_.kind == Tok::kEnd) return Status::Ok();
      if (!top_level && tok_.kind == Tok::kRBrace) return Next();
      if (!top_level && tok_.kind == Tok::kEnd) {
        return Error(open_at,
                     "this \"{\" is never closed: expected \"}\", found the end of "
                     "the rules");
      }
      if (tok_.kind != Tok::kIdent && tok_.kind != Tok::kString) {
        return Expected(top_level ? "a resource name such as key_prefix"
                                  : "an attribute name or \"}\"");
      }
      Member member;
      member.name = tok_.text;
      member.name_at = tok_.at.offset;
      TENURE_RETURN_IF_ERROR(Next());
      if (top_level) {
        const ResourceInfo* info = FindResource(member.name);
        if (info == nullptr) return Error(member.name_at, UnknownResource(member.name));
        TENURE_RETURN_IF_ERROR(ParseResourceItem(*info, member, depth));
      } else if (tok_.kind == Tok::kEquals) {
        TENURE_RETURN_IF_ERROR(Next());
        TENURE_RETURN_IF_ERROR(ParseValue(member.value, "after \"=\"", depth + 1));
      } else if (tok_.kind == Tok::kLBrace) {
        TENURE_RETURN_IF_ERROR(ParseBlock(member.value, depth + 1));
      } else {
        return Expected("\"=\" after " + Quote(member.name));
      }
      object.members.push_back(std::move(member));
      if (tok_.kind == Tok::kComma) TENURE_RETURN_IF_ERROR(Next());
    }
  }

  // After a top-level resource name: `"label" { ... }` or `= value` for the
  // labeled ones, `= "disposition"` for the others.
  Status ParseResourceItem(const ResourceInfo& info, Member& member, std::size_t depth) {
    const std::string name = Quote(member.name);
    if (tok_.kind == Tok::kEquals) {
      TENURE_RETURN_IF_ERROR(Next());
      return ParseValue(member.value, "after \"=\"", depth + 1);
    }
    if (!info.labeled) return Expected("\"=\" after " + name);
    if (tok_.kind != Tok::kString && tok_.kind != Tok::kIdent) {
      return Expected("a quoted label or \"=\" after " + name);
    }
    member.label = tok_.text;
    TENURE_RETURN_IF_ERROR(Next());
    if (tok_.kind != Tok::kLBrace) {
      return Expected("\"{\" after " + std::string(info.name) + " " + Quote(*member.label));
    }
    return ParseBlock(member.value, depth + 1);
  }

  // At "{": the body up to its "}".
  Status ParseBlock(Value& value, std::size_t depth) {
    value.kind = Value::Kind::kObject;
    value.at = tok_.at.offset;
    TENURE_RETURN_IF_ERROR(Next());
    return ParseBody(value, /*top_level=*/false, value.at, depth);
  }

  // value := string | number | true | false | "{" body "}" | "[" [value {"," value} [","]] "]"
  Status ParseValue(Value& value, std::string_view where, std::size_t depth) {
    value.at = tok_.at.offset;
    switch (tok_.kind) {
      case Tok::kString:
        value.kind = Value::Kind::kString;
        value.text = std::move(tok_.text);
        return Next();
      case Tok::kNumber:
        value.kind = Value::Kind::kNumber;
        value.text = std::move(tok_.text);
        return Next();
      case Tok::kIdent:
        if (tok_.text == "true" || tok_.text == "false") {
          value.kind = Value::Kind::kBool;
          value.text = std::move(tok_.text);
          return Next();
        }
        break;
      case Tok::kLBrace:
        return ParseBlock(value, depth);
      case Tok::kLBracket:
        return ParseList(value, depth);
      default:
        break;
    }
    return Expected("a value " + std::string(where));
  }

  Status ParseList(Value& value, std::size_t depth) {
    if (depth > limits::kAclRulesNestingMax) return Error(tok_.at.offset, TooDeep());
    value.kind = Value::Kind::kList;
    const std::size_t open_at = tok_.at.offset;
    TENURE_RETURN_IF_ERROR(Next());
    for (;;) {
      if (tok_.kind == Tok::kRBracket) return Next();
      if (tok_.kind == Tok::kEnd) {
        return Error(open_at,
                     "this \"[\" is never closed: expected \"]\", found the end of "
                     "the rules");
      }
      value.items.emplace_back();
      TENURE_RETURN_IF_ERROR(ParseValue(value.items.back(), "or \"]\" in a list", depth + 1));
      if (tok_.kind == Tok::kComma) {
        TENURE_RETURN_IF_ERROR(Next());
      } else if (tok_.kind != Tok::kRBracket) {
        return Expected("\",\" or \"]\" after a list element");
      }
    }
  }

  // --- the tokens ---

  // The next token into tok_; the lexer's errors in the rules' words.
  Status Next() {
    HclLexError error;
    if (lexer_.Next(&tok_, &error)) return Status::Ok();
    const std::size_t at = error.at.offset;
    const std::string e(1, error.escape);
    switch (error.kind) {
      case HclLexErrorKind::kUnclosedComment:
        return Error(at, "this /* comment is never closed with */");
      case HclLexErrorKind::kUnclosedString:
        return Error(at,
                     "this string is never closed: expected '\"' before the end of the "
                     "line");
      case HclLexErrorKind::kUnknownEscape:
        return Error(at, "unknown escape \\" + e + " in a string; use \\\\ for a backslash");
      case HclLexErrorKind::kHexEscapeDigits:
        return Error(at, "\\" + e + " needs " +
                             std::to_string(e == "x"   ? 2
                                            : e == "u" ? 4
                                                       : 8) +
                             " hexadecimal digits");
      case HclLexErrorKind::kNotUnicode:
        return Error(at, "\\" + e + " escape is not a Unicode code point");
      case HclLexErrorKind::kOctalEscapeDigits:
        return Error(at, "an octal escape needs 3 digits");
      case HclLexErrorKind::kOctalEscapeTooLarge:
        return Error(at, "an octal escape above \\377");
      case HclLexErrorKind::kBadNumber:
        return Error(at, "malformed number");
      case HclLexErrorKind::kHeredoc:
        return Error(at,
                     "heredoc strings (<<) are not supported in ACL rules; use a quoted "
                     "string");
      case HclLexErrorKind::kUnexpectedCharacter:
        return Error(at, "unexpected character '" + e + "'");
      case HclLexErrorKind::kUnexpectedByte:
        break;
    }
    static constexpr char kHex[] = "0123456789abcdef";
    const auto byte = static_cast<unsigned char>(error.escape);
    return Error(at, std::string("unexpected byte 0x") + kHex[byte >> 4] + kHex[byte & 15]);
  }

  std::string_view text_;
  HclLexer lexer_;
  HclToken tok_;
};

// --- JSON ----------------------------------------------------------------------

// A char iterator that records how many bytes the JSON lexer has taken, so
// the SAX events below know where their token ended.
class CountingIterator {
 public:
  using iterator_category = std::forward_iterator_tag;
  using value_type = char;
  using difference_type = std::ptrdiff_t;
  using pointer = const char*;
  using reference = const char&;

  CountingIterator() = default;
  CountingIterator(const char* base, const char* p, std::size_t* taken)
      : base_(base), p_(p), taken_(taken) {}
  reference operator*() const { return *p_; }
  CountingIterator& operator++() {
    ++p_;
    if (taken_ != nullptr) *taken_ = static_cast<std::size_t>(p_ - base_);
    return *this;
  }
  CountingIterator operator++(int) {
    CountingIterator before = *this;
    ++*this;
    return before;
  }
  bool operator==(const CountingIterator& other) const { return p_ == other.p_; }

 private:
  const char* base_ = nullptr;
  const char* p_ = nullptr;
  std::size_t* taken_ = nullptr;
};

// Builds the tree from nlohmann's SAX events; positions come from the bytes
// taken so far (a string token ends at its closing quote, a number one byte
// before the lexer's look-ahead).
class JsonTreeBuilder : public nlohmann::json_sax<nlohmann::json> {
 public:
  JsonTreeBuilder(std::string_view text, const std::size_t* taken) : text_(text), taken_(taken) {
    root_.kind = Value::Kind::kNull;
  }

  Value TakeRoot() { return std::move(root_); }
  // Set when an event refused the input (too deep) or the parser failed.
  const std::optional<Status>& error() const { return error_; }

  bool null() override { return Add(Value::Kind::kNull, *taken_ - 4, {}); }
  bool boolean(bool value) override {
    return Add(Value::Kind::kBool, *taken_ - (value ? 4 : 5), value ? "true" : "false");
  }
  bool number_integer(number_integer_t /*value*/) override { return Number(); }
  bool number_unsigned(number_unsigned_t /*value*/) override { return Number(); }
  bool number_float(number_float_t /*value*/, const string_t& /*text*/) override {
    return Number();
  }
  bool string(string_t& value) override {
    return Add(Value::Kind::kString, StringStart(), std::move(value));
  }
  bool binary(binary_t& /*value*/) override { return false; }  // never in JSON text
  bool start_object(std::size_t /*elements*/) override { return Open(Value::Kind::kObject); }
  bool key(string_t& name) override {
    pending_name_ = std::move(name);
    pending_name_at_ = StringStart();
    return true;
  }
  bool end_object() override { return Close(); }
  bool start_array(std::size_t /*elements*/) override { return Open(Value::Kind::kList); }
  bool end_array() override { return Close(); }

  bool parse_error(std::size_t position, const std::string& /*last_token*/,
                   const nlohmann::detail::exception& ex) override {
    // nlohmann's text: "[json.exception.parse_error.101] parse error at line
    // 1, column 9: syntax error while parsing ..."; keep what follows the
    // place, which we name ourselves.
    std::string what = ex.what();
    const std::size_t column = what.find(", column ");
    if (column != std::string::npos) {
      const std::size_t colon = what.find(": ", column);
      if (colon != std::string::npos) what.erase(0, colon + 2);
    }
    // Its "; last read: '...'" holds the bytes since the last token began,
    // which may start tokens earlier: the line and column say it better.
    const std::size_t last_read = what.find("; last read: '");
    if (last_read != std::string::npos) {
      const std::size_t expected = what.find("'; expected ", last_read);
      what.erase(last_read,
                 expected == std::string::npos ? std::string::npos : expected + 1 - last_read);
    }
    error_ = ErrorAt(text_, position > 0 ? position - 1 : 0, "invalid JSON: " + what);
    return false;
  }

 private:
  // Where the string that just ended began: its opening quote.
  std::size_t StringStart() const {
    std::size_t i = *taken_ - 1;  // the closing quote
    while (i > 0) {
      --i;
      if (text_[i] != '"') continue;
      std::size_t backslashes = 0;
      while (i > backslashes && text_[i - backslashes - 1] == '\\') ++backslashes;
      if (backslashes % 2 == 0) return i;
    }
    return 0;
  }

  bool Number() {
    std::size_t end = *taken_;
    auto is_number_char = [](char c) {
      return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E';
    };
    if (end > 0 && !is_number_char(text_[end - 1])) --end;  // the look-ahead
    std::size_t start = end;
    while (start > 0 && is_number_char(text_[start - 1])) --start;
    return Add(Value::Kind::kNumber, start, std::string(text_.substr(start, end - start)));
  }

  // The slot for the next value: a new member of the open object, a new
  // item of the open list, or the root.
  Value* Slot() {
    if (stack_.empty()) return &root_;
    Value& open = *stack_.back();
    if (open.kind == Value::Kind::kList) {
      open.items.emplace_back();
      return &open.items.back();
    }
    Member member;
    member.name = std::move(pending_name_);
    member.name_at = pending_name_at_;
    open.members.push_back(std::move(member));
    return &open.members.back().value;
  }

  bool Add(Value::Kind kind, std::size_t at, std::string text) {
    Value* slot = Slot();
    slot->kind = kind;
    slot->at = at;
    slot->text = std::move(text);
    return true;
  }

  bool Open(Value::Kind kind) {
    const std::size_t at = *taken_ - 1;
    if (stack_.size() >= limits::kAclRulesNestingMax) {
      error_ = ErrorAt(text_, at, TooDeep());
      return false;
    }
    Value* slot = Slot();
    slot->kind = kind;
    slot->at = at;
    // Pointers on the stack stay valid: only the innermost open value grows.
    stack_.push_back(slot);
    return true;
  }

  bool Close() {
    stack_.pop_back();
    return true;
  }

  std::string_view text_;
  const std::size_t* taken_;
  Value root_;
  std::vector<Value*> stack_;
  std::string pending_name_;
  std::size_t pending_name_at_ = 0;
  std::optional<Status> error_;
};

Result<Value> ParseJson(std::string_view text) {
  std::size_t taken = 0;
  JsonTreeBuilder builder(text, &taken);
  const CountingIterator first(text.data(), text.data(), &taken);
  const CountingIterator last(text.data(), text.data() + text.size(), nullptr);
  const bool ok = nlohmann::json::sax_parse(first, last, &builder);
  if (!ok || builder.error().has_value()) {
    if (builder.error().has_value()) return *builder.error();
    return ErrorAt(text, taken, "invalid JSON");
  }
  return builder.TakeRoot();
}

// --- From the tree to Rules -----------------------------------------------------

class Interpreter {
 public:
  explicit Interpreter(std::string_view text) : text_(text) {}

  Result<Rules> Run(const Value& top) {
    for (const Member& member : top.members) TENURE_RETURN_IF_ERROR(Resource(member));
    return std::move(rules_);
  }

 private:
  Status Error(std::size_t at, std::string_view what) const { return ErrorAt(text_, at, what); }

  Status Resource(const Member& member) {
    const ResourceInfo* info = FindResource(member.name);
    if (info == nullptr) return Error(member.name_at, UnknownResource(member.name));
    if (!info->labeled) return Unlabeled(*info, member);
    if (member.label.has_value()) {
      return Rule(*info, *member.label, member.value);
    }
    return LabelMap(*info, member.value, /*in_list=*/false);
  }

  // `key = { "a" = {...}, "b" {...} }`, {"key": {"a": {...}}}, or a list of such objects.
  Status LabelMap(const ResourceInfo& info, const Value& value, bool in_list) {
    if (value.kind == Value::Kind::kList && !in_list) {
      for (const Value& item : value.items) {
        TENURE_RETURN_IF_ERROR(LabelMap(info, item, /*in_list=*/true));
      }
      return Status::Ok();
    }
    if (value.kind != Value::Kind::kObject) {
      return Error(value.at, Quote(info.name) + " rules need a label, as in " +
                                 std::string(info.name) +
                                 " \"<name>\" { policy = \"read\" }; "
                                 "found " +
                                 std::string(KindName(value.kind)));
    }
    for (const Member& labeled : value.members) {
      TENURE_RETURN_IF_ERROR(Rule(info, labeled.name, labeled.value));
    }
    return Status::Ok();
  }

  // The body of one rule: { policy = "..." } (and `intentions` for services).
  Status Rule(const ResourceInfo& info, const std::string& label, const Value& body) {
    const std::string what = std::string(info.name) + " " + Quote(label);
    if (body.kind == Value::Kind::kList) {  // JSON's "a": [{...}, {...}]
      for (const Value& item : body.items) {
        if (item.kind == Value::Kind::kList) {
          return Error(item.at, "the rule for " + what + " must be an object, found a list");
        }
        TENURE_RETURN_IF_ERROR(Rule(info, label, item));
      }
      return Status::Ok();
    }
    if (body.kind != Value::Kind::kObject) {
      return Error(body.at, "the rule for " + what + " must be a block such as { policy = " +
                                "\"read\" }, found " + std::string(KindName(body.kind)));
    }
    std::optional<Disposition> disposition;
    for (const Member& attribute : body.members) {
      const bool is_policy = attribute.name == "policy";
      if (!is_policy && !(info.has_intentions && attribute.name == "intentions")) {
        return Error(attribute.name_at,
                     "unknown attribute " + Quote(attribute.name) + " in the rule for " + what +
                         (info.has_intentions ? "; expected \"policy\" or \"intentions\""
                                              : "; expected \"policy\""));
      }
      const Value& value = attribute.value;
      if (value.kind != Value::Kind::kString) {
        return Error(value.at, Quote(attribute.name) + " in the rule for " + what +
                                   " must be a quoted string, found " +
                                   std::string(KindName(value.kind)));
      }
      if (!is_policy) {  // intentions: checked as Consul does, not kept
        if (value.text.empty()) continue;
        TENURE_RETURN_IF_ERROR(ParseDisposition(info, value, what, /*allow_list=*/false).status());
        continue;
      }
      if (disposition.has_value()) {
        return Error(attribute.name_at, "\"policy\" is set twice in the rule for " + what);
      }
      TENURE_ASSIGN_OR_RETURN(disposition, ParseDisposition(info, value, what, info.allows_list));
    }
    if (!disposition.has_value()) {
      return Error(body.at, "the rule for " + what + " has no \"policy\"");
    }
    if (info.labeled_rules != nullptr) {
      (rules_.*info.labeled_rules).push_back({label, info.prefix, *disposition});
    }
    return Status::Ok();
  }

  // `operator = "read"`: a disposition, or "" for no rule (as Consul allows).
  Status Unlabeled(const ResourceInfo& info, const Member& member) {
    const Value& value = member.value;
    if (value.kind != Value::Kind::kString) {
      return Error(value.at, Quote(info.name) + " takes a quoted policy, as in " +
                                 std::string(info.name) + " = \"read\"; found " +
                                 std::string(KindName(value.kind)));
    }
    if (value.text.empty()) return Status::Ok();
    TENURE_ASSIGN_OR_RETURN(Disposition disposition,
                            ParseDisposition(info, value, std::string(info.name), false));
    if (info.single_rule != nullptr) {
      std::optional<Disposition>& rule = rules_.*info.single_rule;
      rule = rule.has_value() ? MergeDispositions(*rule, disposition) : disposition;
    }
    return Status::Ok();
  }

  // read, write, deny (and list where allowed), in any case, as Consul reads them.
  Result<Disposition> ParseDisposition(const ResourceInfo& info, const Value& value,
                                       const std::string& what, bool allow_list) const {
    const std::string lower = AsciiLower(value.text);
    if (lower == "read") return Disposition::kRead;
    if (lower == "write") return Disposition::kWrite;
    if (lower == "deny") return Disposition::kDeny;
    if (lower == "list") {
      if (allow_list) return Disposition::kList;
      return Error(value.at, "policy \"list\" is only valid in key and key_prefix rules, not in " +
                                 std::string(info.name) + " rules");
    }
    return Error(value.at, "unknown policy " + Quote(value.text) + " for " + what +
                               (allow_list ? "; expected \"read\", \"list\", \"write\" or \"deny\""
                                           : "; expected \"read\", \"write\" or \"deny\""));
  }

  std::string_view text_;
  Rules rules_;
};

}  // namespace

Result<Rules> ParseRules(std::string_view text) {
  if (text.size() > limits::kAclRulesBytesMax) {
    return Status::TooLarge("ACL rules are " + std::to_string(text.size()) +
                            " bytes, more than the " + std::to_string(limits::kAclRulesBytesMax) +
                            " allowed");
  }
  const std::size_t first = text.find_first_not_of(" \t\r\n");
  const bool json = first != std::string_view::npos && text[first] == '{';
  Result<Value> tree = json ? ParseJson(text) : HclParser(text).Parse();
  if (!tree.ok()) return tree.status();
  return Interpreter(text).Run(*tree);
}

}  // namespace tenure::acl
