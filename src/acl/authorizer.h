// The Authorizer: what one token may do, compiled from the rules of its
// policies and the agent's default policy, answering each check as Consul
// does (docs/acl-rules.md, "Precedence"). Pure and immutable once built:
// safe to share between threads, and the same inputs give the same answers.
//
//   Authorizer authz = Authorizer::Compile({&policy_a, &policy_b},
//                                          {.default_policy = DefaultPolicy::kDeny});
//   if (Decision d = authz.KeyWrite(key); !d.allowed()) {
//     // deny with d.permission(), "key:write": Consul's text is
//     // Permission denied: token with AccessorID '<id>' lacks permission 'key:write' on "<key>"
//   }
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "acl/rule_tree.h"
#include "acl/rules.h"

namespace tenure::acl {

// The resources a check is about, named as Consul names them in denials.
enum class Resource : std::uint8_t { kKey, kSession, kNode, kAgent, kOperator, kAcl };
// "key", "session", "node", "agent", "operator", "acl".
std::string_view ResourceName(Resource resource);

// What a check needs: read < list < write.
enum class Access : std::uint8_t { kRead, kList, kWrite };
// "read", "list", "write".
std::string_view AccessName(Access access);

// Consul's acl.default_policy: what a check gets when no rule decides.
enum class DefaultPolicy : std::uint8_t { kAllow, kDeny };

struct AuthorizerOptions {
  // Consul's agents default to allow; tenure's configuration decides.
  DefaultPolicy default_policy = DefaultPolicy::kDeny;
  // The token holds the built-in global-management policy: its rules
  // (GlobalManagementRules) join the others. A deny in another policy of
  // the same token still wins, as in Consul.
  bool management = false;
  // Consul's acl.enable_key_list_policy: recursive reads and key listings
  // need `list` on the prefix. Off (Consul's default), KeyList always passes
  // because Consul does not make that check; listings are still filtered key
  // by key with KeyRead.
  bool enable_key_list_policy = false;
};

// The answer to one check, and what it asked for, for the denial's text.
class [[nodiscard]] Decision {
 public:
  Decision(bool allowed, Resource resource, Access access)
      : allowed_(allowed), resource_(resource), access_(access) {}

  bool allowed() const { return allowed_; }
  Resource resource() const { return resource_; }
  Access access() const { return access_; }
  // The permission the check asked for, as Consul spells it in "lacks
  // permission '...'": "key:write", "session:read", "operator:write"...
  std::string_view permission() const;

 private:
  bool allowed_;
  Resource resource_;
  Access access_;
};

class Authorizer {
 public:
  // The rules of all of a token's policies (null pointers are skipped),
  // merged as Consul merges them, over the default policy. Cost: linear in
  // the rules' labels; each check then walks its name once.
  static Authorizer Compile(const std::vector<const Rules*>& policies,
                            const AuthorizerOptions& options);

  // KV. A key, or for KeyList and KeyWritePrefix a key prefix ("" is the
  // whole store).
  Decision KeyRead(std::string_view key) const;
  // Listing the keys under a prefix (?recurse, ?keys); see
  // AuthorizerOptions::enable_key_list_policy.
  Decision KeyList(std::string_view prefix) const;
  Decision KeyWrite(std::string_view key) const;
  // Writing every key under the prefix (DELETE ?recurse). Allowed only when
  // the longest prefix rule covering the prefix grants write (or, with no
  // such rule, the default policy allows) and no rule for a key or prefix
  // under it, exact or prefix, grants less than write. Consul's KeyWritePrefix.
  Decision KeyWritePrefix(std::string_view prefix) const;
  // Reading every key under the prefix at once (an etcd Range, Watch or
  // DeleteRange's prev_kv over a range, decision 0048 section 6): allowed
  // only when the longest prefix rule covering the prefix grants read (or,
  // with no such rule, the default policy allows) and no rule for a key or
  // prefix under it denies. All or nothing, as etcd decides a range.
  Decision KeyReadPrefix(std::string_view prefix) const;

  // Sessions, by the name of the node the session belongs to.
  Decision SessionRead(std::string_view node) const;
  Decision SessionWrite(std::string_view node) const;
  // The catalog's nodes, and the agent endpoints of a node, by node name.
  Decision NodeRead(std::string_view node) const;
  Decision NodeWrite(std::string_view node) const;
  Decision AgentRead(std::string_view node) const;
  Decision AgentWrite(std::string_view node) const;

  Decision OperatorRead() const;
  Decision OperatorWrite() const;
  // The ACL system itself (tokens, policies; Consul also asks acl:write for
  // snapshots). The default policy "allow" does not grant these: only a
  // rule does, as in Consul.
  Decision AclRead() const;
  Decision AclWrite() const;

  const AuthorizerOptions& options() const { return options_; }

 private:
  Authorizer() = default;

  Decision Check(const RuleTree& tree, std::string_view name, Resource resource,
                 Access access) const;
  Decision CheckSingle(const std::optional<Disposition>& rule, Resource resource,
                       Access access) const;
  Decision Default(Resource resource, Access access) const;

  AuthorizerOptions options_;
  RuleTree keys_;
  RuleTree sessions_;
  RuleTree nodes_;
  RuleTree agents_;
  std::optional<Disposition> operator_rule_;
  std::optional<Disposition> acl_rule_;
};

// Consul filters listings silently: what a token may not read is left out,
// and only when something was left out does the answer say so
// (X-Consul-Results-Filtered-By-ACLs). These remove, in place and keeping the
// order, the items the token may not read and return how many they removed.
// `key_of(item)` gives an entry's key, `node_of(item)` a session's node.
template <typename T, typename KeyOf>
std::size_t EraseUnreadableKeys(const Authorizer& authz, std::vector<T>& items, KeyOf key_of) {
  return std::erase_if(items,
                       [&](const T& item) { return !authz.KeyRead(key_of(item)).allowed(); });
}

template <typename T, typename NodeOf>
std::size_t EraseUnreadableSessions(const Authorizer& authz, std::vector<T>& items,
                                    NodeOf node_of) {
  return std::erase_if(items,
                       [&](const T& item) { return !authz.SessionRead(node_of(item)).allowed(); });
}

}  // namespace tenure::acl
