// SessionTimers: the leader's TTL deadlines, one per TTL session.
//
// Pure and deterministic: the current monotonic time is an argument of every
// call, and nothing here reads a clock or owns a timer (LeaderDuties and, at
// the edge, Server's single asio timer do). Leader-only soft state, never
// replicated. Renewals only move a deadline (no raft write).
//
// Deadlines live in an ordered set, so a renewal is O(log n) and an idle
// session costs a map node and a set node. Ties are broken by session id,
// never by address, so the same inputs always expire sessions in the same
// order (the seeded simulation relies on it).
#pragma once

#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/types.h"
#include "state/types.h"

namespace tenure::server {

class SessionTimers {
 public:
  // REQUIRES: ttl_multiplier >= 1.
  explicit SessionTimers(int ttl_multiplier);

  // Arms (or re-arms) the session's deadline at now + ttl x multiplier, the
  // TTL rounded up to whole ms (late, never early). A zero TTL is never armed.
  void Arm(const state::SessionId& session_id, DurationNs ttl_ns, MonoMs now_ms);
  void Disarm(const state::SessionId& session_id);
  void Clear();
  bool armed(const state::SessionId& session_id) const;
  std::size_t size() const { return deadlines_.size(); }
  // Milliseconds from now until the session's deadline, or -1 if not armed.
  MonoMs RemainingMs(const state::SessionId& session_id, MonoMs now_ms) const;

  // The earliest deadline, if any.
  std::optional<MonoMs> NextDeadline() const;
  // Disarms and returns every session whose deadline is at or before now,
  // earliest first.
  std::vector<state::SessionId> TakeDue(MonoMs now_ms);

 private:
  int ttl_multiplier_;
  std::unordered_map<state::SessionId, MonoMs> deadlines_;
  // (deadline, id) in time order, ties by id; the view is of deadlines_'s
  // key, which is stable for the node's life.
  std::set<std::pair<MonoMs, std::string_view>> queue_;
};

}  // namespace tenure::server
