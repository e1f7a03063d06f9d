// Who may make each etcd call (decision 0048 section 6): tenure's ACL
// tokens carried as etcd carries its own (gRPC metadata `token`, which
// clientv3 sends after Authenticate, else `authorization`, the gateway's
// header), and each call checked against the token's Authorizer as etcd
// checks its users' permissions: a key needs read or write on it; a range,
// the same right on the prefix that covers it with no deny below
// (acl::Authorizer::KeyReadPrefix, KeyWritePrefix), all or nothing, as etcd
// decides a range (a filtered Range could let a lock recipe miss a
// contender). Pure, but for ResolveClient.
#pragma once

#include <string>
#include <string_view>

#include "acl/authorizer.h"
#include "common/etcd_texts.h"
#include "etcd/messages_services.h"
#include "etcd/routes.h"
#include "listen/request.h"
#include "server/acl_resolver.h"
#include "state/etcd_request.h"

namespace tenure::server {
class Server;
}

namespace tenure::etcd {

// The client of one etcd call: who its token names, and the token itself,
// which a follower's relay carries to the leader (where it is resolved and
// checked again, decision 0055).
struct Client {
  server::Caller caller;
  std::string token;  // "" for none: the anonymous token

  const acl::Authorizer& can() const { return caller.can(); }
};

// The token a call sent: the `token` header (gRPC metadata), else
// `authorization` (a leading "Bearer " is skipped, for HTTP clients that
// add it); "" for none.
std::string_view TokenOf(const listen::HttpRequest& request);

// The client `token` names on `server`, or Unauthenticated "etcdserver:
// invalid auth token" (clientv3 then authenticates again) for a token no
// ACL token has, or one that expired. Anyone with ACLs off.
etcd_texts::EtcdError ResolveClient(server::Server& server, std::string_view token, Client* client);

// Whether anyone who can connect may call `method`, whatever token it
// sends (none, a stale one): Status, MemberList, the alarm list and
// Authenticate, as Consul's status endpoints are open. Every other call
// resolves its token first.
bool OpenToAnyone(Method method);

// etcd's Authenticate with tenure's tokens as the credentials: the password
// is a token's SecretID, and the token answered is that secret (the name is
// not checked, only required). *token is set, or etcd's error: "user name
// is empty", "authentication failed, invalid user ID or password", and with
// ACLs off "authentication is not enabled" (FailedPrecondition, which
// clientv3 accepts and goes on without a token).
etcd_texts::EtcdError LogIn(server::Server& server, const AuthenticateRequest& request,
                            std::string* token);

// etcd's PermissionDenied "etcdserver: permission denied".
etcd_texts::EtcdError PermissionDenied();

// The longest prefix every key of `range` starts with: the key for a single
// key, the key for a prefix range (the end is the key's prefix end), ""
// for a range open at the end, else the longest common prefix of its ends.
std::string CoveringPrefix(const state::KeyRange& range);

// Reading or writing every key of `range` (one key: KeyRead, KeyWrite; a
// range: the covering prefix's KeyReadPrefix, KeyWritePrefix). ok or
// PermissionDenied.
etcd_texts::EtcdError MayRead(const acl::Authorizer& can, const state::KeyRange& range);
etcd_texts::EtcdError MayWrite(const acl::Authorizer& can, const state::KeyRange& range);

// KV, as etcd's server checks them: a Range reads its range; a Put writes
// its key (and reads it for prev_kv); a DeleteRange writes its range (and
// reads it for prev_kv); a Txn reads every compared key and needs each op's
// right in both branches, nested txns too, before anything is applied.
etcd_texts::EtcdError MayRange(const acl::Authorizer& can, const state::EtcdRangeRequest& request);
etcd_texts::EtcdError MayPut(const acl::Authorizer& can, const state::EtcdPutRequest& request);
etcd_texts::EtcdError MayDeleteRange(const acl::Authorizer& can,
                                     const state::EtcdDeleteRangeRequest& request);
etcd_texts::EtcdError MayTxn(const acl::Authorizer& can, const state::EtcdTxnRequest& request);

// Compact, MoveLeader and Defragment change the cluster: operator write.
etcd_texts::EtcdError MayOperate(const acl::Authorizer& can);

// Leases are sessions: write on the session's node to grant (the granting
// server's node), revoke or renew one, read to see it.
etcd_texts::EtcdError MayWriteLease(const acl::Authorizer& can, std::string_view node);
etcd_texts::EtcdError MayReadLease(const acl::Authorizer& can, std::string_view node);

// Election and Lock: entering or leaving a line writes the own key and
// reads everyone's under `<name>/`; Leader and Observe read under `<name>/`.
etcd_texts::EtcdError MayEnter(const acl::Authorizer& can, const std::string& name,
                               const std::string& own_key);
etcd_texts::EtcdError MayObserve(const acl::Authorizer& can, const std::string& name);

}  // namespace tenure::etcd
