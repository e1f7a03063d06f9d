#include "checkers.h"

#include <fmt/core.h>

#include <algorithm>
#include <variant>

#include "common/limits.h"
#include "state/numbered_session.h"
#include "unit/common/type_printers.h"

namespace tenure::sim {
namespace {

DurationMs CeilMs(DurationNs ns) { return (ns + kNsPerMs - 1) / kNsPerMs; }

std::string EncodedKey(const state::Command& command) {
  std::string bytes;
  state::EncodeCommand(command, &bytes);
  return bytes;
}

// Sessions the command asks to give a lock to.
std::vector<state::SessionId> LockingSessions(const state::CommandBody& body) {
  std::vector<state::SessionId> sessions;
  if (const auto* acquire = std::get_if<state::KvAcquire>(&body)) {
    sessions.push_back(acquire->session);
  } else if (const auto* txn = std::get_if<state::Txn>(&body)) {
    for (const state::TxnOp& op : txn->ops) {
      if (op.verb == state::TxnVerb::kLock) sessions.push_back(op.session);
    }
  }
  return sessions;
}

}  // namespace

Checkers::Checkers(CheckerOptions options, History* history)
    : options_(std::move(options)), history_(history) {}

void Checkers::Fail(RealMs now, std::string what) {
  if (failed()) return;
  failure_ = std::move(what);
  history_->Add(now, "VIOLATION " + failure_);
}

// The least real time in which a monotonic clock within the drift bound
// can count ttl_ms (less one ms for the clocks' rounding).
DurationMs Checkers::RealMsAtLeast(DurationMs ttl_ms) const {
  return ttl_ms * 1'000'000 / (1'000'000 + options_.drift_ppm_max) - 1;
}

// How long a leader must wait on its own clock after arming a session:
// TTL x m, or for an etcd lease TTL x (1 + rho), rho = 1% (decision 0048).
// Written here from the rule, not taken from SessionTimers.
DurationMs Checkers::DueMs(const state::SessionId& session, DurationMs ttl_ms) const {
  if (!state::IsNumberedSession(session)) return ttl_ms * options_.ttl_multiplier;
  return ttl_ms + (ttl_ms + 99) / 100;
}

std::string Checkers::WaitRule(const state::SessionId& session) const {
  if (state::IsNumberedSession(session)) return "a lease's TTL x 1.01";
  return fmt::format("TTL x {}", options_.ttl_multiplier);
}

// --- Leaders -----------------------------------------------------------------

void Checkers::OnBecameLeader(unsigned node, std::uint64_t term, MonoMs mono, RealMs now,
                              const std::vector<const state::Session*>& sessions) {
  ++leaderships_;
  last_leader_change_ = now;
  std::size_t armed = 0;
  for (const state::Session* session : sessions) {
    if (session->ttl_ns <= 0) continue;
    armed_at_[{node, term, session->id}] = mono;
    ++armed;
  }
  history_->Add(
      now, fmt::format("n{} leads term {}: {} sessions re-armed at a full TTL", node, term, armed));
}

void Checkers::OnLostLeadership(unsigned node, std::uint64_t term, RealMs now) {
  history_->Add(now, fmt::format("n{} lost leadership of term {}", node, term));
}

void Checkers::OnAcknowledged(unsigned node, std::uint64_t term, bool arms,
                              const state::Session& session, MonoMs mono, RealMs now,
                              const char* what) {
  if (session.ttl_ns <= 0) return;
  if (arms) armed_at_[{node, term, session.id}] = mono;
  SessionRecord& record = sessions_[session.id];
  record.ttl_ms = CeilMs(session.ttl_ns);
  record.last_ack = std::max(record.last_ack, now);
  if (record.expiry_committed_at && now >= *record.expiry_committed_at) {
    Fail(now, fmt::format("n{} (term {}) acknowledged the {} of session {} at t={}, after its "
                          "expiry committed at t={}",
                          node, term, what, session.id, now, *record.expiry_committed_at));
  }
}

void Checkers::OnExpiryDecided(unsigned node, std::uint64_t term,
                               const state::SessionId& session_id, MonoMs mono, RealMs now) {
  auto armed = armed_at_.find({node, term, session_id});
  auto record = sessions_.find(session_id);
  if (armed == armed_at_.end() || record == sessions_.end()) {
    Fail(now, fmt::format("n{} (term {}) expired session {}, which it never armed", node, term,
                          session_id));
    return;
  }
  DurationMs waited_ms = mono - armed->second;
  DurationMs due_ms = DueMs(session_id, record->second.ttl_ms);
  if (waited_ms < due_ms) {
    Fail(now, fmt::format("n{} (term {}) expired session {} {} ms after arming it on its own "
                          "clock; its wait ({}) is {} ms",
                          node, term, session_id, waited_ms, WaitRule(session_id), due_ms));
  }
  decided_expired_[{node, term}].try_emplace(session_id, now);
  history_->Add(now, fmt::format("n{} decides session {} expired ({} ms on its clock)", node,
                                 session_id, waited_ms));
}

void Checkers::OnProposed(unsigned node, std::uint64_t term, const state::Command& command,
                          RealMs now) {
  Proposal proposal{node, term, now, std::nullopt, {}};
  auto decided = decided_expired_.find({node, term});
  if (const auto* destroy = std::get_if<state::SessionDestroy>(&command.body)) {
    if (destroy->reason == state::DestroyReason::kExpired && decided != decided_expired_.end()) {
      auto it = decided->second.find(destroy->id);
      if (it != decided->second.end()) proposal.expiry_decided_at = it->second;
    }
  }
  if (decided != decided_expired_.end()) {
    for (const state::SessionId& session : LockingSessions(command.body)) {
      if (decided->second.count(session) != 0) proposal.locks_by_expired.push_back(session);
    }
  }
  for (const state::SessionId& session : proposal.locks_by_expired) {
    history_->Add(now, fmt::format("n{} proposes a lock for session {}, which it decided expired",
                                   node, session));
  }
  proposals_[EncodedKey(command)].push_back(std::move(proposal));
}

// --- Replicas ----------------------------------------------------------------

std::vector<std::vector<state::SessionId>> Checkers::QueuesOf(const state::Store& store) const {
  std::vector<std::vector<state::SessionId>> queues;
  for (const std::string& key : options_.keys) {
    std::vector<state::SessionId>& waiters = queues.emplace_back();
    if (const std::deque<state::QueueWaiter>* queue = store.FindQueue(key)) {
      for (const state::QueueWaiter& w : *queue) waiters.push_back(w.session);
    }
  }
  return queues;
}

Checkers::Holders Checkers::HoldersOf(const state::Store& store) const {
  Holders holders;
  for (const std::string& key : options_.keys) {
    const state::KvEntry* entry = store.FindKv(key);
    holders.emplace_back(entry ? entry->session : state::SessionId(),
                         entry ? entry->fence : LogIndex());
  }
  return holders;
}

Checkers::ReplicaView& Checkers::View(unsigned replica) {
  auto [it, inserted] = views_.try_emplace(replica);
  if (inserted) {
    it->second.holders.assign(options_.keys.size(), {state::SessionId(), LogIndex()});
    it->second.max_fence.assign(options_.keys.size(), LogIndex());
    it->second.queues.assign(options_.keys.size(), {});
  }
  return it->second;
}

const std::vector<Checkers::Proposal>* Checkers::ProposalsOf(const state::Command& command) const {
  auto it = proposals_.find(EncodedKey(command));
  return it == proposals_.end() ? nullptr : &it->second;
}

void Checkers::OnApplied(unsigned replica, const state::Command& command, const state::Store& store,
                         const std::optional<Invalidated>& invalidated, RealMs now) {
  LogIndex index = store.applied_index();
  if (Status valid = store.Validate(); !valid.ok()) {
    Fail(now, fmt::format("replica n{} broke a Store invariant at index {}: {}", replica,
                          index.value(), valid.ToString()));
    return;
  }
  bool first = committed_.find(index) == committed_.end();
  if (first) OnFirstApply(command, store, invalidated, now);
  CheckGrants(replica, command, store, first, now);
  CheckIndex(replica, store, now);
}

void Checkers::OnReplaced(unsigned replica, const state::Store& store, RealMs now) {
  ReplicaView& view = View(replica);
  view.holders = HoldersOf(store);
  for (std::size_t i = 0; i < view.holders.size(); ++i) view.max_fence[i] = view.holders[i].second;
  view.queues = QueuesOf(store);
  if (!store.applied_index().is_none()) CheckIndex(replica, store, now);
}

namespace {

std::string StagingOf(const state::Store& store) {
  const state::Store::RestoreStaging* staging = store.staging();
  if (staging == nullptr) return "nothing";
  return fmt::format("{} bytes of restore {:x} (last chunk {} at {} ms)", staging->bytes.size(),
                     staging->id, staging->last_chunk.value(), staging->last_chunk_ms.ms());
}

}  // namespace

void Checkers::CheckIndex(unsigned replica, const state::Store& store, RealMs now) {
  LogIndex index = store.applied_index();
  // A checkpoint that disagreed: what a real server stops on (Server::OnApplied).
  if (!store.divergence().empty()) {
    Fail(now, fmt::format("replica n{} reports a divergence at index {}: {}", replica,
                          index.value(), store.divergence()));
  }
  Committed here{store.Digest(), HoldersOf(store), StagingOf(store)};
  auto [it, inserted] = committed_.try_emplace(index, here);
  if (inserted) return;
  for (std::size_t i = 0; i < options_.keys.size(); ++i) {
    if (it->second.holders[i] != here.holders[i]) {
      Fail(now, fmt::format("at index {} replica n{} has {} held by {:?} (token {}), another "
                            "replica by {:?} (token {})",
                            index, replica, options_.keys[i], here.holders[i].first,
                            here.holders[i].second, it->second.holders[i].first,
                            it->second.holders[i].second));
      return;
    }
  }
  if (it->second.digest != here.digest) {
    Fail(now, fmt::format("replica n{} has digest {:016x} at index {}, another replica {:016x}",
                          replica, here.digest, index, it->second.digest));
  } else if (it->second.staging != here.staging) {
    Fail(now, fmt::format("replica n{} has staged {} at index {}, another replica {}", replica,
                          here.staging, index, it->second.staging));
  }
}

void Checkers::CheckGrants(unsigned replica, const state::Command& command,
                           const state::Store& store, bool first, RealMs now) {
  LogIndex index = store.applied_index();
  ReplicaView& view = View(replica);
  Holders after = HoldersOf(store);
  for (std::size_t i = 0; i < after.size(); ++i) {
    const auto& [was_holder, was_fence] = view.holders[i];
    const auto& [holder, fence] = after[i];
    const std::string& key = options_.keys[i];
    if (holder.empty() != fence.is_none()) {
      Fail(now, fmt::format("replica n{} index {}: {} held by {:?} with token {}", replica,
                            index.value(), key, holder, fence.value()));
      return;
    }
    if (fence == was_fence) {
      if (holder != was_holder) {
        Fail(now, fmt::format("replica n{} index {}: {} passed from {:?} to {:?} keeping token {}",
                              replica, index, key, was_holder, holder, fence));
        return;
      }
      continue;
    }
    if (fence.is_none()) continue;  // released, invalidated or deleted
    // FIFO (decision 0027): while a key has waiters, only a waiter of its
    // queue as it stood before this entry may be granted it, and only once
    // everyone ahead of it has left (in the same entry, a waiter's txn unlock
    // leaves before the holder's unlock hands the key on).
    if (const std::vector<state::SessionId>& waiters = view.queues[i]; !waiters.empty()) {
      auto grantee = std::find(waiters.begin(), waiters.end(), holder);
      auto still_ahead = std::find_if(waiters.begin(), grantee, [&](const state::SessionId& ahead) {
        return store.QueuePosition(key, ahead) != 0;
      });
      if (grantee == waiters.end() || still_ahead != grantee) {
        Fail(now,
             fmt::format("replica n{} index {}: {} granted to {:?} while {:?} headed its queue",
                         replica, index, key, holder, waiters.front()));
        return;
      }
    }
    if (fence != index || fence <= view.max_fence[i]) {
      Fail(now, fmt::format("replica n{} index {}: {} granted to {:?} with token {}; tokens must "
                            "be the grant's index and exceed every earlier one ({})",
                            replica, index, key, holder, fence, view.max_fence[i]));
      return;
    }
    view.max_fence[i] = fence;
    if (!first) continue;
    ++grants_;
    const std::vector<Proposal>* proposals = ProposalsOf(command);
    if (proposals == nullptr) {
      Fail(now, fmt::format("index {} granted {} but no leader proposed that entry", index, key));
      return;
    }
    RealMs proposed_at = proposals->front().at;
    for (const Proposal& proposal : *proposals) {
      proposed_at = std::min(proposed_at, proposal.at);
      for (const state::SessionId& session : proposal.locks_by_expired) {
        if (session != holder) continue;
        Fail(now, fmt::format("{} granted at index {} to session {}, which n{} had decided "
                              "expired (term {}) before proposing the grant at t={}",
                              key, index, holder, proposal.node, proposal.term, proposal.at));
        return;
      }
    }
    auto delay = lock_delay_until_.find(key);
    if (delay != lock_delay_until_.end()) {
      ++lock_delay_checks_;
      const LockDelay& window = delay->second;
      if (proposed_at < window.earliest) {
        Fail(now, fmt::format("{} granted at index {} (proposed t={}) inside the lock-delay of "
                              "its holder invalidated at index {} (proposed t={}, {} ms): not "
                              "before t={}",
                              key, index, proposed_at, window.index, window.invalidated_at,
                              window.delay_ms, window.earliest));
        return;
      }
    }
  }
  view.holders = std::move(after);
  view.queues = QueuesOf(store);
}

void Checkers::OnFirstApply(const state::Command& command, const state::Store& store,
                            const std::optional<Invalidated>& invalidated, RealMs now) {
  LogIndex index = store.applied_index();
  if (const auto* create = std::get_if<state::SessionCreate>(&command.body)) {
    const state::Session* session = store.FindSession(create->session.id);
    if (session != nullptr && session->create_index == index && session->ttl_ns > 0) {
      sessions_[session->id].ttl_ms = CeilMs(session->ttl_ns);
    }
    return;
  }
  const auto* destroy = std::get_if<state::SessionDestroy>(&command.body);
  if (destroy == nullptr || !invalidated) return;
  const std::vector<Proposal>* proposals = ProposalsOf(command);
  if (proposals == nullptr) {
    Fail(now, fmt::format("index {} destroyed session {} but no leader proposed that entry", index,
                          destroy->id));
    return;
  }
  RealMs proposed_at = proposals->front().at;
  for (const Proposal& proposal : *proposals) proposed_at = std::min(proposed_at, proposal.at);
  DurationNs delay_ns = std::min(invalidated->lock_delay_ns, limits::kLockDelayMaxNs);
  if (delay_ns > 0) {
    for (const std::string& key : invalidated->held) {
      LockDelay window{proposed_at + RealMsAtLeast(CeilMs(delay_ns)), proposed_at, CeilMs(delay_ns),
                       index};
      auto [slot, inserted] = lock_delay_until_.try_emplace(key, window);
      if (!inserted && slot->second.earliest < window.earliest) slot->second = window;
    }
  }
  if (destroy->reason != state::DestroyReason::kExpired) {
    history_->Add(now, fmt::format("index {}: session {} destroyed", index, destroy->id));
    return;
  }
  SessionRecord& record = sessions_[destroy->id];
  ++expiries_committed_;
  record.expiry_committed_at = now;
  history_->Add(now, fmt::format("index {}: session {} expired (last renewal acknowledged t={})",
                                 index, destroy->id, record.last_ack));
  for (const Proposal& proposal : *proposals) {
    if (!proposal.expiry_decided_at) {
      Fail(now, fmt::format("n{} (term {}) proposed the expiry of {} without deciding it",
                            proposal.node, proposal.term, destroy->id));
      return;
    }
    RealMs decided_at = *proposal.expiry_decided_at;
    DurationMs at_least_ms = RealMsAtLeast(record.ttl_ms);
    // A lease's promise is its TTL itself in real time (decision 0048): its
    // wait, TTL x (1 + rho), covers any clock within rho (less one ms for
    // the clocks' rounding); runs with leases keep clocks within rho.
    if (state::IsNumberedSession(destroy->id)) {
      at_least_ms = std::max(at_least_ms, record.ttl_ms - 1);
    }
    if (record.last_ack > decided_at - at_least_ms) {
      Fail(now,
           fmt::format("session {} expired by n{} (term {}, decided t={}) {} ms after a "
                       "renewal acknowledged at t={}: TTL {} ms needs at least {} ms",
                       destroy->id, proposal.node, proposal.term, decided_at,
                       decided_at - record.last_ack, record.last_ack, record.ttl_ms, at_least_ms));
      return;
    }
  }
}

// --- End of run ----------------------------------------------------------------

void Checkers::CheckConverged(const std::vector<const state::Store*>& stores, RealMs now) {
  for (std::size_t i = 1; i < stores.size(); ++i) {
    if (stores[i]->applied_index() != stores[0]->applied_index()) {
      Fail(now, fmt::format("replicas did not converge: n0 applied {}, n{} applied {}",
                            stores[0]->applied_index(), i, stores[i]->applied_index()));
      return;
    }
    if (stores[i]->Digest() != stores[0]->Digest()) {
      Fail(now,
           fmt::format("replicas n0 and n{} differ at index {}", i, stores[0]->applied_index()));
      return;
    }
  }
}

void Checkers::CheckLockDelaysBounded(const state::Store& store, ClusterMs leader_clock,
                                      RealMs now) {
  const DurationMs longest_ms = limits::kLockDelayMaxNs / kNsPerMs;
  for (const auto& [key, until] : store.lock_delays()) {
    if (until - leader_clock > longest_ms) {
      Fail(now, fmt::format("the lock-delay window of {} ends {} ms after the leader's replicated "
                            "clock, more than the longest lock-delay ({} ms)",
                            key, until - leader_clock, longest_ms));
      return;
    }
  }
}

void Checkers::CheckUnrenewedSessionsExpired(const state::Store& store, RealMs last_leader_change,
                                             DurationMs slack_ms, RealMs now) {
  for (const state::Session* session : store.ListSessions()) {
    if (session->ttl_ns <= 0) continue;
    const SessionRecord& record = sessions_[session->id];
    RealMs since = std::max(record.last_ack, last_leader_change);
    DurationMs due_ms = DueMs(session->id, CeilMs(session->ttl_ns));
    DurationMs limit_ms = due_ms * 1'000'000 / (1'000'000 - options_.drift_ppm_max) + slack_ms;
    if (now - since > limit_ms) {
      Fail(now, fmt::format("session {} still exists {} ms after its last renewal or change of "
                            "leader ({} is {} ms)",
                            session->id, now - since, WaitRule(session->id), due_ms));
      return;
    }
  }
}

}  // namespace tenure::sim
