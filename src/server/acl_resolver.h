// Who a request speaks for: the token its secret names in the replicated ACL
// table (state/acl_table.h), compiled with its policies into an
// acl::Authorizer, as Consul's resolver does. Every server resolves from its
// own Store, so a follower answering a ?stale read decides as the leader
// would at the same index.
//
// Compiled authorizers are cached by secret and dropped whenever the table
// changes (either index moves), so a deleted token, a changed policy or a
// restored snapshot takes effect on the next request. Only tokens that exist
// are cached: strangers guessing secrets cannot grow the cache.
//
// Loop thread only (the cache); the Authorizers handed out are immutable.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "acl/authorizer.h"
#include "common/status.h"
#include "common/types.h"
#include "state/acl_table.h"

namespace tenure::server {

// tenure server's -acl-* settings (Consul's acl { } block).
struct AclConfig {
  bool enabled = false;
  // What a check gets when no rule decides. Consul's default is allow;
  // docs/acl.md recommends deny.
  acl::DefaultPolicy default_policy = acl::DefaultPolicy::kAllow;
  bool enable_key_list_policy = false;
  // -acl-initial-management: a management token with this secret exists
  // from the first leader on (and counts as the bootstrap). "" = none.
  std::string initial_management;
  // The range an ExpirationTTL may ask for (Consul's token_min_expiration_ttl
  // and token_max_expiration_ttl; the same defaults).
  DurationNs token_min_expiration_ttl_ns = 60 * kNsPerSecond;
  DurationNs token_max_expiration_ttl_ns = 24 * 3600 * kNsPerSecond;
};

// A token as the resolver compiled it: shared by every request that sends
// its secret until the ACL table changes. Tokens that link the same
// policies share one Authorizer (many tokens, few distinct policy sets).
struct Identity {
  std::string accessor_id;  // the anonymous token's for requests without one
  std::shared_ptr<const acl::Authorizer> authz;
  UnixMs expiration_time;  // UnixMs() = never
};

// The caller of one request. With ACLs off, everyone may do everything.
// Cheap to copy: one shared pointer.
struct Caller {
  std::shared_ptr<const Identity> identity;
  bool sent_token = false;    // Consul marks filtered listings only for them
  bool unrestricted = false;  // ACLs off: listings need no filtering
  // The ACL table's indexes it was resolved at: while they stand, the same
  // secret resolves to the same identity (a parked query skips the lookup).
  LogIndex policies_index;
  LogIndex tokens_index;

  const std::string& accessor_id() const { return identity->accessor_id; }
  const acl::Authorizer& can() const { return *identity->authz; }
  // Consul's 403 for a check that failed on `name` ("" for operator, acl).
  Status Denied(const acl::Decision& decision, std::string_view name) const;
};

class AclResolver {
 public:
  explicit AclResolver(AclConfig config);

  const AclConfig& config() const { return config_; }

  // The caller a request's secret ("" = none) names at wall-clock `now`:
  // the anonymous token for none, Consul's "ACL not found" for a secret no
  // token has or whose token expired. One hash lookup once cached.
  Result<Caller> Resolve(const state::AclTable& table, std::string_view secret, UnixMs now);
  // Resolve without the expiry check, for a caller that reads the clock only
  // when the identity expires at all (most tokens never do): then
  // Expired(caller, now).
  Result<Caller> ResolveIgnoringExpiry(const state::AclTable& table, std::string_view secret);
  static bool Expired(const Caller& caller, UnixMs now);
  static bool MayExpire(const Caller& caller) {
    return caller.identity->expiration_time != UnixMs();
  }

  // Whether `caller` would resolve the same at `now`: neither table changed
  // since and its token has not expired. Cheaper than Resolve.
  bool StillValid(const state::AclTable& table, const Caller& caller, UnixMs now) const;

  // Cached identities (for tests).
  std::size_t cached() const { return cache_.size(); }

 private:
  // Secrets are random UUIDs (36 characters, 122 random bits), so their
  // first and last 8 bytes mix into a good hash at a fifth of the cost of
  // hashing all 36, on every request. Only existing tokens are cached, so
  // nobody but a token writer chooses what lands in the table.
  struct SecretHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const {
      if (s.size() < 16) return std::hash<std::string_view>()(s);
      std::uint64_t head = 0, tail = 0;
      std::memcpy(&head, s.data(), 8);
      std::memcpy(&tail, s.data() + s.size() - 8, 8);
      std::uint64_t h = (head ^ (tail * 0x9e3779b97f4a7c15ULL)) + s.size();
      h ^= h >> 29;
      h *= 0xbf58476d1ce4e5b9ULL;
      return static_cast<std::size_t>(h ^ (h >> 32));
    }
  };
  std::shared_ptr<const Identity> Compile(const state::AclTable& table,
                                          const state::AclToken* token);
  std::shared_ptr<const acl::Authorizer> AuthorizerFor(const state::AclTable& table,
                                                       std::vector<std::string> policy_ids);

  AclConfig config_;
  std::shared_ptr<const Identity> allow_all_;  // ACLs off
  // Valid while the table's indexes are these.
  LogIndex cached_policies_index_;
  LogIndex cached_tokens_index_;
  std::unordered_map<std::string, std::shared_ptr<const Identity>, SecretHash, std::equal_to<>>
      cache_;
  // By the sorted IDs of the policies a token links, joined by '\n'.
  std::unordered_map<std::string, std::shared_ptr<const acl::Authorizer>> authorizers_;
};

}  // namespace tenure::server
