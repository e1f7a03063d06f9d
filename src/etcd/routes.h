// Every method of etcd 3.4's services (etcdserverpb's KV, Watch, Lease,
// Cluster, Maintenance and Auth; v3electionpb's Election; v3lockpb's Lock):
// its gRPC path, its gateway paths, whether it streams, and whether tenure
// serves it (decision 0048). A gRPC path or gateway path tenure does not
// serve is answered with grpc-go's or the gateway's error. Pure.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "common/etcd_texts.h"

namespace tenure::etcd {

enum class Method : std::uint8_t {
  kRange,
  kPut,
  kDeleteRange,
  kTxn,
  kCompact,
  kWatch,
  kLeaseGrant,
  kLeaseRevoke,
  kLeaseKeepAlive,
  kLeaseTimeToLive,
  kLeaseLeases,
  kMemberAdd,
  kMemberRemove,
  kMemberUpdate,
  kMemberList,
  kMemberPromote,
  kAlarm,
  kStatus,
  kDefragment,
  kHash,
  kHashKV,
  kSnapshot,
  kMoveLeader,
  kAuthEnable,
  kAuthDisable,
  kAuthenticate,
  kUserAdd,
  kUserGet,
  kUserList,
  kUserDelete,
  kUserChangePassword,
  kUserGrantRole,
  kUserRevokeRole,
  kRoleAdd,
  kRoleGet,
  kRoleList,
  kRoleDelete,
  kRoleGrantPermission,
  kRoleRevokePermission,
  kCampaign,
  kProclaim,
  kLeader,
  kObserve,
  kResign,
  kLock,
  kUnlock,
};

struct MethodInfo {
  Method method;
  std::string_view grpc_path;      // "/etcdserverpb.KV/Range"
  std::string_view gateway_path;   // "/v3/kv/range"; empty: none
  std::string_view gateway_alias;  // "/v3/kv/lease/revoke" for some; empty: none
  bool client_streams = false;
  bool server_streams = false;
  // Whether tenure answers it; one it does not is Unimplemented with a text
  // that says what tenure offers instead.
  bool served = false;
};

std::span<const MethodInfo> AllMethods();
const MethodInfo& InfoOf(Method method);

// The method of a gRPC `:path`, or nullptr with *error set to grpc-go's
// answer (malformed name, unknown service, unknown method) or, for a method
// tenure does not serve, Unimplemented naming it.
const MethodInfo* FindGrpcMethod(std::string_view path, etcd_texts::EtcdError* error);

// The method of a gateway path: /v3/..., its /v3beta/ and /v3alpha/ forms
// (etcd 3.4 serves /v3beta/ as /v3/; /v3alpha/ is etcd3gw's default, decision
// 0048), and the /v3/kv/lease/ aliases. nullptr for none; a method tenure
// does not serve is found (its answer is Unimplemented).
const MethodInfo* FindGatewayMethod(std::string_view path);

// What an unserved method answers.
etcd_texts::EtcdError NotServed(const MethodInfo& info);

}  // namespace tenure::etcd
