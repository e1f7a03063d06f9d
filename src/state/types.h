// The replicated data model: KV entries and sessions, as Consul defines them
// (docs/consul-api.md sections 1 and 2), plus tenure's fencing token.
// Pure value types; Consul's wire names appear only in src/http/json.
#pragma once

#include <compare>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/types.h"
#include "state/check_list.h"
#include "state/short_text.h"

namespace tenure::state {

// A session's id: the leader's 36-char lowercase UUID for a session it
// creates, and whatever a client names in ?acquire=, ?release= or a txn op,
// which the Store looks up as it is (it need not be a UUID). SessionId()
// (empty) means none: an unlocked key, an acquire that names no session. A
// type of its own because it sits beside keys, values, node names and check
// ids that are strings too: none of them converts to it, nor it to them.
// The HTTP layer makes one at the edge (after CheckSessionId for a path);
// codecs, JSON and Consul's texts use view() (or str(), a copy), so the
// bytes on the wire and in snapshots are the string's. Ordered as the
// string is (maps, the expiry tie-break) and hashable.
//
// 39 bytes, aligned to 1 so that a one-byte field can follow it (a
// session's behavior, decision 0067), and ids of up to 38 bytes (every UUID)
// live inside it without a heap block: a Store holds one per session, per
// held key and per waiter (decision 0033). A longer id, which only a client
// can name, is copied to the heap. view() points into the object: it lives
// as long as the id does and is not moved.
class SessionId {
 public:
  static constexpr std::size_t kInlineMax = 38;

  SessionId() noexcept { bytes_[kTag] = 0; }
  explicit SessionId(std::string_view id) { Init(id); }
  SessionId(const SessionId& other) { Init(other.view()); }
  SessionId(SessionId&& other) noexcept {
    std::memcpy(bytes_, other.bytes_, sizeof bytes_);
    other.bytes_[kTag] = 0;
  }
  SessionId& operator=(const SessionId& other) {
    if (this != &other) {
      SessionId copy(other);
      *this = std::move(copy);
    }
    return *this;
  }
  SessionId& operator=(SessionId&& other) noexcept {
    if (this != &other) {
      Free();
      std::memcpy(bytes_, other.bytes_, sizeof bytes_);
      other.bytes_[kTag] = 0;
    }
    return *this;
  }
  ~SessionId() { Free(); }

  std::string_view view() const {
    if (!on_heap()) return {bytes_, static_cast<std::size_t>(bytes_[kTag])};
    Heap h;
    std::memcpy(&h, bytes_, sizeof h);
    return {h.data, h.size};
  }
  std::string str() const { return std::string(view()); }
  bool empty() const { return bytes_[kTag] == 0; }

  friend bool operator==(const SessionId& a, const SessionId& b) { return a.view() == b.view(); }
  // Bytes compare unsigned, as std::string's do.
  friend std::strong_ordering operator<=>(const SessionId& a, const SessionId& b) {
    return a.view() <=> b.view();
  }

 private:
  static constexpr std::size_t kTag = kInlineMax;  // the inline size, or kOnHeap
  static constexpr char kOnHeap = static_cast<char>(0xff);
  struct Heap {
    char* data;
    std::size_t size;
  };

  bool on_heap() const { return bytes_[kTag] == kOnHeap; }
  void Init(std::string_view id) {
    if (id.size() <= kInlineMax) {
      if (!id.empty()) std::memcpy(bytes_, id.data(), id.size());
      bytes_[kTag] = static_cast<char>(id.size());
      return;
    }
    Heap h{new char[id.size()], id.size()};
    std::memcpy(h.data, id.data(), id.size());
    std::memcpy(bytes_, &h, sizeof h);
    bytes_[kTag] = kOnHeap;
  }
  void Free() {
    if (!on_heap()) return;
    Heap h;
    std::memcpy(&h, bytes_, sizeof h);
    delete[] h.data;
  }

  char bytes_[kInlineMax + 1];  // the heap block's pointer and size go in by memcpy
};
static_assert(sizeof(SessionId) == 39 && alignof(SessionId) == 1);

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
  // etcd's version (decision 0048): 1 when the key is created, one more at
  // each change of the entry after that, through any path (two changes in
  // one txn count two, as ZooKeeper's multi does); back to 1 when the key
  // is deleted and created again. 0 only in an entry that stands for a
  // missing key. Consul's API does not show it.
  std::uint64_t version = 0;
  // Holder's session id, empty when unlocked.
  SessionId session;
  // tenure's fencing token: the raft index of the grant that made `session`
  // the holder; 0 when unlocked. Raft indexes only grow, so every grant of
  // any lock gets a token larger than every earlier grant's, also after the
  // key was deleted and re-created (docs/fencing.md).
  LogIndex fence;

  bool operator==(const KvEntry&) const = default;
};

// The Store keeps one per session, so its layout is kept small (decisions
// 0033, 0058 and 0067): the id inline and the behavior byte right after it,
// text fields and the three check lists in a word each, and no padding: 96
// bytes, so that the record in its set node takes mimalloc's
// 128-byte size class.
struct Session {
  SessionId id;  // 36-char lowercase UUID, chosen by the leader
  Behavior behavior = Behavior::kRelease;
  // Text in 8 bytes each (decision 0058): the ports' sessions hold their
  // node and TTL inline and share one copy of their name.
  ShortText name;
  ShortText node;
  ShortText ttl;                 // the TTL string as the client sent it ("" = no TTL)
  DurationNs lock_delay_ns = 0;  // as stored; the applied delay is capped (limits.h)
  DurationNs ttl_ns = 0;
  // NodeChecks, ServiceChecks and the legacy Checks (reported when non-empty).
  SessionChecks checks;
  LogIndex create_index;

  // A session never changes once made (a renewal moves only the leader's
  // timer), so Consul's ModifyIndex is its CreateIndex.
  LogIndex modify_index() const { return create_index; }
  bool operator==(const Session&) const = default;
};
static_assert(sizeof(Session) == 96);

// The authority a grant made later than its request rests on (a fair
// acquire that waits in the queue, decision 0038): the ACL token it was sent
// with, checked again against the replicated ACL table when the grant is
// made, so a token revoked or cut to read-only meanwhile is never granted.
struct GrantAuthority {
  bool checked = false;        // ACLs were on where it was asked: check it at the grant
  std::string accessor_id;     // the token's (the anonymous token's when none was sent)
  bool default_allow = false;  // the server's acl default policy was allow
  bool operator==(const GrantAuthority&) const = default;
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
  // host:port of its etcd v3 API (gRPC and gateway), https://host:port when
  // that is a TLS port, "" when it serves none:
  // where followers relay etcd calls, and MemberList's client URLs
  // (decision 0055).
  std::string etcd_address;
  // host:port of its ZooKeeper client port, tls://host:port when only a
  // TLS port serves, "" when it serves none: where followers splice
  // ZooKeeper connections to (decision 0056).
  std::string zk_address;
  LogIndex modify_index;  // set on apply

  bool operator==(const Member&) const = default;
};

}  // namespace tenure::state

template <>
struct std::hash<tenure::state::SessionId> {
  std::size_t operator()(const tenure::state::SessionId& id) const noexcept {
    return std::hash<std::string_view>()(id.view());
  }
};
