// Store: sessions and their invalidation (docs/consul-api.md sections 1 and 2.6).
#include <algorithm>

#include "common/assert.h"
#include "common/limits.h"
#include "common/strings.h"
#include "state/store.h"

namespace tenure::state {

void Store::ApplySessionCreate(const SessionCreate& c, LogIndex index, ApplyResult* result) {
  // The leader picks a fresh random id and checks it before proposing; two
  // proposals racing for the same id are the only way to get here twice.
  if (sessions_.find(c.session.id) != sessions_.end()) {
    result->status =
        Status::Internal("session " + GoQuote(c.session.id.view()) + " already exists");
    return;
  }
  if (sessions_.size() >= limits::kSessionsMax) {
    result->status =
        Status::Internal("too many sessions (limit " + std::to_string(limits::kSessionsMax) + ")");
    return;
  }
  Session session = c.session;
  session.create_index = index;
  result->session_created = session.id;
  result->session_created_ttl_ns = session.ttl_ns;
  sessions_.insert(std::move(session));
  sessions_index_ = index;
  changes_.sessions = true;
}

// Destroying an unknown session is not an error (Consul answers true): the
// session may already have expired.
void Store::ApplySessionDestroy(const SessionDestroy& c, LogIndex index, ApplyResult* result) {
  result->session_destroyed = c.id;  // a timer for it, if any, goes either way
  auto it = sessions_.find(c.id);
  if (it == sessions_.end()) return;
  const Session& session = *it;

  // Lock-delay: keys the session held at invalidation cannot be acquired by
  // anyone until the window passes. The window is in replicated time, so it
  // survives a change of leader (docs/decisions/0001-lock-delay-in-replicated-state.md).
  DurationNs delay_ns = std::min(session.lock_delay_ns, limits::kLockDelayMaxNs);
  // Round up so the window is never shorter than asked.
  DurationMs delay_ms = delay_ns > 0 ? (delay_ns + kNsPerMs - 1) / kNsPerMs : 0;

  auto held = held_.find(c.id);
  session_end_cause_ =
      c.reason == DestroyReason::kExpired ? EndCause::kTtlExpiry : EndCause::kDestroy;
  std::vector<std::string> keys;
  if (held != held_.end()) keys.assign(held->second.begin(), held->second.end());
  for (const std::string& key : keys) {
    if (session.behavior == Behavior::kDelete) {
      DeleteEntry(key, index);
    } else {
      KvEntry entry = kv_.find(key)->second;
      entry.session = SessionId();
      entry.fence = LogIndex();
      PutEntry(std::move(entry), index);
    }
    if (delay_ms > 0) {
      ClusterMs until = now_ms_ + delay_ms;
      auto [slot, inserted] = lock_delays_.try_emplace(key, until);
      if (!inserted) slot->second = std::max(slot->second, until);
    }
  }
  TENURE_ASSERT(held_.find(c.id) == held_.end());
  // The session leaves every queue it waits in, and each key it held goes
  // to the head of its queue in this same entry, unless lock-delay holds it
  // (then a leader's KvQueueGrant grants it once the window has passed).
  DropSessionWaits(c.id, index, result);
  sessions_.erase(it);
  for (const std::string& key : keys) SettleQueue(key, index, result);
  sessions_index_ = index;
  changes_.sessions = true;
}

void Store::ApplyReapTombstones(const ReapTombstones& c) {
  for (auto it = tombstones_.begin(); it != tombstones_.end();) {
    if (it->second <= c.index) {
      reaped_index_ = std::max(reaped_index_, it->second);
      it = tombstones_.erase(it);
    } else {
      ++it;
    }
  }
  // Housekeeping rides along: forget lock-delay windows that have passed.
  for (auto it = lock_delays_.begin(); it != lock_delays_.end();) {
    it = it->second <= now_ms_ ? lock_delays_.erase(it) : std::next(it);
  }
}

}  // namespace tenure::state
