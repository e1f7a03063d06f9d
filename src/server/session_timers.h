// SessionTimers: the leader's TTL deadlines, one per TTL session.
//
// Pure and deterministic: the current monotonic time is an argument of every
// call, and nothing here reads a clock or owns a timer (LeaderDuties and, at
// the edge, Server's single asio timer do). Leader-only soft state, never
// replicated. Renewals only move a deadline (no raft write).
//
// Compact (decisions 0032 and 0066): the leader names its sessions with
// 36-character lowercase UUIDs, and etcd leases and ZooKeeper sessions are
// numbers in the same shape; those are kept here as their 16 bytes in
// UuidDeadlines' flat table and indexed heap (about 41 bytes a session
// where a string-keyed map and ordered set took about 200). A renewal moves
// its deadline in place, O(log n). Any other id (tests, a session a client
// named) takes the string-keyed fallback; both are merged at expiry.
//
// Ties are broken by session id as a string, never by address, so the same
// inputs always expire sessions in the same order (the seeded simulation
// relies on it): the UUID bytes order as their text does, and the heap's
// order (deadline, id) is total, so its pops are in that order whatever
// its shape.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/types.h"
#include "server/uuid_deadlines.h"
#include "state/types.h"

namespace tenure::server {

class SessionTimers {
 public:
  // REQUIRES: ttl_multiplier >= 1. `hash_key` keys the UUID table's hash
  // (UuidDeadlines): random in a server, fixed in the simulation.
  explicit SessionTimers(int ttl_multiplier, std::uint64_t hash_key = 0);

  // Arms (or re-arms) the session's deadline at now + WaitMs, the TTL
  // rounded up to whole ms (late, never early). A zero TTL is never armed.
  void Arm(const state::SessionId& session_id, DurationNs ttl_ns, MonoMs now_ms);
  // How long after its last acknowledged renewal a session ends: TTL x the
  // multiplier (Consul's rule), or, for a numbered session (an etcd lease,
  // decision 0048), TTL x (1 + rho) rounded up: etcd's clients size their
  // renewals to the TTL itself, and decision 0011's condition (multiplier
  // at least 1 + rho) keeps it from ending before its TTL in real time.
  DurationMs WaitMs(const state::SessionId& session_id, DurationMs ttl_ms) const;
  void Disarm(const state::SessionId& session_id);
  void Clear();
  bool armed(const state::SessionId& session_id) const;
  std::size_t size() const { return compact_.size() + other_.size(); }
  // Milliseconds from now until the session's deadline, or -1 if not armed.
  DurationMs RemainingMs(const state::SessionId& session_id, MonoMs now_ms) const;

  // The earliest deadline, if any.
  std::optional<MonoMs> NextDeadline() const;
  // Disarms and returns every session whose deadline is at or before now,
  // earliest first, ties by id.
  std::vector<state::SessionId> TakeDue(MonoMs now_ms);

  // A 36-character lowercase UUID's 16 bytes; ordered as the text is.
  using Uuid = UuidDeadlines::Uuid;
  // The id's bytes if it is a UUID in the leader's form, else nullopt.
  static std::optional<Uuid> ParseUuid(std::string_view id);
  static std::string FormatUuid(const Uuid& uuid);
  // Slots of the UUID table (for tests of its memory bound).
  std::size_t compact_capacity() const { return compact_.slot_capacity(); }

 private:
  int ttl_multiplier_;
  // UUID ids: deadline by id, earliest first.
  UuidDeadlines compact_;
  // Any other id: deadline by id, and (deadline, id) in time order, ties by
  // id; the view is of other_'s key, which is stable for the node's life.
  std::unordered_map<state::SessionId, MonoMs> other_;
  std::set<std::pair<MonoMs, std::string_view>> other_queue_;
};

}  // namespace tenure::server
