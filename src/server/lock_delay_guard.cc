#include "server/lock_delay_guard.h"

namespace tenure::server {

void LockDelayGuard::OnBecameLeader(const state::Store& store, MonoMs now_mono_ms) {
  until_.clear();
  for (const auto& [key, end_ms] : store.lock_delays()) {
    const DurationMs remaining_ms = end_ms - store.now_ms();  // on the leader's own clock next
    if (remaining_ms > 0) until_.emplace(key, now_mono_ms + remaining_ms);
  }
}

bool LockDelayGuard::Blocks(std::string_view key, MonoMs now_mono_ms) const {
  auto it = until_.find(key);
  return it != until_.end() && now_mono_ms < it->second;
}

MonoMs LockDelayGuard::Until(std::string_view key) const {
  auto it = until_.find(key);
  return it == until_.end() ? MonoMs() : it->second;
}

}  // namespace tenure::server
