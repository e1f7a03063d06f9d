#include "etcd/routes.h"

#include <array>
#include <string>

namespace tenure::etcd {
namespace {

using etcd_texts::EtcdError;
using etcd_texts::GrpcCode;

constexpr MethodInfo Unary(Method m, std::string_view grpc, std::string_view gateway, bool served,
                           std::string_view alias = {}) {
  return {m, grpc, gateway, alias, false, false, served};
}

constexpr std::array kMethods = {
    Unary(Method::kRange, "/etcdserverpb.KV/Range", "/v3/kv/range", true),
    Unary(Method::kPut, "/etcdserverpb.KV/Put", "/v3/kv/put", true),
    Unary(Method::kDeleteRange, "/etcdserverpb.KV/DeleteRange", "/v3/kv/deleterange", true),
    Unary(Method::kTxn, "/etcdserverpb.KV/Txn", "/v3/kv/txn", true),
    Unary(Method::kCompact, "/etcdserverpb.KV/Compact", "/v3/kv/compaction", true),
    MethodInfo{Method::kWatch, "/etcdserverpb.Watch/Watch", "/v3/watch", {}, true, true, true},
    Unary(Method::kLeaseGrant, "/etcdserverpb.Lease/LeaseGrant", "/v3/lease/grant", true),
    Unary(Method::kLeaseRevoke, "/etcdserverpb.Lease/LeaseRevoke", "/v3/lease/revoke", true,
          "/v3/kv/lease/revoke"),
    MethodInfo{Method::kLeaseKeepAlive,
               "/etcdserverpb.Lease/LeaseKeepAlive",
               "/v3/lease/keepalive",
               {},
               true,
               true,
               true},
    Unary(Method::kLeaseTimeToLive, "/etcdserverpb.Lease/LeaseTimeToLive", "/v3/lease/timetolive",
          true, "/v3/kv/lease/timetolive"),
    Unary(Method::kLeaseLeases, "/etcdserverpb.Lease/LeaseLeases", "/v3/lease/leases", true,
          "/v3/kv/lease/leases"),
    Unary(Method::kMemberAdd, "/etcdserverpb.Cluster/MemberAdd", "/v3/cluster/member/add", false),
    Unary(Method::kMemberRemove, "/etcdserverpb.Cluster/MemberRemove", "/v3/cluster/member/remove",
          false),
    Unary(Method::kMemberUpdate, "/etcdserverpb.Cluster/MemberUpdate", "/v3/cluster/member/update",
          false),
    Unary(Method::kMemberList, "/etcdserverpb.Cluster/MemberList", "/v3/cluster/member/list", true),
    Unary(Method::kMemberPromote, "/etcdserverpb.Cluster/MemberPromote",
          "/v3/cluster/member/promote", false),
    Unary(Method::kAlarm, "/etcdserverpb.Maintenance/Alarm", "/v3/maintenance/alarm", true),
    Unary(Method::kStatus, "/etcdserverpb.Maintenance/Status", "/v3/maintenance/status", true),
    Unary(Method::kDefragment, "/etcdserverpb.Maintenance/Defragment", "/v3/maintenance/defragment",
          true),
    Unary(Method::kHash, "/etcdserverpb.Maintenance/Hash", "/v3/maintenance/hash", false),
    // etcd 3.4's gateway gives HashKV the same path as Hash, where Hash wins.
    Unary(Method::kHashKV, "/etcdserverpb.Maintenance/HashKV", "", false),
    MethodInfo{Method::kSnapshot,
               "/etcdserverpb.Maintenance/Snapshot",
               "/v3/maintenance/snapshot",
               {},
               false,
               true,
               false},
    Unary(Method::kMoveLeader, "/etcdserverpb.Maintenance/MoveLeader",
          "/v3/maintenance/transfer-leadership", true),
    Unary(Method::kAuthEnable, "/etcdserverpb.Auth/AuthEnable", "/v3/auth/enable", false),
    Unary(Method::kAuthDisable, "/etcdserverpb.Auth/AuthDisable", "/v3/auth/disable", false),
    Unary(Method::kAuthenticate, "/etcdserverpb.Auth/Authenticate", "/v3/auth/authenticate", true),
    Unary(Method::kUserAdd, "/etcdserverpb.Auth/UserAdd", "/v3/auth/user/add", false),
    Unary(Method::kUserGet, "/etcdserverpb.Auth/UserGet", "/v3/auth/user/get", false),
    Unary(Method::kUserList, "/etcdserverpb.Auth/UserList", "/v3/auth/user/list", false),
    Unary(Method::kUserDelete, "/etcdserverpb.Auth/UserDelete", "/v3/auth/user/delete", false),
    Unary(Method::kUserChangePassword, "/etcdserverpb.Auth/UserChangePassword",
          "/v3/auth/user/changepw", false),
    Unary(Method::kUserGrantRole, "/etcdserverpb.Auth/UserGrantRole", "/v3/auth/user/grant", false),
    Unary(Method::kUserRevokeRole, "/etcdserverpb.Auth/UserRevokeRole", "/v3/auth/user/revoke",
          false),
    Unary(Method::kRoleAdd, "/etcdserverpb.Auth/RoleAdd", "/v3/auth/role/add", false),
    Unary(Method::kRoleGet, "/etcdserverpb.Auth/RoleGet", "/v3/auth/role/get", false),
    Unary(Method::kRoleList, "/etcdserverpb.Auth/RoleList", "/v3/auth/role/list", false),
    Unary(Method::kRoleDelete, "/etcdserverpb.Auth/RoleDelete", "/v3/auth/role/delete", false),
    Unary(Method::kRoleGrantPermission, "/etcdserverpb.Auth/RoleGrantPermission",
          "/v3/auth/role/grant", false),
    Unary(Method::kRoleRevokePermission, "/etcdserverpb.Auth/RoleRevokePermission",
          "/v3/auth/role/revoke", false),
    Unary(Method::kCampaign, "/v3electionpb.Election/Campaign", "/v3/election/campaign", true),
    Unary(Method::kProclaim, "/v3electionpb.Election/Proclaim", "/v3/election/proclaim", true),
    Unary(Method::kLeader, "/v3electionpb.Election/Leader", "/v3/election/leader", true),
    MethodInfo{Method::kObserve,
               "/v3electionpb.Election/Observe",
               "/v3/election/observe",
               {},
               false,
               true,
               true},
    Unary(Method::kResign, "/v3electionpb.Election/Resign", "/v3/election/resign", true),
    Unary(Method::kLock, "/v3lockpb.Lock/Lock", "/v3/lock/lock", true),
    Unary(Method::kUnlock, "/v3lockpb.Lock/Unlock", "/v3/lock/unlock", true),
};

// Every Method once, in the enum's order.
constexpr bool InEnumOrder() {
  for (std::size_t i = 0; i < kMethods.size(); ++i) {
    if (static_cast<std::size_t>(kMethods[i].method) != i) return false;
  }
  return true;
}
static_assert(InEnumOrder());
static_assert(kMethods.size() == static_cast<std::size_t>(Method::kUnlock) + 1);

}  // namespace

std::span<const MethodInfo> AllMethods() { return kMethods; }

const MethodInfo& InfoOf(Method method) { return kMethods[static_cast<std::size_t>(method)]; }

const MethodInfo* FindGrpcMethod(std::string_view path, EtcdError* error) {
  std::string_view name = path;
  if (!name.empty() && name.front() == '/') name.remove_prefix(1);
  const std::size_t slash = name.rfind('/');
  if (slash == std::string_view::npos) {
    *error = etcd_texts::Error(GrpcCode::kResourceExhausted,
                               "malformed method name: \"" + std::string(path) + "\"");
    return nullptr;
  }
  const std::string_view service = name.substr(0, slash);
  const std::string_view method = name.substr(slash + 1);
  bool known_service = false;
  for (const MethodInfo& info : kMethods) {
    const std::string_view info_name = info.grpc_path.substr(1);
    const std::size_t info_slash = info_name.rfind('/');
    if (info_name.substr(0, info_slash) != service) continue;
    known_service = true;
    if (info_name.substr(info_slash + 1) != method) continue;
    if (!info.served) {
      *error = NotServed(info);
      return nullptr;
    }
    return &info;
  }
  *error = etcd_texts::Error(GrpcCode::kUnimplemented,
                             known_service ? "unknown method " + std::string(method) +
                                                 " for service " + std::string(service)
                                           : "unknown service " + std::string(service));
  return nullptr;
}

const MethodInfo* FindGatewayMethod(std::string_view path) {
  std::string canonical;
  for (std::string_view version : {"/v3beta/", "/v3alpha/"}) {
    if (path.substr(0, version.size()) == version) {
      canonical = "/v3/" + std::string(path.substr(version.size()));
      path = canonical;
      break;
    }
  }
  for (const MethodInfo& info : kMethods) {
    if ((!info.gateway_path.empty() && info.gateway_path == path) ||
        (!info.gateway_alias.empty() && info.gateway_alias == path)) {
      return &info;
    }
  }
  return nullptr;
}

EtcdError NotServed(const MethodInfo& info) {
  const std::string_view name = info.grpc_path.substr(1);
  return etcd_texts::Error(GrpcCode::kUnimplemented,
                           "tenure: " + std::string(name) +
                               " is not served; tenure's membership and users are its own "
                               "(see docs/etcd-compat.md)");
}

}  // namespace tenure::etcd
