// What the server layer counts for metrics (docs/metrics.md, decision 0023):
// plain numbers owned by the Server and bumped on the loop thread. Gauges
// (term, indexes, sessions, locks, parked queries) are not kept here: the
// metrics endpoint reads them from the Server when scraped.
#pragma once

#include <cstdint>
#include <map>
#include <string_view>
#include <utility>
#include <vector>

#include "common/histogram.h"
#include "raft/consensus.h"
#include "state/command.h"
#include "state/store.h"

namespace tenure::server {

struct ServerMetrics {
  // -disable-metrics: nothing is counted and the endpoints answer 404.
  bool enabled = true;

  // Raft, on this server.
  std::uint64_t leadership_gained = 0;  // this server became leader
  std::uint64_t leadership_lost = 0;    // this server stopped leading
  std::uint64_t proposals_committed = 0;
  std::uint64_t proposals_failed = 0;   // not committed (not leader, disk, shut down...)
  std::uint64_t proposals_pending = 0;  // handed to raft, not answered yet
  Histogram commit_seconds;             // proposal handed to raft -> applied here
  Histogram apply_seconds;              // one entry decoded and applied to the Store
  Histogram log_append_seconds;         // one write to the local raft log, synced
  raft::SnapshotMetrics snapshots;      // raft's own, taken or installed here

  // Sessions and locks, as this server's proposals found them (the leader's).
  std::uint64_t sessions_created = 0;
  std::uint64_t sessions_destroyed = 0;  // PUT /v1/session/destroy
  std::uint64_t sessions_expired = 0;    // TTL passed without renewal
  std::uint64_t lock_grants = 0;         // acquire or txn lock that got the lock
  std::uint64_t lock_refused_held = 0;   // another session holds it
  std::uint64_t lock_refused_lock_delay = 0;
  std::uint64_t fence_check_failures = 0;  // txn check-fence ops that failed
  std::uint64_t renewals = 0;              // acknowledged
  std::uint64_t renewals_failed = 0;       // unknown or expiring session, not leader

  // Blocking queries: from the apply that woke them to their answer.
  Histogram blocking_wake_seconds;

  // etcd's API (the etcd layer counts, the metrics endpoint reads): gRPC
  // calls ended, by method and gRPC status code; watchers served now. The
  // method is the etcd layer's own static name ("etcdserverpb.KV/Range",
  // from its method table: known methods only, bounded), so counting a call
  // copies nothing.
  std::map<std::pair<std::string_view, int>, std::uint64_t> etcd_calls;
  std::uint64_t etcd_watchers = 0;

  // ZooKeeper's port (the zk layer counts): requests answered, by op and
  // ZooKeeper's code, both the zk layer's static names ("getData", "NONODE":
  // bounded); connections and watches open now. zk_served once it listens.
  std::map<std::pair<std::string_view, std::string_view>, std::uint64_t> zk_requests;
  bool zk_served = false;
  std::uint64_t zk_connections = 0;
  std::uint64_t zk_watches = 0;
};

// What a proposal's outcome should count, decided from its command before
// the command goes to raft (the answer carries no command).
class OutcomeCounter {
 public:
  explicit OutcomeCounter(const state::CommandBody& body);
  // Counts an answered command: `proposed` is false for the leader's early
  // refusals, which never reached raft.
  void Count(const Result<state::ApplyResult>& result, bool proposed, ServerMetrics* metrics) const;
  // Whether the command counts anything beyond the proposal itself.
  bool interesting() const { return kind_ != Kind::kOther; }

 private:
  enum class Kind : std::uint8_t { kOther, kAcquire, kSessionCreate, kSessionDestroy, kTxn };
  Kind kind_ = Kind::kOther;
  bool expired_ = false;                // SessionDestroy{reason=expired}
  std::vector<std::size_t> lock_ops_;   // txn: indexes of lock ops
  std::vector<std::size_t> fence_ops_;  // txn: indexes of check-fence ops
};

}  // namespace tenure::server
