// LockDelayGuard: a new leader's own measure of the lock-delay windows it
// inherits (decision 0010). Leader-only soft state; pure (time is an input).
//
// The Store judges a window against the replicated clock. Since decision
// 0037 that clock is stamped from the leaders' monotonic clocks, so a new
// leader whose wall clock runs ahead can no longer end inherited windows
// early; the guard stays as a second, independent measure (it was the fix
// when stamps were wall-clock times): when a server becomes leader it takes
// each window's remaining length as the Store sees it (end minus the
// replicated clock, which is at most the old leader's time of its last
// entry, so the remainder is never understated) and counts it again from
// its election on its own monotonic clock. Until then it refuses acquires
// of those keys itself, before proposing, with the Store's own answers.
// Windows can only get longer, never shorter.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "common/types.h"
#include "state/store.h"

namespace tenure::server {

class LockDelayGuard {
 public:
  // Takes over the Store's windows at election time `now_mono_ms`.
  void OnBecameLeader(const state::Store& store, MonoMs now_mono_ms);
  void Clear() { until_.clear(); }

  // True while `key` is in an inherited window by this leader's clock.
  bool Blocks(std::string_view key, MonoMs now_mono_ms) const;
  // When `key`'s inherited window ends on this leader's clock; 0 if none.
  MonoMs Until(std::string_view key) const;
  std::size_t size() const { return until_.size(); }

 private:
  std::map<std::string, MonoMs, std::less<>> until_;
};

}  // namespace tenure::server
