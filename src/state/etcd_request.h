// etcd's KV requests and answers as plain structs (decision 0048): what the
// etcd layer decodes from protobuf or the gateway's JSON, what the Store
// applies in an EtcdTxn, and what it answers. Enum values are the .proto's
// numbers. Pure value types.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "state/key_range.h"

namespace tenure::state {

enum class EtcdSortOrder : std::uint8_t { kNone = 0, kAscend = 1, kDescend = 2 };
enum class EtcdSortTarget : std::uint8_t {
  kKey = 0,
  kVersion = 1,
  kCreate = 2,
  kMod = 3,
  kValue = 4
};

struct EtcdRangeRequest {
  KeyRange range;
  std::int64_t limit = 0;     // 0 or less: no limit
  std::int64_t revision = 0;  // 0 or less: the current state
  EtcdSortOrder sort_order = EtcdSortOrder::kNone;
  EtcdSortTarget sort_target = EtcdSortTarget::kKey;
  bool serializable = false;
  bool keys_only = false;
  bool count_only = false;
  std::int64_t min_mod_revision = 0;  // each 0: no bound
  std::int64_t max_mod_revision = 0;
  std::int64_t min_create_revision = 0;
  std::int64_t max_create_revision = 0;
  bool operator==(const EtcdRangeRequest&) const = default;
};

struct EtcdPutRequest {
  std::string key;
  std::string value;
  std::int64_t lease = 0;  // 0: none
  bool prev_kv = false;
  bool ignore_value = false;
  bool ignore_lease = false;
  bool operator==(const EtcdPutRequest&) const = default;
};

struct EtcdDeleteRangeRequest {
  KeyRange range;
  bool prev_kv = false;
  bool operator==(const EtcdDeleteRangeRequest&) const = default;
};

enum class EtcdCompareResult : std::uint8_t { kEqual = 0, kGreater = 1, kLess = 2, kNotEqual = 3 };
enum class EtcdCompareTarget : std::uint8_t {
  kVersion = 0,
  kCreate = 1,
  kMod = 2,
  kValue = 3,
  kLease = 4
};

struct EtcdCompare {
  EtcdCompareResult result = EtcdCompareResult::kEqual;
  EtcdCompareTarget target = EtcdCompareTarget::kVersion;
  KeyRange range;           // the key, and a range end for every key of a range
  std::int64_t number = 0;  // version, create or mod revision, or lease
  std::string value;        // kValue
  bool operator==(const EtcdCompare&) const = default;
};

struct EtcdRequestOp;

struct EtcdTxnRequest {
  std::vector<EtcdCompare> compare;
  std::vector<EtcdRequestOp> success;
  std::vector<EtcdRequestOp> failure;
  bool operator==(const EtcdTxnRequest&) const;
};

// One op of a txn: which one `kind` says (protobuf's oneof; kEmpty when the
// request named none).
struct EtcdRequestOp {
  enum class Kind : std::uint8_t { kEmpty, kRange, kPut, kDeleteRange, kTxn };
  Kind kind = Kind::kEmpty;
  EtcdRangeRequest range;
  EtcdPutRequest put;
  EtcdDeleteRangeRequest delete_range;
  std::vector<EtcdTxnRequest> txn;  // one, for kTxn (a vector: the types nest)
  bool operator==(const EtcdRequestOp&) const = default;
};

inline bool EtcdTxnRequest::operator==(const EtcdTxnRequest& other) const {
  return compare == other.compare && success == other.success && failure == other.failure;
}

// mvccpb.KeyValue.
struct EtcdKeyValue {
  std::string key;
  std::int64_t create_revision = 0;
  std::int64_t mod_revision = 0;
  std::int64_t version = 0;
  std::string value;
  std::int64_t lease = 0;
  bool operator==(const EtcdKeyValue&) const = default;
};

struct EtcdRangeResponse {
  std::vector<EtcdKeyValue> kvs;
  bool more = false;
  std::int64_t count = 0;
  bool operator==(const EtcdRangeResponse&) const = default;
};

// What each op of an applied txn answered (etcd's ResponseOp).
struct EtcdPutResponse {
  bool has_prev_kv = false;  // prev_kv was asked and the key existed
  EtcdKeyValue prev_kv;
  bool operator==(const EtcdPutResponse&) const = default;
};

struct EtcdDeleteRangeResponse {
  std::int64_t deleted = 0;
  std::vector<EtcdKeyValue> prev_kvs;  // with prev_kv
  bool operator==(const EtcdDeleteRangeResponse&) const = default;
};

struct EtcdTxnResponse;

struct EtcdResponseOp {
  EtcdRequestOp::Kind kind = EtcdRequestOp::Kind::kEmpty;
  // The revision in the header etcd gives a range, put or delete_range
  // answered inside a txn (a nested txn's answer has none): the state the op
  // saw or made. On a write it is the entry's index once an op of the txn
  // has changed a key, the index before it until then (etcd: the txn's
  // begin revision, plus one after a change); on a read, the applied index.
  std::int64_t revision = 0;
  EtcdRangeResponse range;
  EtcdPutResponse put;
  EtcdDeleteRangeResponse delete_range;
  std::vector<EtcdTxnResponse> txn;  // one, for kTxn
  bool operator==(const EtcdResponseOp&) const = default;
};

struct EtcdTxnResponse {
  bool succeeded = false;
  std::vector<EtcdResponseOp> responses;
  bool operator==(const EtcdTxnResponse&) const;
};

inline bool EtcdTxnResponse::operator==(const EtcdTxnResponse& other) const {
  return succeeded == other.succeeded && responses == other.responses;
}

}  // namespace tenure::state
