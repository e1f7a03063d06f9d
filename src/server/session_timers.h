// SessionTimers: the leader's TTL timers, one deadline per TTL session.
//
// Leader-only soft state, never replicated: a new leader re-arms every
// session at a full TTL x multiplier (ResetAll), so no session is ever
// expired before its TTL has passed since the last renewal this leader saw.
// Renewals only move a deadline (no raft write). Loop thread only.
//
// One asio timer serves all sessions: deadlines live in an ordered set, so a
// renewal is O(log n) and an idle session costs a map node and a set node.
#pragma once

#include <functional>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "common/clock.h"
#include "common/types.h"

namespace boost::asio {
class io_context;
}

namespace tenure::server {

class SessionTimers {
 public:
  using ExpireFn = std::function<void(const std::string& session_id)>;

  SessionTimers(boost::asio::io_context& io, const Clock& clock, int ttl_multiplier,
                ExpireFn on_expire);
  ~SessionTimers();

  // Arms (or re-arms) the session's deadline at now + ttl x multiplier.
  void Arm(const std::string& session_id, DurationNs ttl_ns);
  void Disarm(std::string_view session_id);
  void Clear();
  bool armed(std::string_view session_id) const;
  std::size_t size() const { return deadlines_.size(); }
  // Milliseconds until the session's deadline, or -1 if not armed (tests, debug).
  MonoMs RemainingMs(std::string_view session_id) const;

 private:
  void Schedule();
  void Fire();

  struct Deadline {
    MonoMs at_ms;
    DurationNs ttl_ns;
  };
  const Clock& clock_;
  int ttl_multiplier_;
  ExpireFn on_expire_;
  std::unordered_map<std::string, Deadline> deadlines_;
  // (deadline, id) ordered by time, ties by address: the pointer is
  // deadlines_'s key, stable for the node's life, and cheaper to compare
  // than the id's bytes.
  std::set<std::pair<MonoMs, const std::string*>> queue_;
  struct TimerState;
  std::unique_ptr<TimerState> timer_;
};

}  // namespace tenure::server
