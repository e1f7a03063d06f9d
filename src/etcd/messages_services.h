// etcd's messages beyond KV (rpc.proto, kv.proto, v3election.proto and
// v3lock.proto of etcd 3.4): leases, watches, maintenance, cluster, auth,
// election and lock, as field lists (etcd/messages.h says how a visitor
// walks them). The etcd layer's own structs: state has no counterpart.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "etcd/messages.h"

namespace tenure::etcd {

// --- Lease ----------------------------------------------------------------------

struct LeaseGrantRequest {
  std::int64_t ttl = 0;
  std::int64_t id = 0;
  bool operator==(const LeaseGrantRequest&) const = default;
};
struct LeaseGrant {
  std::int64_t id = 0;
  std::int64_t ttl = 0;
  std::string error;
  bool operator==(const LeaseGrant&) const = default;
};
struct LeaseIdRequest {  // LeaseRevokeRequest, LeaseKeepAliveRequest
  std::int64_t id = 0;
  bool operator==(const LeaseIdRequest&) const = default;
};
struct LeaseKeepAlive {
  std::int64_t id = 0;
  std::int64_t ttl = 0;
  bool operator==(const LeaseKeepAlive&) const = default;
};
struct LeaseTimeToLiveRequest {
  std::int64_t id = 0;
  bool keys = false;
  bool operator==(const LeaseTimeToLiveRequest&) const = default;
};
struct LeaseTimeToLive {
  std::int64_t id = 0;
  std::int64_t ttl = 0;  // -1: expired or never granted
  std::int64_t granted_ttl = 0;
  std::vector<std::string> keys;
  bool operator==(const LeaseTimeToLive&) const = default;
};
struct LeaseStatus {
  std::int64_t id = 0;
  bool operator==(const LeaseStatus&) const = default;
};
struct LeaseLeases {
  std::vector<LeaseStatus> leases;
  bool operator==(const LeaseLeases&) const = default;
};

using LeaseGrantResponse = Response<LeaseGrant>;
using LeaseRevokeResponse = Response<Empty>;
using LeaseKeepAliveResponse = Response<LeaseKeepAlive>;
using LeaseTimeToLiveResponse = Response<LeaseTimeToLive>;
using LeaseLeasesResponse = Response<LeaseLeases>;

template <typename V, Is<LeaseGrantRequest> C>
void Fields(V& v, C& m) {
  v.Int64(1, "TTL", m.ttl);
  v.Int64(2, "ID", m.id);
}
template <typename V, Is<LeaseGrant> C>
void Fields(V& v, C& m) {
  v.Int64(2, "ID", m.id);
  v.Int64(3, "TTL", m.ttl);
  v.String(4, "error", m.error);
}
template <typename V, Is<LeaseIdRequest> C>
void Fields(V& v, C& m) {
  v.Int64(1, "ID", m.id);
}
template <typename V, Is<LeaseKeepAlive> C>
void Fields(V& v, C& m) {
  v.Int64(2, "ID", m.id);
  v.Int64(3, "TTL", m.ttl);
}
template <typename V, Is<LeaseTimeToLiveRequest> C>
void Fields(V& v, C& m) {
  v.Int64(1, "ID", m.id);
  v.Bool(2, "keys", m.keys);
}
template <typename V, Is<LeaseTimeToLive> C>
void Fields(V& v, C& m) {
  v.Int64(2, "ID", m.id);
  v.Int64(3, "TTL", m.ttl);
  v.Int64(4, "grantedTTL", m.granted_ttl);
  v.BytesList(5, "keys", m.keys);
}
template <typename V, Is<LeaseStatus> C>
void Fields(V& v, C& m) {
  v.Int64(1, "ID", m.id);
}
template <typename V, Is<LeaseLeases> C>
void Fields(V& v, C& m) {
  v.Messages(2, "leases", m.leases);
}

// --- Watch ----------------------------------------------------------------------

inline constexpr std::array<std::string_view, 2> kFilterNames = {"NOPUT", "NODELETE"};
inline constexpr std::array<std::string_view, 2> kEventTypeNames = {"PUT", "DELETE"};
enum class WatchFilter : std::uint8_t { kNoPut = 0, kNoDelete = 1 };
enum class EventType : std::uint8_t { kPut = 0, kDelete = 1 };

struct WatchCreateRequest {
  state::KeyRange range;
  std::int64_t start_revision = 0;
  bool progress_notify = false;
  std::vector<WatchFilter> filters;
  bool prev_kv = false;
  std::int64_t watch_id = 0;
  bool fragment = false;
  bool operator==(const WatchCreateRequest&) const = default;
};
struct WatchCancelRequest {
  std::int64_t watch_id = 0;
  bool operator==(const WatchCancelRequest&) const = default;
};
struct WatchRequest {
  enum class Kind : std::uint8_t { kNone, kCreate, kCancel, kProgress };
  Kind kind = Kind::kNone;
  WatchCreateRequest create;
  WatchCancelRequest cancel;
  Empty progress;
  bool operator==(const WatchRequest&) const = default;
};
struct Event {
  EventType type = EventType::kPut;
  state::EtcdKeyValue kv;
  bool has_prev_kv = false;
  state::EtcdKeyValue prev_kv;
  bool operator==(const Event&) const = default;
};
struct Watch {
  std::int64_t watch_id = 0;
  bool created = false;
  bool canceled = false;
  std::int64_t compact_revision = 0;
  std::string cancel_reason;
  bool fragment = false;
  std::vector<Event> events;
  bool operator==(const Watch&) const = default;
};
using WatchResponse = Response<Watch>;

template <typename V, Is<WatchCreateRequest> C>
void Fields(V& v, C& m) {
  v.Bytes(1, "key", m.range.key);
  v.Bytes(2, "range_end", m.range.end);
  v.Int64(3, "start_revision", m.start_revision);
  v.Bool(4, "progress_notify", m.progress_notify);
  v.EnumList(5, "filters", m.filters, kFilterNames);
  v.Bool(6, "prev_kv", m.prev_kv);
  v.Int64(7, "watch_id", m.watch_id);
  v.Bool(8, "fragment", m.fragment);
}
template <typename V, Is<WatchCancelRequest> C>
void Fields(V& v, C& m) {
  v.Int64(1, "watch_id", m.watch_id);
}
template <typename V, Is<WatchRequest> C>
void Fields(V& v, C& m) {
  using Kind = WatchRequest::Kind;
  v.Oneof(1, "create_request", m.create, m.kind, Kind::kCreate);
  v.Oneof(2, "cancel_request", m.cancel, m.kind, Kind::kCancel);
  v.Oneof(3, "progress_request", m.progress, m.kind, Kind::kProgress);
}
// The member read last is the request (messages.h, KeepOnlyTheSetMember).
inline void NormalizeDecoded(WatchRequest& w, int /*union_seen*/) {
  if (w.kind != WatchRequest::Kind::kCreate) w.create = {};
  if (w.kind != WatchRequest::Kind::kCancel) w.cancel = {};
}
template <typename V, Is<Event> C>
void Fields(V& v, C& m) {
  v.Enum(1, "type", m.type, kEventTypeNames);
  v.Message(2, "kv", m.kv);
  v.Optional(3, "prev_kv", m.prev_kv, m.has_prev_kv);
}
template <typename V, Is<Watch> C>
void Fields(V& v, C& m) {
  v.Int64(2, "watch_id", m.watch_id);
  v.Bool(3, "created", m.created);
  v.Bool(4, "canceled", m.canceled);
  v.Int64(5, "compact_revision", m.compact_revision);
  v.String(6, "cancel_reason", m.cancel_reason);
  v.Bool(7, "fragment", m.fragment);
  v.Messages(11, "events", m.events);
}

// --- Maintenance, Cluster, Auth -------------------------------------------------

struct MaintenanceStatus {
  std::string version;
  std::int64_t db_size = 0;
  std::uint64_t leader = 0;
  std::uint64_t raft_index = 0;
  std::uint64_t raft_term = 0;
  std::uint64_t raft_applied_index = 0;
  std::vector<std::string> errors;
  std::int64_t db_size_in_use = 0;
  bool is_learner = false;
  bool operator==(const MaintenanceStatus&) const = default;
};
struct Member {
  std::uint64_t id = 0;
  std::string name;
  std::vector<std::string> peer_urls;
  std::vector<std::string> client_urls;
  bool is_learner = false;
  bool operator==(const Member&) const = default;
};
struct MemberList {
  std::vector<Member> members;
  bool operator==(const MemberList&) const = default;
};
struct AuthenticateRequest {
  std::string name;
  std::string password;
  bool operator==(const AuthenticateRequest&) const = default;
};
struct Authenticate {
  std::string token;
  bool operator==(const Authenticate&) const = default;
};
using StatusResponse = Response<MaintenanceStatus>;
using MemberListResponse = Response<MemberList>;
using AuthenticateResponse = Response<Authenticate>;

template <typename V, Is<MaintenanceStatus> C>
void Fields(V& v, C& m) {
  v.String(2, "version", m.version);
  v.Int64(3, "dbSize", m.db_size);
  v.Uint64(4, "leader", m.leader);
  v.Uint64(5, "raftIndex", m.raft_index);
  v.Uint64(6, "raftTerm", m.raft_term);
  v.Uint64(7, "raftAppliedIndex", m.raft_applied_index);
  v.Strings(8, "errors", m.errors);
  v.Int64(9, "dbSizeInUse", m.db_size_in_use);
  v.Bool(10, "isLearner", m.is_learner);
}
template <typename V, Is<Member> C>
void Fields(V& v, C& m) {
  v.Uint64(1, "ID", m.id);
  v.String(2, "name", m.name);
  v.Strings(3, "peerURLs", m.peer_urls);
  v.Strings(4, "clientURLs", m.client_urls);
  v.Bool(5, "isLearner", m.is_learner);
}
template <typename V, Is<MemberList> C>
void Fields(V& v, C& m) {
  v.Messages(2, "members", m.members);
}
template <typename V, Is<AuthenticateRequest> C>
void Fields(V& v, C& m) {
  v.String(1, "name", m.name);
  v.String(2, "password", m.password);
}
template <typename V, Is<Authenticate> C>
void Fields(V& v, C& m) {
  v.String(2, "token", m.token);
}

// --- Election and Lock ----------------------------------------------------------

struct LeaderKey {
  std::string name;
  std::string key;
  std::int64_t rev = 0;
  std::int64_t lease = 0;
  bool operator==(const LeaderKey&) const = default;
};
struct CampaignRequest {
  std::string name;
  std::int64_t lease = 0;
  std::string value;
  bool operator==(const CampaignRequest&) const = default;
};
struct Campaign {
  bool has_leader = false;
  LeaderKey leader;
  bool operator==(const Campaign&) const = default;
};
struct NameRequest {  // LeaderRequest
  std::string name;
  bool operator==(const NameRequest&) const = default;
};
struct Leader {
  bool has_kv = false;
  state::EtcdKeyValue kv;
  bool operator==(const Leader&) const = default;
};
struct ResignRequest {
  bool has_leader = false;
  LeaderKey leader;
  bool operator==(const ResignRequest&) const = default;
};
struct ProclaimRequest {
  bool has_leader = false;
  LeaderKey leader;
  std::string value;
  bool operator==(const ProclaimRequest&) const = default;
};
struct LockRequest {
  std::string name;
  std::int64_t lease = 0;
  bool operator==(const LockRequest&) const = default;
};
struct Lock {
  std::string key;
  bool operator==(const Lock&) const = default;
};
struct UnlockRequest {
  std::string key;
  bool operator==(const UnlockRequest&) const = default;
};
using CampaignResponse = Response<Campaign>;
using LeaderResponse = Response<Leader>;
using ResignResponse = Response<Empty>;
using ProclaimResponse = Response<Empty>;
using LockResponse = Response<Lock>;
using UnlockResponse = Response<Empty>;

template <typename V, Is<LeaderKey> C>
void Fields(V& v, C& m) {
  v.Bytes(1, "name", m.name);
  v.Bytes(2, "key", m.key);
  v.Int64(3, "rev", m.rev);
  v.Int64(4, "lease", m.lease);
}
template <typename V, Is<CampaignRequest> C>
void Fields(V& v, C& m) {
  v.Bytes(1, "name", m.name);
  v.Int64(2, "lease", m.lease);
  v.Bytes(3, "value", m.value);
}
template <typename V, Is<Campaign> C>
void Fields(V& v, C& m) {
  v.Optional(2, "leader", m.leader, m.has_leader);
}
template <typename V, Is<NameRequest> C>
void Fields(V& v, C& m) {
  v.Bytes(1, "name", m.name);
}
template <typename V, Is<Leader> C>
void Fields(V& v, C& m) {
  v.Optional(2, "kv", m.kv, m.has_kv);
}
template <typename V, Is<ResignRequest> C>
void Fields(V& v, C& m) {
  v.Optional(1, "leader", m.leader, m.has_leader);
}
template <typename V, Is<ProclaimRequest> C>
void Fields(V& v, C& m) {
  v.Optional(1, "leader", m.leader, m.has_leader);
  v.Bytes(2, "value", m.value);
}
template <typename V, Is<LockRequest> C>
void Fields(V& v, C& m) {
  v.Bytes(1, "name", m.name);
  v.Int64(2, "lease", m.lease);
}
template <typename V, Is<Lock> C>
void Fields(V& v, C& m) {
  v.Bytes(2, "key", m.key);
}
template <typename V, Is<UnlockRequest> C>
void Fields(V& v, C& m) {
  v.Bytes(1, "key", m.key);
}

}  // namespace tenure::etcd
