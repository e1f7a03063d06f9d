// etcd's error texts and gRPC status codes, in one place (decision 0048,
// section 6), as common/consul_texts.h holds Consul's: etcd's clients match
// some of these strings (clientv3 retries on "etcdserver: leader changed",
// re-lists on "required revision has been compacted"), so each is etcd
// 3.4's byte for byte (etcdserver/api/v3rpc/rpctypes/error.go), and
// tenure's own refusals say "tenure:".
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

namespace tenure::etcd_texts {

// gRPC's status codes, by their wire numbers.
enum class GrpcCode : std::uint8_t {
  kOk = 0,
  kCancelled = 1,
  kUnknown = 2,
  kInvalidArgument = 3,
  kDeadlineExceeded = 4,
  kNotFound = 5,
  kAlreadyExists = 6,
  kPermissionDenied = 7,
  kResourceExhausted = 8,
  kFailedPrecondition = 9,
  kAborted = 10,
  kOutOfRange = 11,
  kUnimplemented = 12,
  kInternal = 13,
  kUnavailable = 14,
  kDataLoss = 15,
  kUnauthenticated = 16,
};

// gRPC's name of a code ("OK", "NotFound", ...), as grpc-go's String().
inline std::string_view GrpcCodeName(int code) {
  static constexpr std::string_view kNames[] = {
      "OK",       "Canceled",       "Unknown",          "InvalidArgument",   "DeadlineExceeded",
      "NotFound", "AlreadyExists",  "PermissionDenied", "ResourceExhausted", "FailedPrecondition",
      "Aborted",  "OutOfRange",     "Unimplemented",    "Internal",          "Unavailable",
      "DataLoss", "Unauthenticated"};
  return code >= 0 && code < 17 ? kNames[code] : "Unknown";
}

// An etcd answer that is not OK: its code and message. Default: OK.
struct EtcdError {
  GrpcCode code = GrpcCode::kOk;
  std::string message;

  bool ok() const { return code == GrpcCode::kOk; }
  bool operator==(const EtcdError&) const = default;
};

inline EtcdError Error(GrpcCode code, std::string message) { return {code, std::move(message)}; }

inline EtcdError EmptyKey() {
  return Error(GrpcCode::kInvalidArgument, "etcdserver: key is not provided");
}
inline EtcdError KeyNotFound() {
  return Error(GrpcCode::kInvalidArgument, "etcdserver: key not found");
}
inline EtcdError ValueProvided() {
  return Error(GrpcCode::kInvalidArgument, "etcdserver: value is provided");
}
inline EtcdError LeaseProvided() {
  return Error(GrpcCode::kInvalidArgument, "etcdserver: lease is provided");
}
inline EtcdError TooManyOps() {
  return Error(GrpcCode::kInvalidArgument, "etcdserver: too many operations in txn request");
}
inline EtcdError DuplicateKey() {
  return Error(GrpcCode::kInvalidArgument, "etcdserver: duplicate key given in txn request");
}
inline EtcdError RequestTooLarge() {
  return Error(GrpcCode::kInvalidArgument, "etcdserver: request is too large");
}
inline EtcdError Compacted() {
  return Error(GrpcCode::kOutOfRange, "etcdserver: mvcc: required revision has been compacted");
}
inline EtcdError FutureRevision() {
  return Error(GrpcCode::kOutOfRange, "etcdserver: mvcc: required revision is a future revision");
}
inline EtcdError LeaseNotFound() {
  return Error(GrpcCode::kNotFound, "etcdserver: requested lease not found");
}
inline EtcdError LeaseExists() {
  return Error(GrpcCode::kFailedPrecondition, "etcdserver: lease already exists");
}
inline EtcdError LeaseTtlTooLarge() {
  return Error(GrpcCode::kOutOfRange, "etcdserver: too large lease TTL");
}

// Leadership and time (decision 0048 section 5).
inline EtcdError NoLeader() { return Error(GrpcCode::kUnavailable, "etcdserver: no leader"); }
inline EtcdError NotLeader() {
  return Error(GrpcCode::kFailedPrecondition, "etcdserver: not leader");
}
inline EtcdError LeaderChanged() {
  return Error(GrpcCode::kUnavailable, "etcdserver: leader changed");
}
inline EtcdError Stopped() { return Error(GrpcCode::kUnavailable, "etcdserver: server stopped"); }
inline EtcdError RequestTimeout() {
  return Error(GrpcCode::kUnavailable, "etcdserver: request timed out");
}
inline EtcdError TimeoutDueToLeaderFail() {
  return Error(GrpcCode::kUnavailable,
               "etcdserver: request timed out, possibly due to previous leader failure");
}

// Watch cancel reasons (a canceled WatchResponse's cancel_reason, not a status).
inline constexpr std::string_view kWatcherRangeEmpty = "mvcc: watcher range is empty";
inline constexpr std::string_view kWatcherDuplicateId =
    "mvcc: duplicate watch ID provided on the WatchStream";

// The Election service's errors: plain Go errors in etcd's server, which
// gRPC answers with code Unknown.
inline EtcdError ElectionNoLeader() { return Error(GrpcCode::kUnknown, "election: no leader"); }
inline EtcdError ElectionNotLeader() { return Error(GrpcCode::kUnknown, "election: not leader"); }
inline EtcdError MissingLeaderKey() {
  return Error(GrpcCode::kUnknown, "\"leader\" field must be provided");
}

// tenure's own, where etcd has no text.
inline EtcdError KeyTooLong(std::size_t bytes, std::size_t max) {
  return Error(GrpcCode::kInvalidArgument, "tenure: key is " + std::to_string(bytes) +
                                               " bytes, longer than the " + std::to_string(max) +
                                               " allowed");
}
inline EtcdError TxnTooDeep(int max) {
  return Error(GrpcCode::kInvalidArgument, "tenure: txn nested deeper than " + std::to_string(max));
}
inline EtcdError TxnTooManyItems(std::size_t items, std::size_t max) {
  return Error(GrpcCode::kInvalidArgument,
               "tenure: txn has " + std::to_string(items) +
                   " compares and operations at all its levels, more than the " +
                   std::to_string(max) + " allowed");
}
inline EtcdError PastRevisionInTxn() {
  return Error(GrpcCode::kInvalidArgument,
               "tenure: a range at a past revision inside a txn that writes; send it "
               "outside the txn, or in a txn that only reads");
}

inline EtcdError RecipeWithoutLease() {
  return Error(GrpcCode::kInvalidArgument,
               "tenure: a campaign or lock needs a lease (lease 0 would never end)");
}
inline EtcdError RecipeKeyGone(const std::string& key) {
  return Error(GrpcCode::kFailedPrecondition,
               "tenure: key \"" + key + "\" was deleted while it waited its turn");
}

}  // namespace tenure::etcd_texts
