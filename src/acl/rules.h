// The ACL rules language: the rules of one policy, written in Consul's HCL
// form or its JSON form, parsed into the rules tenure enforces
// (docs/acl-rules.md). Pure: no I/O, no clock; the same text always gives the
// same Rules or the same error.
//
//   key_prefix "svc/" { policy = "write" }    {"key_prefix": {"svc/": {"policy": "write"}},
//   session_prefix "" { policy = "read" }      "session_prefix": {"": {"policy": "read"}},
//   operator = "read"                          "operator": "read"}
//
// Errors name the place and what was expected, as
// `line 3, column 12: expected "=" after "policy", found "read"` (lines and
// columns count from 1, columns in bytes); the caller adds which policy.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace tenure::acl {

// What a rule grants: read < list < write (each implies the ones before it),
// and deny, which refuses everything. `list` is valid only in key and
// key_prefix rules (docs/acl-rules.md, "Dispositions").
enum class Disposition : std::uint8_t { kRead, kList, kWrite, kDeny };

// "read", "list", "write", "deny": as written in rules.
std::string_view DispositionName(Disposition disposition);

// The rule that stands when two rules name the same resource and label (in
// two policies of one token, or twice in one policy), as Consul merges them:
// deny over write over list over read. Not "the most restrictive": read and
// write give write.
Disposition MergeDispositions(Disposition a, Disposition b);

// A rule of a labeled resource: `key "a/b"`, `key_prefix "a/"`,
// `session "node1"`, `node_prefix ""`, ...
struct LabeledRule {
  std::string label;    // a key, a key prefix, a node name or a node-name prefix
  bool prefix = false;  // key_prefix rather than key, session_prefix rather than session...
  Disposition disposition = Disposition::kDeny;

  bool operator==(const LabeledRule&) const = default;
};

// One policy's rules for the resources tenure enforces. Labeled rules stay in
// the order of the text, repeats included (the Authorizer merges them);
// operator and acl are merged here. Rules for Consul's resources that tenure
// does not serve (service, event, query, keyring, mesh, ...) are checked and
// dropped.
struct Rules {
  std::vector<LabeledRule> keys;             // key, key_prefix: KV keys
  std::vector<LabeledRule> sessions;         // session, session_prefix: the session's node name
  std::vector<LabeledRule> nodes;            // node, node_prefix: node names
  std::vector<LabeledRule> agents;           // agent, agent_prefix: the agent's node name
  std::optional<Disposition> operator_rule;  // operator = "..."
  std::optional<Disposition> acl_rule;       // acl = "..."

  bool operator==(const Rules&) const = default;
};

// Parses one policy's rules. JSON when the first character that is not
// white space is "{", HCL otherwise; empty text is a policy without rules.
// Errors: kTooLarge past limits::kAclRulesBytesMax bytes, kInvalidArgument
// (with the line and column) for anything else.
Result<Rules> ParseRules(std::string_view text);

// The rules of Consul's built-in global-management policy, for the resources
// tenure enforces: write on every key, session, node and agent, operator and
// acl. They are ordinary rules: a deny in another policy of the same token
// still wins over them, as in Consul.
Rules GlobalManagementRules();
// The same rules as text, stored in the built-in policy's Rules.
std::string_view GlobalManagementRulesText();

}  // namespace tenure::acl
