#include "etcd/access.h"

#include <algorithm>

#include "server/server.h"

namespace tenure::etcd {

using etcd_texts::EtcdError;
using etcd_texts::GrpcCode;

namespace {

EtcdError Allowed(const acl::Decision& decision) {
  return decision.allowed() ? EtcdError{} : PermissionDenied();
}

EtcdError MayOps(const acl::Authorizer& can, const std::vector<state::EtcdRequestOp>& ops);

}  // namespace

std::string_view TokenOf(const listen::HttpRequest& request) {
  if (std::optional<std::string_view> token = request.Header("token"); token.has_value()) {
    return *token;
  }
  std::string_view authorization = request.AuthorizationHeader();
  constexpr std::string_view kBearer = "Bearer ";
  if (authorization.starts_with(kBearer)) authorization.remove_prefix(kBearer.size());
  return authorization;
}

EtcdError ResolveClient(server::Server& server, std::string_view token, Client* client) {
  Result<server::Caller> caller = server.ResolveCaller(token);
  if (!caller.ok()) {
    return etcd_texts::Error(GrpcCode::kUnauthenticated, "etcdserver: invalid auth token");
  }
  client->caller = *std::move(caller);
  client->token = std::string(token);
  return {};
}

bool OpenToAnyone(Method method) {
  switch (method) {
    case Method::kStatus:
    case Method::kMemberList:
    case Method::kAlarm:
    case Method::kAuthenticate:
      return true;
    default:
      return false;
  }
}

EtcdError LogIn(server::Server& server, const AuthenticateRequest& request, std::string* token) {
  if (!server.acl_config().enabled) {
    return etcd_texts::Error(GrpcCode::kFailedPrecondition,
                             "etcdserver: authentication is not enabled");
  }
  if (request.name.empty()) {
    return etcd_texts::Error(GrpcCode::kInvalidArgument, "etcdserver: user name is empty");
  }
  const EtcdError failed = etcd_texts::Error(
      GrpcCode::kInvalidArgument, "etcdserver: authentication failed, invalid user ID or password");
  // No password would be the anonymous token: not a login.
  if (request.password.empty() || !server.ResolveCaller(request.password).ok()) return failed;
  *token = request.password;
  return {};
}

EtcdError PermissionDenied() {
  return etcd_texts::Error(GrpcCode::kPermissionDenied, "etcdserver: permission denied");
}

std::string CoveringPrefix(const state::KeyRange& range) {
  if (range.single()) return range.key;
  if (range.unbounded()) return "";
  if (range.end == state::PrefixRangeOf(range.key).end) return range.key;
  const auto [key_end, end_end] =
      std::mismatch(range.key.begin(), range.key.end(), range.end.begin(), range.end.end());
  return std::string(range.key.begin(), key_end);
}

EtcdError MayRead(const acl::Authorizer& can, const state::KeyRange& range) {
  // An empty range reads nothing: the key alone decides.
  if (range.single() || range.empty()) return Allowed(can.KeyRead(range.key));
  return Allowed(can.KeyReadPrefix(CoveringPrefix(range)));
}

EtcdError MayWrite(const acl::Authorizer& can, const state::KeyRange& range) {
  if (range.single() || range.empty()) return Allowed(can.KeyWrite(range.key));
  return Allowed(can.KeyWritePrefix(CoveringPrefix(range)));
}

EtcdError MayRange(const acl::Authorizer& can, const state::EtcdRangeRequest& request) {
  return MayRead(can, request.range);
}

EtcdError MayPut(const acl::Authorizer& can, const state::EtcdPutRequest& request) {
  if (EtcdError error = Allowed(can.KeyWrite(request.key)); !error.ok()) return error;
  if (request.prev_kv) return Allowed(can.KeyRead(request.key));
  return {};
}

EtcdError MayDeleteRange(const acl::Authorizer& can, const state::EtcdDeleteRangeRequest& request) {
  if (EtcdError error = MayWrite(can, request.range); !error.ok()) return error;
  if (request.prev_kv) return MayRead(can, request.range);
  return {};
}

EtcdError MayTxn(const acl::Authorizer& can, const state::EtcdTxnRequest& request) {
  for (const state::EtcdCompare& compare : request.compare) {
    if (EtcdError error = MayRead(can, compare.range); !error.ok()) return error;
  }
  if (EtcdError error = MayOps(can, request.success); !error.ok()) return error;
  return MayOps(can, request.failure);
}

namespace {

EtcdError MayOps(const acl::Authorizer& can, const std::vector<state::EtcdRequestOp>& ops) {
  using Kind = state::EtcdRequestOp::Kind;
  for (const state::EtcdRequestOp& op : ops) {
    EtcdError error;
    switch (op.kind) {
      case Kind::kEmpty:
        break;
      case Kind::kRange:
        error = MayRange(can, op.range);
        break;
      case Kind::kPut:
        error = MayPut(can, op.put);
        break;
      case Kind::kDeleteRange:
        error = MayDeleteRange(can, op.delete_range);
        break;
      case Kind::kTxn:
        // Nesting is bounded by the decoder (32 levels, decision 0048).
        for (const state::EtcdTxnRequest& nested : op.txn) {
          if (error.ok()) error = MayTxn(can, nested);
        }
        break;
    }
    if (!error.ok()) return error;
  }
  return {};
}

}  // namespace

EtcdError MayOperate(const acl::Authorizer& can) { return Allowed(can.OperatorWrite()); }

EtcdError MayWriteLease(const acl::Authorizer& can, std::string_view node) {
  return Allowed(can.SessionWrite(node));
}

EtcdError MayReadLease(const acl::Authorizer& can, std::string_view node) {
  return Allowed(can.SessionRead(node));
}

EtcdError MayEnter(const acl::Authorizer& can, const std::string& name,
                   const std::string& own_key) {
  if (EtcdError error = Allowed(can.KeyWrite(own_key)); !error.ok()) return error;
  return MayObserve(can, name);
}

EtcdError MayObserve(const acl::Authorizer& can, const std::string& name) {
  return Allowed(can.KeyReadPrefix(name + "/"));
}

}  // namespace tenure::etcd
