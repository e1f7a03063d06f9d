// ModelAcl: a naive re-implementation of the replicated ACL state
// (state/acl_table.h), the oracle of the randomized property test beside
// ModelStore. Vectors and linear scans, no derived indexes: meant to be
// obviously right. Error texts are not modelled, only whether a command was
// refused and what the tables hold after it. Test-only.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "acl/rules.h"
#include "common/limits.h"
#include "state/acl_table.h"

namespace tenure::state::testutil {

class ModelAcl {
 public:
  std::vector<AclPolicy> policies;  // any order; compared sorted by ID
  std::vector<AclToken> tokens;
  LogIndex policies_index;
  LogIndex tokens_index;
  LogIndex bootstrap_index;

  const AclPolicy* Policy(const std::string& id) const {
    for (const AclPolicy& p : policies) {
      if (p.id == id) return &p;
    }
    return nullptr;
  }
  const AclToken* Token(const std::string& accessor) const {
    for (const AclToken& t : tokens) {
      if (t.accessor_id == accessor) return &t;
    }
    return nullptr;
  }

  // Each returns whether the command changed the tables (false: refused).
  bool Apply(const AclBootstrap& c, LogIndex index, UnixMs now) {
    if (!bootstrap_index.is_none() && c.reset_index != bootstrap_index) return false;
    AclToken t = c.token;
    t.policy_ids = {std::string(kGlobalManagementPolicyId)};
    if (Token(t.accessor_id) != nullptr) return false;
    ModelAcl trial = *this;
    trial.Builtins(index, now);
    if (!trial.TokenAcceptable(t, nullptr)) return false;
    *this = trial;
    Put(t, index);
    bootstrap_index = index;
    return true;
  }

  bool Apply(const AclSetup& c, LogIndex index, UnixMs now) {
    Builtins(index, now);
    if (c.initial_management) {
      AclToken t = *c.initial_management;
      t.policy_ids = {std::string(kGlobalManagementPolicyId)};
      bool secret_known = std::any_of(tokens.begin(), tokens.end(), [&](const AclToken& x) {
        return x.secret_id == t.secret_id;
      });
      if (!secret_known && Token(t.accessor_id) == nullptr && TokenAcceptable(t, nullptr)) {
        Put(t, index);
        if (bootstrap_index.is_none()) bootstrap_index = index;
      }
    }
    return true;
  }

  bool Apply(const AclPolicySet& c, LogIndex index, UnixMs /*now*/) {
    const AclPolicy& p = c.policy;
    if (p.id.empty() || !IsValidPolicyName(p.name)) return false;
    if (p.description.size() > limits::kAclDescriptionBytesMax) return false;
    for (const AclPolicy& other : policies) {
      if (other.name == p.name && other.id != p.id) return false;
    }
    const AclPolicy* existing = Policy(p.id);
    if (existing == nullptr && p.id == kGlobalManagementPolicyId) return false;
    if (p.name == kGlobalManagementPolicyName && p.id != kGlobalManagementPolicyId) return false;
    if (existing != nullptr && p.id == kGlobalManagementPolicyId && existing->rules != p.rules) {
      return false;
    }
    if (!RulesParse(p.rules)) return false;
    if (existing == nullptr && policies.size() >= limits::kAclPoliciesMax) return false;
    AclPolicy stored = p;
    stored.create_index = existing != nullptr ? existing->create_index : index;
    stored.modify_index = index;
    std::erase_if(policies, [&](const AclPolicy& x) { return x.id == p.id; });
    policies.push_back(stored);
    policies_index = index;
    return true;
  }

  bool Apply(const AclPolicyDelete& c, LogIndex index, UnixMs /*now*/) {
    if (c.id == kGlobalManagementPolicyId || Policy(c.id) == nullptr) return false;
    std::erase_if(policies, [&](const AclPolicy& x) { return x.id == c.id; });
    policies_index = index;
    return true;
  }

  bool Apply(const AclTokenSet& c, LogIndex index, UnixMs /*now*/) {
    const AclToken* existing = Token(c.token.accessor_id);
    AclToken t = c.token;
    if (existing != nullptr) t.create_time = existing->create_time;
    if (!TokenAcceptable(t, existing)) return false;
    Put(t, index);
    return true;
  }

  bool Apply(const AclTokenDelete& c, LogIndex index, UnixMs /*now*/) {
    if (c.accessor_id == kAnonymousTokenAccessorId || Token(c.accessor_id) == nullptr) {
      return false;
    }
    std::erase_if(tokens, [&](const AclToken& x) { return x.accessor_id == c.accessor_id; });
    tokens_index = index;
    return true;
  }

  // The rules the generator writes: valid ones parse, and the generator's
  // broken ones all contain "@@" (the real parser decides; the model only
  // needs to know which is which).
  static bool RulesParse(const std::string& rules) {
    return rules.find("@@") == std::string::npos && rules.size() <= limits::kAclRulesBytesMax;
  }

 private:
  void Builtins(LogIndex index, UnixMs now) {
    if (Policy(std::string(kGlobalManagementPolicyId)) == nullptr) {
      AclPolicy p;
      p.id = std::string(kGlobalManagementPolicyId);
      p.name = std::string(kGlobalManagementPolicyName);
      p.description = "Builtin Policy that grants unlimited access";
      p.rules = std::string(::tenure::acl::GlobalManagementRulesText());
      p.create_index = p.modify_index = index;
      policies.push_back(p);
      policies_index = index;
    }
    if (Token(std::string(kAnonymousTokenAccessorId)) == nullptr) {
      AclToken t;
      t.accessor_id = std::string(kAnonymousTokenAccessorId);
      t.secret_id = std::string(kAnonymousTokenSecretId);
      t.description = "Anonymous Token";
      t.create_time = now;
      Put(t, index);
    }
  }

  bool TokenAcceptable(const AclToken& t, const AclToken* existing) const {
    if (t.accessor_id.empty() || t.secret_id.empty()) return false;
    if (t.description.size() > limits::kAclDescriptionBytesMax) return false;
    if (t.policy_ids.size() > limits::kAclPoliciesPerTokenMax) return false;
    // Times as a leader's clock makes them, the expiry (if any) not before
    // the creation (for an update: the creation kept from the existing token).
    auto in_years = [](UnixMs time) { return time.ms() >= 0 && time.ms() <= limits::kUnixMsMax; };
    if (!in_years(t.create_time)) return false;
    if (t.expiration_time != UnixMs() &&
        (!in_years(t.expiration_time) || t.expiration_time < t.create_time)) {
      return false;
    }
    if ((t.accessor_id == kAnonymousTokenAccessorId) != (t.secret_id == kAnonymousTokenSecretId)) {
      return false;
    }
    for (const std::string& id : t.policy_ids) {
      if (Policy(id) == nullptr) return false;
    }
    for (const AclToken& other : tokens) {
      if (other.secret_id == t.secret_id && other.accessor_id != t.accessor_id) return false;
    }
    if (existing == nullptr) return tokens.size() < limits::kAclTokensMax;
    return existing->secret_id == t.secret_id && existing->local == t.local;
  }

  void Put(AclToken t, LogIndex index) {
    const AclToken* existing = Token(t.accessor_id);
    t.create_index = existing != nullptr ? existing->create_index : index;
    t.modify_index = index;
    std::erase_if(tokens, [&](const AclToken& x) { return x.accessor_id == t.accessor_id; });
    tokens.push_back(t);
    tokens_index = index;
  }
};

}  // namespace tenure::state::testutil
