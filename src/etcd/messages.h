// etcd's KV messages (rpc.proto, kv.proto of etcd 3.4) as field lists over
// plain structs: state's requests and answers (state/etcd_request.h) and the
// etcd layer's own (the response header). One `Fields` per message lists
// each field once (number, proto name, kind); the protobuf coder
// (etcd/proto_codec.h) and the gateway's JSON coder walk those lists, so a
// message is described in one place (decision 0048 section 5).
//
// A visitor V offers, for a field `n` named `name`:
//   Int64, Uint64, Bool, Bytes, String   scalars (proto3: zero is absent)
//   Enum(n, name, e, names)              an enum, names by value for JSON
//   Message(n, name, m)                  a nested message, always written
//   Optional(n, name, m, present)        a nested message written if present
//   Messages(n, name, vector)            a repeated message
//   Oneof(n, name, m, kind, which)       a member of a oneof: written when
//                                        kind == which, read sets kind
//   OneofInt64 / OneofBytes              scalar oneof members (Compare)
//   BytesList, Strings                   repeated bytes and strings
//   EnumList(n, name, vector, names)     a repeated enum (packed in protobuf)
#pragma once

#include <array>
#include <concepts>
#include <cstdint>
#include <string_view>
#include <type_traits>
#include <vector>

#include "state/etcd_request.h"

namespace tenure::etcd {

template <typename C, typename T>
concept Is = std::same_as<std::remove_const_t<C>, T>;

// etcdserverpb.ResponseHeader.
struct ResponseHeader {
  std::uint64_t cluster_id = 0;
  std::uint64_t member_id = 0;
  std::int64_t revision = 0;
  std::uint64_t raft_term = 0;
  bool operator==(const ResponseHeader&) const = default;
};

// A response with its header (field 1) before the body's own fields.
template <typename Body>
struct Response {
  ResponseHeader header;
  Body body;
  bool operator==(const Response&) const = default;
};

struct CompactionRequest {
  std::int64_t revision = 0;
  bool physical = false;
  bool operator==(const CompactionRequest&) const = default;
};
struct Empty {
  bool operator==(const Empty&) const = default;
};

using RangeResponse = Response<state::EtcdRangeResponse>;
using PutResponse = Response<state::EtcdPutResponse>;
using DeleteRangeResponse = Response<state::EtcdDeleteRangeResponse>;
using TxnResponse = Response<state::EtcdTxnResponse>;
using CompactionResponse = Response<Empty>;

inline constexpr std::array<std::string_view, 3> kSortOrderNames = {"NONE", "ASCEND", "DESCEND"};
inline constexpr std::array<std::string_view, 5> kSortTargetNames = {"KEY", "VERSION", "CREATE",
                                                                     "MOD", "VALUE"};
inline constexpr std::array<std::string_view, 4> kCompareResultNames = {"EQUAL", "GREATER", "LESS",
                                                                        "NOT_EQUAL"};
inline constexpr std::array<std::string_view, 5> kCompareTargetNames = {"VERSION", "CREATE", "MOD",
                                                                        "VALUE", "LEASE"};

template <typename V, Is<ResponseHeader> C>
void Fields(V& v, C& m) {
  v.Uint64(1, "cluster_id", m.cluster_id);
  v.Uint64(2, "member_id", m.member_id);
  v.Int64(3, "revision", m.revision);
  v.Uint64(4, "raft_term", m.raft_term);
}

template <typename V, Is<state::EtcdKeyValue> C>
void Fields(V& v, C& m) {
  v.Bytes(1, "key", m.key);
  v.Int64(2, "create_revision", m.create_revision);
  v.Int64(3, "mod_revision", m.mod_revision);
  v.Int64(4, "version", m.version);
  v.Bytes(5, "value", m.value);
  v.Int64(6, "lease", m.lease);
}

template <typename V, Is<state::EtcdRangeRequest> C>
void Fields(V& v, C& m) {
  v.Bytes(1, "key", m.range.key);
  v.Bytes(2, "range_end", m.range.end);
  v.Int64(3, "limit", m.limit);
  v.Int64(4, "revision", m.revision);
  v.Enum(5, "sort_order", m.sort_order, kSortOrderNames);
  v.Enum(6, "sort_target", m.sort_target, kSortTargetNames);
  v.Bool(7, "serializable", m.serializable);
  v.Bool(8, "keys_only", m.keys_only);
  v.Bool(9, "count_only", m.count_only);
  v.Int64(10, "min_mod_revision", m.min_mod_revision);
  v.Int64(11, "max_mod_revision", m.max_mod_revision);
  v.Int64(12, "min_create_revision", m.min_create_revision);
  v.Int64(13, "max_create_revision", m.max_create_revision);
}

template <typename V, Is<state::EtcdRangeResponse> C>
void Fields(V& v, C& m) {
  v.Messages(2, "kvs", m.kvs);
  v.Bool(3, "more", m.more);
  v.Int64(4, "count", m.count);
}

template <typename V, Is<state::EtcdPutRequest> C>
void Fields(V& v, C& m) {
  v.Bytes(1, "key", m.key);
  v.Bytes(2, "value", m.value);
  v.Int64(3, "lease", m.lease);
  v.Bool(4, "prev_kv", m.prev_kv);
  v.Bool(5, "ignore_value", m.ignore_value);
  v.Bool(6, "ignore_lease", m.ignore_lease);
}

template <typename V, Is<state::EtcdPutResponse> C>
void Fields(V& v, C& m) {
  v.Optional(2, "prev_kv", m.prev_kv, m.has_prev_kv);
}

template <typename V, Is<state::EtcdDeleteRangeRequest> C>
void Fields(V& v, C& m) {
  v.Bytes(1, "key", m.range.key);
  v.Bytes(2, "range_end", m.range.end);
  v.Bool(3, "prev_kv", m.prev_kv);
}

template <typename V, Is<state::EtcdDeleteRangeResponse> C>
void Fields(V& v, C& m) {
  v.Int64(2, "deleted", m.deleted);
  v.Messages(3, "prev_kvs", m.prev_kvs);
}

template <typename V, Is<state::EtcdCompare> C>
void Fields(V& v, C& m) {
  using Target = state::EtcdCompareTarget;
  v.Enum(1, "result", m.result, kCompareResultNames);
  v.Enum(2, "target", m.target, kCompareTargetNames);
  v.Bytes(3, "key", m.range.key);
  v.OneofInt64(4, "version", m.number, m.target, Target::kVersion);
  v.OneofInt64(5, "create_revision", m.number, m.target, Target::kCreate);
  v.OneofInt64(6, "mod_revision", m.number, m.target, Target::kMod);
  v.OneofBytes(7, "value", m.value, m.target, Target::kValue);
  v.OneofInt64(8, "lease", m.number, m.target, Target::kLease);
  v.Bytes(64, "range_end", m.range.end);
}

template <typename V, Is<state::EtcdRequestOp> C>
void Fields(V& v, C& m) {
  using Kind = state::EtcdRequestOp::Kind;
  v.Oneof(1, "request_range", m.range, m.kind, Kind::kRange);
  v.Oneof(2, "request_put", m.put, m.kind, Kind::kPut);
  v.Oneof(3, "request_delete_range", m.delete_range, m.kind, Kind::kDeleteRange);
  v.Oneof(4, "request_txn", m.txn, m.kind, Kind::kTxn);
}

template <typename V, Is<state::EtcdTxnRequest> C>
void Fields(V& v, C& m) {
  v.Messages(1, "compare", m.compare);
  v.Messages(2, "success", m.success);
  v.Messages(3, "failure", m.failure);
}

// Each answer inside a txn carries a header of its own holding only its
// revision, as etcd's applier writes them (clientv3's STM reads it); a
// nested txn's is empty.
template <typename V, Is<state::EtcdResponseOp> C>
void Fields(V& v, C& m) {
  using Kind = state::EtcdRequestOp::Kind;
  v.OneofWithRevision(1, "response_range", m.range, m.kind, Kind::kRange, m.revision);
  v.OneofWithRevision(2, "response_put", m.put, m.kind, Kind::kPut, m.revision);
  v.OneofWithRevision(3, "response_delete_range", m.delete_range, m.kind, Kind::kDeleteRange,
                      m.revision);
  v.OneofWithRevision(4, "response_txn", m.txn, m.kind, Kind::kTxn, m.revision);
}

template <typename V, Is<state::EtcdTxnResponse> C>
void Fields(V& v, C& m) {
  v.Bool(2, "succeeded", m.succeeded);
  v.Messages(3, "responses", m.responses);
}

template <typename V, Is<CompactionRequest> C>
void Fields(V& v, C& m) {
  v.Int64(1, "revision", m.revision);
  v.Bool(2, "physical", m.physical);
}

template <typename V, Is<Empty> C>
void Fields(V& /*v*/, C& /*m*/) {}

template <typename T>
struct IsResponseT : std::false_type {};
template <typename B>
struct IsResponseT<Response<B>> : std::true_type {};
template <typename C>
concept AResponse = IsResponseT<std::remove_const_t<C>>::value;

// A response: its header, then its body's fields.
template <typename V, AResponse C>
void Fields(V& v, C& m) {
  v.Message(1, "header", m.header);
  Fields(v, m.body);
}

// What a decoded message means when its input said it twice: a Compare's
// target union holds the member read last (`union_seen`, the target it
// belongs to, -1 for none), and only the member its target names counts
// (etcd compares a missing or other member as zero).
template <typename M>
void NormalizeDecoded(M& /*m*/, int /*union_seen*/) {}
inline void NormalizeDecoded(state::EtcdCompare& c, int union_seen) {
  if (union_seen != static_cast<int>(c.target)) {
    c.number = 0;
    c.value.clear();
  } else if (c.target == state::EtcdCompareTarget::kValue) {
    c.number = 0;
  } else {
    c.value.clear();
  }
}
// An op's oneof holds the member read last (`kind`); one read before it is
// dropped, as protobuf's generated code drops it, so the op encodes and
// reads back the same.
template <typename Op>
void KeepOnlyTheSetMember(Op& op) {
  using Kind = state::EtcdRequestOp::Kind;
  if (op.kind != Kind::kRange) op.range = {};
  if (op.kind != Kind::kPut) op.put = {};
  if (op.kind != Kind::kDeleteRange) op.delete_range = {};
  if (op.kind != Kind::kTxn) op.txn.clear();
}
inline void NormalizeDecoded(state::EtcdRequestOp& op, int /*union_seen*/) {
  KeepOnlyTheSetMember(op);
}
inline void NormalizeDecoded(state::EtcdResponseOp& op, int /*union_seen*/) {
  KeepOnlyTheSetMember(op);
}

}  // namespace tenure::etcd
