#include "server/health.h"
#include "server/server.h"

namespace tenure::server {

Readiness ReadinessOf(const Server& server) {
  const Server::RaftHealth raft = server.Health();
  Readiness readiness;
  readiness.raft_state = raft.state;
  readiness.last_failure = raft.last_failure;
  readiness.disk_failure = server.DiskFailure();
  readiness.known_leader = server.KnownLeader() || server.IsLeader();
  readiness.commit_index = server.CommitIndex();
  // Both in the log's numbering: the Store's index may run ahead of the log
  // after a snapshot restore (decision 0024).
  readiness.applied_index = server.AppliedRaftIndex();
  return readiness;
}

}  // namespace tenure::server
