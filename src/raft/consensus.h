// Consensus: what a server needs from raft, whatever runs it. raft::Node is
// the one tenure ships (libraft over libuv, real disk and network); the
// in-process API tests run the same Server on a raft_fixture behind this
// interface, with no disk and no sockets (tests/inprocess).
//
// The contract is Node's (raft/node.h): every callback runs on the loop
// thread, never inline from the call that caused it.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/histogram.h"
#include "common/status.h"
#include "common/types.h"
#include "raft/snapshot_metrics.h"
#include "raft/transport.h"
#include "state/command.h"
#include "state/store.h"
#include "tls/context.h"

namespace tenure::raft {

// One server of the raft configuration, as this node sees it.
struct ServerInfo {
  std::uint64_t id = 0;
  std::string address;
  bool voter = false;   // RAFT_VOTER (else standby or spare)
  bool leader = false;  // the leader this node knows of
};

// What the leader knows of one server's replication (Consensus::Replication).
struct ServerProgress {
  std::uint64_t id = 0;
  std::uint64_t match_index = 0;   // the highest entry known to be stored there
  DurationMs since_heard_ms = -1;  // since the leader last heard from it; -1: not yet
};

class Consensus {
 public:
  using ProposeDone = std::function<void(Result<state::ApplyResult>)>;

  virtual ~Consensus() = default;

  virtual Status Start() = 0;
  virtual void Stop(std::function<void()> done) = 0;
  virtual void Propose(const state::Command& command, ProposeDone done) = 0;
  virtual void Barrier(std::function<void(Status)> done) = 0;
  virtual void TransferLeadership(std::uint64_t id, std::function<void(Status)> done) = 0;
  virtual void AddVoter(std::uint64_t id, const std::string& address,
                        std::function<void(Status)> done) = 0;
  virtual void RemoveServer(std::uint64_t id, std::function<void(Status)> done) = 0;
  virtual void JoinCluster(std::vector<std::string> raft_addresses) = 0;

  virtual bool IsLeader() const = 0;
  virtual std::uint64_t id() const = 0;
  virtual std::string LeaderAddress() const = 0;
  virtual std::uint64_t LeaderId() const = 0;
  virtual std::vector<std::string> PeerAddresses() const = 0;
  virtual std::vector<ServerInfo> Configuration() const = 0;
  virtual bool SoleVoter() const = 0;
  virtual std::uint64_t ConfigurationIndex() const = 0;
  virtual DurationMs LastContactMs() const = 0;
  virtual std::uint64_t term() const = 0;
  // The last entry of this node's log, and the highest it knows committed.
  virtual std::uint64_t LastIndex() const = 0;
  virtual std::uint64_t CommitIndex() const = 0;
  // The last entry applied, in the log's numbering (the Store's applied
  // index may run ahead of it after a snapshot restore, decision 0024).
  virtual std::uint64_t AppliedIndex() const = 0;
  // On the leader: every server of its configuration, itself included (its
  // own last index, heard 0 ms ago). Anywhere else: empty.
  virtual std::vector<ServerProgress> Replication() const = 0;
  // On a leader: why its latest proposal or barrier failed at the raft
  // log, until one succeeds. "" when it did not, or nothing was written.
  virtual std::string DiskFailure() const = 0;
  virtual std::vector<PeerAdvert> PeerAdverts() const = 0;
  // True while a member's raft connection comes from host `ip`
  // (Transport::HasLinkFrom). A consensus without a network: never.
  virtual bool HasRaftLinkFrom(const std::string& /*ip*/) const { return false; }
  virtual TransportCounters transport_counters() const = 0;
  // New certificates for raft's mutual TLS (SIGHUP): connections made from
  // now on use them. A consensus without a network (tests) ignores them.
  virtual void SetRaftTls(std::shared_ptr<const tls::Context> /*accept*/,
                          std::shared_ptr<const tls::Context> /*dial*/) {}
  virtual std::string StateName() const = 0;
  // Metrics (docs/metrics.md): where applies observe their duration. A
  // consensus that does not measure ignores it.
  virtual void set_apply_histogram(Histogram* /*histogram*/) {}
  // Where raft snapshots (taken here, or installed from the leader) are
  // counted. Null, or a consensus that does not measure: not counted.
  virtual void set_snapshot_metrics(SnapshotMetrics* /*metrics*/) {}
  // Where the duration of each write to the local raft log is observed:
  // from handing entries to the disk to their being written and synced.
  virtual void set_log_append_histogram(Histogram* /*histogram*/) {}

  // A state decoded off the loop thread from exactly `snapshot`, the bytes
  // of a RestoreState about to be proposed: its apply here uses it instead
  // of decoding them again (raft/restore_decoder.h). A consensus without a
  // decoder ignores it, and the apply decodes.
  virtual void OfferDecodedRestore(std::string /*snapshot*/, Result<state::Store> /*decoded*/) {}

  virtual void set_on_applied(std::function<void()> callback) = 0;
  virtual void set_on_broken(std::function<void(Status why)> callback) = 0;
  virtual void set_on_leadership(std::function<void(bool is_leader)> callback) = 0;
};

}  // namespace tenure::raft
