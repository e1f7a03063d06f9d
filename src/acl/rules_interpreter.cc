#include "acl/rules_interpreter.h"

#include <optional>
#include <string>
#include <utility>

#include "acl/rule_resources.h"
#include "acl/rules_text.h"
#include "common/strings.h"

namespace tenure::acl {
namespace {

using Kind = ConfigValue::Kind;

std::string_view KindName(Kind kind) {
  switch (kind) {
    case Kind::kString:
      return "a string";
    case Kind::kNumber:
      return "a number";
    case Kind::kBool:
      return "a boolean";
    case Kind::kNull:
      return "null";
    case Kind::kObject:
      return "an object";
    case Kind::kList:
      return "a list";
  }
  return "a value";
}

std::string Quote(std::string_view text) { return GoQuote(text); }

class Interpreter {
 public:
  explicit Interpreter(std::string_view text) : text_(text) {}

  Result<Rules> Run(const ConfigValue& top) {
    for (const ConfigMember& member : top.members) TENURE_RETURN_IF_ERROR(Resource(member));
    return std::move(rules_);
  }

 private:
  Status Error(const TextPosition& at, std::string_view what) const {
    return RulesErrorAt(text_, at.offset, what);
  }

  Status Resource(const ConfigMember& member) {
    const ResourceInfo* info = FindResource(member.name);
    if (info == nullptr) return Error(member.at, UnknownResource(member.name));
    if (!info->labeled) return Unlabeled(*info, member);
    if (member.label.has_value()) {
      return Rule(*info, *member.label, member.value);
    }
    return LabelMap(*info, member.value, /*in_list=*/false);
  }

  // `key = { "a" = {...}, "b" {...} }`, {"key": {"a": {...}}}, or a list of such objects.
  Status LabelMap(const ResourceInfo& info, const ConfigValue& value, bool in_list) {
    if (value.kind == Kind::kList && !in_list) {
      for (const ConfigValue& item : value.items) {
        TENURE_RETURN_IF_ERROR(LabelMap(info, item, /*in_list=*/true));
      }
      return Status::Ok();
    }
    if (value.kind != Kind::kObject) {
      return Error(value.at, Quote(info.name) + " rules need a label, as in " +
                                 std::string(info.name) +
                                 " \"<name>\" { policy = \"read\" }; "
                                 "found " +
                                 std::string(KindName(value.kind)));
    }
    for (const ConfigMember& labeled : value.members) {
      TENURE_RETURN_IF_ERROR(Rule(info, labeled.name, labeled.value));
    }
    return Status::Ok();
  }

  // The body of one rule: { policy = "..." } (and `intentions` for services).
  Status Rule(const ResourceInfo& info, const std::string& label, const ConfigValue& body) {
    const std::string what = std::string(info.name) + " " + Quote(label);
    if (body.kind == Kind::kList) {  // JSON's "a": [{...}, {...}]
      for (const ConfigValue& item : body.items) {
        if (item.kind == Kind::kList) {
          return Error(item.at, "the rule for " + what + " must be an object, found a list");
        }
        TENURE_RETURN_IF_ERROR(Rule(info, label, item));
      }
      return Status::Ok();
    }
    if (body.kind != Kind::kObject) {
      return Error(body.at, "the rule for " + what + " must be a block such as { policy = " +
                                "\"read\" }, found " + std::string(KindName(body.kind)));
    }
    std::optional<Disposition> disposition;
    for (const ConfigMember& attribute : body.members) {
      const bool is_policy = attribute.name == "policy";
      if (!is_policy && !(info.has_intentions && attribute.name == "intentions")) {
        return Error(attribute.at,
                     "unknown attribute " + Quote(attribute.name) + " in the rule for " + what +
                         (info.has_intentions ? "; expected \"policy\" or \"intentions\""
                                              : "; expected \"policy\""));
      }
      const ConfigValue& value = attribute.value;
      if (value.kind != Kind::kString) {
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
        return Error(attribute.at, "\"policy\" is set twice in the rule for " + what);
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
  Status Unlabeled(const ResourceInfo& info, const ConfigMember& member) {
    const ConfigValue& value = member.value;
    if (value.kind != Kind::kString) {
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
  Result<Disposition> ParseDisposition(const ResourceInfo& info, const ConfigValue& value,
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

Result<Rules> InterpretRules(std::string_view text, const ConfigValue& top) {
  return Interpreter(text).Run(top);
}

}  // namespace tenure::acl
