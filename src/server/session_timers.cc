#include "server/session_timers.h"

#include "common/assert.h"

namespace tenure::server {

SessionTimers::SessionTimers(int ttl_multiplier) : ttl_multiplier_(ttl_multiplier) {
  TENURE_ASSERT(ttl_multiplier_ >= 1);
}

void SessionTimers::Arm(const state::SessionId& session_id, DurationNs ttl_ns, MonoMs now_ms) {
  if (ttl_ns <= 0) return;
  MonoMs ttl_ms = (ttl_ns + kNsPerMs - 1) / kNsPerMs;
  MonoMs at_ms = now_ms + ttl_ms * ttl_multiplier_;
  auto it = deadlines_.find(session_id);
  if (it != deadlines_.end()) {
    if (it->second == at_ms) return;  // renewed within the same millisecond
    queue_.erase({it->second, it->first.view()});
    it->second = at_ms;
  } else {
    it = deadlines_.emplace(session_id, at_ms).first;
  }
  queue_.insert({at_ms, it->first.view()});
}

void SessionTimers::Disarm(const state::SessionId& session_id) {
  auto it = deadlines_.find(session_id);
  if (it == deadlines_.end()) return;
  queue_.erase({it->second, it->first.view()});
  deadlines_.erase(it);
}

void SessionTimers::Clear() {
  queue_.clear();
  deadlines_.clear();
}

bool SessionTimers::armed(const state::SessionId& session_id) const {
  return deadlines_.find(session_id) != deadlines_.end();
}

MonoMs SessionTimers::RemainingMs(const state::SessionId& session_id, MonoMs now_ms) const {
  auto it = deadlines_.find(session_id);
  if (it == deadlines_.end()) return -1;
  return it->second - now_ms;
}

std::optional<MonoMs> SessionTimers::NextDeadline() const {
  if (queue_.empty()) return std::nullopt;
  return queue_.begin()->first;
}

std::vector<state::SessionId> SessionTimers::TakeDue(MonoMs now_ms) {
  std::vector<state::SessionId> due;
  while (!queue_.empty() && queue_.begin()->first <= now_ms) {
    due.emplace_back(std::string(queue_.begin()->second));
    queue_.erase(queue_.begin());
    deadlines_.erase(due.back());
  }
  return due;
}

}  // namespace tenure::server
