#include "nemesis.h"

#include <fmt/core.h>

#include <algorithm>
#include <cstdlib>

namespace tenure::sim {
namespace {

void TransferDone(struct raft_transfer* req) { delete req; }

}  // namespace

Nemesis::Nemesis(Cluster* cluster, Rng rng, NemesisOptions options)
    : cluster_(cluster),
      rng_(rng),
      options_(options),
      max_down_((cluster->size() - 1) / 2),
      next_at_(rng_.Uniform(options.interval_min_ms, options.interval_max_ms)) {}

std::string Nemesis::Summary() const {
  std::string out;
  for (const auto& [what, count] : counts_) out += fmt::format("{}={} ", what, count);
  return out;
}

unsigned Nemesis::Down() const {
  unsigned down = 0;
  for (const Fault& fault : active_) down += static_cast<unsigned>(fault.servers.size());
  return down;
}

void Nemesis::Step() {
  RealMs now = cluster_->now();
  struct raft_fixture* fixture = cluster_->fixture();
  for (unsigned i = 0; i < cluster_->size(); ++i) {
    if (rng_.Percent(5)) {
      raft_fixture_set_randomized_election_timeout(fixture, i,
                                                   static_cast<unsigned>(rng_.Uniform(1000, 2000)));
    }
  }
  for (std::size_t k = 0; k < active_.size();) {
    Fault& fault = active_[k];
    if (fault.restart_at != 0 && now >= fault.restart_at) {
      fault.restart_at = 0;
      if (cluster_->Restart(fault.target)) Count("restart");
    }
    if (fault.restart_at == 0 && now >= fault.ends_at) {
      Fault ended = fault;
      active_.erase(active_.begin() + static_cast<std::ptrdiff_t>(k));
      End(ended);  // may append a follow-up restart
      continue;
    }
    ++k;
  }
  if (stopping_) return;
  if (now >= next_at_) {
    StartOne();
    next_at_ = now + rng_.Uniform(options_.interval_min_ms, options_.interval_max_ms);
  }
}

void Nemesis::HealAll() {
  stopping_ = true;
  for (Fault& fault : active_) fault.ends_at = 0;
  Step();
  for (unsigned i = 0; i < cluster_->size(); ++i) {
    bool restarting = false;
    for (const Fault& fault : active_)
      restarting |= fault.kind == Kind::kRestart && fault.target == i;
    if (!restarting) RestartIfStopped(i);
  }
}

// Servers whose raft stopped itself (a failed disk write) come back only as
// new processes: kill, restart once drained, revive.
void Nemesis::RestartIfStopped(unsigned i) {
  if (cluster_->raft(i)->state != RAFT_UNAVAILABLE) return;
  if (cluster_->alive(i)) cluster_->Kill(i);
  Fault restart{Kind::kRestart, i, {i}, 0, 0, cluster_->now() + Cluster::kDrainMs};
  restart.ends_at = restart.restart_at + (stopping_ ? 0 : rng_.Uniform(0, 2'000));
  active_.push_back(restart);
}

void Nemesis::End(Fault& fault) {
  switch (fault.kind) {
    case Kind::kIsolate:
      cluster_->Isolate(fault.target, false);
      break;
    case Kind::kPartition:
    case Kind::kOneWay:
      cluster_->HealNetwork();
      break;
    case Kind::kPause:
    case Kind::kRestart:
      cluster_->Revive(fault.target);
      break;
    case Kind::kDisk:
      cluster_->disk(fault.target).Clear();
      break;
  }
  if (fault.kind != Kind::kPause && fault.kind != Kind::kRestart) {
    cluster_->history().Add(cluster_->now(),
                            fmt::format("nemesis: fault on n{} healed", fault.target));
  }
  for (unsigned i : fault.servers) RestartIfStopped(i);
}

void Nemesis::StartOne() {
  if (rng_.Percent(45)) return StartInstant();
  int dice = static_cast<int>(rng_.Uniform(0, 99));
  Kind kind = dice < 15   ? Kind::kIsolate
              : dice < 25 ? Kind::kPartition
              : dice < 35 ? Kind::kOneWay
              : dice < 60 ? Kind::kPause
              : dice < 80 ? Kind::kRestart
                          : Kind::kDisk;
  StartLasting(kind);
}

// Prefers the leader half of the time: its failures are the interesting ones.
unsigned Nemesis::PickTarget(const std::vector<bool>& busy) {
  std::optional<unsigned> leader = cluster_->ReadyLeader();
  if (leader && !busy[*leader] && rng_.Percent(50)) return *leader;
  std::vector<unsigned> free;
  for (unsigned i = 0; i < cluster_->size(); ++i) {
    if (!busy[i]) free.push_back(i);
  }
  return free.empty() ? cluster_->size() : free[rng_.Index(static_cast<unsigned>(free.size()))];
}

void Nemesis::StartLasting(Kind kind) {
  unsigned n = cluster_->size();
  std::vector<bool> busy(n, false);
  bool network_fault = false;
  for (const Fault& fault : active_) {
    for (unsigned i : fault.servers) busy[i] = true;
    if (fault.kind == Kind::kIsolate || fault.kind == Kind::kPartition ||
        fault.kind == Kind::kOneWay) {
      network_fault = true;
    }
  }
  unsigned allowed = max_down_ + (rng_.Percent(10) ? 1 : 0);
  bool network = kind == Kind::kIsolate || kind == Kind::kPartition || kind == Kind::kOneWay;
  if (network && network_fault) return;  // one network fault at a time: heals cannot clash
  unsigned target = PickTarget(busy);
  if (target == n) return;
  Fault fault{kind, target, {target}, 0, 0, 0};
  fault.ends_at = cluster_->now() + rng_.Uniform(options_.fault_min_ms, options_.fault_max_ms);
  if (kind == Kind::kPartition) {
    unsigned side = static_cast<unsigned>(rng_.Uniform(1, std::max(1u, allowed)));
    for (unsigned i = 0; i < n && fault.servers.size() < side; ++i) {
      unsigned candidate = (target + 1 + i) % n;
      if (!busy[candidate] && candidate != target) fault.servers.push_back(candidate);
    }
  }
  if (kind == Kind::kOneWay) {
    fault.to = (target + 1 + rng_.Index(n - 1)) % n;
    fault.servers.clear();  // the server stays up
  }
  if (Down() + fault.servers.size() > allowed) return;

  History& history = cluster_->history();
  RealMs now = cluster_->now();
  switch (kind) {
    case Kind::kIsolate:
      cluster_->Isolate(target, true);
      history.Add(now, fmt::format("nemesis: n{} isolated", target));
      Count("isolate");
      break;
    case Kind::kPartition: {
      cluster_->Partition(fault.servers);
      std::string side;
      for (unsigned i : fault.servers) side += fmt::format(" n{}", i);
      history.Add(now, fmt::format("nemesis: partition{} | rest", side));
      Count("partition");
      break;
    }
    case Kind::kOneWay:
      cluster_->Cut(target, fault.to, true);
      history.Add(now, fmt::format("nemesis: messages n{} -> n{} dropped", target, fault.to));
      fault.servers = {};
      Count("one-way");
      break;
    case Kind::kPause:
      cluster_->Kill(target);
      Count("pause");
      break;
    case Kind::kRestart:
      cluster_->Kill(target);
      fault.restart_at = now + Cluster::kDrainMs;
      break;
    case Kind::kDisk: {
      static constexpr unsigned kOps[] = {kDiskAppend, kDiskTermAndVote, kDiskTruncate, kDiskAll};
      unsigned ops = kOps[rng_.Index(4)];
      int after = static_cast<int>(rng_.Uniform(0, 20));
      int times = rng_.Percent(50) ? -1 : static_cast<int>(rng_.Uniform(1, 3));
      cluster_->disk(target).Fail(ops, after, times);
      history.Add(now, fmt::format("nemesis: n{} disk writes (ops {}) fail after {}, {} times",
                                   target, ops, after, times));
      Count("disk");
      break;
    }
  }
  if (kind == Kind::kOneWay) fault.servers = {};
  active_.push_back(fault);
}

// A server's wall clock a day ahead or behind, or back from it: the mistake
// an operator or a broken time source makes. One server at a time.
void Nemesis::JumpWallClock() {
  constexpr DurationMs kDayMs = 86'400'000;
  unsigned jumped = cluster_->size();
  for (unsigned i = 0; i < cluster_->size(); ++i) {
    if (std::abs(cluster_->server(i).clock().wall_offset_ms()) >= kDayMs) jumped = i;
  }
  unsigned i = jumped < cluster_->size() ? jumped : rng_.Index(cluster_->size());
  DurationMs offset = rng_.Uniform(-options_.wall_offset_max_ms, options_.wall_offset_max_ms);
  if (jumped == cluster_->size()) offset += rng_.Percent(50) ? kDayMs : -kDayMs;
  cluster_->server(i).clock().SetWallOffset(offset);
  cluster_->history().Add(cluster_->now(),
                          fmt::format("nemesis: n{} wall clock jumped to offset {} ms", i, offset));
  Count(jumped == cluster_->size() ? "day-jump" : "day-jump-back");
}

void Nemesis::StartInstant() {
  if (options_.day_jumps && rng_.Percent(25)) return JumpWallClock();
  unsigned n = cluster_->size();
  unsigned i = rng_.Index(n);
  RealMs now = cluster_->now();
  History& history = cluster_->history();
  SimServer& server = cluster_->server(i);
  switch (rng_.Index(5)) {
    case 0: {
      std::optional<unsigned> leader = cluster_->ReadyLeader();
      if (!leader) return;
      int appends = static_cast<int>(rng_.Uniform(1, 3));
      if (rng_.Percent(50)) {
        cluster_->server(*leader).FailNextAppends(appends);
        history.Add(now, fmt::format("nemesis: n{}'s next {} proposals fail to reach its disk",
                                     *leader, appends));
        Count("append-fault");
      } else {
        // Aimed at the window between an expiry and its retries (etcd
        // 11456): the expiring session must get no lock meanwhile.
        RealMs until = now + rng_.Uniform(2'000, 20'000);
        cluster_->server(*leader).FailExpiriesUntil(until);
        history.Add(now, fmt::format("nemesis: n{}'s expiries fail to reach its disk until t={}",
                                     *leader, until));
        Count("expiry-fault");
      }
      break;
    }
    case 1: {
      DurationMs offset = rng_.Uniform(-options_.wall_offset_max_ms, options_.wall_offset_max_ms);
      server.clock().SetWallOffset(offset);
      history.Add(now, fmt::format("nemesis: n{} wall clock stepped to offset {} ms", i, offset));
      Count("clock-step");
      break;
    }
    case 2: {
      std::int64_t ppm = rng_.Uniform(-options_.drift_ppm_max, options_.drift_ppm_max);
      server.clock().SetDrift(now, ppm);
      history.Add(now, fmt::format("nemesis: n{} monotonic clock rate off by {} ppm", i, ppm));
      Count("drift");
      break;
    }
    case 3: {
      unsigned network_ms = static_cast<unsigned>(rng_.Uniform(5, 80));
      unsigned disk_ms = static_cast<unsigned>(rng_.Uniform(1, 40));
      raft_fixture_set_network_latency(cluster_->fixture(), i, network_ms);
      raft_fixture_set_disk_latency(cluster_->fixture(), i, disk_ms);
      Count("latency");
      break;
    }
    default: {
      std::optional<unsigned> leader = cluster_->ReadyLeader();
      if (!leader) return;
      auto* req = new struct raft_transfer;
      if (raft_transfer(cluster_->raft(*leader), req, 0, &TransferDone) != 0) {
        delete req;
        return;
      }
      history.Add(now, fmt::format("nemesis: n{} hands leadership over", *leader));
      Count("transfer");
      break;
    }
  }
}

}  // namespace tenure::sim
