// LeaderDuties: what the leader does for sessions besides applying the log,
// as a pure state machine with time as an input.
//
//  - a TTL deadline per session (SessionTimers): armed when a create
//    commits, pushed by renewals answered from memory, and re-armed at a
//    full TTL x multiplier for every session when this node becomes leader,
//    since it cannot know when they were last renewed;
//  - expiry: a deadline that passes makes the session "expiring": it can no
//    longer be renewed or acquire anything (etcd once let an expired lease
//    work on: github.com/etcd-io/etcd/issues/11456) until the
//    SessionDestroy{expired} the caller proposes commits, and a failed
//    proposal is retried a second later while this node still leads;
//  - inherited lock-delay windows (LockDelayGuard, decision 0010), counted
//    again on this node's monotonic clock from its election;
//  - fair-acquire queues waiting out a lock-delay window (decision 0027):
//    once it has passed, the caller proposes KvQueueGrant for the key;
//  - the replicated clock's stamps (ClusterClock, decision 0037), continued
//    from the Store's clock on this node's monotonic clock.
//
// Leader-only soft state, never replicated; forgotten when leadership ends.
// Nothing here reads a clock, owns a timer or proposes: every call takes the
// current monotonic time and returns what to do. Server drives it with one
// asio timer set to NextDeadline(); the raft simulation drives the same class
// with simulated, skewed clocks (tests/raft/sim). Loop thread only.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"
#include "common/types.h"
#include "server/cluster_clock.h"
#include "server/lock_delay_guard.h"
#include "server/session_timers.h"
#include "state/command.h"
#include "state/store.h"

namespace tenure::server {

// What a command changes in the timers once it commits, worked out before
// it is proposed (the body is moved into the command).
struct SessionChange {
  state::SessionId created_id;  // a SessionCreate's session, with its TTL
  DurationNs created_ttl_ns = 0;
  state::SessionId destroyed_id;  // a SessionDestroy's session
  bool empty() const { return created_id.empty() && destroyed_id.empty(); }
};
// What an applied command did to the sessions table (state::ApplyResult).
SessionChange SessionChangeOf(const state::ApplyResult& applied);
// Whether a command can change the sessions table at all: the others need
// no look at their result.
bool TouchesSessions(const state::CommandBody& body);

class LeaderDuties {
 public:
  // How long a failed SessionDestroy{expired} waits before it is proposed again.
  static constexpr DurationMs kExpiryRetryMs = 1000;

  // Sessions expire between TTL and TTL x multiplier after the last renewal.
  // REQUIRES: ttl_multiplier >= 1.
  // `timers_hash_key`: see SessionTimers.
  explicit LeaderDuties(int ttl_multiplier, std::uint64_t timers_hash_key = 0);

  // --- Leadership -------------------------------------------------------
  // Call once the Store holds every committed entry (after the new leader's
  // barrier). Arms every TTL session at a full TTL x multiplier from now:
  // expiry can only move later than any earlier leader promised, never
  // earlier. Takes over the Store's lock-delay windows. Returns how many
  // sessions were armed.
  std::size_t OnBecameLeader(MonoMs now_ms, const state::Store& store);
  // The same for sessions only, with no lock-delay windows (unit tests).
  std::size_t OnBecameLeader(MonoMs now_ms, const std::vector<const state::Session*>& sessions);
  void OnLostLeadership();
  bool leading() const { return leading_; }

  // --- The replicated clock (decision 0037) ------------------------------
  // The replicated clock now, by this leader's measure: what a command
  // proposed now in raft term `term` is stamped with (Command::now_ms).
  // Never below the Store's clock, never below an earlier answer in the term.
  ClusterMs ClusterNow(ClusterMs store_clock, MonoMs now_ms, std::uint64_t term) {
    return cluster_clock_.Stamp(store_clock, now_ms, term);
  }

  // --- Sessions ---------------------------------------------------------
  // A proposal of this node committed: arms a created session (when
  // leading), forgets a destroyed one.
  void OnCommitted(const SessionChange& change, MonoMs now_ms);
  void OnSessionCreated(const state::SessionId& session_id, DurationNs ttl_ns, MonoMs now_ms);
  void OnSessionDestroyed(const state::SessionId& session_id);
  // Answers a renewal from memory. `session` is the Store's (null if none).
  // kNotLeader unless leading; kNotFound (Consul's text) if the session does
  // not exist or is expiring; otherwise its deadline moves to a full
  // TTL x multiplier from now.
  Status Renew(const state::SessionId& session_id, const state::Session* session, MonoMs now_ms);
  // The second half of a renewal: a barrier proposed after Renew has
  // committed, so this node still led a majority after the renewal arrived
  // and no successor can have armed the session before then (decision
  // 0011). The renewal stands unless the session is gone or expiring
  // meanwhile, with Renew's answers; nothing is re-armed.
  Status ConfirmRenewal(const state::SessionId& session_id, const state::Session* session) const;

  // --- Expiry -----------------------------------------------------------
  // Sessions whose deadline (or retry) is at or before now, earliest first.
  // They are expiring from now on: propose SessionDestroy{expired} for each
  // and report the outcome with ExpiryResolved or ExpiryFailed.
  std::vector<state::SessionId> DueExpiries(MonoMs now_ms);
  // The SessionDestroy committed, or this node will not propose it (the
  // session is gone, leadership was lost): the session is no longer expiring.
  void ExpiryResolved(const state::SessionId& session_id);
  // The proposal failed while this node still leads: the session stays
  // expiring and comes back from DueExpiries kExpiryRetryMs from now.
  void ExpiryFailed(const state::SessionId& session_id, MonoMs now_ms);
  bool IsExpiring(const state::SessionId& session_id) const;
  // The earliest time DueExpiries has something to return; nullopt if never.
  std::optional<MonoMs> NextDeadline() const;

  // --- Acquires ---------------------------------------------------------
  // Acquires (KV or txn lock) this leader refuses before proposing, with the
  // Store's own answers, checked in the Store's order:
  //  - a key in an inherited lock-delay window by this leader's clock, or
  //    in a replicated one (`replicated_lock_delay`, the Store's windows by
  //    the stamp the command would carry): ok=false with lock_delayed for a
  //    KV acquire; for a txn, a rolled-back transaction, `failed to lock key
  //    "<k>" due to lock delay`. Consul checks lock-delay before even the
  //    session, so this must come before the missing-session refusal;
  //  - an expiring session: the answer the Store will give once the
  //    SessionDestroy commits, `invalid session "<id>"` as an error for a KV
  //    acquire, a rolled-back transaction naming the op for a txn.
  // A fair acquire (KvEnqueue, decision 0027) is refused only for an
  // expiring session: lock-delay is what its queue waits out.
  // nullopt: propose it.
  using KeyPredicate = std::function<bool(std::string_view key)>;
  std::optional<state::ApplyResult> RefuseBeforeProposing(
      const state::CommandBody& body, MonoMs now_ms,
      const KeyPredicate& replicated_lock_delay = nullptr) const;

  // --- Queue grants (decision 0027) --------------------------------------
  // How long a failed KvQueueGrant waits before it is proposed again.
  static constexpr DurationMs kQueueGrantRetryMs = 1000;
  // After applies that touched `key`: if the Store shows it free with
  // waiters, a KvQueueGrant is due once its lock-delay window has passed,
  // both in replicated time (`replicated_remaining_ms`, the Store's window
  // end minus the wall clock the command would be stamped with; <= 0 when
  // none) and by this leader's inherited windows. Otherwise nothing is due.
  void CheckQueue(const state::Store& store, const std::string& key, MonoMs now_ms,
                  DurationMs replicated_remaining_ms);
  // The keys whose queue CheckQueue should look at after an apply with
  // these changes: every queued key after a restore, otherwise the touched
  // keys (sorted, once each) that have waiters or while a grant is pending.
  // Empty, without work, while no key has a queue and nothing is pending.
  std::vector<std::string> QueueKeysToCheck(const state::Store& store,
                                            const state::Changes& changes) const;
  // Keys whose grant is due at or before now: propose KvQueueGrant for each
  // (the Store grants only if the key is still free, out of lock-delay and
  // has waiters) and call QueueGrantFailed when the proposal fails.
  std::vector<std::string> DueQueueGrants(MonoMs now_ms);
  void QueueGrantFailed(const std::string& key, MonoMs now_ms);
  std::size_t queue_grants_pending() const { return queue_grant_at_.size(); }
  // Before proposing: a KvEnqueue or KvDequeue of a key this leader's
  // inherited window still holds (LockDelayGuard) gets `hold`, so its entry
  // grants nothing even where the replicated clock says the window has
  // passed; CheckQueue then times the KvQueueGrant past the guard. Returns
  // whether it stamped the command.
  bool HoldQueueGrant(state::CommandBody* body, MonoMs now_ms) const;

  const SessionTimers& timers() const { return timers_; }
  const LockDelayGuard& lock_delays() const { return lock_delays_; }

 private:
  bool leading_ = false;
  SessionTimers timers_;
  LockDelayGuard lock_delays_;
  ClusterClock cluster_clock_;
  std::set<state::SessionId> expiring_;
  // (retry time, id) for expiries whose proposal failed; ids also in expiring_.
  std::set<std::pair<MonoMs, state::SessionId>> retries_;
  // Keys whose KvQueueGrant is due, by time, and the time of each key.
  std::set<std::pair<MonoMs, std::string>> queue_grants_;
  std::map<std::string, MonoMs, std::less<>> queue_grant_at_;
  void SetQueueGrant(const std::string& key, MonoMs at_ms);
};

}  // namespace tenure::server
