// Server: one tenure server. Owns the replicated Store, the raft Node that
// feeds it, and the leader duties around them: session TTL timers (expiry
// becomes a SessionDestroy entry), renewals answered from memory, tombstone
// reaping, and the parked blocking queries woken after each apply.
//
// Loop thread only. Replicated state: the Store. Soft state: timers,
// waiters, the set of sessions whose expiry is being committed.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "raft/node.h"
#include "server/acl_resolver.h"
#include "server/leader_duties.h"
#include "server/metrics.h"
#include "server/queue_parking.h"
#include "server/waiters.h"
#include "state/event_log.h"
#include "state/store.h"
#include "tls/context.h"

namespace boost::asio {
class io_context;
}

namespace tenure::server {

class LoopStallMeter;  // loop_stall_meter.h

struct ServerOptions {
  std::string node_name = "tenure";  // Consul's NodeName, the default session Node
  // Where this server answers HTTP, as other members reach it: recorded in
  // its member record so that followers can forward to it (decision 0008).
  std::string http_address;
  // Where this server answers etcd's v3 API, as other members reach it
  // (host:port, or https://host:port for its TLS port); "" when it serves
  // none. Recorded in its member record: followers relay etcd
  // calls to the leader's, and MemberList lists every member's (decision
  // 0055).
  std::string etcd_address;
  // Where this server serves ZooKeeper's client port, as other members
  // reach it (host:port, or tls://host:port when only its TLS port
  // serves); "" when it serves none. Followers splice ZooKeeper
  // connections to the leader's (decision 0056).
  std::string zk_address;
  // Set when the servers serve HTTPS (-https-addr): followers forward to the
  // leader over TLS with these files (the CA, and this server's certificate
  // for a leader that requires one). Unset: forwarding in clear.
  std::optional<tls::ClientFiles> forward_tls;
  std::string datacenter = "dc1";
  // -data-dir (raft keeps its files in raft.data_dir below it); where an
  // operator drops acl-bootstrap-reset. Empty in tests without a disk.
  std::string data_dir;
  // -operator-token-file: with ACLs off, the secret that lets a request
  // change the cluster (remove a peer, transfer leadership). Empty: nobody
  // may (decision 0012). With ACLs on, operator:write decides instead.
  std::string operator_token;
  // -acl-*: Consul's ACL system (docs/acl.md).
  AclConfig acl;
  // Sessions expire between TTL and TTL x multiplier after the last renewal.
  // 2 is Consul's SessionTTLMultiplier, which clients such as Patroni count on.
  int session_ttl_multiplier = 2;
  // How often the leader forgets old tombstones (they then live 1-2 periods).
  DurationMs tombstone_reap_period_ms = 60'000;
  // How often the leader writes a Checkpoint so that replicas compare their
  // state (state/store.h; each costs every replica one digest of its whole
  // state). 0: never.
  DurationMs checkpoint_period_ms = 30'000;
  // -disable-metrics: count nothing (docs/metrics.md).
  bool metrics_enabled = true;
  // -fair-queue=false: the KV handler ignores ?queue as Consul does (a plain
  // acquire), so clients can be tested against Consul's behaviour.
  bool fair_queue = true;
  // Test hook (TENURE_TEST_DIVERGE_KEY): after applying a write of this key,
  // this replica corrupts its value in memory (Store::TEST_Corrupt).
  std::string TEST_diverge_key;
  // The history window an etcd listener serves (decision 0048 section 1),
  // in bytes (-etcd-history-size): set, the Store records every key change
  // and the Server keeps the window (state/event_log.h); unset (no etcd
  // listener), nothing is recorded or kept.
  std::optional<std::size_t> etcd_history_bytes;
  raft::NodeOptions raft;
  // What runs raft. Empty: a raft::Node over `raft` (what tenure ships). The
  // in-process API tests run the same Server on a raft_fixture (no disk, no
  // sockets); the Server makes a new one after raft breaks, as with Node.
  using MakeConsensus = std::function<std::unique_ptr<raft::Consensus>(
      boost::asio::io_context& io, state::Store& store, const raft::NodeOptions& options)>;
  MakeConsensus make_consensus;
};

class Server {
 public:
  Server(boost::asio::io_context& io, const Clock& clock, ServerOptions options);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  Status Start();
  void Stop(std::function<void()> done);
  // -join: until this server votes, asks the servers at these raft addresses
  // (or the leader they name) to add it (raft::Node::JoinCluster); carried
  // over a raft restart.
  void JoinCluster(std::vector<std::string> raft_addresses);
  // Called once, on the loop thread, when this server cannot go on: its
  // state diverged from the leader's at a checkpoint. The server has stopped
  // serving writes; the callback decides how the process ends (the agent
  // exits non-zero). Without a callback the server stops itself.
  void set_on_fatal(std::function<void(Status why)> callback) { on_fatal_ = std::move(callback); }

  const state::Store& store() const { return store_; }
  // The etcd history window, null without one (ServerOptions). It follows
  // store(): after each apply batch it holds that batch's events.
  const state::EventLog* history() const { return history_ ? &*history_ : nullptr; }
  // Told after each apply batch with a history window, just before the window
  // takes the batch (so the events are handed over without a copy; work a
  // listener posts finds them in the window): the batch's key changes
  // (oldest first; a window may drop them, one of 0 bytes keeps none) and,
  // when the batch replaced
  // the state whole (a restore, an installed snapshot, a raft restart's
  // replay), where: changes before it were never seen. The etcd layer's
  // watch hub feeds its watchers from here. Returns an id for
  // RemoveHistoryListener.
  struct HistoryBatch {
    const std::vector<state::KvEvent>& events;
    std::optional<LogIndex> replaced_at;
  };
  using HistoryListener = std::function<void(const HistoryBatch& batch)>;
  std::uint64_t AddHistoryListener(HistoryListener listener);
  void RemoveHistoryListener(std::uint64_t id);
  // Called after every apply batch with what it touched, before blocking
  // queries wake (the ZooKeeper port's watches, decision 0056 section 5).
  // A listener may add or remove listeners.
  using ChangeListener = std::function<void(const state::Changes& changes)>;
  std::uint64_t AddChangeListener(ChangeListener listener);
  void RemoveChangeListener(std::uint64_t id);
  const ServerOptions& options() const { return options_; }
  const Clock& clock() const { return clock_; }
  Waiters& waiters() { return *waiters_; }
  const Waiters& waiters() const { return *waiters_; }
  // Fair-acquire requests parked in a key's queue (decision 0027).
  QueueParking& queue_parking() { return *queue_parking_; }
  // What this server counted (docs/metrics.md); `enabled` false with
  // -disable-metrics.
  const ServerMetrics& metrics() const { return metrics_; }
  // The etcd layer's counts (ServerMetrics::etcd_*); nothing with -disable-metrics.
  // REQUIRES: `method` outlives the Server (a static name).
  void CountEtcdCall(std::string_view method, int code) {
    if (metrics_.enabled) ++metrics_.etcd_calls[{method, code}];
  }
  void SetEtcdWatchers(std::size_t watchers) { metrics_.etcd_watchers = watchers; }
  // The ZooKeeper layer's counts (ServerMetrics::zk_*): `op` and `code` are
  // static names (zk/protocol.h).
  void CountZkRequest(std::string_view op, std::string_view code) {
    if (metrics_.enabled) ++metrics_.zk_requests[{op, code}];
  }
  void SetZkPort(std::size_t connections, std::size_t watches) {
    metrics_.zk_served = true;
    metrics_.zk_connections = connections;
    metrics_.zk_watches = watches;
  }
  // How late the loop serves a due timer (loop_stall_meter.h); null with
  // -disable-metrics.
  const LoopStallMeter* loop_stall_meter() const { return stall_meter_.get(); }

  // Stamps the command with the replicated clock (decision 0037) and the wall
  // clock, and proposes it. `done` runs on
  // the loop thread with the apply result or kNotLeader/kUnavailable. An
  // acquire (or txn lock) by a session whose expiry is under way is refused
  // here with `invalid session "<id>"`, as the Store would answer.
  void Propose(state::CommandBody body, raft::Consensus::ProposeDone done);
  // The state decoded, off the loop thread, from exactly `snapshot`: the
  // bytes of a RestoreState about to be proposed here (raft::Consensus).
  void OfferDecodedRestore(std::string snapshot, Result<state::Store> decoded) {
    if (node_) node_->OfferDecodedRestore(std::move(snapshot), std::move(decoded));
  }
  // Completes when every entry committed before the call is applied here
  // (?consistent reads). Calls that arrive while a barrier is in flight share
  // the next one: never the in-flight one, which may predate them.
  void Barrier(std::function<void(Status)> done);

  // Renews a TTL session: its deadline moves at once, in memory, and `done`
  // runs once a barrier issued after the renewal commits (shared with other
  // renewals and ?consistent reads), so a deposed leader that has not
  // noticed yet never acknowledges one (decision 0011). No index changes.
  // kNotFound if the session does not exist or its expiry is under way;
  // kNotLeader if this server cannot renew. The pointer is valid in `done`,
  // which runs before Renew returns unless a barrier is needed.
  using RenewDone = std::function<void(Result<const state::Session*>)>;
  void Renew(const state::SessionId& session_id, RenewDone done);
  // Moves a TTL session's deadline as Renew does, and acknowledges nothing:
  // no barrier (a ZooKeeper request that is not a ping renews its session
  // so; its answer claims nothing about the session). kNotFound or
  // kNotLeader as Renew.
  Status Touch(const state::SessionId& session_id);
  // True once the leader has decided the session expired, until the
  // SessionDestroy commits; such a session may not acquire anything.
  bool IsExpiring(const state::SessionId& session_id) const;
  // A fresh random session id not used by any existing session.
  state::SessionId NewSessionId();
  // A new etcd lease number: random in [1, 2^63), no session's (decision 0048 section 3).
  std::int64_t NewLeaseNumber();

  // ACLs (docs/acl.md). The caller a request's secret names ("" = none),
  // or Consul's 403 "ACL not found".
  // New certificates for raft's mutual TLS (SIGHUP).
  void SetRaftTls(std::shared_ptr<const tls::Context> accept,
                  std::shared_ptr<const tls::Context> dial) {
    node_->SetRaftTls(std::move(accept), std::move(dial));
  }
  Result<Caller> ResolveCaller(std::string_view secret);
  // Whether a caller resolved earlier still stands (AclResolver::StillValid).
  bool CallerStillValid(const Caller& caller) const;
  const AclConfig& acl_config() const { return acl_resolver_.config(); }
  // A UUID from the system's CSPRNG (getrandom): token secrets must not be
  // predictable from the accessor and session IDs a client can see.
  static std::string NewSecretUuid();
  // The index an operator wrote into <data-dir>/acl-bootstrap-reset to allow
  // one more PUT /v1/acl/bootstrap (docs/acl.md, "Lost the management
  // token"); none when the file is absent. kInvalidArgument when it does
  // not hold a number. ForgetBootstrapReset removes it after a bootstrap.
  Result<LogIndex> BootstrapResetIndex() const;
  void ForgetBootstrapReset() const;

  bool IsLeader() const;
  // How long until this leader expires the TTL session unless it is
  // renewed (its session timer's deadline, at most TTL x multiplier), in
  // ms; nullopt on a follower, for a session without a TTL or not armed.
  std::optional<DurationMs> SessionTtlRemainingMs(const state::SessionId& session_id) const;
  bool KnownLeader() const;
  DurationMs LastContactMs() const;
  std::string LeaderAddress() const;
  // raft_transfer to voter `id` (0: any); see raft::Node::TransferLeadership.
  void TransferLeadership(std::uint64_t id, std::function<void(Status)> done);
  void AddVoter(std::uint64_t id, const std::string& address, std::function<void(Status)> done);
  void RemoveServer(std::uint64_t id, std::function<void(Status)> done);
  std::vector<std::string> PeerAddresses() const;
  // True while a member's raft connection comes from host `ip` ("10.0.0.2"):
  // the HTTP listeners let such a host past the per-client connection
  // limit, since a follower forwards its clients' requests from there.
  bool IsMemberHost(const std::string& ip) const;
  std::vector<raft::ServerInfo> RaftConfiguration() const;
  std::uint64_t RaftConfigurationIndex() const;
  std::uint64_t NodeId() const;
  // The current leader's raft id, 0 when unknown.
  std::uint64_t LeaderId() const;
  // This server's member record as it should be (modify_index 0).
  state::Member SelfMember() const;
  // True when the replicated record of this server matches SelfMember().
  bool SelfRecordCurrent() const;
  // Where to forward to the leader: its record's HTTP address, or, before
  // the record is written (right after a first election), what the leader
  // said in its authenticated raft handshake with this server. Empty: no
  // leader, or it is this server, or neither source knows yet.
  struct LeaderRoute {
    std::uint64_t id = 0;  // 0: no leader known
    std::string http_address;
    std::string etcd_address;  // "" also when the leader serves no etcd API
    std::string zk_address;    // "" also when the leader serves no ZooKeeper port
  };
  LeaderRoute RouteToLeader() const;
  LogIndex IndexOf(const Watch& watch) const;

  // The raft instance's health, for /v1/agent/self (and health checks).
  struct RaftHealth {
    std::string state;           // raft::Node::StateName, or "Restarting"
    std::uint64_t term = 0;      // the current raft term (Consul's Stats.raft.term)
    std::uint64_t restarts = 0;  // raft instances restarted after breaking
    std::string last_failure;    // why the last one broke ("" if none)
    raft::TransportCounters transport;
  };
  RaftHealth Health() const;
  // For the health endpoints (server/health.h): raft's log as this server
  // has it, and, on the leader, every server's replication.
  std::uint64_t LastLogIndex() const { return node_->LastIndex(); }
  std::uint64_t CommitIndex() const { return node_->CommitIndex(); }
  std::uint64_t AppliedRaftIndex() const { return node_->AppliedIndex(); }
  std::vector<raft::ServerProgress> Replication() const { return node_->Replication(); }
  std::string DiskFailure() const { return node_->DiskFailure(); }

  // Test hooks.
  const LeaderDuties& TEST_duties() const { return duties_; }

 private:
  void OnApplied();
  void OnLeadership(bool is_leader);
  void LeaveUnattendedQueue(const std::string& key, const state::SessionId& session);
  void StartLeaderDuties();
  void ExpireSession(const state::SessionId& session_id);
  // Leader with ACLs on: writes the built-ins and the initial management
  // token when they are missing (AclSetup), retried every second.
  void EnsureAclSetup();
  // Leader: one timer for the earliest token expiration; expired tokens
  // are deleted with AclTokenDelete{reason=expired}.
  void ScheduleTokenExpiry();
  void ExpireTokens();
  // Keeps the one duties timer set to duties_.NextDeadline().
  void ScheduleDuties();
  void RunDuties();
  // Fair-acquire queues (decision 0027): schedule a KvQueueGrant for a key
  // left free with waiters, no sooner than floor_ms from now.
  static constexpr DurationMs kQueueGrantFloorMs = 10;
  void CheckQueue(const std::string& key, DurationMs floor_ms);
  void CheckQueues(const state::Changes& changes);
  void ProposeQueueGrant(const std::string& key);
  void ScheduleReap();
  // Leader: a Checkpoint every checkpoint_period_ms when entries were applied since.
  void ScheduleCheckpoint();
  void IssueBarrier();
  // Leader: writes SelfMember() if the replicated record is missing or
  // stale, retrying every second while still leader.
  void WriteSelfRecord();
  // Leader, once a second: the record of every other server of the
  // configuration says what the server itself said in its authenticated
  // raft handshake (name, HTTP address); decision 0012.
  void ScheduleMemberRecords();
  void WritePeerRecords();
  // A new Node over the Store's replacement; wires its callbacks.
  void MakeNode();
  // The raft instance broke (raft::Node::set_on_broken): stop it, start a new
  // one from the data dir, with a growing pause if it keeps breaking.
  void OnRaftBroken(Status why);
  void RestartRaft();

  boost::asio::io_context& io_;
  const Clock& clock_;
  ServerOptions options_;
  state::Store store_;
  std::optional<state::EventLog> history_;
  // Feeds the window an apply batch's changes (before anything else takes them).
  void FollowHistory(state::Changes& changes);
  void TellHistoryListeners(const HistoryBatch& batch);
  std::map<std::uint64_t, HistoryListener> history_listeners_;
  std::uint64_t next_history_listener_ = 1;
  std::map<std::uint64_t, ChangeListener> change_listeners_;
  std::uint64_t next_change_listener_ = 1;
  std::unique_ptr<raft::Consensus> node_;
  LeaderDuties duties_;
  std::unique_ptr<Waiters> waiters_;
  std::unique_ptr<QueueParking> queue_parking_;
  std::mt19937_64 random_;
  bool leader_ready_ = false;
  std::vector<std::function<void(Status)>> barrier_waiters_;  // for the next barrier
  bool barrier_in_flight_ = false;
  bool self_record_in_flight_ = false;
  bool peer_record_in_flight_ = false;
  bool acl_setup_in_flight_ = false;
  std::set<std::string> tokens_expiring_;  // accessors whose delete is in flight
  AclResolver acl_resolver_;
  std::vector<std::string> join_addresses_;
  // Restarts of a broken raft instance.
  bool restarting_ = false;
  bool stopping_ = false;
  std::uint64_t raft_restarts_ = 0;
  std::string raft_last_failure_;
  MonoMs last_restart_ms_ = MonoMs(-1);
  DurationMs restart_delay_ms_ = 0;
  LogIndex reap_mark_;  // tombstones at or below this are old enough to reap
  bool diverged_ = false;
  std::function<void(Status)> on_fatal_;
  struct Timers;  // reap, duties, member records, restart
  std::unique_ptr<Timers> housekeeping_;
  ServerMetrics metrics_;
  std::unique_ptr<LoopStallMeter> stall_meter_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace tenure::server
