// SimServer: one server of the simulated cluster. It does what
// server::Server and raft::Node do around raft, with the same pieces:
//
//  - a state::Store fed by the real raft::FsmBridge;
//  - Propose: refuses acquires by expiring sessions, stamps the command with
//    this server's (skewed) wall clock, and on commit tells LeaderDuties
//    which session was created or destroyed;
//  - Renew: the deadline moves in LeaderDuties' memory on the raft leader,
//    and the answer waits for a barrier issued after it (decision 0011);
//  - leadership reported only after a barrier, as Node does, and then
//    LeaderDuties::OnBecameLeader at this server's monotonic time;
//  - the duties "timer": DueExpiries whenever this server's monotonic clock
//    passes NextDeadline, each expiry proposed as Server::ExpireSession does
//    (retried while still leader), and tombstone reaping.
//
// What differs from production is only the edge: raft_fixture instead of
// raft_uv, SimClock instead of the system clock, and callbacks run by the
// Cluster after each fixture step instead of by asio after each uv turn.
// Every event is reported to the Checkers. Simulation thread only.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "common/status.h"
#include "raft/fsm.h"
#include "raft/raft_c.h"
#include "server/leader_duties.h"
#include "sim_clock.h"
#include "state/store.h"

namespace tenure::sim {

class Cluster;

class SimServer {
 public:
  using ProposeDone = std::function<void(Result<state::ApplyResult>)>;
  using RenewDone = std::function<void(Result<const state::Session*>)>;

  struct Options {
    int ttl_multiplier = 2;
    DurationMs reap_period_ms = 60'000;
    DurationMs checkpoint_period_ms = 0;  // Server::ScheduleCheckpoint; 0: never
  };

  SimServer(Cluster* cluster, unsigned index, Options options, SimClock clock);
  ~SimServer();
  SimServer(const SimServer&) = delete;
  SimServer& operator=(const SimServer&) = delete;

  // The raft_fsm to give raft_fixture_grow or raft_init; stable address.
  struct raft_fsm* fsm() {
    return &fsm_;
  }
  // The raft instance that numbers this server's applies.
  void Attach(struct raft* raft);

  // --- What server::Server offers -----------------------------------------
  // `done` runs from the Cluster's ready queue, never inside this call.
  void Propose(state::CommandBody body, ProposeDone done);
  // As Server::Renew (one barrier per renewal; Server shares them).
  void Renew(const state::SessionId& session_id, RenewDone done);
  // libraft's own state, which a deposed leader may still show.
  bool IsRaftLeader() const;
  // Leadership as Node reports it (after the barrier).
  bool leader_ready() const { return reported_leader_; }
  std::uint64_t term() const;

  // --- Driven by the Cluster ------------------------------------------------
  // After each fixture step while this server runs (is alive).
  void PollLeadership();
  void RunDuePendingDuties();
  // A new process over the same disk: empty Store, no soft state. Callbacks
  // of the old process that are still queued become no-ops.
  void ResetForRestart();
  // The next `n` proposals of this server fail to reach its disk (an I/O
  // error on the leader's append).
  void FailNextAppends(int n) { fail_appends_ += n; }
  // Until simulated time `until`, every SessionDestroy{expired} this server
  // proposes fails so (and is retried a second later, as Server does).
  void FailExpiriesUntil(RealMs until) { fail_expiries_until_ = until; }

  unsigned index() const { return index_; }
  const state::Store& store() const { return store_; }
  const server::LeaderDuties& duties() const { return duties_; }
  SimClock& clock() { return clock_; }
  MonoMs NowMono() const;
  UnixMs NowWall() const;
  // The replicated clock by this server's measure, as it would stamp a
  // command now (the Store's clock when it does not lead).
  ClusterMs ClusterNow() { return duties_.ClusterNow(store_.now_ms(), NowMono(), term()); }
  std::uint64_t restores() const { return bridge_->restores(); }
  bool apply_halted() const { return bridge_->apply_halted(); }

 private:
  struct Proposal;
  struct LeadershipBarrier;
  struct RenewalBarrier;
  static int FsmApply(struct raft_fsm* fsm, const struct raft_buffer* buf, void** result) noexcept;
  static int FsmSnapshot(struct raft_fsm* fsm, struct raft_buffer* bufs[],
                         unsigned* n_bufs) noexcept;
  static int FsmSnapshotFinalize(struct raft_fsm* fsm, struct raft_buffer* bufs[],
                                 unsigned* n_bufs) noexcept;
  static int FsmRestore(struct raft_fsm* fsm, struct raft_buffer* buf) noexcept;
  static void ProposalDone(struct raft_apply* req, int status, void* result) noexcept;
  static void BarrierDone(struct raft_barrier* req, int status) noexcept;
  static void RenewalBarrierDone(struct raft_barrier* req, int status) noexcept;

  void OnLeadership(bool is_leader);
  void ExpireSession(const state::SessionId& session_id);
  // As Server::CheckQueue / CheckQueues / ProposeQueueGrant (decision 0027).
  void CheckQueue(const std::string& key, DurationMs floor_ms);
  void CheckQueues(const state::Changes& changes);
  void ProposeQueueGrant(const std::string& key);
  void IssueLeadershipBarrier(std::uint64_t term);
  void Post(std::function<void()> callback);
  RealMs now() const;

  Cluster* cluster_;
  unsigned index_;
  Options options_;
  SimClock clock_;
  state::Store store_;
  std::unique_ptr<raft::FsmBridge> bridge_;
  struct raft_fsm fsm_ {};
  struct raft* raft_ = nullptr;
  server::LeaderDuties duties_;
  // Bumped by ResetForRestart: callbacks of an older process are ignored.
  std::shared_ptr<std::uint64_t> incarnation_ = std::make_shared<std::uint64_t>(0);
  // Node's leadership bookkeeping (node_requests.cc, PollLeadership).
  std::uint64_t leader_term_ = 0;
  std::uint64_t barrier_done_term_ = 0;
  bool reported_leader_ = false;
  LogIndex reap_mark_;
  MonoMs next_reap_ms_;
  MonoMs next_checkpoint_ms_;
  int fail_appends_ = 0;
  RealMs fail_expiries_until_ = 0;
};

}  // namespace tenure::sim
