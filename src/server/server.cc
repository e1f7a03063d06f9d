// Server: the raft instance's life (start, stop, restart after breaking),
// barriers, applies and what raft reports. Proposals, ACL resolution,
// member records and leader duties are in server_*.cc.
#include "server/server.h"

#include <fmt/core.h>
#include <sys/random.h>

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <optional>

#include "common/assert.h"
#include "common/consul_texts.h"
#include "common/host_port.h"
#include "common/log.h"
#include "common/strings.h"
#include "server/loop_stall_meter.h"
#include "server/server_timers.h"

namespace tenure::server {

namespace {

// Keys the leader's session-timer hash (UuidDeadlines): unknown to clients,
// who may choose their etcd leases' numbers.
std::uint64_t RandomHashKey() {
  std::uint64_t key = 0;
  if (::getrandom(&key, sizeof key, GRND_NONBLOCK) != static_cast<ssize_t>(sizeof key)) {
    key = std::random_device{}();
  }
  return key;
}

}  // namespace

Server::Server(boost::asio::io_context& io, const Clock& clock, ServerOptions options)
    : io_(io),
      clock_(clock),
      options_(std::move(options)),
      duties_(options_.session_ttl_multiplier, RandomHashKey()),
      random_(std::random_device{}()),
      acl_resolver_(options_.acl),
      housekeeping_(std::make_unique<Timers>(io)) {
  // The raft handshake tells peers who this server is (member records).
  options_.raft.node_name = options_.node_name;
  options_.raft.http_address = options_.http_address;
  options_.raft.etcd_address = options_.etcd_address;
  options_.raft.zk_address = options_.zk_address;
  waiters_ = std::make_unique<Waiters>(io_, clock_, [this](const Watch& w) { return IndexOf(w); });
  queue_parking_ = std::make_unique<QueueParking>(
      io_, store_, [this](const std::string& key, const state::SessionId& session) {
        LeaveUnattendedQueue(key, session);
      });
  if (options_.etcd_history_bytes) {
    history_.emplace(*options_.etcd_history_bytes);
    store_.RecordEvents(true);
  }
  metrics_.enabled = options_.metrics_enabled;
  if (metrics_.enabled) {
    waiters_->set_wake_histogram(&metrics_.blocking_wake_seconds);
    stall_meter_ = std::make_unique<LoopStallMeter>(io_);
  }
  MakeNode();
}

Server::~Server() { *alive_ = false; }

void Server::MakeNode() {
  node_ = options_.make_consensus ? options_.make_consensus(io_, store_, options_.raft)
                                  : std::make_unique<raft::Node>(io_, store_, options_.raft);
  node_->set_on_applied([this] { OnApplied(); });
  if (options_.metrics_enabled) {
    node_->set_apply_histogram(&metrics_.apply_seconds);
    node_->set_log_append_histogram(&metrics_.log_append_seconds);
    node_->set_snapshot_metrics(&metrics_.snapshots);
  }
  node_->set_on_leadership([this](bool is_leader) { OnLeadership(is_leader); });
  node_->set_on_broken([this](Status why) { OnRaftBroken(std::move(why)); });
}

Status Server::Start() {
  TENURE_RETURN_IF_ERROR(node_->Start());
  if (stall_meter_) stall_meter_->Start();
  ScheduleReap();
  ScheduleCheckpoint();
  ScheduleMemberRecords();
  return Status();
}

void Server::Stop(std::function<void()> done) {
  stopping_ = true;
  if (stall_meter_) stall_meter_->Stop();
  housekeeping_->reap.cancel();
  housekeeping_->checkpoint.cancel();
  housekeeping_->duties.cancel();
  housekeeping_->members.cancel();
  housekeeping_->restart.cancel();
  housekeeping_->token_expiry.cancel();
  duties_.OnLostLeadership();
  waiters_->Flush();
  queue_parking_->Flush();
  node_->Stop(std::move(done));
}

void Server::JoinCluster(std::vector<std::string> raft_addresses) {
  join_addresses_ = raft_addresses;
  node_->JoinCluster(std::move(raft_addresses));
}

// The broken instance keeps nothing worth keeping: everything it applied is
// in the data dir, and a new instance replays it into a fresh Store. Soft
// state (timers, parked queries) is dropped as on a lost leadership.
void Server::OnRaftBroken(Status why) {
  if (restarting_ || stopping_) return;
  restarting_ = true;
  raft_last_failure_ = std::string(why.message());
  leader_ready_ = false;
  duties_.OnLostLeadership();
  housekeeping_->duties.cancel();
  housekeeping_->duties_armed_for_ms = MonoMs(-1);
  waiters_->Flush();
  queue_parking_->Flush();
  // A restart that breaks again soon waits longer each time (1 s to 30 s),
  // so a disk that stays full is retried without spinning.
  constexpr DurationMs kCalmMs = 60'000;
  MonoMs now = clock_.NowMonoMs();
  restart_delay_ms_ =
      (last_restart_ms_ >= MonoMs() && now - last_restart_ms_ < kCalmMs)
          ? std::min<DurationMs>(std::max<DurationMs>(restart_delay_ms_ * 2, 1'000), 30'000)
          : 0;
  log::Warn("server",
            "raft stopped working (" + raft_last_failure_ + "); restarting it from the data dir" +
                (restart_delay_ms_ > 0 ? " in " + std::to_string(restart_delay_ms_) + " ms" : ""),
            {{"cause", raft_last_failure_}, log::Num("delay_ms", restart_delay_ms_)});
  std::weak_ptr<bool> alive = alive_;
  node_->Stop([this, alive] {
    if (alive.expired() || !*alive.lock()) return;
    // Not from inside the node's own callback: it is destroyed here.
    boost::asio::post(io_, [this, alive] {
      if (alive.expired() || !*alive.lock() || stopping_) return;
      housekeeping_->restart.expires_after(std::chrono::milliseconds(restart_delay_ms_));
      housekeeping_->restart.async_wait([this, alive](const boost::system::error_code& ec) {
        if (!ec && !alive.expired() && *alive.lock() && !stopping_) RestartRaft();
      });
    });
  });
}

void Server::RestartRaft() {
  node_.reset();
  store_ = state::Store();
  if (history_) {
    // The replay starts from the data dir's snapshot: the window starts over.
    store_.RecordEvents(true);
    history_->Reset(LogIndex());
    // The state went back to be replayed: listeners start over too.
    const std::vector<state::KvEvent> none;
    TellHistoryListeners(HistoryBatch{none, LogIndex()});
  }
  reap_mark_ = LogIndex();
  MakeNode();
  last_restart_ms_ = clock_.NowMonoMs();
  ++raft_restarts_;
  if (Status started = node_->Start(); !started.ok()) {
    // The data dir no longer opens (damage, a port taken): say so and try
    // again later; the server keeps answering "No cluster leader".
    restarting_ = false;
    OnRaftBroken(started.Annotate("restart"));
    return;
  }
  restarting_ = false;
  log::Info("server",
            "raft restarted (" + std::to_string(raft_restarts_) + " restart" +
                (raft_restarts_ == 1 ? "" : "s") + " so far)",
            {log::Num("restarts", static_cast<unsigned long long>(raft_restarts_))});
  state::Changes restarted = store_.TakeChanges();
  queue_parking_->Notify(store_, restarted);
  waiters_->Notify(std::move(restarted));
  if (!join_addresses_.empty()) node_->JoinCluster(join_addresses_);
}

Server::RaftHealth Server::Health() const {
  RaftHealth health;
  health.state = restarting_ ? "Restarting" : node_->StateName();
  health.term = node_->term();
  health.restarts = raft_restarts_;
  health.last_failure = raft_last_failure_;
  health.transport = node_->transport_counters();
  return health;
}

void Server::Barrier(std::function<void(Status)> done) {
  barrier_waiters_.push_back(std::move(done));
  if (!barrier_in_flight_) IssueBarrier();
}

void Server::IssueBarrier() {
  barrier_in_flight_ = true;
  std::weak_ptr<bool> alive = alive_;
  node_->Barrier([this, alive, waiters = std::move(barrier_waiters_)](Status status) {
    for (const auto& done : waiters) done(status);
    if (alive.expired() || !*alive.lock()) return;
    barrier_in_flight_ = false;
    if (!barrier_waiters_.empty()) IssueBarrier();
  });
  barrier_waiters_.clear();
}

bool Server::IsLeader() const { return node_->IsLeader(); }
bool Server::KnownLeader() const { return !node_->LeaderAddress().empty(); }
DurationMs Server::LastContactMs() const { return node_->LastContactMs(); }
std::string Server::LeaderAddress() const { return node_->LeaderAddress(); }
void Server::TransferLeadership(std::uint64_t id, std::function<void(Status)> done) {
  node_->TransferLeadership(id, std::move(done));
}
void Server::AddVoter(std::uint64_t id, const std::string& address,
                      std::function<void(Status)> done) {
  node_->AddVoter(id, address, std::move(done));
}
// The member record goes with the server; if that write fails the record
// stays behind harmlessly (raft's configuration decides who votes), and the
// removal itself is still reported as done.
void Server::RemoveServer(std::uint64_t id, std::function<void(Status)> done) {
  std::weak_ptr<bool> alive = alive_;
  node_->RemoveServer(id, [this, alive, id, done = std::move(done)](Status status) {
    if (!status.ok() || alive.expired() || !*alive.lock() || store_.FindMember(id) == nullptr) {
      done(status);
      return;
    }
    Propose(state::RemoveMember{id}, [done](Result<state::ApplyResult>) { done(Status()); });
  });
}
std::vector<std::string> Server::PeerAddresses() const { return node_->PeerAddresses(); }
bool Server::IsMemberHost(const std::string& ip) const {
  return node_ != nullptr && node_->HasRaftLinkFrom(ip);
}
std::vector<raft::ServerInfo> Server::RaftConfiguration() const { return node_->Configuration(); }
std::uint64_t Server::RaftConfigurationIndex() const { return node_->ConfigurationIndex(); }
std::uint64_t Server::NodeId() const { return node_->id(); }
std::uint64_t Server::LeaderId() const { return node_->LeaderId(); }

LogIndex Server::IndexOf(const Watch& watch) const {
  switch (watch.kind) {
    case WatchKind::kKey:
      return store_.KeyIndex(watch.key);
    case WatchKind::kPrefix:
      return store_.PrefixIndex(watch.key);
    case WatchKind::kSessions:
      return store_.sessions_index();
    case WatchKind::kAcl:
      return watch.key == "policies" ? store_.acl().policies_index() : store_.acl().tokens_index();
    case WatchKind::kQueue:
      return store_.QueueIndex(watch.key);
  }
  return LogIndex();
}

void Server::OnApplied() {
  state::Changes changes = store_.TakeChanges();
  if (history_) FollowHistory(changes);
  if (!options_.TEST_diverge_key.empty()) {
    for (const std::string& key : changes.keys) {
      if (key == options_.TEST_diverge_key) store_.TEST_Corrupt(key, "diverged");
    }
  }
  const bool acl_changed = changes.acl || changes.everything;
  if (!change_listeners_.empty()) {
    std::vector<std::uint64_t> ids;
    ids.reserve(change_listeners_.size());
    for (const auto& [id, listener] : change_listeners_) ids.push_back(id);
    for (std::uint64_t id : ids) {
      auto it = change_listeners_.find(id);
      if (it != change_listeners_.end()) it->second(changes);
    }
  }
  queue_parking_->Notify(store_, changes);
  CheckQueues(changes);
  waiters_->Notify(std::move(changes));
  if (acl_changed) ScheduleTokenExpiry();
  if (!store_.divergence().empty() && !diverged_) {
    // Restarting would replay the same entries into the same state: the
    // data dir itself is wrong. docs/recovery.md says how to rebuild it.
    diverged_ = true;
    Status why = Status::Corruption(
        "this server's state diverged from the leader's (" + store_.divergence() +
        "); it stops. Rebuild it from the others: docs/recovery.md, \"A replica that diverged\"");
    log::Error("server", "FATAL: " + std::string(why.message()));
    if (on_fatal_) {
      on_fatal_(std::move(why));
    } else if (!stopping_) {
      Stop([] {});
    }
  }
}

// The window follows the state: a replaced state (a restore, an installed
// snapshot, the snapshot a start loaded) starts it over at the replacement,
// whose Changes carry only the events after it; the replicated compact
// revision drops what is below it.
void Server::FollowHistory(state::Changes& changes) {
  if (changes.everything) history_->Reset(store_.replaced_at());
  TellHistoryListeners(HistoryBatch{
      changes.events,
      changes.everything ? std::optional<LogIndex>(store_.replaced_at()) : std::nullopt});
  history_->Append(std::move(changes.events));
  changes.events.clear();
  history_->Compact(store_.compact_revision());
}

void Server::TellHistoryListeners(const HistoryBatch& batch) {
  if (history_listeners_.empty()) return;
  // A listener may add or remove listeners: walk a copy of the ids.
  std::vector<std::uint64_t> ids;
  ids.reserve(history_listeners_.size());
  for (const auto& [id, listener] : history_listeners_) ids.push_back(id);
  for (std::uint64_t id : ids) {
    auto it = history_listeners_.find(id);
    if (it != history_listeners_.end()) it->second(batch);
  }
}

std::uint64_t Server::AddHistoryListener(HistoryListener listener) {
  const std::uint64_t id = next_history_listener_++;
  history_listeners_.emplace(id, std::move(listener));
  return id;
}

void Server::RemoveHistoryListener(std::uint64_t id) { history_listeners_.erase(id); }

std::uint64_t Server::AddChangeListener(ChangeListener listener) {
  const std::uint64_t id = next_change_listener_++;
  change_listeners_.emplace(id, std::move(listener));
  return id;
}

void Server::RemoveChangeListener(std::uint64_t id) { change_listeners_.erase(id); }

}  // namespace tenure::server
