// How a check is decided (docs/acl-rules.md, "Precedence"), after Consul's
// policy authorizer chained over its static default authorizer:
//
// 1. The rules of all the token's policies are merged per resource, label and
//    kind (exact or prefix): deny over write over list over read
//    (MergeDispositions).
// 2. For a labeled resource the exact rule for the name decides; without
//    one, the prefix rule with the longest label the name begins with.
//    Exact beats prefix whatever their dispositions.
// 3. The rule found grants by its disposition: write grants read, list and
//    write; list grants read and list; read grants read; deny grants nothing.
// 4. No rule: the default policy decides, except that acl:read and acl:write
//    are never granted by default (Consul's allow-all default authorizer
//    lacks management).
#include "acl/authorizer.h"

namespace tenure::acl {

std::string_view ResourceName(Resource resource) {
  switch (resource) {
    case Resource::kKey:
      return "key";
    case Resource::kSession:
      return "session";
    case Resource::kNode:
      return "node";
    case Resource::kAgent:
      return "agent";
    case Resource::kOperator:
      return "operator";
    case Resource::kAcl:
      return "acl";
  }
  return "acl";
}

std::string_view AccessName(Access access) {
  switch (access) {
    case Access::kRead:
      return "read";
    case Access::kList:
      return "list";
    case Access::kWrite:
      return "write";
  }
  return "write";
}

std::string_view Decision::permission() const {
  // Every resource:access pair, spelled once, so a denial costs no allocation.
  static constexpr std::string_view kTexts[6][3] = {
      {"key:read", "key:list", "key:write"},
      {"session:read", "session:list", "session:write"},
      {"node:read", "node:list", "node:write"},
      {"agent:read", "agent:list", "agent:write"},
      {"operator:read", "operator:list", "operator:write"},
      {"acl:read", "acl:list", "acl:write"},
  };
  return kTexts[static_cast<std::size_t>(resource_)][static_cast<std::size_t>(access_)];
}

namespace {

// Step 3: what a rule's disposition grants.
bool Grants(Disposition rule, Access access) {
  switch (rule) {
    case Disposition::kWrite:
      return true;
    case Disposition::kList:
      return access != Access::kWrite;
    case Disposition::kRead:
      return access == Access::kRead;
    case Disposition::kDeny:
      return false;
  }
  return false;
}

void AddAll(RuleTree& tree, const std::vector<LabeledRule>& rules) {
  for (const LabeledRule& rule : rules) tree.Add(rule.label, rule.prefix, rule.disposition);
}

void Merge(std::optional<Disposition>& into, const std::optional<Disposition>& rule) {
  if (!rule.has_value()) return;
  into = into.has_value() ? MergeDispositions(*into, *rule) : *rule;
}

}  // namespace

Authorizer Authorizer::Compile(const std::vector<const Rules*>& policies,
                               const AuthorizerOptions& options) {
  Authorizer authz;
  authz.options_ = options;
  const Rules management = GlobalManagementRules();
  std::vector<const Rules*> all = policies;
  if (options.management) all.push_back(&management);
  for (const Rules* rules : all) {
    if (rules == nullptr) continue;
    AddAll(authz.keys_, rules->keys);
    AddAll(authz.sessions_, rules->sessions);
    AddAll(authz.nodes_, rules->nodes);
    AddAll(authz.agents_, rules->agents);
    Merge(authz.operator_rule_, rules->operator_rule);
    Merge(authz.acl_rule_, rules->acl_rule);
  }
  authz.keys_.Seal();
  authz.sessions_.Seal();
  authz.nodes_.Seal();
  authz.agents_.Seal();
  return authz;
}

Decision Authorizer::Default(Resource resource, Access access) const {
  const bool allow = options_.default_policy == DefaultPolicy::kAllow && resource != Resource::kAcl;
  return Decision(allow, resource, access);
}

Decision Authorizer::Check(const RuleTree& tree, std::string_view name, Resource resource,
                           Access access) const {
  const std::optional<Disposition> rule = tree.Find(name);
  if (!rule.has_value()) return Default(resource, access);
  return Decision(Grants(*rule, access), resource, access);
}

Decision Authorizer::CheckSingle(const std::optional<Disposition>& rule, Resource resource,
                                 Access access) const {
  if (!rule.has_value()) return Default(resource, access);
  return Decision(Grants(*rule, access), resource, access);
}

Decision Authorizer::KeyRead(std::string_view key) const {
  return Check(keys_, key, Resource::kKey, Access::kRead);
}

Decision Authorizer::KeyList(std::string_view prefix) const {
  if (!options_.enable_key_list_policy) return Decision(true, Resource::kKey, Access::kList);
  return Check(keys_, prefix, Resource::kKey, Access::kList);
}

Decision Authorizer::KeyWrite(std::string_view key) const {
  return Check(keys_, key, Resource::kKey, Access::kWrite);
}

Decision Authorizer::KeyWritePrefix(std::string_view prefix) const {
  // Exact rules count only below: an exact rule for the prefix itself is a
  // rule "under" it, not one that covers it.
  const std::optional<Disposition> covering = keys_.LongestPrefixRule(prefix);
  if (covering.has_value() && *covering != Disposition::kWrite) {
    return Decision(false, Resource::kKey, Access::kWrite);
  }
  if (keys_.AnyLessThanWriteUnder(prefix)) return Decision(false, Resource::kKey, Access::kWrite);
  if (covering.has_value()) return Decision(true, Resource::kKey, Access::kWrite);
  return Default(Resource::kKey, Access::kWrite);
}

Decision Authorizer::KeyReadPrefix(std::string_view prefix) const {
  const std::optional<Disposition> covering = keys_.LongestPrefixRule(prefix);
  if (covering.has_value() && *covering == Disposition::kDeny) {
    return Decision(false, Resource::kKey, Access::kRead);
  }
  if (keys_.AnyDenyUnder(prefix)) return Decision(false, Resource::kKey, Access::kRead);
  if (covering.has_value()) return Decision(true, Resource::kKey, Access::kRead);
  return Default(Resource::kKey, Access::kRead);
}

Decision Authorizer::SessionRead(std::string_view node) const {
  return Check(sessions_, node, Resource::kSession, Access::kRead);
}

Decision Authorizer::SessionWrite(std::string_view node) const {
  return Check(sessions_, node, Resource::kSession, Access::kWrite);
}

Decision Authorizer::NodeRead(std::string_view node) const {
  return Check(nodes_, node, Resource::kNode, Access::kRead);
}

Decision Authorizer::NodeWrite(std::string_view node) const {
  return Check(nodes_, node, Resource::kNode, Access::kWrite);
}

Decision Authorizer::AgentRead(std::string_view node) const {
  return Check(agents_, node, Resource::kAgent, Access::kRead);
}

Decision Authorizer::AgentWrite(std::string_view node) const {
  return Check(agents_, node, Resource::kAgent, Access::kWrite);
}

Decision Authorizer::OperatorRead() const {
  return CheckSingle(operator_rule_, Resource::kOperator, Access::kRead);
}

Decision Authorizer::OperatorWrite() const {
  return CheckSingle(operator_rule_, Resource::kOperator, Access::kWrite);
}

Decision Authorizer::AclRead() const {
  return CheckSingle(acl_rule_, Resource::kAcl, Access::kRead);
}

Decision Authorizer::AclWrite() const {
  return CheckSingle(acl_rule_, Resource::kAcl, Access::kWrite);
}

}  // namespace tenure::acl
