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

namespace tenure::server {

struct Server::Timers {
  explicit Timers(boost::asio::io_context& io)
      : reap(io), checkpoint(io), duties(io), members(io), restart(io), token_expiry(io) {}
  boost::asio::steady_timer reap;
  boost::asio::steady_timer checkpoint;
  boost::asio::steady_timer duties;
  boost::asio::steady_timer members;
  boost::asio::steady_timer restart;
  boost::asio::steady_timer token_expiry;
  MonoMs duties_armed_for_ms = -1;  // deadline `duties` is set to, -1 = idle
};

Server::Server(boost::asio::io_context& io, const Clock& clock, ServerOptions options)
    : io_(io),
      clock_(clock),
      options_(std::move(options)),
      duties_(options_.session_ttl_multiplier),
      random_(std::random_device{}()),
      acl_resolver_(options_.acl),
      housekeeping_(std::make_unique<Timers>(io)) {
  // The raft handshake tells peers who this server is (member records).
  options_.raft.node_name = options_.node_name;
  options_.raft.http_address = options_.http_address;
  waiters_ = std::make_unique<Waiters>(io_, clock_, [this](const Watch& w) { return IndexOf(w); });
  queue_parking_ = std::make_unique<QueueParking>(
      io_, store_, [this](const std::string& key, const state::SessionId& session) {
        LeaveUnattendedQueue(key, session);
      });
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
  housekeeping_->duties_armed_for_ms = -1;
  waiters_->Flush();
  queue_parking_->Flush();
  // A restart that breaks again soon waits longer each time (1 s to 30 s),
  // so a disk that stays full is retried without spinning.
  constexpr MonoMs kCalmMs = 60'000;
  MonoMs now = clock_.NowMonoMs();
  restart_delay_ms_ = (last_restart_ms_ >= 0 && now - last_restart_ms_ < kCalmMs)
                          ? std::min<MonoMs>(std::max<MonoMs>(restart_delay_ms_ * 2, 1'000), 30'000)
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

void Server::Propose(state::CommandBody body, raft::Consensus::ProposeDone done) {
  // No grant to a session whose expiry is under way (as etcd once made:
  // github.com/etcd-io/etcd/issues/11456), nor in a lock-delay window this
  // leader inherited (decision 0010) or the Store holds at the stamp the
  // command would carry.
  std::optional<OutcomeCounter> counter;
  if (metrics_.enabled) counter.emplace(body);
  const MonoMs now_mono_ms = clock_.NowMonoMs();
  const ClusterMs stamp = duties_.ClusterNow(store_.now_ms(), now_mono_ms, node_->term());
  auto replicated_lock_delay = [this, stamp](std::string_view key) {
    return store_.LockDelayUntil(key) > stamp;
  };
  if (std::optional<state::ApplyResult> refused =
          duties_.RefuseBeforeProposing(body, now_mono_ms, replicated_lock_delay)) {
    if (counter) counter->Count(*refused, /*proposed=*/false, &metrics_);
    // Never complete inside the caller's stack, as raft never does.
    boost::asio::post(io_, [done = std::move(done), refused = std::move(*refused)]() mutable {
      done(std::move(refused));
    });
    return;
  }
  // A queue command on a key this leader's guard still holds grants nothing
  // (decision 0027): the guard's KvQueueGrant does, later.
  duties_.HoldQueueGrant(&body, now_mono_ms);
  state::Command command;
  command.now_ms = stamp;
  command.wall_ms = clock_.NowUnixMs();
  // Session lifetimes drive the leader's timers: what the Store reports it
  // applied arms a created session's timer or drops a destroyed one's.
  const bool touches_sessions = TouchesSessions(body);
  if (counter) {
    // Counted around the proposal (decision 0023): a wrapper only when on.
    ++metrics_.proposals_pending;
    done = [this, alive = std::weak_ptr<bool>(alive_), counter = std::move(*counter),
            start = std::chrono::steady_clock::now(),
            inner = std::move(done)](Result<state::ApplyResult> result) {
      if (!alive.expired() && *alive.lock()) {
        --metrics_.proposals_pending;
        if (result.ok()) metrics_.commit_seconds.ObserveSince(start);
        counter.Count(result, /*proposed=*/true, &metrics_);
      }
      inner(std::move(result));
    };
  }
  const bool restores = std::holds_alternative<state::RestoreState>(body);
  command.body = std::move(body);
  if (restores) {
    // The sessions, lock-delays and ACL tables were replaced: the leader's
    // duties start again from the restored Store, as after a failover
    // (every TTL session gets a full TTL x multiplier from now).
    std::weak_ptr<bool> alive = alive_;
    node_->Propose(command, [this, alive,
                             done = std::move(done)](Result<state::ApplyResult> result) {
      if (!alive.expired() && *alive.lock() && result.ok() && result->status.ok() && IsLeader()) {
        log::Info(
            "server", "snapshot restored; leader duties start again from it",
            {log::Num("index", static_cast<unsigned long long>(store_.applied_index().value())),
             log::Num("sessions", static_cast<unsigned long long>(store_.session_count()))});
        StartLeaderDuties();
      }
      done(std::move(result));
    });
    return;
  }
  if (!touches_sessions) {
    node_->Propose(command, std::move(done));
    return;
  }
  std::weak_ptr<bool> alive = alive_;
  node_->Propose(command, [this, alive, done = std::move(done)](Result<state::ApplyResult> result) {
    if (!alive.expired() && *alive.lock() && result.ok() && result->status.ok()) {
      SessionChange change = SessionChangeOf(*result);
      if (!change.empty()) {
        duties_.OnCommitted(change, clock_.NowMonoMs());
        ScheduleDuties();
      }
    }
    done(std::move(result));
  });
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

void Server::Renew(const state::SessionId& session_id, RenewDone done) {
  const state::Session* session = store_.FindSession(session_id);
  Status renewed = IsLeader() ? duties_.Renew(session_id, session, clock_.NowMonoMs())
                              : consul::NoClusterLeader();
  // Counted where each answer is decided: no wrapper on the hot path.
  const bool count = metrics_.enabled;
  if (!renewed.ok()) {
    if (count) ++metrics_.renewals_failed;
    return done(renewed);
  }
  ScheduleDuties();
  if (node_->SoleVoter()) {  // nobody else can have been elected
    if (count) ++metrics_.renewals;
    return done(session);
  }
  std::weak_ptr<bool> alive = alive_;
  Barrier([this, alive, count, id = session_id, done = std::move(done)](Status status) {
    if (alive.expired() || !*alive.lock()) return done(Status::Unavailable("shutting down"));
    if (status.ok()) {
      const state::Session* current = store_.FindSession(id);
      status = duties_.ConfirmRenewal(id, current);
      if (status.ok()) {
        if (count) ++metrics_.renewals;
        return done(current);
      }
    }
    if (count) ++metrics_.renewals_failed;
    done(status);
  });
}

bool Server::IsExpiring(const state::SessionId& session_id) const {
  return duties_.IsExpiring(session_id);
}

state::SessionId Server::NewSessionId() {
  for (;;) {
    std::uint64_t a = random_();
    std::uint64_t b = random_();
    state::SessionId id(fmt::format("{:08x}-{:04x}-{:04x}-{:04x}-{:012x}", a >> 32,
                                    (a >> 16) & 0xffff, a & 0xffff, b >> 48,
                                    b & 0xffffffffffffull));
    if (store_.FindSession(id) == nullptr) return id;
  }
}

Result<Caller> Server::ResolveCaller(std::string_view secret) {
  Result<Caller> caller = acl_resolver_.ResolveIgnoringExpiry(store_.acl(), secret);
  if (caller.ok() && AclResolver::MayExpire(*caller) &&
      AclResolver::Expired(*caller, clock_.NowUnixMs())) {
    return consul::AclNotFound();
  }
  return caller;
}

bool Server::CallerStillValid(const Caller& caller) const {
  return acl_resolver_.StillValid(store_.acl(), caller, clock_.NowUnixMs());
}

std::string Server::NewSecretUuid() {
  unsigned char bytes[16];
  std::size_t got = 0;
  while (got < sizeof bytes) {
    ssize_t n = ::getrandom(bytes + got, sizeof bytes - got, 0);
    if (n < 0 && errno == EINTR) continue;
    TENURE_ASSERT(n > 0);  // getrandom cannot fail for 16 bytes once the pool is ready
    got += static_cast<std::size_t>(n);
  }
  bytes[6] = static_cast<unsigned char>((bytes[6] & 0x0f) | 0x40);  // version 4
  bytes[8] = static_cast<unsigned char>((bytes[8] & 0x3f) | 0x80);  // RFC 4122 variant
  std::string out;
  static constexpr char kHex[] = "0123456789abcdef";
  for (std::size_t i = 0; i < sizeof bytes; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out += '-';
    out += kHex[bytes[i] >> 4];
    out += kHex[bytes[i] & 15];
  }
  return out;
}

namespace {
constexpr char kBootstrapResetFile[] = "acl-bootstrap-reset";
}

Result<LogIndex> Server::BootstrapResetIndex() const {
  if (options_.data_dir.empty()) return LogIndex();
  const std::string path = options_.data_dir + "/" + kBootstrapResetFile;
  std::ifstream in(path);
  if (!in) return LogIndex();
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ' || text.back() == '\r')) {
    text.pop_back();
  }
  std::uint64_t index = 0;
  bool ok = !text.empty() && text.size() <= 19;
  for (char c : text) {
    ok = ok && c >= '0' && c <= '9';
    if (ok) index = index * 10 + static_cast<std::uint64_t>(c - '0');
  }
  if (!ok) {
    return Status::InvalidArgument("ACL bootstrap reset file " + path +
                                   " does not hold a reset index (a number)");
  }
  return LogIndex(index);
}

void Server::ForgetBootstrapReset() const {
  if (options_.data_dir.empty()) return;
  std::remove((options_.data_dir + "/" + kBootstrapResetFile).c_str());
}

void Server::EnsureAclSetup() {
  const AclConfig& acl = acl_resolver_.config();
  if (!acl.enabled || !IsLeader() || !leader_ready_ || acl_setup_in_flight_) return;
  const state::AclTable& table = store_.acl();
  const bool initial_missing =
      !acl.initial_management.empty() && table.FindTokenBySecret(acl.initial_management) == nullptr;
  if (table.has_builtins() && !initial_missing) return;
  state::AclSetup setup;
  if (initial_missing) {
    state::AclToken token;
    do {
      token.accessor_id = NewSecretUuid();
    } while (table.FindToken(token.accessor_id) != nullptr);
    token.secret_id = acl.initial_management;
    token.description = "Initial Management Token";
    token.create_time = clock_.NowUnixMs();
    setup.initial_management = std::move(token);
  }
  acl_setup_in_flight_ = true;
  std::weak_ptr<bool> alive = alive_;
  Propose(std::move(setup), [this, alive](Result<state::ApplyResult>) {
    if (!alive.expired() && *alive.lock()) acl_setup_in_flight_ = false;
    // Whatever happened, the members timer looks again within a second.
  });
}

void Server::ScheduleTokenExpiry() {
  if (!acl_resolver_.config().enabled || !IsLeader() || !leader_ready_) return;
  std::optional<UnixMs> next = store_.acl().NextExpiration();
  if (!next) {
    housekeeping_->token_expiry.cancel();
    return;
  }
  // Wall-clock deadlines on a monotonic timer: look again at least once a
  // minute, so a clock step cannot postpone an expiry for long.
  DurationMs delay = std::clamp<DurationMs>(*next - clock_.NowUnixMs(), 0, 60'000);
  housekeeping_->token_expiry.expires_after(std::chrono::milliseconds(delay));
  std::weak_ptr<bool> alive = alive_;
  housekeeping_->token_expiry.async_wait([this, alive](const boost::system::error_code& ec) {
    if (ec || alive.expired() || !*alive.lock() || stopping_) return;
    ExpireTokens();
  });
}

void Server::ExpireTokens() {
  if (!IsLeader() || !leader_ready_) return;
  for (const std::string& accessor : store_.acl().ExpiredAt(clock_.NowUnixMs())) {
    if (!tokens_expiring_.insert(accessor).second) continue;
    std::weak_ptr<bool> alive = alive_;
    Propose(state::AclTokenDelete{accessor, state::AclTokenDeleteReason::kExpired},
            [this, alive, accessor](Result<state::ApplyResult> result) {
              if (alive.expired() || !*alive.lock()) return;
              tokens_expiring_.erase(accessor);
              // A failed delete is tried again by the next pass.
              if (!result.ok()) ScheduleTokenExpiry();
            });
  }
  ScheduleTokenExpiry();
}

bool Server::IsLeader() const { return node_->IsLeader(); }
bool Server::KnownLeader() const { return !node_->LeaderAddress().empty(); }
MonoMs Server::LastContactMs() const { return node_->LastContactMs(); }
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

state::Member Server::SelfMember() const {
  return {node_->id(), options_.node_name, options_.raft.address, options_.http_address,
          LogIndex()};
}

bool Server::SelfRecordCurrent() const {
  const state::Member* record = store_.FindMember(node_->id());
  if (record == nullptr) return false;
  state::Member current = *record;
  current.modify_index = LogIndex();
  return current == SelfMember();
}

Server::LeaderRoute Server::RouteToLeader() const {
  LeaderRoute route{node_->LeaderId(), ""};
  if (route.id == 0 || route.id == NodeId()) return route;
  if (const state::Member* member = store_.FindMember(route.id);
      member != nullptr && !member->http_address.empty()) {
    route.http_address = member->http_address;
    return route;
  }
  for (const raft::PeerAdvert& advert : node_->PeerAdverts()) {
    if (advert.id == route.id && ParseHostPort(advert.http_address).ok()) {
      route.http_address = advert.http_address;
    }
  }
  return route;
}

void Server::WriteSelfRecord() {
  if (!IsLeader() || !leader_ready_ || self_record_in_flight_ || SelfRecordCurrent()) return;
  self_record_in_flight_ = true;
  std::weak_ptr<bool> alive = alive_;
  Propose(state::SetMember{SelfMember()}, [this, alive](Result<state::ApplyResult> result) {
    if (alive.expired() || !*alive.lock()) return;
    self_record_in_flight_ = false;
    if (result.ok() || !IsLeader()) return;
    auto retry = std::make_shared<boost::asio::steady_timer>(io_, std::chrono::seconds(1));
    retry->async_wait([this, alive, retry](const boost::system::error_code& ec) {
      if (!ec && !alive.expired() && *alive.lock()) WriteSelfRecord();
    });
  });
}

void Server::ScheduleMemberRecords() {
  housekeeping_->members.expires_after(std::chrono::seconds(1));
  std::weak_ptr<bool> alive = alive_;
  housekeeping_->members.async_wait([this, alive](const boost::system::error_code& ec) {
    if (ec || alive.expired() || !*alive.lock() || stopping_) return;
    if (!restarting_) {
      WritePeerRecords();
      EnsureAclSetup();
    }
    ScheduleMemberRecords();
  });
}

void Server::WritePeerRecords() {
  if (!IsLeader() || !leader_ready_ || peer_record_in_flight_) return;
  std::vector<raft::PeerAdvert> adverts = node_->PeerAdverts();
  for (const raft::ServerInfo& server : node_->Configuration()) {
    if (server.id == node_->id()) continue;  // WriteSelfRecord's
    auto advert = std::find_if(adverts.begin(), adverts.end(),
                               [&](const raft::PeerAdvert& a) { return a.id == server.id; });
    // Only what the server said at the address the configuration gives it.
    if (advert == adverts.end() || advert->raft_address != server.address) continue;
    if (advert->node_name.empty() || !ParseHostPort(advert->http_address).ok()) continue;
    state::Member wanted{server.id, advert->node_name, advert->raft_address, advert->http_address,
                         LogIndex()};
    if (const state::Member* record = store_.FindMember(server.id); record != nullptr) {
      state::Member current = *record;
      current.modify_index = LogIndex();
      if (current == wanted) continue;
    }
    peer_record_in_flight_ = true;
    std::weak_ptr<bool> alive = alive_;
    Propose(state::SetMember{wanted}, [this, alive](Result<state::ApplyResult>) {
      if (!alive.expired() && *alive.lock()) peer_record_in_flight_ = false;
    });
    return;  // one at a time; the next second's pass does the rest
  }
}

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
  if (!options_.TEST_diverge_key.empty()) {
    for (const std::string& key : changes.keys) {
      if (key == options_.TEST_diverge_key) store_.TEST_Corrupt(key, "diverged");
    }
  }
  const bool acl_changed = changes.acl || changes.everything;
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

std::optional<MonoMs> Server::SessionTtlRemainingMs(const state::SessionId& session_id) const {
  if (!leader_ready_ || !IsLeader()) return std::nullopt;
  MonoMs remaining = duties_.timers().RemainingMs(session_id, clock_.NowMonoMs());
  if (remaining < 0) return std::nullopt;  // not armed (no TTL), or due now
  return remaining;
}

// A new leader cannot know when sessions were last renewed: it gives every
// TTL session a full TTL x multiplier from now, which can only make expiry
// later, never earlier than promised.
void Server::OnLeadership(bool is_leader) {
  if (metrics_.enabled) ++(is_leader ? metrics_.leadership_gained : metrics_.leadership_lost);
  if (!is_leader) {
    leader_ready_ = false;
    duties_.OnLostLeadership();
    housekeeping_->token_expiry.cancel();
    // Parked fair acquires are answered 500: their clients send again to
    // the new leader and keep their places (decision 0027).
    queue_parking_->Flush();
    log::Info("server", "lost leadership; session timers stopped",
              {log::Num("node_id", static_cast<unsigned long long>(NodeId()))});
    return;
  }
  StartLeaderDuties();
}

// Also after a snapshot restore, which replaces the sessions but is not a
// leadership change (tenure_raft_leadership_changes_total does not move).
void Server::StartLeaderDuties() {
  leader_ready_ = true;
  std::size_t armed = duties_.OnBecameLeader(clock_.NowMonoMs(), store_);
  // Queues inherited free (their holder ended in lock-delay): granted once
  // the window has passed by this leader's measure too.
  for (const auto& [key, waiters] : store_.queues()) CheckQueue(key, 0);
  // Their requests were parked on the old leader: each client asks this one
  // again within the grace, or its waiter leaves.
  queue_parking_->StartGraceForAll(store_);
  ScheduleDuties();
  reap_mark_ = store_.kv_index();
  log::Info("server", "leader; armed " + std::to_string(armed) + " session timers",
            {log::Num("node_id", static_cast<unsigned long long>(NodeId())),
             log::Num("session_timers", static_cast<unsigned long long>(armed))});
  // Followers find where to forward through this record (decision 0008).
  WriteSelfRecord();
  EnsureAclSetup();
  ScheduleTokenExpiry();
}

// One timer for every session: set to the earliest deadline. Renewals only
// push deadlines later, so it usually stays as it is and fires early;
// RunDuties then sets it for the new earliest deadline.
void Server::ScheduleDuties() {
  std::optional<MonoMs> next = duties_.NextDeadline();
  MonoMs& armed_for_ms = housekeeping_->duties_armed_for_ms;
  if (!next || (armed_for_ms != -1 && armed_for_ms <= *next)) return;
  armed_for_ms = *next;
  housekeeping_->duties.expires_after(std::chrono::milliseconds(*next - clock_.NowMonoMs()));
  std::weak_ptr<bool> alive = alive_;
  housekeeping_->duties.async_wait([this, alive](const boost::system::error_code& ec) {
    if (ec || alive.expired() || !*alive.lock()) return;  // cancelled: re-armed or stopped
    housekeeping_->duties_armed_for_ms = -1;
    RunDuties();
  });
}

void Server::RunDuties() {
  for (const state::SessionId& session_id : duties_.DueExpiries(clock_.NowMonoMs())) {
    ExpireSession(session_id);
  }
  for (const std::string& key : duties_.DueQueueGrants(clock_.NowMonoMs())) ProposeQueueGrant(key);
  ScheduleDuties();
}

// Leader: a key that applies left free with waiters gets a KvQueueGrant
// once its lock-delay window has passed (decision 0027). Any later apply on
// the key that settles its queue first (a release, an enqueue) makes the
// grant a no-op.
void Server::CheckQueue(const std::string& key, DurationMs floor_ms) {
  const MonoMs now_mono_ms = clock_.NowMonoMs();
  const ClusterMs until = store_.LockDelayUntil(key);
  const DurationMs remaining =
      until == ClusterMs()
          ? 0
          : std::max<DurationMs>(
                until - duties_.ClusterNow(store_.now_ms(), now_mono_ms, node_->term()), 0);
  duties_.CheckQueue(store_, key, now_mono_ms, std::max(remaining, floor_ms));
}

void Server::CheckQueues(const state::Changes& changes) {
  if (!leader_ready_ || !IsLeader()) return;
  for (const std::string& key : duties_.QueueKeysToCheck(store_, changes)) CheckQueue(key, 0);
  ScheduleDuties();
}

// A waiter whose client stopped asking (QueueParking's grace passed): it
// leaves the queue. The dequeue's outcome answers nobody.
void Server::LeaveUnattendedQueue(const std::string& key, const state::SessionId& session) {
  if (!IsLeader()) return;
  log::Info("server",
            "session " + std::string(session.view()) + " leaves the queue of key " + key +
                ": no request of it waited for " +
                std::to_string(QueueParking::kUnattendedGraceMs / 1000) + " s",
            {{"key", key}, {"session", std::string(session.view())}});
  Propose(state::KvDequeue{key, session}, [](Result<state::ApplyResult>) {});
}

void Server::ProposeQueueGrant(const std::string& key) {
  if (!IsLeader() || store_.FindQueue(key) == nullptr) return;
  log::Info("server", "granting key " + key + " to the head of its queue (lock-delay passed)",
            {{"key", key}});
  std::weak_ptr<bool> alive = alive_;
  Propose(state::KvQueueGrant{key}, [this, alive, key](Result<state::ApplyResult> result) {
    if (alive.expired() || !*alive.lock() || !IsLeader()) return;
    if (!result.ok()) {
      duties_.QueueGrantFailed(key, clock_.NowMonoMs());
    } else {
      // Granted, or the window had not passed by the stamp (clock steps):
      // look again, never sooner than a few milliseconds.
      CheckQueue(key, kQueueGrantFloorMs);
    }
    ScheduleDuties();
  });
}

// The session is already expiring (DueExpiries): no renewal or acquire
// passes while its SessionDestroy is on its way.
void Server::ExpireSession(const state::SessionId& session_id) {
  if (!IsLeader() || store_.FindSession(session_id) == nullptr) {
    duties_.ExpiryResolved(session_id);
    return;
  }
  log::Info("server", "session " + session_id.str() + " expired (TTL passed without renewal)",
            {{"session", session_id.str()}, {"cause", "ttl"}});
  std::weak_ptr<bool> alive = alive_;
  Propose(state::SessionDestroy{session_id, state::DestroyReason::kExpired},
          [this, alive, session_id](Result<state::ApplyResult> result) {
            if (alive.expired() || !*alive.lock()) return;
            if (result.ok() || !IsLeader()) {
              duties_.ExpiryResolved(session_id);
              return;
            }
            // Still leader but the entry did not commit: try again shortly,
            // keeping the session marked as expiring meanwhile.
            duties_.ExpiryFailed(session_id, clock_.NowMonoMs());
            ScheduleDuties();
          });
}

// Replicas compared at run time (state/store.h, Checkpoint): the leader's
// record of the previous checkpoint travels in the next one.
void Server::ScheduleCheckpoint() {
  if (options_.checkpoint_period_ms <= 0) return;
  housekeeping_->checkpoint.expires_after(std::chrono::milliseconds(options_.checkpoint_period_ms));
  std::weak_ptr<bool> alive = alive_;
  housekeeping_->checkpoint.async_wait([this, alive](const boost::system::error_code& ec) {
    if (ec || alive.expired() || !*alive.lock()) return;
    const state::Store::CheckpointRecord& last = store_.checkpoint();
    if (IsLeader() && leader_ready_ && !diverged_ && store_.CheckpointDue()) {
      Propose(state::Checkpoint{last.index, last.digest}, [](Result<state::ApplyResult>) {});
    }
    ScheduleCheckpoint();
  });
}

// Tombstones keep prefix indexes from going backwards after deletes; they
// only need to outlive the blocking queries that could miss the delete, and
// Store::PrefixIndex never reports less than the reap point anyway.
void Server::ScheduleReap() {
  housekeeping_->reap.expires_after(std::chrono::milliseconds(options_.tombstone_reap_period_ms));
  std::weak_ptr<bool> alive = alive_;
  housekeeping_->reap.async_wait([this, alive](const boost::system::error_code& ec) {
    if (ec || alive.expired() || !*alive.lock()) return;
    if (IsLeader() && leader_ready_ && store_.tombstone_count() > 0 && !reap_mark_.is_none()) {
      Propose(state::ReapTombstones{reap_mark_}, [](Result<state::ApplyResult>) {});
    }
    reap_mark_ = store_.kv_index();
    ScheduleReap();
  });
}

}  // namespace tenure::server
