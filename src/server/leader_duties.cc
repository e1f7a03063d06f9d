#include "server/leader_duties.h"

#include <algorithm>
#include <variant>

#include "common/consul_texts.h"
#include "common/strings.h"
#include "state/acquire_rule.h"

namespace tenure::server {

SessionChange SessionChangeOf(const state::ApplyResult& applied) {
  SessionChange change;
  change.created_id = applied.session_created;
  change.created_ttl_ns = applied.session_created_ttl_ns;
  change.destroyed_id = applied.session_destroyed;
  return change;
}

bool TouchesSessions(const state::CommandBody& body) {
  return std::holds_alternative<state::SessionCreate>(body) ||
         std::holds_alternative<state::SessionDestroy>(body);
}

LeaderDuties::LeaderDuties(int ttl_multiplier, std::uint64_t timers_hash_key)
    : timers_(ttl_multiplier, timers_hash_key) {}

std::size_t LeaderDuties::OnBecameLeader(MonoMs now_ms, const state::Store& store) {
  std::size_t armed = OnBecameLeader(now_ms, store.ListSessions());
  lock_delays_.OnBecameLeader(store, now_ms);
  return armed;
}

std::size_t LeaderDuties::OnBecameLeader(MonoMs now_ms,
                                         const std::vector<const state::Session*>& sessions) {
  OnLostLeadership();
  leading_ = true;
  std::size_t armed = 0;
  for (const state::Session* session : sessions) {
    if (session->ttl_ns <= 0) continue;
    timers_.Arm(session->id, session->ttl_ns, now_ms);
    ++armed;
  }
  return armed;
}

void LeaderDuties::OnLostLeadership() {
  leading_ = false;
  cluster_clock_.Reset();
  timers_.Clear();
  lock_delays_.Clear();
  expiring_.clear();
  retries_.clear();
  queue_grants_.clear();
  queue_grant_at_.clear();
}

void LeaderDuties::OnCommitted(const SessionChange& change, MonoMs now_ms) {
  if (!change.created_id.empty())
    OnSessionCreated(change.created_id, change.created_ttl_ns, now_ms);
  if (!change.destroyed_id.empty()) OnSessionDestroyed(change.destroyed_id);
}

void LeaderDuties::OnSessionCreated(const state::SessionId& session_id, DurationNs ttl_ns,
                                    MonoMs now_ms) {
  if (leading_) timers_.Arm(session_id, ttl_ns, now_ms);
}

void LeaderDuties::OnSessionDestroyed(const state::SessionId& session_id) {
  timers_.Disarm(session_id);
  ExpiryResolved(session_id);
}

Status LeaderDuties::Renew(const state::SessionId& session_id, const state::Session* session,
                           MonoMs now_ms) {
  TENURE_RETURN_IF_ERROR(ConfirmRenewal(session_id, session));
  timers_.Arm(session->id, session->ttl_ns, now_ms);
  return Status::Ok();
}

Status LeaderDuties::ConfirmRenewal(const state::SessionId& session_id,
                                    const state::Session* session) const {
  if (!leading_) return consul::NoClusterLeader();
  if (session == nullptr || IsExpiring(session_id)) {
    // Consul's text, which clients match on.
    return consul::SessionNotFound(session_id.view());
  }
  return Status::Ok();
}

std::vector<state::SessionId> LeaderDuties::DueExpiries(MonoMs now_ms) {
  std::vector<std::pair<MonoMs, state::SessionId>> due;
  // TakeDue disarms; the deadline itself is only needed to merge the orders.
  while (std::optional<MonoMs> next = timers_.NextDeadline()) {
    if (*next > now_ms) break;
    for (state::SessionId& id : timers_.TakeDue(*next)) due.emplace_back(*next, std::move(id));
  }
  while (!retries_.empty() && retries_.begin()->first <= now_ms) {
    due.push_back(*retries_.begin());
    retries_.erase(retries_.begin());
  }
  std::stable_sort(due.begin(), due.end());
  std::vector<state::SessionId> ids;
  ids.reserve(due.size());
  for (auto& [at_ms, id] : due) {
    expiring_.insert(id);
    ids.push_back(std::move(id));
  }
  return ids;
}

void LeaderDuties::ExpiryResolved(const state::SessionId& session_id) {
  auto it = expiring_.find(session_id);
  if (it == expiring_.end()) return;
  expiring_.erase(it);
  for (auto retry = retries_.begin(); retry != retries_.end(); ++retry) {
    if (retry->second == session_id) {
      retries_.erase(retry);
      break;
    }
  }
}

void LeaderDuties::ExpiryFailed(const state::SessionId& session_id, MonoMs now_ms) {
  if (!leading_ || !IsExpiring(session_id)) return;
  retries_.insert({now_ms + kExpiryRetryMs, session_id});
}

bool LeaderDuties::IsExpiring(const state::SessionId& session_id) const {
  return expiring_.find(session_id) != expiring_.end();
}

std::optional<MonoMs> LeaderDuties::NextDeadline() const {
  std::optional<MonoMs> next = timers_.NextDeadline();
  if (!retries_.empty() && (!next || retries_.begin()->first < *next)) {
    next = retries_.begin()->first;
  }
  if (!queue_grants_.empty() && (!next || queue_grants_.begin()->first < *next)) {
    next = queue_grants_.begin()->first;
  }
  return next;
}

void LeaderDuties::SetQueueGrant(const std::string& key, MonoMs at_ms) {
  if (auto it = queue_grant_at_.find(key); it != queue_grant_at_.end()) {
    queue_grants_.erase({it->second, key});
    queue_grant_at_.erase(it);
  }
  if (at_ms < MonoMs()) return;
  queue_grants_.insert({at_ms, key});
  queue_grant_at_.emplace(key, at_ms);
}

std::vector<std::string> LeaderDuties::QueueKeysToCheck(const state::Store& store,
                                                        const state::Changes& changes) const {
  std::vector<std::string> keys;
  // The common case: no queue anywhere, nothing pending; no work per apply.
  if (store.queues().empty() && queue_grants_pending() == 0) return keys;
  if (changes.everything) {
    for (const auto& [key, waiters] : store.queues()) keys.push_back(key);
    return keys;
  }
  keys = changes.queues;
  keys.insert(keys.end(), changes.keys.begin(), changes.keys.end());
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  // Only keys with waiters, or any while a grant is pending, concern the duty.
  if (queue_grants_pending() == 0) {
    std::erase_if(keys,
                  [&store](const std::string& key) { return store.FindQueue(key) == nullptr; });
  }
  return keys;
}

void LeaderDuties::CheckQueue(const state::Store& store, const std::string& key, MonoMs now_ms,
                              DurationMs replicated_remaining_ms) {
  if (!leading_) return;
  const state::KvEntry* entry = store.FindKv(key);
  const bool free = entry == nullptr || entry->session.empty();
  if (store.FindQueue(key) == nullptr || !free) {
    SetQueueGrant(key, MonoMs(-1));  // nothing to grant (any more)
    return;
  }
  // Free with waiters: only lock-delay keeps the head waiting. One
  // millisecond past the window, as the Store's window ends after its last
  // millisecond.
  MonoMs at_ms = now_ms + std::max<DurationMs>(replicated_remaining_ms, 0);
  at_ms = std::max(at_ms, lock_delays_.Until(key));
  SetQueueGrant(key, at_ms);
}

std::vector<std::string> LeaderDuties::DueQueueGrants(MonoMs now_ms) {
  std::vector<std::string> due;
  while (!queue_grants_.empty() && queue_grants_.begin()->first <= now_ms) {
    due.push_back(queue_grants_.begin()->second);
    queue_grant_at_.erase(queue_grants_.begin()->second);
    queue_grants_.erase(queue_grants_.begin());
  }
  return due;
}

void LeaderDuties::QueueGrantFailed(const std::string& key, MonoMs now_ms) {
  if (leading_) SetQueueGrant(key, now_ms + kQueueGrantRetryMs);
}

bool LeaderDuties::HoldQueueGrant(state::CommandBody* body, MonoMs now_ms) const {
  auto hold = [&](auto* command) {
    if (command == nullptr || !lock_delays_.Blocks(command->key, now_ms)) return false;
    command->hold = true;
    return true;
  };
  return hold(std::get_if<state::KvEnqueue>(body)) || hold(std::get_if<state::KvDequeue>(body));
}

std::optional<state::ApplyResult> LeaderDuties::RefuseBeforeProposing(
    const state::CommandBody& body, MonoMs now_ms,
    const KeyPredicate& replicated_lock_delay) const {
  state::ApplyResult refused;
  refused.ok = false;
  // The Store's own rule (state/acquire_rule.h) with what the leader knows
  // before proposing: the lock-delay windows it inherited (decision 0010),
  // and sessions whose expiry is under way (no grant to a session that has
  // already expired, which etcd's leases once allowed:
  // github.com/etcd-io/etcd/issues/11456).
  auto lock_delayed = [&](std::string_view key) {
    return lock_delays_.Blocks(key, now_ms) ||
           (replicated_lock_delay && replicated_lock_delay(key));
  };
  auto expiring = [&](const state::SessionId& id) { return IsExpiring(id); };
  if (const auto* acquire = std::get_if<state::KvAcquire>(&body)) {
    std::optional<state::AcquireRefusal> early =
        state::RefuseAcquire(acquire->key, acquire->session, lock_delayed, expiring);
    if (!early) return std::nullopt;
    refused.lock_delayed = early->lock_delayed;
    refused.status = early->error;
    return refused;
  }
  if (const auto* enqueue = std::get_if<state::KvEnqueue>(&body)) {
    // A fair acquire (decision 0027) waits out lock-delay in the queue
    // instead of being refused, but an expiring session must not join a
    // queue (nor take a free key): the Store's answer once its destroy
    // commits.
    if (enqueue->session.empty() || !expiring(enqueue->session)) return std::nullopt;
    refused.status = consul::AcquireInvalidSession(enqueue->session.view());
    return refused;
  }
  if (const auto* txn = std::get_if<state::Txn>(&body)) {
    state::RefuseLockDelayedTxnOps(*txn, lock_delayed, &refused.txn);
    if (!refused.txn.errors.empty()) return refused;
    for (std::size_t i = 0; i < txn->ops.size(); ++i) {
      const state::TxnOp& op = txn->ops[i];
      if (op.verb == state::TxnVerb::kLock && !op.session.empty() && expiring(op.session)) {
        refused.txn.errors.push_back(
            {i, std::string(consul::AcquireInvalidSession(op.session.view()).message())});
        return refused;
      }
    }
  }
  return std::nullopt;
}

}  // namespace tenure::server
