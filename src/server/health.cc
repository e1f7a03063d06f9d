#include "server/health.h"

#include <algorithm>

namespace tenure::server {

ClusterHealth EvaluateCluster(const std::vector<raft::ServerInfo>& configuration,
                              const std::vector<raft::ServerProgress>& progress,
                              std::uint64_t leader_id, std::uint64_t leader_last_index) {
  ClusterHealth out;
  out.healthy = true;
  int voters = 0;
  int healthy_voters = 0;
  for (const raft::ServerInfo& server : configuration) {
    ServerHealth health;
    health.id = server.id;
    health.voter = server.voter;
    health.leader = server.id == leader_id;
    auto it = std::find_if(progress.begin(), progress.end(),
                           [&](const raft::ServerProgress& p) { return p.id == server.id; });
    if (it != progress.end()) {
      health.last_contact_ms = health.leader ? 0 : it->since_heard_ms;
      health.last_index = it->match_index;
    }
    const std::uint64_t trailing =
        leader_last_index > health.last_index ? leader_last_index - health.last_index : 0;
    health.healthy = health.leader || (health.last_contact_ms >= 0 &&
                                       health.last_contact_ms <= kHealthLastContactMs &&
                                       trailing <= kHealthMaxTrailingLogs);
    out.healthy = out.healthy && health.healthy;
    if (health.voter) {
      ++voters;
      if (health.healthy) ++healthy_voters;
    }
    out.servers.push_back(health);
  }
  out.failure_tolerance = std::max(0, healthy_voters - (voters / 2 + 1));
  return out;
}

std::string NotReadyReason(const Readiness& readiness) {
  if (readiness.raft_state != "Leader" && readiness.raft_state != "Follower" &&
      readiness.raft_state != "Candidate") {
    std::string why = "raft unavailable (" + readiness.raft_state + ")";
    if (!readiness.last_failure.empty()) why += ": " + readiness.last_failure;
    return why;
  }
  if (!readiness.disk_failure.empty()) return "disk error: " + readiness.disk_failure;
  if (!readiness.known_leader) return "no leader";
  if (readiness.commit_index > readiness.applied_index &&
      readiness.commit_index - readiness.applied_index > kHealthMaxTrailingLogs) {
    return "behind the leader by " +
           std::to_string(readiness.commit_index - readiness.applied_index) + " entries";
  }
  return "";
}

UnixMs HealthHistory::Note(std::uint64_t term, std::uint64_t id, bool healthy, UnixMs now) {
  if (term != term_) {
    term_ = term;
    since_.clear();
  }
  auto [it, inserted] = since_.try_emplace(id, healthy, now);
  if (!inserted && it->second.first != healthy) it->second = {healthy, now};
  return it->second.second;
}

}  // namespace tenure::server
