#include "sim_server.h"

#include <fmt/core.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <variant>

#include "cluster.h"
#include "raft/entry_codec.h"

extern "C" {
#include <raft/fixture.h>
}

namespace tenure::sim {

namespace {

// What Node reports for a finished raft_apply.
Result<state::ApplyResult> OutcomeOf(int status, void* result) {
  if (status == 0) return raft::FsmBridge::TakeResult(result);
  return Status::Unavailable(fmt::format("raft: outcome unknown: {}", raft_strerror(status)));
}

}  // namespace

struct SimServer::Proposal {
  struct raft_apply req {};
  SimServer* server = nullptr;
  std::uint64_t incarnation = 0;
  ProposeDone done;
};

struct SimServer::LeadershipBarrier {
  struct raft_barrier req {};
  SimServer* server = nullptr;
  std::uint64_t incarnation = 0;
  std::uint64_t term = 0;
};

struct SimServer::RenewalBarrier {
  struct raft_barrier req {};
  SimServer* server = nullptr;
  std::uint64_t incarnation = 0;
  std::uint64_t term = 0;
  state::SessionId session_id;
  MonoMs armed_mono;  // when the renewal arrived and moved the deadline
  RealMs received_at = 0;
  RenewDone done;
};

SimServer::SimServer(Cluster* cluster, unsigned index, Options options, SimClock clock)
    : cluster_(cluster),
      index_(index),
      options_(options),
      clock_(clock),
      bridge_(std::make_unique<raft::FsmBridge>(&store_)),
      duties_(options.ttl_multiplier) {
  // FsmBridge's version: its snapshot buffers are its own, freed by its
  // snapshot_finalize; encoded in place (no child process in the simulation).
  fsm_.version = 3;
  fsm_.data = this;
  fsm_.apply = &SimServer::FsmApply;
  fsm_.snapshot = &SimServer::FsmSnapshot;
  fsm_.restore = &SimServer::FsmRestore;
  fsm_.snapshot_finalize = &SimServer::FsmSnapshotFinalize;
  fsm_.snapshot_async = nullptr;
  next_reap_ms_ = NowMono() + options_.reap_period_ms;
}

SimServer::~SimServer() = default;

void SimServer::Attach(struct raft* raft) {
  raft_ = raft;
  bridge_->set_raft(raft);
}

RealMs SimServer::now() const { return cluster_->now(); }
MonoMs SimServer::NowMono() const { return clock_.Mono(now()); }
UnixMs SimServer::NowWall() const { return clock_.Wall(now()); }
bool SimServer::IsRaftLeader() const { return raft_ != nullptr && raft_->state == RAFT_LEADER; }
std::uint64_t SimServer::term() const { return raft_ != nullptr ? raft_->current_term : 0; }
void SimServer::Post(std::function<void()> callback) { cluster_->Post(std::move(callback)); }

// --- The FSM: our FsmBridge, watched by the checkers -------------------------

int SimServer::FsmApply(struct raft_fsm* fsm, const struct raft_buffer* buf,
                        void** result) noexcept {
  auto* self = static_cast<SimServer*>(fsm->data);
  std::string_view bytes(static_cast<const char*>(buf->base), buf->len);
  Result<state::Command> command = raft::DecodeEntry(bytes);
  std::optional<Checkers::Invalidated> invalidated;
  if (command.ok()) {
    if (const auto* destroy = std::get_if<state::SessionDestroy>(&command->body)) {
      if (const state::Session* session = self->store_.FindSession(destroy->id)) {
        invalidated.emplace();
        invalidated->session = destroy->id;
        invalidated->lock_delay_ns = session->lock_delay_ns;
        if (const auto* held = self->store_.HeldKeys(destroy->id)) {
          invalidated->held.assign(held->begin(), held->end());
        }
      }
    }
  }
  struct raft_fsm* inner = self->bridge_->fsm();
  int rv = inner->apply(inner, buf, result);
  Checkers& checkers = self->cluster_->checkers();
  if (rv != 0 || !command.ok()) {
    checkers.Fail(self->now(), fmt::format("n{} could not apply entry {}", self->index_,
                                           raft_last_applied(self->raft_) + 1));
    return rv;
  }
  checkers.OnApplied(self->index_, *command, self->store_, invalidated, self->now());
  // As Server after each apply: the leader times the queue grants.
  self->CheckQueues(self->store_.TakeChanges());
  return 0;
}

int SimServer::FsmSnapshot(struct raft_fsm* fsm, struct raft_buffer* bufs[],
                           unsigned* n_bufs) noexcept {
  auto* self = static_cast<SimServer*>(fsm->data);
  struct raft_fsm* inner = self->bridge_->fsm();
  return inner->snapshot(inner, bufs, n_bufs);
}

int SimServer::FsmSnapshotFinalize(struct raft_fsm* fsm, struct raft_buffer* bufs[],
                                   unsigned* n_bufs) noexcept {
  auto* self = static_cast<SimServer*>(fsm->data);
  struct raft_fsm* inner = self->bridge_->fsm();
  return inner->snapshot_finalize(inner, bufs, n_bufs);
}

int SimServer::FsmRestore(struct raft_fsm* fsm, struct raft_buffer* buf) noexcept {
  auto* self = static_cast<SimServer*>(fsm->data);
  struct raft_fsm* inner = self->bridge_->fsm();
  int rv = inner->restore(inner, buf);
  if (rv == 0) {
    self->cluster_->history().Add(self->now(),
                                  fmt::format("n{} restored a snapshot at index {}", self->index_,
                                              self->store_.applied_index().value()));
    self->cluster_->checkers().OnReplaced(self->index_, self->store_, self->now());
  }
  return rv;
}

// --- What Server does --------------------------------------------------------

void SimServer::Propose(state::CommandBody body, ProposeDone done) {
  // As Server::Propose.
  const ClusterMs stamp = duties_.ClusterNow(store_.now_ms(), NowMono(), term());
  auto replicated_lock_delay = [this, stamp](std::string_view key) {
    return store_.LockDelayUntil(key) > stamp;
  };
  if (std::optional<state::ApplyResult> refused =
          duties_.RefuseBeforeProposing(body, NowMono(), replicated_lock_delay)) {
    Post([done = std::move(done), refused = std::move(*refused)]() mutable {
      done(std::move(refused));
    });
    return;
  }
  duties_.HoldQueueGrant(&body, NowMono());
  state::Command command;
  command.now_ms = stamp;
  command.wall_ms = NowWall();
  command.body = std::move(body);
  // As Node::Propose.
  if (!IsRaftLeader()) {
    Post([done = std::move(done)] { done(Status::NotLeader("No cluster leader")); });
    return;
  }
  std::string framed;
  raft::EncodeEntry(command, &framed);
  struct raft_buffer buf = raft::CopyToRaftBuffer(framed);
  TENURE_ASSERT(buf.base != nullptr);
  auto* proposal = new Proposal;
  proposal->req.data = proposal;
  proposal->server = this;
  proposal->incarnation = *incarnation_;
  proposal->done = std::move(done);
  bool inject_fault = fail_appends_ > 0;
  if (inject_fault) {
    // raft_apply's only disk write is this entry's append: fail exactly it.
    --fail_appends_;
    cluster_->disk(index_).Fail(kDiskAppend, 0, 1);
  }
  int rv = raft_apply(raft_, &proposal->req, &buf, 1, &SimServer::ProposalDone);
  if (inject_fault) cluster_->disk(index_).Clear();
  if (rv != 0) {
    raft_free(buf.base);  // libraft owns it only on success
    cluster_->history().Add(now(), fmt::format("n{} proposal of {} failed: {}", index_,
                                               state::CommandName(command), raft_strerror(rv)));
    Post([done = std::move(proposal->done), rv] {
      done(Status::Unavailable(fmt::format("raft: write failed: {}", raft_strerror(rv))));
    });
    delete proposal;
    return;
  }
  cluster_->checkers().OnProposed(index_, term(), command, now());
}

void SimServer::ProposalDone(struct raft_apply* req, int status, void* result) noexcept {
  auto* proposal = static_cast<Proposal*>(req->data);
  SimServer* self = proposal->server;
  Result<state::ApplyResult> outcome = OutcomeOf(status, result);
  self->Post([self, incarnation = proposal->incarnation, done = std::move(proposal->done),
              outcome = std::move(outcome)]() mutable {
    if (*self->incarnation_ == incarnation && outcome.ok() && outcome->status.ok()) {
      // As Server::Propose: the timers follow what the Store applied.
      const server::SessionChange change = server::SessionChangeOf(*outcome);
      self->duties_.OnCommitted(change, self->NowMono());
      if (!change.created_id.empty()) {
        if (const state::Session* session = self->store_.FindSession(change.created_id)) {
          self->cluster_->checkers().OnAcknowledged(self->index_, self->leader_term_,
                                                    self->duties_.leading(), *session,
                                                    self->NowMono(), self->now(), "create");
        }
      }
    }
    done(std::move(outcome));
  });
  delete proposal;
}

void SimServer::Renew(const state::SessionId& session_id, RenewDone done) {
  // As Server::Renew.
  Status renewed = IsRaftLeader()
                       ? duties_.Renew(session_id, store_.FindSession(session_id), NowMono())
                       : Status::NotLeader("No cluster leader");
  if (!renewed.ok()) {
    Post([done = std::move(done), renewed] { done(renewed); });
    return;
  }
  auto* barrier = new RenewalBarrier;
  barrier->req.data = barrier;
  barrier->server = this;
  barrier->incarnation = *incarnation_;
  barrier->term = leader_term_;
  barrier->session_id = session_id;
  barrier->armed_mono = NowMono();
  barrier->received_at = now();
  barrier->done = std::move(done);
  if (int rv = raft_barrier(raft_, &barrier->req, &SimServer::RenewalBarrierDone); rv != 0) {
    Post([done = std::move(barrier->done), rv] {
      done(Status::Unavailable(fmt::format("raft: barrier failed: {}", raft_strerror(rv))));
    });
    delete barrier;
  }
}

void SimServer::RenewalBarrierDone(struct raft_barrier* req, int status) noexcept {
  auto* barrier = static_cast<RenewalBarrier*>(req->data);
  SimServer* self = barrier->server;
  self->Post([self, barrier, status] {
    std::unique_ptr<RenewalBarrier> owned(barrier);
    if (*self->incarnation_ != barrier->incarnation) {
      return barrier->done(Status::Unavailable("server restarted"));
    }
    if (status != 0) return barrier->done(Status::NotLeader("No cluster leader"));
    const state::Session* session = self->store_.FindSession(barrier->session_id);
    if (Status confirmed = self->duties_.ConfirmRenewal(barrier->session_id, session);
        !confirmed.ok()) {
      return barrier->done(confirmed);
    }
    // The client's TTL runs from before it sent the renewal, so the renewal
    // counts from its arrival, not from this answer.
    self->cluster_->checkers().OnAcknowledged(self->index_, barrier->term, true, *session,
                                              barrier->armed_mono, barrier->received_at, "renewal");
    barrier->done(session);
  });
}

// --- Leadership, as Node::Impl::PollLeadership and Server::OnLeadership -------

void SimServer::PollLeadership() {
  bool leader = IsRaftLeader();
  std::uint64_t term = raft_->current_term;
  if (leader_term_ != 0 && (!leader || term != leader_term_)) {
    if (reported_leader_) {
      reported_leader_ = false;
      OnLeadership(false);
    }
    leader_term_ = 0;
  }
  if (leader && leader_term_ == 0) {
    leader_term_ = term;
    IssueLeadershipBarrier(term);
  }
  if (leader && !reported_leader_ && barrier_done_term_ == term && leader_term_ == term) {
    reported_leader_ = true;
    OnLeadership(true);
  }
}

void SimServer::IssueLeadershipBarrier(std::uint64_t term) {
  auto* barrier = new LeadershipBarrier;
  barrier->req.data = barrier;
  barrier->server = this;
  barrier->incarnation = *incarnation_;
  barrier->term = term;
  if (raft_barrier(raft_, &barrier->req, &SimServer::BarrierDone) != 0) {
    delete barrier;
    leader_term_ = 0;  // retried at the next poll if still leader
  }
}

void SimServer::BarrierDone(struct raft_barrier* req, int status) noexcept {
  auto* barrier = static_cast<LeadershipBarrier*>(req->data);
  SimServer* self = barrier->server;
  if (status == 0 && *self->incarnation_ == barrier->incarnation) {
    self->barrier_done_term_ = barrier->term;
  }
  delete barrier;
}

void SimServer::OnLeadership(bool is_leader) {
  if (!is_leader) {
    duties_.OnLostLeadership();
    cluster_->checkers().OnLostLeadership(index_, leader_term_, now());
    return;
  }
  std::vector<const state::Session*> sessions = store_.ListSessions();
  duties_.OnBecameLeader(NowMono(), store_);
  for (const auto& [key, waiters] : store_.queues()) CheckQueue(key, 0);  // as Server
  cluster_->checkers().OnBecameLeader(index_, leader_term_, NowMono(), now(), sessions);
  reap_mark_ = store_.kv_index();
}

// --- The duties timer: Server::RunDuties, ExpireSession and ScheduleReap ------

void SimServer::RunDuePendingDuties() {
  MonoMs mono = NowMono();
  std::optional<MonoMs> next = duties_.NextDeadline();
  if (next && *next <= mono) {
    for (const state::SessionId& session_id : duties_.DueExpiries(mono)) {
      cluster_->checkers().OnExpiryDecided(index_, leader_term_, session_id, mono, now());
      ExpireSession(session_id);
    }
  }
  if (next && *next <= mono) {
    for (const std::string& key : duties_.DueQueueGrants(mono)) ProposeQueueGrant(key);
  }
  if (mono >= next_reap_ms_) {
    if (IsRaftLeader() && reported_leader_ && store_.tombstone_count() > 0 &&
        !reap_mark_.is_none()) {
      Propose(state::ReapTombstones{reap_mark_}, [](Result<state::ApplyResult>) {});
    }
    reap_mark_ = store_.kv_index();
    next_reap_ms_ = mono + options_.reap_period_ms;
  }
  if (options_.checkpoint_period_ms > 0 && mono >= next_checkpoint_ms_) {
    const state::Store::CheckpointRecord& last = store_.checkpoint();
    if (IsRaftLeader() && reported_leader_ && store_.CheckpointDue()) {
      Propose(state::Checkpoint{last.index, last.digest}, [](Result<state::ApplyResult>) {});
    }
    next_checkpoint_ms_ = mono + options_.checkpoint_period_ms;
  }
}

void SimServer::ExpireSession(const state::SessionId& session_id) {
  if (!IsRaftLeader() || store_.FindSession(session_id) == nullptr) {
    duties_.ExpiryResolved(session_id);
    return;
  }
  if (now() < fail_expiries_until_) FailNextAppends(1);
  Propose(state::SessionDestroy{session_id, state::DestroyReason::kExpired},
          [this, incarnation = *incarnation_, session_id](Result<state::ApplyResult> result) {
            if (*incarnation_ != incarnation) return;
            if (result.ok() || !IsRaftLeader()) {
              duties_.ExpiryResolved(session_id);
              return;
            }
            duties_.ExpiryFailed(session_id, NowMono());
          });
}

// As Server::CheckQueue: a key left free with waiters gets a KvQueueGrant
// once its lock-delay window has passed, by the replicated clock and by this
// leader's guard (decision 0027).
void SimServer::CheckQueue(const std::string& key, DurationMs floor_ms) {
  const ClusterMs until = store_.LockDelayUntil(key);
  const DurationMs remaining =
      until == ClusterMs()
          ? 0
          : std::max<DurationMs>(until - duties_.ClusterNow(store_.now_ms(), NowMono(), term()), 0);
  duties_.CheckQueue(store_, key, NowMono(), std::max(remaining, floor_ms));
}

void SimServer::CheckQueues(const state::Changes& changes) {
  if (!reported_leader_ || !IsRaftLeader()) return;
  for (const std::string& key : duties_.QueueKeysToCheck(store_, changes)) CheckQueue(key, 0);
}

void SimServer::ProposeQueueGrant(const std::string& key) {
  if (!IsRaftLeader() || store_.FindQueue(key) == nullptr) return;
  cluster_->history().Add(
      now(), fmt::format("n{} proposes kv-queue-grant {} (lock-delay passed)", index_, key));
  Propose(state::KvQueueGrant{key}, [this, incarnation = *incarnation_,
                                     key](Result<state::ApplyResult> result) {
    if (*incarnation_ != incarnation || !reported_leader_ || !IsRaftLeader()) return;
    if (!result.ok()) {
      duties_.QueueGrantFailed(key, NowMono());
    } else {
      if (!result->queue_events.empty()) {
        cluster_->history().Add(now(), fmt::format("n{} kv-queue-grant {} granted {}", index_, key,
                                                   result->queue_events[0].session.str()));
      }
      CheckQueue(key, 10);  // Server::kQueueGrantFloorMs
    }
  });
}

void SimServer::ResetForRestart() {
  ++*incarnation_;
  if (reported_leader_) duties_.OnLostLeadership();
  store_ = state::Store();
  bridge_ = std::make_unique<raft::FsmBridge>(&store_);
  raft_ = nullptr;
  leader_term_ = 0;
  barrier_done_term_ = 0;
  reported_leader_ = false;
  reap_mark_ = LogIndex();
  next_reap_ms_ = NowMono() + options_.reap_period_ms;
  fail_appends_ = 0;
  fail_expiries_until_ = 0;
  cluster_->checkers().OnReplaced(index_, store_, now());
}

}  // namespace tenure::sim
