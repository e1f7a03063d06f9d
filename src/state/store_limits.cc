// Store: the live API's limits on every field of the state (Validate's
// second half) and a decoded state's room to grow (docs/snapshots.md, "What
// a restore accepts"; state/field_limits.h says why both exist).
#include "common/limits.h"
#include "state/field_limits.h"
#include "state/store.h"

namespace tenure::state {
namespace {

std::string N(std::uint64_t n) { return std::to_string(n); }

Status TooMany(std::uint64_t count, std::string_view what, std::uint64_t max) {
  return Status::InvalidArgument(N(count) + " " + std::string(what) + ", more than the " + N(max) +
                                 " allowed");
}

}  // namespace

// A lock-delay window relates to the replicated clock as Apply makes it,
// which never goes back: it ends at most kLockDelayMaxNs after the clock of
// the entry that opened it. The times people read (a waiter's since, a
// grant's times) are leaders' wall clocks, which may go back from one
// leader to the next (decision 0037): only their range is checked.
Status Store::CheckFieldLimits() const {
  TENURE_RETURN_IF_ERROR(CheckClusterMs("the replicated clock", now_ms_));
  TENURE_RETURN_IF_ERROR(CheckUnixMs("the last entry's wall clock", wall_ms_));
  for (const auto& [key, entry] : kv_) {
    TENURE_RETURN_IF_ERROR(CheckKeySize("key", key));
    TENURE_RETURN_IF_ERROR(CheckValueSize(key, entry.value));
    // Every key present was created, at version 1 (decision 0048).
    if (entry.version == 0) {
      return Status::InvalidArgument("key " + QuoteCut(key) +
                                     ": version 0 is below 1, the version a key is created with");
    }
  }
  for (const auto& [key, index] : tombstones_) {
    TENURE_RETURN_IF_ERROR(CheckKeySize("tombstone", key));
  }
  if (sessions_.size() > limits::kSessionsMax) {
    return TooMany(sessions_.size(), "sessions", limits::kSessionsMax);
  }
  for (const Session& session : sessions_) TENURE_RETURN_IF_ERROR(CheckSessionFields(session));
  constexpr DurationMs kWindowMaxMs = limits::kLockDelayMaxNs / kNsPerMs;
  for (const auto& [key, until] : lock_delays_) {
    TENURE_RETURN_IF_ERROR(CheckKeySize("lock-delay window of key", key));
    const std::string what = "lock-delay window of key " + QuoteCut(key) + ": end";
    TENURE_RETURN_IF_ERROR(CheckClusterMs(what, until));
    if (until > now_ms_ + kWindowMaxMs) {
      return Status::InvalidArgument(what + " " + std::to_string(until.ms()) +
                                     " ms is more than 60s after the replicated clock (" +
                                     std::to_string(now_ms_.ms()) + " ms)");
    }
  }
  for (const auto& [key, queue] : queues_) {
    TENURE_RETURN_IF_ERROR(CheckKeySize("queue of key", key));
    for (const QueueWaiter& waiter : queue) {
      TENURE_RETURN_IF_ERROR(CheckValueSize(key, waiter.value));
      const std::string what = "queue of key " + QuoteCut(key) + ": waiter " +
                               QuoteCut(waiter.session.view()) + " since";
      TENURE_RETURN_IF_ERROR(CheckUnixMs(what, waiter.since));
    }
  }
  for (const auto& [path, node] : zk_nodes_) {
    TENURE_RETURN_IF_ERROR(CheckKeySize("ZooKeeper node record", path));
    const std::string what = "ZooKeeper node record " + QuoteCut(path);
    TENURE_RETURN_IF_ERROR(CheckUnixMs(what + ": ctime", node.ctime));
    TENURE_RETURN_IF_ERROR(CheckUnixMs(what + ": mtime", node.mtime));
  }
  TENURE_RETURN_IF_ERROR(history_.CheckTimes());
  return acl_.CheckFieldLimits();
}

Status Store::CheckGrowthRoom() const {
  auto above = [](const std::string& what, std::uint64_t value) {
    return Status::InvalidArgument(what + " " + N(value) + " is above " +
                                   N(limits::kSnapshotIndexMax) +
                                   " (2^53 - 1), the largest a snapshot may carry");
  };
  // Validate bounds every other index by the applied index.
  if (applied_index_.value() > limits::kSnapshotIndexMax) {
    return above("applied index", applied_index_.value());
  }
  for (const auto& [key, entry] : kv_) {
    if (entry.lock_index > limits::kSnapshotIndexMax) {
      return above("key " + QuoteCut(key) + ": LockIndex", entry.lock_index);
    }
    if (entry.version > limits::kSnapshotIndexMax) {
      return above("key " + QuoteCut(key) + ": version", entry.version);
    }
  }
  return Status::Ok();
}

}  // namespace tenure::state
