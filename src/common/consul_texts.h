// Consul's error texts, the ones clients and scripts match on, in one table
// (docs/consul-api.md section 0.3 lists them with their statuses). Every
// layer that answers with one of them takes it from here. Pure.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"
#include "common/strings.h"

namespace tenure::consul {

// --- Cluster ------------------------------------------------------------------
inline constexpr std::string_view kNoClusterLeader = "No cluster leader";
inline Status NoClusterLeader() { return Status::NotLeader(std::string(kNoClusterLeader)); }
inline Status NoPathToDatacenter() { return Status::Internal("No path to datacenter"); }
inline constexpr std::string_view kAclNotFound = "ACL not found";

// --- ACLs (403 unless said otherwise) ------------------------------------------------
// The accessor ID of Consul's anonymous token: its denials read differently.
inline constexpr std::string_view kAnonymousAccessorId = "00000000-0000-0000-0000-000000000002";
inline Status AclNotFound() { return Status::PermissionDenied(std::string(kAclNotFound)); }
inline Status AclBootstrapNoLongerAllowed(std::uint64_t reset_index) {
  return Status::PermissionDenied(
      "Permission denied: ACL bootstrap no longer allowed (reset index: " +
      std::to_string(reset_index) + ")");
}
// Answered with 401 to every ACL endpoint while ACLs are off.
inline constexpr std::string_view kAclDisabled = "ACL support disabled";
// `permission` is "key:write", "operator:read"...; `name` the key, node or
// prefix the check was about, empty for unlabeled resources (operator, acl).
inline Status PermissionDenied(std::string_view accessor_id, std::string_view permission,
                               std::string_view name) {
  const bool anonymous = accessor_id == kAnonymousAccessorId;
  std::string text =
      anonymous ? std::string("Permission denied: anonymous token")
                : "Permission denied: token with AccessorID '" + std::string(accessor_id) + "'";
  text += " lacks permission '" + std::string(permission) + "'";
  if (!name.empty()) text += " on " + GoQuote(name);
  if (anonymous) {
    text += ". The anonymous token is used implicitly when a request does not specify a token.";
  }
  return Status::PermissionDenied(std::move(text));
}
inline constexpr std::string_view kNotAnApiPath =
    "Invalid URL path: not a recognized HTTP API endpoint";
inline Status RemovePeerNeedsIdOrAddress() {
  return Status::InvalidArgument(
      "Must specify either ?id with the server's ID or ?address with IP:port of peer to remove");
}

// --- Request framing and query parameters --------------------------------------
inline Status InvalidWaitTime() { return Status::InvalidArgument("Invalid wait time"); }
inline Status InvalidIndex() { return Status::InvalidArgument("Invalid index"); }
inline Status RequestDecodeFailed(std::string_view why) {
  return Status::InvalidArgument("Request decode failed: " + std::string(why));
}
inline Status FailedToParseBody(std::string_view why) {
  return Status::InvalidArgument("Failed to parse body: " + std::string(why));
}
inline Status RequestBodyTooLarge(std::size_t max_bytes) {
  return Status::TooLarge("Request body too large, max size: " + std::to_string(max_bytes) +
                          " bytes");
}
inline Status ResponseTooLarge(std::size_t max_bytes, std::string_view hint) {
  return Status::TooLarge("Response too large (more than " + std::to_string(max_bytes) + " bytes)" +
                          std::string(hint));
}

// --- KV ---------------------------------------------------------------------------
inline Status MissingKeyName() { return Status::InvalidArgument("Missing key name"); }
inline Status ConflictingFlags(std::string_view query) {
  return Status::InvalidArgument("Conflicting flags: " + std::string(query) + "\n");
}
inline Status KeyTooLong(std::size_t bytes, std::size_t max_bytes) {
  return Status::InvalidArgument("Key is too long (" + std::to_string(bytes) + " > " +
                                 std::to_string(max_bytes) + " bytes)");
}
inline Status ValueTooLarge(std::string_view key, std::size_t bytes, std::size_t max_bytes) {
  return Status::TooLarge("Value for key " + GoQuote(key) + " is too large (" +
                          std::to_string(bytes) + " > " + std::to_string(max_bytes) + " bytes)");
}
// An acquire (KV or txn lock) without a session, or with an unknown one.
inline Status AcquireMissingSession() { return Status::Internal("missing session"); }
inline Status AcquireInvalidSession(std::string_view session) {
  return Status::Internal("invalid session " + GoQuote(session));
}

// --- Sessions --------------------------------------------------------------------
inline Status MissingSession() { return Status::InvalidArgument("Missing session"); }
inline Status MissingNodeName() { return Status::InvalidArgument("Missing node name"); }
inline Status SessionNotFound(std::string_view id) {
  return Status::NotFound("Session id '" + std::string(id) + "' not found");
}
inline Status MissingCheck(std::string_view check) {
  return Status::Internal("Missing check '" + std::string(check) + "' registration");
}
inline Status UuidLength() { return Status::Internal("UUID must be 36 characters"); }
inline Status InvalidUuid(std::string_view id) {
  return Status::Internal("Invalid UUID: " + GoQuote(id));
}
inline Status InvalidBehavior(std::string_view behavior) {
  return Status::Internal("Invalid Behavior setting '" + std::string(behavior) + "'");
}
inline Status SessionTtlUnparsable(std::string_view ttl, std::string_view why) {
  return Status::Internal("Session TTL '" + std::string(ttl) + "' invalid: " + std::string(why));
}
inline Status SessionTtlOutOfRange(std::int64_t ttl_ns, std::string_view min,
                                   std::string_view max) {
  return Status::Internal("Invalid Session TTL '" + std::to_string(ttl_ns) +
                          "', must be between [" + std::string(min) + "=" + std::string(max) + "]");
}

// --- Transactions (each op's error, with its index, in the 409 answer) -------------
inline Status TxnTooManyOps(std::size_t ops, std::size_t max_ops) {
  return Status::TooLarge("Transaction contains too many operations (" + std::to_string(ops) +
                          " > " + std::to_string(max_ops) + ")");
}
inline std::string TxnLockDelayed(std::string_view key) {
  return "failed to lock key " + GoQuote(key) + " due to lock delay";
}
inline std::string TxnCasStale(std::string_view key) {
  return "failed to set key " + GoQuote(key) + ", index is stale";
}
inline std::string TxnLockHeld(std::string_view key) {
  return "failed to lock key " + GoQuote(key) + ", lock is already held";
}
inline std::string TxnUnlockNotHeld(std::string_view key) {
  return "failed to unlock key " + GoQuote(key) +
         ", lock isn't held, or is held by another session";
}
inline std::string TxnDeleteCasStale(std::string_view key) {
  return "failed to delete key " + GoQuote(key) + ", index is stale";
}
inline std::string TxnCheckMissing(std::string_view what, std::string_view key) {
  return "failed to check " + std::string(what) + ", key " + GoQuote(key) + " doesn't exist";
}

}  // namespace tenure::consul
