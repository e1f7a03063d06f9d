// Cluster: N SimServers on libraft's raft_fixture (in-memory disks and
// network, simulated time), with the faults the nemesis and the
// deterministic tests inject: kills (a paused process), restarts (a new
// process over the same disk), one-way and two-way network cuts, and disk
// errors. After every fixture event it runs what the servers' event loops
// would: leadership polling, the callbacks raft completed, the duties timer.
//
// Deterministic: raft_fixture is, and nothing here reads a clock or a random
// source. Single-threaded.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "checkers.h"
#include "history.h"
#include "raft/append_result_guard.h"
#include "raft/raft_c.h"
#include "sim_clock.h"
#include "sim_disk.h"
#include "sim_server.h"

extern "C" {
#include <raft/fixture.h>
}

namespace tenure::sim {

struct ClusterOptions {
  unsigned servers = 3;
  int ttl_multiplier = 2;
  // 0 keeps libraft's defaults.
  unsigned snapshot_threshold = 0;
  unsigned snapshot_trailing = 0;
  DurationMs reap_period_ms = 60'000;
  DurationMs checkpoint_period_ms = 0;
  // Per server; missing ones are exact clocks.
  std::vector<SimClock> clocks;
  std::int64_t drift_ppm_max = 0;
  // Keys whose holders the checkers compare at every index.
  std::vector<std::string> tracked_keys = {"lock/a", "lock/b"};
  // Leaves libraft 0.15 without raft::AppendResultGuard, which Node always
  // installs: only to show what the guard prevents.
  bool TEST_without_append_result_guard = false;
};

// The outcome of one proposal, for tests that wait on it.
struct Outcome {
  bool done = false;
  Result<state::ApplyResult> result = Status::Unavailable("pending");
};

class Cluster {
 public:
  // Kill-to-restart: a killed server's in-flight disk writes and messages
  // all complete within this much simulated time.
  static constexpr RealMs kDrainMs = 2'000;

  explicit Cluster(ClusterOptions options);
  ~Cluster();
  Cluster(const Cluster&) = delete;
  Cluster& operator=(const Cluster&) = delete;

  // Bootstraps every server as a voter and starts them.
  void Start();

  unsigned size() const { return static_cast<unsigned>(servers_.size()); }
  SimServer& server(unsigned i) { return *servers_[i]; }
  struct raft* raft(unsigned i) {
    return raft_fixture_get(&fixture_, i);
  }
  struct raft_fixture* fixture() {
    return &fixture_;
  }
  Checkers& checkers() { return checkers_; }
  History& history() { return history_; }
  RealMs now() const { return static_cast<RealMs>(fixture_.time); }
  const ClusterOptions& options() const { return options_; }

  // --- Time -----------------------------------------------------------------
  // One fixture event, then what the servers' loops do after it.
  void Step();
  // Steps until simulated time has advanced by at least `ms`.
  void Advance(RealMs ms);
  // Steps until pred() or `max_ms` pass; returns pred().
  bool StepUntil(const std::function<bool()>& pred, RealMs max_ms);
  // The alive server that reports leadership (after its barrier) in the
  // highest term any alive server knows; not a deposed leader that has not
  // heard of its successor yet.
  std::optional<unsigned> ReadyLeader() const;
  std::optional<unsigned> StepUntilReadyLeader(RealMs max_ms);

  // --- Requests (tests) -----------------------------------------------------
  std::shared_ptr<Outcome> Propose(unsigned i, state::CommandBody body);
  bool Await(const std::shared_ptr<Outcome>& outcome, RealMs max_ms);

  // --- Faults ---------------------------------------------------------------
  bool alive(unsigned i) const;
  // A paused process: no ticks, no messages; its state stays as it was.
  void Kill(unsigned i);
  void Revive(unsigned i);
  // A new process over the same disk: Store and soft state gone, raft
  // restarted from its persisted log and snapshot. The server must have
  // been killed at least kDrainMs ago; it stays down until Revive.
  // Returns false (and does nothing) if the persisted log cannot be read.
  bool Restart(unsigned i);
  // Messages from `from` to `to` are dropped while cut.
  void Cut(unsigned from, unsigned to, bool cut);
  void Isolate(unsigned i, bool isolated);
  // Cuts every link between `side` and the rest (both ways).
  void Partition(const std::vector<unsigned>& side);
  void HealNetwork();
  bool cut(unsigned from, unsigned to) const { return cut_[from][to]; }
  // Disk errors of server i (sim_disk.h).
  SimDisk& disk(unsigned i) { return *disks_[i]; }
  void Post(std::function<void()> callback) { ready_.push_back(std::move(callback)); }

 private:
  void ApplySettings(struct raft* r);
  void SyncLinks();
  // Whether server i's persisted log and snapshot can be loaded as they are
  // or after dropping the entries the snapshot covers (see Restart).
  bool CanRestart(unsigned i);

  ClusterOptions options_;
  History history_;
  Checkers checkers_;
  struct raft_fixture fixture_ {};
  std::vector<std::unique_ptr<SimServer>> servers_;
  std::vector<std::unique_ptr<SimDisk>> disks_;
  std::vector<std::unique_ptr<raft::AppendResultGuard>> append_result_guards_;
  std::vector<std::vector<bool>> cut_;  // [from][to]
  std::vector<std::function<void()>> ready_;
};

}  // namespace tenure::sim
