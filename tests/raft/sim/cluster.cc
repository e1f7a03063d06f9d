#include "cluster.h"

#include <fmt/core.h>

#include <algorithm>
#include <cstring>

#include "common/assert.h"

namespace tenure::sim {
namespace {

// raft_fixture's defaults (fixture.c), which a restarted raft must get again.
constexpr unsigned kElectionTimeoutMs = 1000;
constexpr unsigned kHeartbeatTimeoutMs = 100;
constexpr unsigned kInstallSnapshotTimeoutMs = 30'000;

}  // namespace

Cluster::Cluster(ClusterOptions options)
    : options_(std::move(options)),
      checkers_(
          CheckerOptions{options_.ttl_multiplier, options_.drift_ppm_max, options_.tracked_keys},
          &history_) {
  TENURE_ASSERT(raft_fixture_initialize(&fixture_) == 0);
  options_.clocks.resize(options_.servers);
  cut_.assign(options_.servers, std::vector<bool>(options_.servers, false));
  SimServer::Options server_options{options_.ttl_multiplier, options_.reap_period_ms,
                                    options_.checkpoint_period_ms};
  for (unsigned i = 0; i < options_.servers; ++i) {
    servers_.push_back(std::make_unique<SimServer>(this, i, server_options, options_.clocks[i]));
    TENURE_ASSERT(raft_fixture_grow(&fixture_, servers_[i]->fsm()) == 0);
  }
  for (unsigned i = 0; i < options_.servers; ++i) {
    servers_[i]->Attach(raft(i));
    ApplySettings(raft(i));
    disks_.push_back(std::make_unique<SimDisk>(&fixture_, i));
    if (options_.TEST_without_append_result_guard) continue;
    // As Node (over SimDisk's methods). Its start, append and send stay
    // wrapped across restarts.
    auto guard = std::make_unique<raft::AppendResultGuard>();
    guard->Install(&fixture_.servers[i].io, [this, i](const raft::AppendResultGuard::Lowered& l) {
      history_.Add(now(), fmt::format("n{} reports to n{} (term {}) a match up to {}, not {}", i,
                                      l.leader - 1, l.term, l.reported, l.stored));
    });
    append_result_guards_.push_back(std::move(guard));
  }
}

// raft_fixture_close fails pending requests through their callbacks, which
// only queue closures here: drop them unrun.
Cluster::~Cluster() {
  raft_fixture_close(&fixture_);
  ready_.clear();
  append_result_guards_.clear();  // wraps the disks' methods: unwrapped first
  disks_.clear();
}

void Cluster::ApplySettings(struct raft* r) {
  raft_set_pre_vote(r, true);  // as Node
  if (options_.snapshot_threshold != 0) raft_set_snapshot_threshold(r, options_.snapshot_threshold);
  if (options_.snapshot_trailing != 0) raft_set_snapshot_trailing(r, options_.snapshot_trailing);
}

void Cluster::Start() {
  struct raft_configuration conf;
  TENURE_ASSERT(raft_fixture_configuration(&fixture_, size(), &conf) == 0);
  TENURE_ASSERT(raft_fixture_bootstrap(&fixture_, &conf) == 0);
  raft_configuration_close(&conf);
  TENURE_ASSERT(raft_fixture_start(&fixture_) == 0);
}

// --- Time ----------------------------------------------------------------------

void Cluster::Step() {
  raft_fixture_step(&fixture_);
  // What Node::Impl::AfterTurn does on each server: leadership first, then
  // the callbacks raft completed; then Server's duties timer.
  for (unsigned i = 0; i < size(); ++i) {
    if (alive(i)) servers_[i]->PollLeadership();
  }
  while (!ready_.empty()) {
    std::vector<std::function<void()>> batch;
    batch.swap(ready_);
    for (auto& callback : batch) callback();
  }
  for (unsigned i = 0; i < size(); ++i) {
    if (alive(i)) servers_[i]->RunDuePendingDuties();
  }
}

void Cluster::Advance(RealMs ms) {
  RealMs until = now() + ms;
  while (now() < until && !checkers_.failed()) Step();
}

bool Cluster::StepUntil(const std::function<bool()>& pred, RealMs max_ms) {
  RealMs until = now() + max_ms;
  while (!pred()) {
    if (now() >= until || checkers_.failed()) return false;
    Step();
  }
  return true;
}

std::optional<unsigned> Cluster::ReadyLeader() const {
  std::uint64_t highest_term = 0;
  for (unsigned i = 0; i < size(); ++i) {
    if (alive(i)) highest_term = std::max(highest_term, servers_[i]->term());
  }
  for (unsigned i = 0; i < size(); ++i) {
    if (alive(i) && servers_[i]->leader_ready() && servers_[i]->term() == highest_term) return i;
  }
  return std::nullopt;
}

std::optional<unsigned> Cluster::StepUntilReadyLeader(RealMs max_ms) {
  StepUntil([this] { return ReadyLeader().has_value(); }, max_ms);
  return ReadyLeader();
}

// --- Requests ------------------------------------------------------------------

std::shared_ptr<Outcome> Cluster::Propose(unsigned i, state::CommandBody body) {
  auto outcome = std::make_shared<Outcome>();
  servers_[i]->Propose(std::move(body), [outcome](Result<state::ApplyResult> result) {
    outcome->done = true;
    outcome->result = std::move(result);
  });
  return outcome;
}

bool Cluster::Await(const std::shared_ptr<Outcome>& outcome, RealMs max_ms) {
  return StepUntil([&] { return outcome->done; }, max_ms);
}

// --- Faults --------------------------------------------------------------------

bool Cluster::alive(unsigned i) const { return fixture_.servers[i].alive; }

void Cluster::Kill(unsigned i) {
  raft_fixture_kill(&fixture_, i);
  SyncLinks();
  history_.Add(now(), fmt::format("nemesis: n{} killed (paused)", i));
}

void Cluster::Revive(unsigned i) {
  raft_fixture_revive(&fixture_, i);
  SyncLinks();
  history_.Add(now(), fmt::format("nemesis: n{} revived", i));
}

// raft_fixture has no restart, so this builds one from its public pieces:
// raft_close (its in-memory io closes at once and keeps the persisted term,
// vote and snapshot), then raft_init and raft_start over the same io, which
// loads them as a restarted process would. Fixture limits worked around:
//  - a request still in flight would call back into the re-initialized
//    raft, so the server must have been dead for kDrainMs first: what a
//    crash loses (writes not yet on disk) is never lost here;
//  - the fixture's stored log is not what raft_uv would have on disk
//    (sim_disk.h), so SimDisk's log replaces it, from the snapshot on (the
//    fixture's load says the entries start there; older ones are dropped,
//    as a compaction would).
bool Cluster::Restart(unsigned i) {
  TENURE_ASSERT(!alive(i));
  if (!CanRestart(i)) {
    history_.Add(now(), fmt::format("nemesis: n{} cannot restart: persisted log inconsistent", i));
    return false;
  }
  struct raft_fixture_server* s = &fixture_.servers[i];
  raft_index snapshot_index = s->raft.log.snapshot.last_index;
  disks_[i]->Clear();
  raft_close(&s->raft, nullptr);  // the fixture's io close completes inline
  disks_[i]->HandLogToFixture(snapshot_index);
  servers_[i]->ResetForRestart();
  TENURE_ASSERT(raft_init(&s->raft, &s->io, servers_[i]->fsm(), s->id, s->address) == 0);
  raft_set_election_timeout(&s->raft, kElectionTimeoutMs);
  raft_set_heartbeat_timeout(&s->raft, kHeartbeatTimeoutMs);
  raft_set_install_snapshot_timeout(&s->raft, kInstallSnapshotTimeoutMs);
  s->raft.tracer = &s->tracer;
  ApplySettings(&s->raft);
  servers_[i]->Attach(&s->raft);
  int rv = raft_start(&s->raft);
  history_.Add(now(), fmt::format("nemesis: n{} restarted over its disk: {}", i,
                                  rv == 0 ? "ok" : raft_strerror(rv)));
  TENURE_ASSERT(rv == 0);
  return true;
}

// The persisted snapshot must be the one raft last knew of, and the stored
// entries must reach back to it with no gap.
bool Cluster::CanRestart(unsigned i) {
  struct raft* r = &fixture_.servers[i].raft;
  raft_index snapshot_index = r->log.snapshot.last_index;
  if (r->snapshot.put.data != nullptr) return false;  // a snapshot write in flight
  if (disks_[i]->held_appends() > 0) return false;
  return disks_[i]->ReachesBackTo(snapshot_index);
}

void Cluster::Cut(unsigned from, unsigned to, bool cut) {
  cut_[from][to] = cut;
  SyncLinks();
}

void Cluster::Isolate(unsigned i, bool isolated) {
  for (unsigned j = 0; j < size(); ++j) {
    if (j == i) continue;
    cut_[i][j] = isolated;
    cut_[j][i] = isolated;
  }
  SyncLinks();
}

void Cluster::Partition(const std::vector<unsigned>& side) {
  std::vector<bool> in_side(size(), false);
  for (unsigned i : side) in_side[i] = true;
  for (unsigned i = 0; i < size(); ++i) {
    for (unsigned j = 0; j < size(); ++j) {
      if (i != j && in_side[i] != in_side[j]) cut_[i][j] = true;
    }
  }
  SyncLinks();
}

void Cluster::HealNetwork() {
  for (auto& row : cut_) row.assign(size(), false);
  SyncLinks();
}

// Every link is either up or saturated (raft_fixture_kill saturates too;
// mixing in raft_fixture_disconnect would trip the fixture's assertions).
void Cluster::SyncLinks() {
  for (unsigned i = 0; i < size(); ++i) {
    for (unsigned j = 0; j < size(); ++j) {
      if (i == j) continue;
      bool drop = !alive(i) || !alive(j) || cut_[i][j];
      if (drop == raft_fixture_saturated(&fixture_, i, j)) continue;
      if (drop) {
        raft_fixture_saturate(&fixture_, i, j);
      } else {
        raft_fixture_desaturate(&fixture_, i, j);
      }
    }
  }
}

}  // namespace tenure::sim
