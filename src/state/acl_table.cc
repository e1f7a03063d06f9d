#include "state/acl_table.h"

#include <algorithm>

#include "acl/rules.h"
#include "common/consul_texts.h"
#include "common/limits.h"
#include "state/field_limits.h"

namespace tenure::state {
namespace {

AclPolicy GlobalManagementPolicy(LogIndex index) {
  AclPolicy policy;
  policy.id = std::string(kGlobalManagementPolicyId);
  policy.name = std::string(kGlobalManagementPolicyName);
  policy.description = "Builtin Policy that grants unlimited access";
  policy.rules = std::string(acl::GlobalManagementRulesText());
  policy.create_index = policy.modify_index = index;
  return policy;
}

// What the API can set: a CreateTime from a leader's clock, and an
// ExpirationTime (if any) after it.
Status CheckTokenTimes(const AclToken& token) {
  TENURE_RETURN_IF_ERROR(CheckUnixMs("CreateTime", token.create_time));
  if (token.expiration_time == UnixMs()) return Status::Ok();
  TENURE_RETURN_IF_ERROR(CheckUnixMs("ExpirationTime", token.expiration_time));
  if (token.expiration_time < token.create_time) {
    return Status::InvalidArgument("ExpirationTime " + std::to_string(token.expiration_time.ms()) +
                                   " ms is before its CreateTime " +
                                   std::to_string(token.create_time.ms()) + " ms");
  }
  return Status::Ok();
}

}  // namespace

void EncodeAclToken(const AclToken& t, ByteWriter& w) {
  w.PutBytes(t.accessor_id);
  w.PutBytes(t.secret_id);
  w.PutBytes(t.description);
  w.PutVarint(t.policy_ids.size());
  for (const std::string& id : t.policy_ids) w.PutBytes(id);
  w.PutBool(t.local);
  w.PutSignedVarint(t.create_time.ms());
  w.PutSignedVarint(t.expiration_time.ms());
  w.PutIndex(t.create_index);
  w.PutIndex(t.modify_index);
}

AclToken DecodeAclToken(ByteReader& r) {
  AclToken t;
  t.accessor_id = r.GetString();
  t.secret_id = r.GetString();
  t.description = r.GetString();
  std::uint64_t n = r.GetVarint();
  if (n > r.remaining()) r.Fail();
  for (; n > 0 && !r.failed(); --n) t.policy_ids.push_back(r.GetString());
  t.local = r.GetBool();
  t.create_time = UnixMs(r.GetSignedVarint());
  t.expiration_time = UnixMs(r.GetSignedVarint());
  t.create_index = r.GetIndex();
  t.modify_index = r.GetIndex();
  return t;
}

void EncodeAclPolicy(const AclPolicy& p, ByteWriter& w) {
  w.PutBytes(p.id);
  w.PutBytes(p.name);
  w.PutBytes(p.description);
  w.PutBytes(p.rules);
  w.PutIndex(p.create_index);
  w.PutIndex(p.modify_index);
}

AclPolicy DecodeAclPolicy(ByteReader& r) {
  AclPolicy p;
  p.id = r.GetString();
  p.name = r.GetString();
  p.description = r.GetString();
  p.rules = r.GetString();
  p.create_index = r.GetIndex();
  p.modify_index = r.GetIndex();
  return p;
}

bool IsValidPolicyName(std::string_view name) {
  if (name.empty() || name.size() > 128) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '_';
  });
}

// --- Lookups ------------------------------------------------------------------

const AclPolicy* AclTable::FindPolicy(std::string_view id) const {
  auto it = policies_.find(id);
  return it == policies_.end() ? nullptr : &it->second;
}

const AclPolicy* AclTable::FindPolicyByName(std::string_view name) const {
  auto it = names_.find(name);
  return it == names_.end() ? nullptr : FindPolicy(it->second);
}

const AclToken* AclTable::FindToken(std::string_view accessor_id) const {
  auto it = tokens_.find(accessor_id);
  return it == tokens_.end() ? nullptr : &it->second;
}

const AclToken* AclTable::FindTokenBySecret(std::string_view secret_id) const {
  auto it = secrets_.find(secret_id);
  return it == secrets_.end() ? nullptr : FindToken(it->second);
}

bool AclTable::has_builtins() const {
  return FindPolicy(kGlobalManagementPolicyId) != nullptr &&
         FindToken(kAnonymousTokenAccessorId) != nullptr;
}

std::optional<UnixMs> AclTable::NextExpiration() const {
  std::optional<UnixMs> next;
  for (const auto& [accessor, token] : tokens_) {
    if (token.expiration_time == UnixMs()) continue;
    if (!next || token.expiration_time < *next) next = token.expiration_time;
  }
  return next;
}

std::vector<std::string> AclTable::ExpiredAt(UnixMs now) const {
  std::vector<std::string> expired;
  for (const auto& [accessor, token] : tokens_) {
    if (token.expiration_time != UnixMs() && token.expiration_time <= now) {
      expired.push_back(accessor);
    }
  }
  return expired;
}

// --- Commands -------------------------------------------------------------------

void AclTable::EnsureBuiltins(LogIndex index, UnixMs now) {
  if (FindPolicy(kGlobalManagementPolicyId) == nullptr) {
    AclPolicy policy = GlobalManagementPolicy(index);
    names_[policy.name] = policy.id;
    policies_.emplace(policy.id, std::move(policy));
    policies_index_ = index;
  }
  if (FindToken(kAnonymousTokenAccessorId) == nullptr) {
    AclToken anonymous;
    anonymous.accessor_id = std::string(kAnonymousTokenAccessorId);
    anonymous.secret_id = std::string(kAnonymousTokenSecretId);
    anonymous.description = "Anonymous Token";
    anonymous.create_time = now;
    PutToken(std::move(anonymous), index);
  }
}

void AclTable::PutToken(AclToken token, LogIndex index) {
  if (const AclToken* existing = FindToken(token.accessor_id); existing != nullptr) {
    secrets_.erase(existing->secret_id);
    token.create_index = existing->create_index;
  } else {
    token.create_index = index;
  }
  token.modify_index = index;
  secrets_[token.secret_id] = token.accessor_id;
  std::string accessor = token.accessor_id;
  tokens_.insert_or_assign(std::move(accessor), std::move(token));
  tokens_index_ = index;
}

Status AclTable::CheckToken(const AclToken& token, const AclToken* existing) const {
  if (token.accessor_id.empty() || token.secret_id.empty()) {
    return Status::InvalidArgument("Invalid Token: AccessorID and SecretID are required");
  }
  if (token.description.size() > limits::kAclDescriptionBytesMax) {
    return Status::InvalidArgument("Invalid Token: Description is longer than " +
                                   std::to_string(limits::kAclDescriptionBytesMax) + " bytes");
  }
  if (token.policy_ids.size() > limits::kAclPoliciesPerTokenMax) {
    return Status::InvalidArgument("Invalid Token: more than " +
                                   std::to_string(limits::kAclPoliciesPerTokenMax) + " policies");
  }
  TENURE_RETURN_IF_ERROR(CheckTokenTimes(token).Annotate("Invalid Token"));
  // The anonymous token's identity is reserved, also before it exists.
  if ((token.accessor_id == kAnonymousTokenAccessorId) !=
      (token.secret_id == kAnonymousTokenSecretId)) {
    return Status::InvalidArgument("Invalid Token: the anonymous token's IDs are reserved");
  }
  for (const std::string& id : token.policy_ids) {
    if (FindPolicy(id) == nullptr) {
      return Status::InvalidArgument("No such ACL policy with ID \"" + id + "\"");
    }
  }
  if (const AclToken* holder = FindTokenBySecret(token.secret_id);
      holder != nullptr && holder->accessor_id != token.accessor_id) {
    return Status::InvalidArgument("Invalid Token: SecretID is already in use");
  }
  if (existing == nullptr) {
    if (tokens_.size() >= limits::kAclTokensMax) {
      return Status::TooLarge("Invalid Token: the cluster holds " +
                              std::to_string(limits::kAclTokensMax) + " tokens, the most allowed");
    }
    return Status::Ok();
  }
  if (existing->secret_id != token.secret_id) {
    return Status::InvalidArgument("Changing a token's SecretID is not permitted");
  }
  if (existing->local != token.local) {
    return Status::InvalidArgument("Cannot toggle local mode of " + token.accessor_id);
  }
  return Status::Ok();
}

Status AclTable::Apply(const AclBootstrap& c, LogIndex index, UnixMs now) {
  if (!bootstrap_index_.is_none() && c.reset_index != bootstrap_index_) {
    return consul::AclBootstrapNoLongerAllowed(bootstrap_index_.value());
  }
  AclToken token = c.token;
  token.policy_ids = {std::string(kGlobalManagementPolicyId)};
  const AclToken* existing = FindToken(token.accessor_id);
  if (existing != nullptr)
    return Status::InvalidArgument("Invalid Token: AccessorID is already in use");
  // The token links the built-in policy, so check it against the tables as
  // they will be; a refusal must leave even the built-ins unwritten.
  AclTable after = *this;
  after.EnsureBuiltins(index, now);
  TENURE_RETURN_IF_ERROR(after.CheckToken(token, nullptr));
  *this = std::move(after);
  PutToken(std::move(token), index);
  bootstrap_index_ = index;
  return Status::Ok();
}

Status AclTable::Apply(const AclSetup& c, LogIndex index, UnixMs now) {
  EnsureBuiltins(index, now);
  if (c.initial_management && FindTokenBySecret(c.initial_management->secret_id) == nullptr) {
    AclToken token = *c.initial_management;
    token.policy_ids = {std::string(kGlobalManagementPolicyId)};
    if (FindToken(token.accessor_id) == nullptr && CheckToken(token, nullptr).ok()) {
      PutToken(std::move(token), index);
      // As Consul's leader does: the configured token is the bootstrap, so
      // PUT /v1/acl/bootstrap is refused from now on.
      if (bootstrap_index_.is_none()) bootstrap_index_ = index;
    }
  }
  return Status::Ok();
}

Status AclTable::Apply(const AclPolicySet& c, LogIndex index, UnixMs /*now*/) {
  const AclPolicy& wanted = c.policy;
  if (wanted.id.empty()) return Status::InvalidArgument("Invalid Policy: missing ID");
  if (!IsValidPolicyName(wanted.name)) {
    return Status::InvalidArgument(
        "Invalid Policy: invalid Name. Only alphanumeric characters, '-' and '_' are allowed");
  }
  if (wanted.description.size() > limits::kAclDescriptionBytesMax) {
    return Status::InvalidArgument("Invalid Policy: Description is longer than " +
                                   std::to_string(limits::kAclDescriptionBytesMax) + " bytes");
  }
  const AclPolicy* existing = FindPolicy(wanted.id);
  // The built-in's ID and name are reserved, also before it exists.
  if ((existing == nullptr && wanted.id == kGlobalManagementPolicyId) ||
      (wanted.name == kGlobalManagementPolicyName && wanted.id != kGlobalManagementPolicyId)) {
    return Status::InvalidArgument(
        "Invalid Policy: the builtin global-management policy's ID "
        "and name are reserved");
  }
  if (const AclPolicy* named = FindPolicyByName(wanted.name);
      named != nullptr && named->id != wanted.id) {
    return Status::InvalidArgument("Invalid Policy: A Policy with Name \"" + wanted.name +
                                   "\" already exists");
  }
  if (existing != nullptr && existing->id == kGlobalManagementPolicyId &&
      existing->rules != wanted.rules) {
    return Status::InvalidArgument(
        "Changing the Rules for the builtin global-management policy is not permitted");
  }
  // The API parsed them already; a replica refuses what no leader should send.
  if (Result<acl::Rules> rules = acl::ParseRules(wanted.rules); !rules.ok()) {
    return Status::InvalidArgument("Invalid Policy: " + std::string(rules.status().message()));
  }
  if (existing == nullptr && policies_.size() >= limits::kAclPoliciesMax) {
    return Status::TooLarge("Invalid Policy: the cluster holds " +
                            std::to_string(limits::kAclPoliciesMax) +
                            " policies, the most allowed");
  }
  AclPolicy policy = wanted;
  policy.create_index = existing != nullptr ? existing->create_index : index;
  policy.modify_index = index;
  if (existing != nullptr) names_.erase(existing->name);
  names_[policy.name] = policy.id;
  std::string id = policy.id;
  policies_.insert_or_assign(std::move(id), std::move(policy));
  policies_index_ = index;
  return Status::Ok();
}

Status AclTable::Apply(const AclPolicyDelete& c, LogIndex index, UnixMs /*now*/) {
  if (c.id == kGlobalManagementPolicyId) {
    return Status::InvalidArgument(
        "Delete operation not permitted on the builtin global-management policy");
  }
  auto it = policies_.find(c.id);
  if (it == policies_.end()) return Status::NotFound("Cannot find policy to delete");
  names_.erase(it->second.name);
  policies_.erase(it);
  policies_index_ = index;
  return Status::Ok();
}

Status AclTable::Apply(const AclTokenSet& c, LogIndex index, UnixMs /*now*/) {
  const AclToken* existing = FindToken(c.token.accessor_id);
  AclToken token = c.token;
  if (existing != nullptr) token.create_time = existing->create_time;
  TENURE_RETURN_IF_ERROR(CheckToken(token, existing));
  PutToken(std::move(token), index);
  return Status::Ok();
}

Status AclTable::Apply(const AclTokenDelete& c, LogIndex index, UnixMs /*now*/) {
  if (c.accessor_id == kAnonymousTokenAccessorId) {
    return Status::InvalidArgument("Delete operation not permitted on the anonymous token");
  }
  auto it = tokens_.find(c.accessor_id);
  if (it == tokens_.end()) return Status::NotFound("Cannot find token to delete");
  secrets_.erase(it->second.secret_id);
  tokens_.erase(it);
  tokens_index_ = index;
  return Status::Ok();
}

// --- Snapshot ---------------------------------------------------------------------

void AclTable::Encode(ByteWriter& w) const {
  w.PutIndex(bootstrap_index_);
  w.PutIndex(policies_index_);
  w.PutIndex(tokens_index_);
  w.PutVarint(policies_.size());
  for (const auto& [id, p] : policies_) EncodeAclPolicy(p, w);
  w.PutVarint(tokens_.size());
  for (const auto& [accessor, t] : tokens_) EncodeAclToken(t, w);
}

AclTable AclTable::Decode(ByteReader& r) {
  AclTable table;
  table.bootstrap_index_ = r.GetIndex();
  table.policies_index_ = r.GetIndex();
  table.tokens_index_ = r.GetIndex();
  auto count = [&r]() {
    std::uint64_t n = r.GetVarint();
    if (n > r.remaining()) r.Fail();  // every element takes at least one byte
    return r.failed() ? 0 : n;
  };
  for (std::uint64_t n = count(); n > 0 && !r.failed(); --n) {
    AclPolicy p = DecodeAclPolicy(r);
    if (!table.names_.emplace(p.name, p.id).second) r.Fail();
    std::string id = p.id;
    if (!table.policies_.emplace(std::move(id), std::move(p)).second) r.Fail();
  }
  for (std::uint64_t n = count(); n > 0 && !r.failed(); --n) {
    AclToken t = DecodeAclToken(r);
    if (!table.secrets_.emplace(t.secret_id, t.accessor_id).second) r.Fail();
    std::string accessor = t.accessor_id;
    if (!table.tokens_.emplace(std::move(accessor), std::move(t)).second) r.Fail();
  }
  return table;
}

Status AclTable::Validate(LogIndex applied_index) const {
  auto broken = [](const std::string& what) { return Status::Corruption("acl: " + what); };
  if (policies_index_ > applied_index || tokens_index_ > applied_index ||
      bootstrap_index_ > applied_index) {
    return broken("a table index is past the applied index");
  }
  if (names_.size() != policies_.size() || secrets_.size() != tokens_.size()) {
    return broken("derived name or secret index out of step");
  }
  for (const auto& [id, p] : policies_) {
    if (p.id != id || !IsValidPolicyName(p.name)) return broken("policy " + id + " malformed");
    if (p.create_index > p.modify_index || p.modify_index > policies_index_) {
      return broken("policy " + id + " has indexes out of order");
    }
    auto named = names_.find(p.name);
    if (named == names_.end() || named->second != id) return broken("policy name index wrong");
  }
  for (const auto& [accessor, t] : tokens_) {
    if (t.accessor_id != accessor || t.secret_id.empty()) {
      return broken("token " + accessor + " malformed");
    }
    if (t.create_index > t.modify_index || t.modify_index > tokens_index_) {
      return broken("token " + accessor + " has indexes out of order");
    }
    auto secret = secrets_.find(t.secret_id);
    if (secret == secrets_.end() || secret->second != accessor) {
      return broken("token secret index wrong");
    }
  }
  return Status::Ok();
}

Status AclTable::CheckFieldLimits() const {
  auto too_many = [](std::size_t n, std::string_view what, std::size_t max) {
    return Status::InvalidArgument(std::to_string(n) + " " + std::string(what) +
                                   ", more than the " + std::to_string(max) + " allowed");
  };
  if (tokens_.size() > limits::kAclTokensMax) {
    return too_many(tokens_.size(), "ACL tokens", limits::kAclTokensMax);
  }
  if (policies_.size() > limits::kAclPoliciesMax) {
    return too_many(policies_.size(), "ACL policies", limits::kAclPoliciesMax);
  }
  auto long_description = [](const std::string& what, std::size_t n) {
    return Status::InvalidArgument(what + ": Description of " + std::to_string(n) +
                                   " bytes is longer than the " +
                                   std::to_string(limits::kAclDescriptionBytesMax) + " allowed");
  };
  for (const auto& [id, p] : policies_) {
    const std::string what = "ACL policy " + QuoteCut(id);
    if (p.description.size() > limits::kAclDescriptionBytesMax) {
      return long_description(what, p.description.size());
    }
    if (Result<acl::Rules> rules = acl::ParseRules(p.rules); !rules.ok()) {
      return Status::InvalidArgument(
          what + ": its rules do not parse: " + std::string(rules.status().message()));
    }
  }
  for (const auto& [accessor, t] : tokens_) {
    const std::string what = "ACL token " + QuoteCut(accessor);
    if (t.description.size() > limits::kAclDescriptionBytesMax) {
      return long_description(what, t.description.size());
    }
    if (t.policy_ids.size() > limits::kAclPoliciesPerTokenMax) {
      return Status::InvalidArgument(what + ": " + std::to_string(t.policy_ids.size()) +
                                     " policies, more than the " +
                                     std::to_string(limits::kAclPoliciesPerTokenMax) + " allowed");
    }
    TENURE_RETURN_IF_ERROR(CheckTokenTimes(t).Annotate(what));
  }
  return Status::Ok();
}

void AclTable::RaiseIndexes(LogIndex index) {
  if (empty()) return;
  policies_index_ = std::max(policies_index_, index);
  tokens_index_ = std::max(tokens_index_, index);
}

acl::Authorizer CompileAuthorizer(const AclTable& table, const std::vector<std::string>& policy_ids,
                                  acl::AuthorizerOptions options) {
  std::vector<acl::Rules> parsed;
  parsed.reserve(policy_ids.size());
  for (const std::string& id : policy_ids) {
    if (id == kGlobalManagementPolicyId) {
      options.management = true;
      continue;
    }
    // A link to a policy deleted since is ignored, as Consul ignores it.
    const AclPolicy* policy = table.FindPolicy(id);
    if (policy == nullptr) continue;
    // Every stored policy parsed when it was written (the table refuses
    // others), so this cannot fail short of a bug; such a policy grants
    // nothing rather than everything.
    Result<acl::Rules> rules = acl::ParseRules(policy->rules);
    if (rules.ok()) parsed.push_back(std::move(*rules));
  }
  std::vector<const acl::Rules*> pointers;
  pointers.reserve(parsed.size());
  for (const acl::Rules& rules : parsed) pointers.push_back(&rules);
  return acl::Authorizer::Compile(pointers, options);
}

}  // namespace tenure::state
