// Checkers: the simulation's invariants, fed by the cluster as things happen.
//
// They keep their own record of what leaders acknowledged, decided and
// proposed, and look at every replica's Store after every apply; they never
// ask the code under test (LeaderDuties, the Store) whether it was right.
//
//  1. Holders: every replica has the same holder and token for every tracked
//     key at every index, and Store::Validate() holds after every apply.
//  2. Fencing: a new grant's token is its own index and larger than every
//     earlier token of that key on that replica (decision 0002).
//  3. Digests: equal Store::Digest() at equal applied index, everywhere.
//  4. No expiry before TTL:
//     a. the deciding leader's monotonic clock shows at least TTL x m since
//        it last armed the session (create, renewal or becoming leader);
//     b. in real (simulated) time, a committed expiry was decided at least
//        TTL / (1 + drift bound) after the last renewal any leader
//        acknowledged, and no leader acknowledges a renewal after that.
//  5. No grant to an expired session: no lock goes to a session that the
//     proposing leader had already decided expired (github.com/etcd-io/etcd/issues/11456).
//  6. Lock-delay: no grant of a key proposed earlier than lock-delay after
//     the proposal of the invalidation that released it, in real time
//     shortened only by the monotonic clocks' rate bound (decisions 0001,
//     0037): however far any wall clock is off.
//  7. At the end: replicas converge, sessions nobody renews are expired, and
//     no lock-delay window ends further from the leader's replicated clock
//     than the longest lock-delay (a stamp from a wrong wall clock would
//     leave windows open for a day).
//  8. FIFO (decision 0027): a key with waiters goes only to its queue's head
//     as it stood before the granting entry.
//
// The first violation is kept (with the history) and the run stops.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "history.h"
#include "sim_clock.h"
#include "state/command.h"
#include "state/store.h"

namespace tenure::sim {

struct CheckerOptions {
  int ttl_multiplier = 2;
  // Bound on every monotonic clock's rate error, in ppm.
  std::int64_t drift_ppm_max = 0;
  // Keys whose holders and tokens are compared at every index.
  std::vector<std::string> keys;
};

class Checkers {
 public:
  Checkers(CheckerOptions options, History* history);

  bool failed() const { return !failure_.empty(); }
  const std::string& failure() const { return failure_; }
  void Fail(RealMs now, std::string what);

  // --- Leaders (what SimServer's LeaderDuties were told and answered) -----
  void OnBecameLeader(unsigned node, std::uint64_t term, MonoMs mono, RealMs now,
                      const std::vector<const state::Session*>& sessions);
  void OnLostLeadership(unsigned node, std::uint64_t term, RealMs now);
  // The client was told its session lives: its create committed on `node`,
  // or `node` answered a renewal. `arms` when the node's duties armed it.
  void OnAcknowledged(unsigned node, std::uint64_t term, bool arms, const state::Session& session,
                      MonoMs mono, RealMs now, const char* what);
  void OnExpiryDecided(unsigned node, std::uint64_t term, const state::SessionId& session_id,
                       MonoMs mono, RealMs now);
  void OnProposed(unsigned node, std::uint64_t term, const state::Command& command, RealMs now);

  // --- Replicas (every FSM apply) -----------------------------------------
  // What a SessionDestroy found before it applied.
  struct Invalidated {
    state::SessionId session;
    std::vector<std::string> held;
    DurationNs lock_delay_ns = 0;
  };
  void OnApplied(unsigned replica, const state::Command& command, const state::Store& store,
                 const std::optional<Invalidated>& invalidated, RealMs now);
  // The replica's Store was replaced (snapshot restore, restart).
  void OnReplaced(unsigned replica, const state::Store& store, RealMs now);

  // --- End of run -----------------------------------------------------------
  void CheckConverged(const std::vector<const state::Store*>& stores, RealMs now);
  // Sessions whose last acknowledgement and the last change of leader are
  // older than TTL x m (stretched by the drift bound) plus `slack_ms` must
  // be gone from `store`.
  void CheckUnrenewedSessionsExpired(const state::Store& store, RealMs last_leader_change,
                                     DurationMs slack_ms, RealMs now);
  // `leader_clock`: the replicated clock by the leader's measure now.
  void CheckLockDelaysBounded(const state::Store& store, ClusterMs leader_clock, RealMs now);

  std::uint64_t expiries_committed() const { return expiries_committed_; }
  std::uint64_t grants() const { return grants_; }
  std::uint64_t lock_delay_checks() const { return lock_delay_checks_; }
  std::uint64_t leaderships() const { return leaderships_; }
  RealMs last_leader_change() const { return last_leader_change_; }

 private:
  using Holders = std::vector<std::pair<state::SessionId, LogIndex>>;  // per key: holder, token
  DurationMs DueMs(const state::SessionId& session, DurationMs ttl_ms) const;
  std::string WaitRule(const state::SessionId& session) const;
  struct Committed {
    std::uint64_t digest = 0;
    Holders holders;
    // A large restore's staging (decision 0050), which the digest leaves
    // out: its id, bytes staged and last chunk's index, or none.
    std::string staging;
  };
  struct ReplicaView {
    Holders holders;
    std::vector<LogIndex> max_fence;
    // Each key's queue after the last apply, head first (empty: no waiters).
    std::vector<std::vector<state::SessionId>> queues;
  };
  struct SessionRecord {
    DurationMs ttl_ms = 0;
    RealMs last_ack = -1;
    std::optional<RealMs> expiry_committed_at;
  };
  struct Proposal {
    unsigned node = 0;
    std::uint64_t term = 0;
    RealMs at = 0;
    std::optional<RealMs> expiry_decided_at;         // SessionDestroy{expired}
    std::vector<state::SessionId> locks_by_expired;  // lock ops by sessions decided expired
  };
  using Leadership = std::pair<unsigned, std::uint64_t>;  // node, term

  Holders HoldersOf(const state::Store& store) const;
  std::vector<std::vector<state::SessionId>> QueuesOf(const state::Store& store) const;
  ReplicaView& View(unsigned replica);
  void CheckIndex(unsigned replica, const state::Store& store, RealMs now);
  void CheckGrants(unsigned replica, const state::Command& command, const state::Store& store,
                   bool first, RealMs now);
  void OnFirstApply(const state::Command& command, const state::Store& store,
                    const std::optional<Invalidated>& invalidated, RealMs now);
  const std::vector<Proposal>* ProposalsOf(const state::Command& command) const;
  DurationMs RealMsAtLeast(DurationMs ttl_ms) const;

  CheckerOptions options_;
  History* history_;
  std::string failure_;
  std::map<LogIndex, Committed> committed_;
  std::map<unsigned, ReplicaView> views_;
  std::map<state::SessionId, SessionRecord> sessions_;
  std::map<std::tuple<unsigned, std::uint64_t, state::SessionId>, MonoMs> armed_at_;
  std::map<Leadership, std::map<state::SessionId, RealMs>> decided_expired_;
  std::map<std::string, std::vector<Proposal>> proposals_;  // by encoded command
  // The latest-ending lock-delay window of each key, in real time.
  struct LockDelay {
    RealMs earliest = 0;        // no grant proposed before: invalidated_at + delay / (1 + drift)
    RealMs invalidated_at = 0;  // proposal of the invalidation
    DurationMs delay_ms = 0;
    LogIndex index;  // the invalidating entry
  };
  std::map<std::string, LockDelay> lock_delay_until_;
  std::uint64_t expiries_committed_ = 0;
  std::uint64_t grants_ = 0;
  std::uint64_t lock_delay_checks_ = 0;
  std::uint64_t leaderships_ = 0;
  RealMs last_leader_change_ = 0;
};

}  // namespace tenure::sim
