// The replicated data model: KV entries and sessions, as Consul defines them
// (docs/consul-api.md sections 1 and 2), plus tenure's fencing token.
// Pure value types; Consul's wire names appear only in src/http/json.
#pragma once

#include <compare>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/types.h"

namespace tenure::state {

// A session's id: the leader's 36-char lowercase UUID for a session it
// creates, and whatever a client names in ?acquire=, ?release= or a txn op,
// which the Store looks up as it is (it need not be a UUID). SessionId()
// (empty) means none: an unlocked key, an acquire that names no session. A
// type of its own because it sits beside keys, values, node names and check
// ids that are strings too: none of them converts to it, nor it to them.
// The HTTP layer makes one at the edge (after CheckSessionId for a path);
// codecs, JSON and Consul's texts use str() or view(), so the bytes on the
// wire and in snapshots are the string's. Ordered as the string is (maps,
// the expiry tie-break) and hashable.
class SessionId {
 public:
  SessionId() = default;
  explicit SessionId(std::string id) : id_(std::move(id)) {}
  const std::string& str() const { return id_; }
  std::string_view view() const { return id_; }
  bool empty() const { return id_.empty(); }

  auto operator<=>(const SessionId&) const = default;

 private:
  std::string id_;
};

// What happens to the keys a session holds when the session is invalidated.
enum class Behavior : std::uint8_t { kRelease = 0, kDelete = 1 };

struct KvEntry {
  std::string key;
  // Empty means "no value": Consul does not distinguish an empty PUT body from
  // no value and reports both as "Value": null.
  std::string value;
  std::uint64_t flags = 0;
  LogIndex create_index;
  LogIndex modify_index;
  // Consul's LockIndex: how many times a new holder acquired the key. It
  // restarts at 1 when the key is deleted and re-created.
  std::uint64_t lock_index = 0;
  // Holder's session id, empty when unlocked.
  SessionId session;
  // tenure's fencing token: the raft index of the grant that made `session`
  // the holder; 0 when unlocked. Raft indexes only grow, so every grant of
  // any lock gets a token larger than every earlier grant's, also after the
  // key was deleted and re-created (docs/fencing.md).
  LogIndex fence;

  bool operator==(const KvEntry&) const = default;
};

struct ServiceCheck {
  std::string id;
  std::string ns;  // Consul "Namespace" (Enterprise); kept verbatim
  bool operator==(const ServiceCheck&) const = default;
};

struct Session {
  SessionId id;  // 36-char lowercase UUID, chosen by the leader
  std::string name;
  std::string node;
  DurationNs lock_delay_ns = 0;  // as stored; the applied delay is capped (limits.h)
  Behavior behavior = Behavior::kRelease;
  std::string ttl;  // the TTL string as the client sent it ("" = no TTL)
  DurationNs ttl_ns = 0;
  std::vector<std::string> node_checks;
  std::vector<ServiceCheck> service_checks;
  std::vector<std::string> checks;  // legacy "Checks" field, reported when non-empty
  LogIndex create_index;
  LogIndex modify_index;

  bool operator==(const Session&) const = default;
};

// One server of the cluster as the replicated state knows it: what raft's
// configuration lacks (a name, and where the server answers HTTP, so that
// followers can forward to the leader; decision 0008). Raft's configuration
// stays the truth about who votes.
struct Member {
  std::uint64_t id = 0;      // raft server id (-node-id)
  std::string name;          // Consul's node name (-node)
  std::string raft_address;  // host:port of its raft transport
  std::string http_address;  // host:port of its HTTP API
  LogIndex modify_index;     // set on apply

  bool operator==(const Member&) const = default;
};

}  // namespace tenure::state

template <>
struct std::hash<tenure::state::SessionId> {
  std::size_t operator()(const tenure::state::SessionId& id) const noexcept {
    return std::hash<std::string_view>()(id.view());
  }
};
