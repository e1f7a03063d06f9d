#include "server/acl_resolver.h"

#include <algorithm>
#include <optional>
#include <vector>

#include "common/consul_texts.h"
#include "common/limits.h"

namespace tenure::server {

Status Caller::Denied(const acl::Decision& decision, std::string_view name) const {
  return consul::PermissionDenied(identity->accessor_id, decision.permission(), name);
}

AclResolver::AclResolver(AclConfig config) : config_(std::move(config)) {
  acl::AuthorizerOptions everything;
  everything.default_policy = acl::DefaultPolicy::kAllow;
  everything.management = true;
  allow_all_ = std::make_shared<const Identity>(Identity{
      std::string(state::kAnonymousTokenAccessorId),
      std::make_shared<const acl::Authorizer>(acl::Authorizer::Compile({}, everything)), UnixMs()});
}

std::shared_ptr<const acl::Authorizer> AclResolver::AuthorizerFor(
    const state::AclTable& table, std::vector<std::string> policy_ids) {
  std::sort(policy_ids.begin(), policy_ids.end());
  std::string key;
  for (const std::string& id : policy_ids) key.append(id).push_back('\n');
  if (auto found = authorizers_.find(key); found != authorizers_.end()) return found->second;

  acl::AuthorizerOptions options;
  options.default_policy = config_.default_policy;
  options.enable_key_list_policy = config_.enable_key_list_policy;
  auto authz =
      std::make_shared<const acl::Authorizer>(state::CompileAuthorizer(table, policy_ids, options));
  authorizers_.emplace(std::move(key), authz);
  return authz;
}

std::shared_ptr<const Identity> AclResolver::Compile(const state::AclTable& table,
                                                     const state::AclToken* token) {
  if (token == nullptr) {
    return std::make_shared<const Identity>(Identity{std::string(state::kAnonymousTokenAccessorId),
                                                     AuthorizerFor(table, {}), UnixMs()});
  }
  return std::make_shared<const Identity>(Identity{
      token->accessor_id, AuthorizerFor(table, token->policy_ids), token->expiration_time});
}

Result<Caller> AclResolver::Resolve(const state::AclTable& table, std::string_view secret,
                                    UnixMs now) {
  Result<Caller> caller = ResolveIgnoringExpiry(table, secret);
  if (caller.ok() && Expired(*caller, now)) return consul::AclNotFound();
  return caller;
}

// Expired: refused at once by every server, before the leader's delete
// commits (decision 0019).
bool AclResolver::Expired(const Caller& caller, UnixMs now) {
  const UnixMs expires = caller.identity->expiration_time;
  return expires != UnixMs() && expires <= now;
}

Result<Caller> AclResolver::ResolveIgnoringExpiry(const state::AclTable& table,
                                                  std::string_view secret) {
  Caller caller;
  caller.sent_token = !secret.empty();
  if (!config_.enabled) {
    caller.identity = allow_all_;
    caller.unrestricted = true;
    return caller;
  }
  if (table.policies_index() != cached_policies_index_ ||
      table.tokens_index() != cached_tokens_index_) {
    cache_.clear();
    authorizers_.clear();
    cached_policies_index_ = table.policies_index();
    cached_tokens_index_ = table.tokens_index();
  }
  const std::string_view lookup = secret.empty() ? state::kAnonymousTokenSecretId : secret;
  auto cached = cache_.find(lookup);
  if (cached == cache_.end()) {
    const state::AclToken* token = table.FindTokenBySecret(lookup);
    if (token == nullptr && !secret.empty()) return consul::AclNotFound();
    // Before the first leader wrote the built-ins there is no anonymous
    // token yet: a request without one gets the default policy alone.
    // Only tokens that exist are cached, so guessed secrets cannot grow
    // the cache; it is bounded like the table it mirrors.
    if (cache_.size() >= limits::kAclTokensMax) {
      cache_.clear();
      authorizers_.clear();
    }
    cached = cache_.emplace(std::string(lookup), Compile(table, token)).first;
  }
  caller.identity = cached->second;
  caller.policies_index = table.policies_index();
  caller.tokens_index = table.tokens_index();
  return caller;
}

bool AclResolver::StillValid(const state::AclTable& table, const Caller& caller, UnixMs now) const {
  if (caller.unrestricted) return true;  // ACLs off: nothing to change
  if (caller.policies_index != table.policies_index() ||
      caller.tokens_index != table.tokens_index()) {
    return false;
  }
  const UnixMs expires = caller.identity->expiration_time;
  return expires == UnixMs() || now < expires;
}

}  // namespace tenure::server
