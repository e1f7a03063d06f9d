// The replicated ACL state: policies and tokens as Consul defines them
// (docs/acl.md), the built-in global-management policy and anonymous token,
// and the bootstrap record. Pure and deterministic like the rest of the
// Store: every change arrives as a command stamped with the leader's clock,
// and every replica applies it with the same result. Secrets are stored here
// in the clear, as Consul stores them, so that acl:write can read a token
// back (decision 0019); they leave the state only through the ACL endpoints,
// never through logs or command names.
//
// What a caller may do with a token is decided outside the state (the
// Authorizer, src/acl), from the policies this table holds.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "acl/authorizer.h"
#include "common/coding.h"
#include "common/status.h"
#include "common/types.h"

namespace tenure::state {

// Consul's fixed identities of the built-ins.
inline constexpr std::string_view kGlobalManagementPolicyId =
    "00000000-0000-0000-0000-000000000001";
inline constexpr std::string_view kGlobalManagementPolicyName = "global-management";
inline constexpr std::string_view kAnonymousTokenAccessorId =
    "00000000-0000-0000-0000-000000000002";
inline constexpr std::string_view kAnonymousTokenSecretId = "anonymous";

struct AclPolicy {
  std::string id;  // a UUID chosen by the leader
  std::string name;
  std::string description;
  std::string rules;  // as written (HCL or JSON), parsed when a token is resolved
  LogIndex create_index;
  LogIndex modify_index;
  bool operator==(const AclPolicy&) const = default;
};

struct AclToken {
  std::string accessor_id;  // the public handle
  std::string secret_id;    // what a client sends
  std::string description;
  // Policy IDs. A link to a policy deleted since is kept, as Consul keeps it,
  // and ignored when the token is resolved and shown.
  std::vector<std::string> policy_ids;
  bool local = false;
  UnixMs create_time;
  // Expiry: the leader deletes the token once its wall clock passes it, and
  // every server refuses it as soon as its own clock does. None when UnixMs().
  UnixMs expiration_time;
  LogIndex create_index;
  LogIndex modify_index;
  bool operator==(const AclToken&) const = default;
};

// Commands (state/command.h carries them; AclTable applies them).

// PUT /v1/acl/bootstrap: the management token, allowed once, or again when
// `reset_index` names the current bootstrap index (the reset file an operator
// writes into the leader's data dir, docs/acl.md "Lost the management token").
struct AclBootstrap {
  AclToken token;  // policies and indexes are set on apply
  LogIndex reset_index;
  bool operator==(const AclBootstrap&) const = default;
};

// Written by a leader with ACLs enabled when the built-ins, or the configured
// initial management token, are missing. Adding that token counts as the
// bootstrap (Consul's leader does the same): PUT /v1/acl/bootstrap is then
// refused unless reset.
struct AclSetup {
  std::optional<AclToken> initial_management;  // policies and indexes set on apply
  bool operator==(const AclSetup&) const = default;
};

// PUT /v1/acl/policy[/<id>]: create when the ID is new, else update.
struct AclPolicySet {
  AclPolicy policy;  // indexes are set on apply
  bool operator==(const AclPolicySet&) const = default;
};

struct AclPolicyDelete {
  std::string id;
  bool operator==(const AclPolicyDelete&) const = default;
};

// PUT /v1/acl/token[/<accessor>]: create when the accessor is new, else update.
struct AclTokenSet {
  AclToken token;  // indexes (and, on update, the secret and create time) set on apply
  bool operator==(const AclTokenSet&) const = default;
};

enum class AclTokenDeleteReason : std::uint8_t { kDeleted = 0, kExpired = 1 };

struct AclTokenDelete {
  std::string accessor_id;
  AclTokenDeleteReason reason = AclTokenDeleteReason::kDeleted;
  bool operator==(const AclTokenDelete&) const = default;
};

class TEST_StoreEditor;  // tests only (state/store.h)

class AclTable {
 public:
  // Lookups. FindTokenBySecret is what every request with a token does.
  const AclPolicy* FindPolicy(std::string_view id) const;
  const AclPolicy* FindPolicyByName(std::string_view name) const;
  const AclToken* FindToken(std::string_view accessor_id) const;
  const AclToken* FindTokenBySecret(std::string_view secret_id) const;
  const std::map<std::string, AclPolicy, std::less<>>& policies() const { return policies_; }
  const std::map<std::string, AclToken, std::less<>>& tokens() const { return tokens_; }

  // Raft indexes of the last change of each table, for X-Consul-Index and
  // blocking queries on the lists; the bootstrap index (0: never).
  LogIndex policies_index() const { return policies_index_; }
  LogIndex tokens_index() const { return tokens_index_; }
  LogIndex bootstrap_index() const { return bootstrap_index_; }
  // Whether the built-ins exist (a leader with ACLs on writes AclSetup if not).
  bool has_builtins() const;
  // The earliest expiration among the tokens that have one, if any.
  std::optional<UnixMs> NextExpiration() const;
  // Tokens whose expiration_time is at or before `now`, in accessor order.
  std::vector<std::string> ExpiredAt(UnixMs now) const;

  // Apply at `index`, with the Store's clock `now` (the built-ins' CreateTime).
  // The Status is the command's answer (kOk, or Consul's text for a
  // refused change; nothing changed then).
  Status Apply(const AclBootstrap& c, LogIndex index, UnixMs now);
  Status Apply(const AclSetup& c, LogIndex index, UnixMs now);
  Status Apply(const AclPolicySet& c, LogIndex index, UnixMs now);
  Status Apply(const AclPolicyDelete& c, LogIndex index, UnixMs now);
  Status Apply(const AclTokenSet& c, LogIndex index, UnixMs now);
  Status Apply(const AclTokenDelete& c, LogIndex index, UnixMs now);

  // Never changed: no object and no index. A table whose objects were all
  // deleted still has its indexes, which a snapshot must carry.
  bool empty() const {
    return policies_.empty() && tokens_.empty() && bootstrap_index_.is_none() &&
           policies_index_.is_none() && tokens_index_.is_none();
  }
  // A snapshot restore at `index` (store_restore.cc): the table indexes
  // become at least `index`, so cached authorizers and blocking queries on
  // the lists see the change. Nothing if the table is empty.
  void RaiseIndexes(LogIndex index);
  // Snapshot section (docs/formats.md, version 4) and its checks.
  void Encode(ByteWriter& w) const;
  static AclTable Decode(ByteReader& r);
  Status Validate(LogIndex applied_index) const;
  // The limits the API and Apply hold every token and policy to (counts,
  // descriptions, links, rules that parse, times in the years 1970 to 9999,
  // an expiry not before its creation): kInvalidArgument naming the object.
  Status CheckFieldLimits() const;

  bool operator==(const AclTable&) const = default;

 private:
  friend class TEST_StoreEditor;
  void EnsureBuiltins(LogIndex index, UnixMs now);
  Status CheckToken(const AclToken& token, const AclToken* existing) const;
  void PutToken(AclToken token, LogIndex index);

  std::map<std::string, AclPolicy, std::less<>> policies_;   // by ID
  std::map<std::string, AclToken, std::less<>> tokens_;      // by accessor ID
  std::map<std::string, std::string, std::less<>> secrets_;  // secret -> accessor (derived)
  std::map<std::string, std::string, std::less<>> names_;    // policy name -> ID (derived)
  LogIndex policies_index_;
  LogIndex tokens_index_;
  LogIndex bootstrap_index_;
};

// The Authorizer the policies `policy_ids` compile to over `options`, as
// Consul resolves a token: the global-management policy sets management, a
// link to a policy deleted since is ignored. The one place a token's policies
// become an Authorizer (server/acl_resolver caches what it returns; the
// Store asks it again when a queued grant is made, decision 0038).
acl::Authorizer CompileAuthorizer(const AclTable& table, const std::vector<std::string>& policy_ids,
                                  acl::AuthorizerOptions options);

// Byte forms shared by the snapshot and the commands (docs/formats.md).
void EncodeAclToken(const AclToken& token, ByteWriter& w);
AclToken DecodeAclToken(ByteReader& r);
void EncodeAclPolicy(const AclPolicy& policy, ByteWriter& w);
AclPolicy DecodeAclPolicy(ByteReader& r);

// A policy name Consul accepts: 1-128 of [A-Za-z0-9_-].
bool IsValidPolicyName(std::string_view name);

}  // namespace tenure::state
