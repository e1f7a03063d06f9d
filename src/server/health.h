// Health: what GET /v1/operator/autopilot/health and /v1/agent/health/ready
// answer, from what raft knows (docs/operations.md, "Health"). Pure: raft's
// view and the time are inputs.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "common/types.h"
#include "raft/consensus.h"

namespace tenure::server {

// Consul's autopilot defaults: a server is healthy when the leader heard
// from it within LastContactThreshold and it trails the leader's last log
// entry by at most MaxTrailingLogs entries.
inline constexpr DurationMs kHealthLastContactMs = 200;
inline constexpr std::uint64_t kHealthMaxTrailingLogs = 250;

struct ServerHealth {
  std::uint64_t id = 0;
  bool voter = false;
  bool leader = false;
  DurationMs last_contact_ms = -1;  // since the leader heard from it; -1: never
  std::uint64_t last_index = 0;     // the leader's own, or what it knows stored there
  bool healthy = false;
};

struct ClusterHealth {
  bool healthy = false;  // every server of the configuration is
  // Voters that may fail with a quorum left: healthy voters minus a quorum
  // of all voters, never below 0.
  int failure_tolerance = 0;
  std::vector<ServerHealth> servers;  // in the configuration's order
};

// The leader's view: its configuration and Consensus::Replication. A server
// missing from `progress` was never heard from.
ClusterHealth EvaluateCluster(const std::vector<raft::ServerInfo>& configuration,
                              const std::vector<raft::ServerProgress>& progress,
                              std::uint64_t leader_id, std::uint64_t leader_last_index);

struct Readiness {
  std::string raft_state;    // RaftHealth::state
  std::string last_failure;  // RaftHealth::last_failure
  std::string disk_failure;  // Consensus::DiskFailure
  bool known_leader = false;
  std::uint64_t commit_index = 0;   // what this server knows committed
  std::uint64_t applied_index = 0;  // what its Store has applied
};

// "" when this server can serve consistent requests; otherwise why not:
// "raft unavailable (<state>): <why>", "disk error: <why>" (the latest
// write to the raft log failed), "no leader", "behind the leader by N
// entries" (committed entries not applied here yet, more than
// kHealthMaxTrailingLogs).
std::string NotReadyReason(const Readiness& readiness);

class Server;
// What `server` knows now, for NotReadyReason (Consul's readiness probe and
// etcd's /health ask it alike); defined in server/readiness.cc.
Readiness ReadinessOf(const Server& server);

// Autopilot's StableSince: when each server's health last changed, as the
// leader saw it. Forgotten when the term changes (a new leader starts over
// from the first report it gives).
class HealthHistory {
 public:
  // When `id`'s health became `healthy`: `now` if it just changed (or was
  // never noted in this term), else the earlier time.
  UnixMs Note(std::uint64_t term, std::uint64_t id, bool healthy, UnixMs now);

 private:
  std::uint64_t term_ = 0;
  std::map<std::uint64_t, std::pair<bool, UnixMs>> since_;
};

}  // namespace tenure::server
