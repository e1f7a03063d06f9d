// Server: leader duties (session timers, fair-queue grants, expiry,
// checkpoints and tombstone reaping) scheduled on the loop.
#include <fmt/core.h>

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <optional>

#include "common/assert.h"
#include "common/log.h"
#include "common/strings.h"
#include "server/server.h"
#include "server/server_timers.h"

namespace tenure::server {

std::optional<DurationMs> Server::SessionTtlRemainingMs(const state::SessionId& session_id) const {
  if (!leader_ready_ || !IsLeader()) return std::nullopt;
  DurationMs remaining = duties_.timers().RemainingMs(session_id, clock_.NowMonoMs());
  if (remaining < 0) return std::nullopt;  // not armed (no TTL), or due now
  return remaining;
}

// A new leader cannot know when sessions were last renewed: it gives every
// TTL session a full TTL x multiplier from now, which can only make expiry
// later, never earlier than promised.
void Server::OnLeadership(bool is_leader) {
  if (metrics_.enabled) ++(is_leader ? metrics_.leadership_gained : metrics_.leadership_lost);
  if (!is_leader) {
    leader_ready_ = false;
    duties_.OnLostLeadership();
    housekeeping_->token_expiry.cancel();
    // Parked fair acquires are answered 500: their clients send again to
    // the new leader and keep their places (decision 0027).
    queue_parking_->Flush();
    log::Info("server", "lost leadership; session timers stopped",
              {log::Num("node_id", static_cast<unsigned long long>(NodeId()))});
    return;
  }
  StartLeaderDuties();
}

// Also after a snapshot restore, which replaces the sessions but is not a
// leadership change (tenure_raft_leadership_changes_total does not move).
void Server::StartLeaderDuties() {
  leader_ready_ = true;
  std::size_t armed = duties_.OnBecameLeader(clock_.NowMonoMs(), store_);
  // Queues inherited free (their holder ended in lock-delay): granted once
  // the window has passed by this leader's measure too.
  for (const auto& [key, waiters] : store_.queues()) CheckQueue(key, 0);
  // Their requests were parked on the old leader: each client asks this one
  // again within the grace, or its waiter leaves.
  queue_parking_->StartGraceForAll(store_);
  ScheduleDuties();
  reap_mark_ = store_.kv_index();
  log::Info("server", "leader; armed " + std::to_string(armed) + " session timers",
            {log::Num("node_id", static_cast<unsigned long long>(NodeId())),
             log::Num("session_timers", static_cast<unsigned long long>(armed))});
  // Followers find where to forward through this record (decision 0008).
  WriteSelfRecord();
  EnsureAclSetup();
  ScheduleTokenExpiry();
}

// One timer for every session: set to the earliest deadline. Renewals only
// push deadlines later, so it usually stays as it is and fires early;
// RunDuties then sets it for the new earliest deadline.
void Server::ScheduleDuties() {
  std::optional<MonoMs> next = duties_.NextDeadline();
  MonoMs& armed_for_ms = housekeeping_->duties_armed_for_ms;
  if (!next || (armed_for_ms != MonoMs(-1) && armed_for_ms <= *next)) return;
  armed_for_ms = *next;
  housekeeping_->duties.expires_after(std::chrono::milliseconds(*next - clock_.NowMonoMs()));
  std::weak_ptr<bool> alive = alive_;
  housekeeping_->duties.async_wait([this, alive](const boost::system::error_code& ec) {
    if (ec || alive.expired() || !*alive.lock()) return;  // cancelled: re-armed or stopped
    housekeeping_->duties_armed_for_ms = MonoMs(-1);
    RunDuties();
  });
}

void Server::RunDuties() {
  for (const state::SessionId& session_id : duties_.DueExpiries(clock_.NowMonoMs())) {
    ExpireSession(session_id);
  }
  for (const std::string& key : duties_.DueQueueGrants(clock_.NowMonoMs())) ProposeQueueGrant(key);
  ScheduleDuties();
}

// Leader: a key that applies left free with waiters gets a KvQueueGrant
// once its lock-delay window has passed (decision 0027). Any later apply on
// the key that settles its queue first (a release, an enqueue) makes the
// grant a no-op.
void Server::CheckQueue(const std::string& key, DurationMs floor_ms) {
  const MonoMs now_mono_ms = clock_.NowMonoMs();
  const ClusterMs until = store_.LockDelayUntil(key);
  const DurationMs remaining =
      until == ClusterMs()
          ? 0
          : std::max<DurationMs>(
                until - duties_.ClusterNow(store_.now_ms(), now_mono_ms, node_->term()), 0);
  duties_.CheckQueue(store_, key, now_mono_ms, std::max(remaining, floor_ms));
}

void Server::CheckQueues(const state::Changes& changes) {
  if (!leader_ready_ || !IsLeader()) return;
  for (const std::string& key : duties_.QueueKeysToCheck(store_, changes)) CheckQueue(key, 0);
  ScheduleDuties();
}

// A waiter whose client stopped asking (QueueParking's grace passed): it
// leaves the queue. The dequeue's outcome answers nobody.
void Server::LeaveUnattendedQueue(const std::string& key, const state::SessionId& session) {
  if (!IsLeader()) return;
  log::Info("server",
            "session " + std::string(session.view()) + " leaves the queue of key " + key +
                ": no request of it waited for " +
                std::to_string(QueueParking::kUnattendedGraceMs / 1000) + " s",
            {{"key", key}, {"session", std::string(session.view())}});
  Propose(state::KvDequeue{key, session}, [](Result<state::ApplyResult>) {});
}

void Server::ProposeQueueGrant(const std::string& key) {
  if (!IsLeader() || store_.FindQueue(key) == nullptr) return;
  log::Info("server", "granting key " + key + " to the head of its queue (lock-delay passed)",
            {{"key", key}});
  std::weak_ptr<bool> alive = alive_;
  Propose(state::KvQueueGrant{key}, [this, alive, key](Result<state::ApplyResult> result) {
    if (alive.expired() || !*alive.lock() || !IsLeader()) return;
    if (!result.ok()) {
      duties_.QueueGrantFailed(key, clock_.NowMonoMs());
    } else {
      // Granted, or the window had not passed by the stamp (clock steps):
      // look again, never sooner than a few milliseconds.
      CheckQueue(key, kQueueGrantFloorMs);
    }
    ScheduleDuties();
  });
}

// The session is already expiring (DueExpiries): no renewal or acquire
// passes while its SessionDestroy is on its way.
void Server::ExpireSession(const state::SessionId& session_id) {
  if (!IsLeader() || store_.FindSession(session_id) == nullptr) {
    duties_.ExpiryResolved(session_id);
    return;
  }
  log::Info("server", "session " + session_id.str() + " expired (TTL passed without renewal)",
            {{"session", session_id.str()}, {"cause", "ttl"}});
  std::weak_ptr<bool> alive = alive_;
  Propose(state::SessionDestroy{session_id, state::DestroyReason::kExpired},
          [this, alive, session_id](Result<state::ApplyResult> result) {
            if (alive.expired() || !*alive.lock()) return;
            if (result.ok() || !IsLeader()) {
              duties_.ExpiryResolved(session_id);
              return;
            }
            // Still leader but the entry did not commit: try again shortly,
            // keeping the session marked as expiring meanwhile.
            duties_.ExpiryFailed(session_id, clock_.NowMonoMs());
            ScheduleDuties();
          });
}

// Replicas compared at run time (state/store.h, Checkpoint): the leader's
// record of the previous checkpoint travels in the next one.
void Server::ScheduleCheckpoint() {
  if (options_.checkpoint_period_ms <= 0) return;
  housekeeping_->checkpoint.expires_after(std::chrono::milliseconds(options_.checkpoint_period_ms));
  std::weak_ptr<bool> alive = alive_;
  housekeeping_->checkpoint.async_wait([this, alive](const boost::system::error_code& ec) {
    if (ec || alive.expired() || !*alive.lock()) return;
    const state::Store::CheckpointRecord& last = store_.checkpoint();
    if (IsLeader() && leader_ready_ && !diverged_ && store_.CheckpointDue()) {
      Propose(state::Checkpoint{last.index, last.digest}, [](Result<state::ApplyResult>) {});
    }
    ScheduleCheckpoint();
  });
}

// Tombstones keep prefix indexes from going backwards after deletes; they
// only need to outlive the blocking queries that could miss the delete, and
// Store::PrefixIndex never reports less than the reap point anyway.
void Server::ScheduleReap() {
  housekeeping_->reap.expires_after(std::chrono::milliseconds(options_.tombstone_reap_period_ms));
  std::weak_ptr<bool> alive = alive_;
  housekeeping_->reap.async_wait([this, alive](const boost::system::error_code& ec) {
    if (ec || alive.expired() || !*alive.lock()) return;
    if (IsLeader() && leader_ready_ && store_.tombstone_count() > 0 && !reap_mark_.is_none()) {
      Propose(state::ReapTombstones{reap_mark_}, [](Result<state::ApplyResult>) {});
    }
    reap_mark_ = store_.kv_index();
    ScheduleReap();
  });
}

}  // namespace tenure::server
