// When a command supervising a child under a lease (tenure run, tenure
// lock) checks the lease again, and when a stopped child gets SIGKILL.
#pragma once

#include <algorithm>
#include <optional>

#include "client/lease.h"
#include "common/types.h"

namespace tenure::cli {

// At most a second between checks: asio's timers run on CLOCK_MONOTONIC,
// which stops while the machine is suspended, and the lease clock does not.
inline constexpr DurationMs kLeaseCheckMs = 1'000;

// The delay before the next check of `lease` (re-computed each time:
// renewals only move TerminateAtMs() later), or nullopt once it can no
// longer be proven: not held, or past its TerminateAtMs().
inline std::optional<DurationMs> NextLeaseCheckMs(const client::Lease& lease, MonoMs now) {
  if (!lease.held() || now >= lease.TerminateAtMs()) return std::nullopt;
  return std::min<DurationMs>(lease.TerminateAtMs() - now, kLeaseCheckMs);
}

// A child sent SIGTERM at `now` gets SIGKILL after `grace_ms`, never later
// than the lease's KillAtMs() while it is held.
inline MonoMs KillDeadlineMs(const client::Lease& lease, MonoMs now, DurationMs grace_ms) {
  const MonoMs kill_at = now + grace_ms;
  return lease.held() ? std::min(kill_at, lease.KillAtMs()) : kill_at;
}

}  // namespace tenure::cli
