// Node: one raft server over libraft 0.15 (raft_uv disk I/O, and tenure's
// own transport: raft/transport.h), applying committed commands to a
// state::Store.
//
// Threading: everything runs on the thread that runs the asio io_context
// given to the constructor; libuv's loop is driven from it (uv_driver.h).
// No callback is ever invoked from inside another raft callback's stack in a
// way that could re-enter raft_close (see the libraft pitfalls in
// docs/architecture.md): every callback below runs from the io_context after
// libuv returned, never inline from Propose/Barrier/Stop.
//
// Replicated state: the Store. Soft state: leadership, last contact.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/limits.h"
#include "common/status.h"
#include "common/types.h"
#include "raft/consensus.h"
#include "raft/transport.h"
#include "raft/wire/cluster_key.h"
#include "state/command.h"
#include "state/store.h"

namespace boost::asio {
class io_context;
}

namespace tenure::raft {

struct Peer {
  std::uint64_t id = 0;
  std::string address;  // "host:port" of the peer's raft transport
};

// The default snapshot cadence. Either way the entries held (threshold,
// doubled within the spacing, plus trailing, plus a proposal window's worth
// applied while a snapshot is written) fit in the one AppendEntries libraft
// sends a lagging follower.
inline constexpr unsigned kSnapshotThreshold = 16384;
inline constexpr unsigned kSnapshotTrailing = 4096;
inline constexpr std::uint64_t kSnapshotSpacingMs = 1000;
static_assert(2 * kSnapshotThreshold + kSnapshotTrailing + limits::kProposalsInFlightMax <=
              limits::kRaftAppendEntriesMax);

struct NodeOptions {
  std::uint64_t id = 1;
  std::string address = "127.0.0.1:8300";  // this node's raft transport address
  // Where to listen, when it differs from `address` (the address the other
  // members dial: a NAT, a container port mapping, or the fault tests'
  // partitioning proxy). Empty: listen on `address`.
  std::string bind_address;
  std::string data_dir;  // raft log and snapshots; created if missing
  // Configuration used on the very first start (ignored once the data dir
  // holds a raft log). A one-member cluster is simply {self}.
  std::vector<Peer> bootstrap;
  // 500/50 ms: 3-server failover p50 0.87 s here (docs/benchmarks.md); 1000/100
  // gave 1.78 s. Raise both on slow disks or busy VMs (tenure server flags).
  unsigned election_timeout_ms = 500;
  unsigned heartbeat_timeout_ms = 50;
  // libraft's default (1024) costs 4-5x throughput; see docs/architecture.md.
  // A snapshot also comes early once the entries since the last one hold
  // limits::kRaftLogBytesMax, and trailing entries are cut to
  // limits::kRaftTrailingBytesMax (log_memory.h).
  // Within snapshot_spacing_ms of the last snapshot the threshold is doubled
  // (decision 0061: each snapshot forks the server); 0 turns the spacing off.
  unsigned snapshot_threshold = kSnapshotThreshold;
  unsigned snapshot_trailing = kSnapshotTrailing;
  std::uint64_t snapshot_spacing_ms = kSnapshotSpacingMs;
  // How long a leader waits for a follower's answer to an InstallSnapshot
  // before it sends the snapshot again: libraft's default, kept (a large
  // state over a slow link takes long). The cluster tests that wait for an
  // install set less (tests/raft/cluster_test.cc says why).
  unsigned install_snapshot_timeout_ms = 30'000;
  std::uint64_t log_bytes_max = limits::kRaftLogBytesMax;
  std::uint64_t trailing_bytes_max = limits::kRaftTrailingBytesMax;
  // Told to peers in the raft handshake, for the leader's member records.
  std::string node_name;
  std::string http_address;
  std::string etcd_address;  // "" when this server serves no etcd API
  std::string zk_address;    // "" when this server serves no ZooKeeper port
  // -raft-key-file: peers prove they hold it before raft sees a byte. Empty:
  // any process that reaches the raft port is trusted (docs/security.md).
  wire::ClusterKey cluster_key;
  // Mutual TLS on every raft connection (both set) or none (docs/tls.md).
  std::shared_ptr<const tls::Context> tls_accept;
  std::shared_ptr<const tls::Context> tls_dial;
  // Without a key and TLS, refuse to add servers that ask to join: a keyless
  // cluster is a choice (-raft-insecure-keyless), not something a server
  // started alone becomes (docs/security.md).
  bool refuse_keyless_joins = false;
  // The raft message gates' deadline and budget (wire::GateLimits); tests
  // shrink them.
  DurationMs message_time_ms = limits::kRaftMessageTimeMs;
  std::uint64_t inbound_bytes_max = limits::kRaftInboundBytesMax;
};

class Node final : public Consensus {
 public:
  Node(boost::asio::io_context& io, state::Store& store, NodeOptions options);
  ~Node() override;
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  // Opens the data dir, bootstraps on first start, restores the latest
  // snapshot and log into the Store, and starts raft.
  Status Start() override;
  // Closes raft (deferred to a fresh loop turn, never from a raft callback),
  // drains libuv and calls done. New proposals are refused at once; those
  // already in flight complete first (committed ones with their result, the
  // rest with kUnavailable). The Node may be destroyed from inside done.
  // Calling it again (or before Start) just calls done.
  void Stop(std::function<void()> done) override;

  // Appends `command` to the log; `done` runs on the loop thread once it is
  // applied locally (with the Store's result) or failed: kNotLeader when this
  // node is not the leader, kUnavailable when leadership was lost before the
  // outcome was known or too many proposals are in flight.
  void OfferDecodedRestore(std::string snapshot, Result<state::Store> decoded) override;
  void Propose(const state::Command& command, ProposeDone done) override;
  // Completes once every entry committed before the call is applied here
  // (a raft barrier). Used for ?consistent reads and on becoming leader.
  void Barrier(std::function<void(Status)> done) override;
  // Hands leadership to voter `id` (0: the most up-to-date voter) with
  // raft_transfer. `done` gets OK once `id` leads (or, for 0, anyone else
  // does); kInvalidArgument for an id that is not another voter;
  // kNotLeader here; kUnavailable when the transfer timed out (after an
  // election timeout) or one is already under way.
  void TransferLeadership(std::uint64_t id, std::function<void(Status)> done) override;
  // Adds server `id` at `address` and promotes it to voter once it has
  // caught up (raft_add, raft_assign); RemoveServer takes it out
  // (raft_remove). Leader only; one change at a time (kUnavailable while
  // another runs); kInvalidArgument for an id that is already (or not) a
  // member.
  void AddVoter(std::uint64_t id, const std::string& address,
                std::function<void(Status)> done) override;
  void RemoveServer(std::uint64_t id, std::function<void(Status)> done) override;

  // libraft's own state: true as soon as this node won an election, which
  // may be before on_leadership(true) (that one waits for a barrier).
  bool IsLeader() const override;
  std::uint64_t id() const override;
  // "host:port" of the current leader's raft transport, "" when unknown.
  std::string LeaderAddress() const override;
  // The current leader's raft id, 0 when unknown.
  std::uint64_t LeaderId() const override;
  // Raft transport addresses of every voter in the current configuration.
  std::vector<std::string> PeerAddresses() const override;
  // The latest configuration this node has (committed or not) and the index
  // of its log entry (0 before any).
  std::vector<ServerInfo> Configuration() const override;
  // True if that configuration's only voter is this node: no other server
  // can be elected, so leadership needs no confirmation.
  bool SoleVoter() const override;
  std::uint64_t ConfigurationIndex() const override;
  // Milliseconds since this node last heard from a leader; 0 on the leader.
  // An approximation (libraft has no such counter): see node.cc. Counts from
  // Start on a node that has not seen a leader yet.
  DurationMs LastContactMs() const override;
  std::uint64_t term() const override;
  std::uint64_t LastIndex() const override;
  std::uint64_t CommitIndex() const override;
  std::uint64_t AppliedIndex() const override;
  // Index of the first entry still in this server's log (the entries before
  // it were compacted into a snapshot); 0 when stopped. A follower whose
  // next entry is below the leader's gets the leader's snapshot.
  std::uint64_t FirstLogIndex() const;
  // match_index from libraft's leader progress; since_heard_ms from the
  // transport: the last raft message from that server that passed the gate.
  std::vector<ServerProgress> Replication() const override;
  std::string DiskFailure() const override;

  // What each authenticated peer said about itself in its latest handshake.
  std::vector<PeerAdvert> PeerAdverts() const override;
  bool HasRaftLinkFrom(const std::string& ip) const override;
  TransportCounters transport_counters() const override;
  // Times this follower forgot its leader because that leader's raft
  // connections all closed (decision 0031; logged as "forgot leader").
  std::uint64_t leaders_forgotten() const;
  void SetRaftTls(std::shared_ptr<const tls::Context> accept,
                  std::shared_ptr<const tls::Context> dial) override;
  // The raft port actually bound (tests that listen on port 0).
  std::uint16_t raft_port() const;
  // libraft's state: "Leader", "Follower", "Candidate", "Unavailable", or
  // "Stopped" when the node is not running.
  std::string StateName() const override;

  // Until this node is a voter of the configuration it has, asks the servers
  // at these raft addresses (or the leader they name) to add it, over the
  // authenticated transport (a join handshake); retries every second, and
  // logs each refusal. Stops on its own once this node votes, or on Stop.
  void JoinCluster(std::vector<std::string> raft_addresses) override;

  // Runs after each batch of applied entries (new data in the Store).
  void set_on_applied(std::function<void()> callback) override;
  void set_apply_histogram(Histogram* histogram) override;
  void set_snapshot_metrics(SnapshotMetrics* metrics) override;
  void set_log_append_histogram(Histogram* histogram) override;
  // Runs once when this node's libraft instance stopped working for good:
  // libraft's unavailable state (it keeps answering but never leads or
  // follows again), or a failed write to the log. The owner must Stop this
  // node and start a new one from the data dir (server::Server does).
  void set_on_broken(std::function<void(Status why)> callback) override;
  // Runs when this node becomes leader (after a barrier, so the Store has
  // every committed entry) and when it stops being leader.
  void set_on_leadership(std::function<void(bool is_leader)> callback) override;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tenure::raft
