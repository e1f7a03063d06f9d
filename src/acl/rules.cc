// Parsing rules: the common reader turns the text (HCL or JSON) into a tree
// with positions (acl/rules_text.h), and one interpreter reads the tree into
// Rules (acl/rules_interpreter.h), so both forms accept the same policies
// and give the same errors.
#include "acl/rules.h"

#include <string>

#include "acl/rules_interpreter.h"
#include "acl/rules_text.h"
#include "common/limits.h"

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

Result<Rules> ParseRules(std::string_view text) {
  if (text.size() > limits::kAclRulesBytesMax) {
    return Status::TooLarge("ACL rules are " + std::to_string(text.size()) +
                            " bytes, more than the " + std::to_string(limits::kAclRulesBytesMax) +
                            " allowed");
  }
  TENURE_ASSIGN_OR_RETURN(ConfigValue tree, ReadRulesText(text));
  return InterpretRules(text, tree);
}

}  // namespace tenure::acl
