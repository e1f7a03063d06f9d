#include "zk/client_port.h"

#include <fmt/format.h>
#include <openssl/rand.h>
#include <sys/resource.h>

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <optional>

#include "common/assert.h"
#include "common/log.h"
#include "server/server.h"
#include "state/apply_result.h"
#include "state/command.h"
#include "state/numbered_session.h"
#include "state/zk_path.h"
#include "zk/connection.h"
#include "zk/protocol.h"
#include "zk/session_auth.h"

namespace tenure::zk {
namespace {

namespace asio = boost::asio;

// The answer to a session that cannot be reopened: ZooKeeper's.
// `read_only_sent`: the client sent the readOnly flag, so the answer has it.
ConnectResponse Expired(bool read_only_sent) {
  ConnectResponse answer;
  answer.password.assign(16, '\0');
  if (read_only_sent) answer.read_only = false;
  return answer;
}

ConnectResponse Opened(bool read_only_sent, std::int32_t timeout_ms, std::int64_t session,
                       const std::string& secret) {
  ConnectResponse answer;
  answer.timeout_ms = timeout_ms;
  answer.session_id = session;
  answer.password = SessionPassword(secret, session);
  if (read_only_sent) answer.read_only = false;
  return answer;
}

}  // namespace

ClientPort::ClientPort(server::Server& server, asio::io_context& io)
    : server_(server),
      io_(io),
      sweep_timer_(io),
      liveness_timer_(io),
      scratch_(std::make_unique<char[]>(kScratchBytes)),
      ready_(io, [this](std::uint64_t number, bool readable, bool writable, bool peer_ended) {
        const std::shared_ptr<Connection>* found = connections_.Find(number);
        if (found == nullptr) return;  // closed since
        // Held: the connection may close, and leave connections_, inside.
        const std::shared_ptr<Connection> connection = *found;
        connection->OnReady(readable, writable, peer_ended);
      }) {}

ClientPort::~ClientPort() {
  *alive_ = false;
  Stop();
}

// Events from every API's writes: a key under "/" that applied is created
// (it is there and newer than the events sent), changed, or deleted.
void ClientPort::OnChanges(const state::Changes& changes) {
  const state::Store& store = server_.store();
  std::vector<WatchTable::Fired> fired;
  std::vector<std::shared_ptr<Connection>> resync;
  if (changes.sessions || changes.everything) sessions_changed_ = true;
  if (changes.everything) {
    watches_.FireAll(EventType::kNodeDataChanged, EventType::kNodeChildrenChanged, &fired);
    // No event tells a persistent watch what changed below it: its
    // connection ends, and its client reconnects and reads again (Curator's
    // cache rebuilds when its watch is set again).
    for (const WatchTable::Owner owner : watches_.PersistentOwners()) {
      if (const std::shared_ptr<Connection>* found = connections_.Find(owner)) {
        resync.push_back(*found);
      }
    }
  } else if (watches_.size() > 0) {
    // A key gone by the batch's end was a znode if it could have been one:
    // a valid path whose ancestors are znodes or went in the same batch up
    // to one that is (an etcd or Consul key below no node never was one).
    // The batch's keys as a set only for a walk that needs them (rare).
    std::optional<std::set<std::string_view>> changed;
    auto was_znode = [&](std::string_view key) {
      if (!state::ZkPathError(key).empty()) return false;
      for (std::string_view at = state::ZkParentOf(key);; at = state::ZkParentOf(at)) {
        if (at == "/" || store.IsZnode(at)) return true;
        if (!changed) changed.emplace(changes.keys.begin(), changes.keys.end());
        if (!changed->contains(at) || store.FindKv(at) != nullptr) return false;
      }
    };
    TENURE_ASSERT(changes.key_changes.size() == changes.keys.size());
    // Each write fires what it concerns in apply order, as ZooKeeper's
    // DataTree fires a multi's ops one by one: a one-shot watch at the first
    // write that touches its path, a persistent one at every write.
    for (std::size_t i = 0; i < changes.keys.size(); ++i) {
      const std::string& key = changes.keys[i];
      if (key.empty() || key.front() != '/') continue;
      const bool znode = store.FindKv(key) != nullptr ? store.IsZnode(key) : was_znode(key);
      if (!znode) continue;  // a key no ZooKeeper client sees (its parent is missing)
      switch (changes.key_changes[i]) {
        case state::KeyChange::kCreated:
          watches_.Created(key, &fired);
          break;
        case state::KeyChange::kChanged:
          watches_.Changed(key, &fired);
          break;
        case state::KeyChange::kDeleted:
          watches_.Deleted(key, &fired);
          break;
      }
    }
  }
  Deliver(fired);
  for (const std::shared_ptr<Connection>& connection : resync) connection->Close();
  events_through_ = store.applied_index();
  UpdateGauges();
  if (after_events_.empty()) return;
  std::vector<std::pair<LogIndex, std::function<void()>>> due;
  std::vector<std::pair<LogIndex, std::function<void()>>> later;
  for (auto& waiting : after_events_) {
    (waiting.first <= events_through_ ? due : later).push_back(std::move(waiting));
  }
  after_events_ = std::move(later);
  for (auto& [index, then] : due) then();
}

void ClientPort::Deliver(const std::vector<WatchTable::Fired>& fired) {
  for (const WatchTable::Fired& event : fired) {
    if (const std::shared_ptr<Connection>* found = connections_.Find(event.owner)) {
      (*found)->SendEvent(event.type, event.path, event.persistent);
    }
  }
}

void ClientPort::AfterEventsOf(LogIndex index, std::function<void()> then) {
  if (index <= events_through_) return then();
  after_events_.emplace_back(index, std::move(then));
}

namespace {

Result<std::unique_ptr<asio::ip::tcp::acceptor>> OpenAcceptor(asio::io_context& io,
                                                              const std::string& host,
                                                              std::uint16_t port,
                                                              std::string_view what) {
  boost::system::error_code ec;
  const asio::ip::address address = asio::ip::make_address(host, ec);
  if (ec)
    return Status::InvalidArgument(fmt::format("{} address {}: {}", what, host, ec.message()));
  auto acceptor = std::make_unique<asio::ip::tcp::acceptor>(io);
  const asio::ip::tcp::endpoint endpoint(address, port);
  acceptor->open(endpoint.protocol(), ec);
  if (!ec) acceptor->set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor->bind(endpoint, ec);
  if (!ec) acceptor->listen(asio::socket_base::max_listen_connections, ec);
  if (ec)
    return Status::Unavailable(
        fmt::format("listening for {} on {}:{}: {}", what, host, port, ec.message()));
  return acceptor;
}

}  // namespace

Status ClientPort::Listen(const ClientPortOptions& options, bool* clear_text_failed) {
  TENURE_ASSERT(options.clear_text || options.tls);
  TENURE_ASSERT(!options.tls || options.tls_context != nullptr);
  std::unique_ptr<asio::ip::tcp::acceptor> clear;
  std::unique_ptr<asio::ip::tcp::acceptor> secure;
  if (clear_text_failed != nullptr) *clear_text_failed = false;
  if (options.clear_text) {
    auto opened = OpenAcceptor(io_, options.host, options.port, "ZooKeeper");
    if (!opened.ok()) {
      if (clear_text_failed != nullptr) *clear_text_failed = true;
      return opened.status();
    }
    clear = std::move(*opened);
  }
  if (options.tls) {
    TENURE_ASSIGN_OR_RETURN(
        secure, OpenAcceptor(io_, options.tls_host, options.tls_port, "ZooKeeper over TLS"));
  }
  TENURE_RETURN_IF_ERROR(ready_.Open());
  options_ = options;
  acceptor_ = std::move(clear);
  tls_acceptor_ = std::move(secure);
  // The descriptors this process may hold bound the connections too.
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) {
    constexpr std::size_t kReserve = 512;
    const auto nofile = static_cast<std::size_t>(limit.rlim_cur);
    options_.connections_max =
        std::min(options_.connections_max, nofile > 2 * kReserve ? nofile - kReserve : kReserve);
  }
  opened_ms_ = server_.clock().NowMonoMs();
  events_through_ = server_.store().applied_index();
  change_listener_ =
      server_.AddChangeListener([this](const state::Changes& changes) { OnChanges(changes); });
  stopped_ = false;
  ArmEvery(sweep_timer_, options_.container_sweep_ms, &ClientPort::SweepContainers);
  ArmEvery(liveness_timer_, kLivenessCheckMs, &ClientPort::CheckLiveness);
  if (acceptor_) Accept(*acceptor_, /*tls=*/false);
  if (tls_acceptor_) Accept(*tls_acceptor_, /*tls=*/true);
  return Status::Ok();
}

std::uint16_t ClientPort::port() const {
  boost::system::error_code ec;
  return acceptor_ ? acceptor_->local_endpoint(ec).port() : 0;
}

std::uint16_t ClientPort::tls_port() const {
  boost::system::error_code ec;
  return tls_acceptor_ ? tls_acceptor_->local_endpoint(ec).port() : 0;
}

void ClientPort::SetTlsContext(std::shared_ptr<const tls::Context> context) {
  if (context != nullptr) options_.tls_context = std::move(context);
}

void ClientPort::SetLeaderTls(std::shared_ptr<const tls::Context> context) {
  if (context != nullptr) options_.leader_tls = std::move(context);
}

void ClientPort::Stop() {
  stopped_ = true;  // a timer's handler already queued does nothing
  for (auto* acceptor : {acceptor_.get(), tls_acceptor_.get()}) {
    boost::system::error_code ignored;
    if (acceptor != nullptr) acceptor->close(ignored);
  }
  if (change_listener_ != 0) {
    server_.RemoveChangeListener(change_listener_);
    change_listener_ = 0;
  }
  after_events_.clear();
  sweep_timer_.cancel();
  liveness_timer_.cancel();
  for (const std::shared_ptr<Connection>& connection : connections_.All()) connection->Close();
}

void ClientPort::Accept(asio::ip::tcp::acceptor& acceptor, bool tls) {
  std::weak_ptr<bool> alive = alive_;
  acceptor.async_accept(
      [this, alive, &acceptor, tls](boost::system::error_code ec, asio::ip::tcp::socket socket) {
        if (alive.expired() || !*alive.lock() || !acceptor.is_open()) return;
        if (ec) {
          // Out of descriptors (or memory): the connection waits in the
          // backlog; accepting again at once would spin the loop.
          log::Warn("zk", "accepting a ZooKeeper connection: " + ec.message());
          auto retry = std::make_shared<asio::steady_timer>(io_, std::chrono::milliseconds(100));
          retry->async_wait([this, alive, &acceptor, tls, retry](boost::system::error_code waited) {
            if (!waited && !alive.expired() && *alive.lock() && acceptor.is_open()) {
              Accept(acceptor, tls);
            }
          });
          return;
        }
        if (connections_.size() >= options_.connections_max) {
          boost::system::error_code ignored;
          socket.close(ignored);  // as ZooKeeper closes one past maxClientCnxns
        } else {
          const std::uint64_t number = connections_.NextNumber();
          // The socket leaves asio: the port's ready set tells the
          // connection when it may read or write (zk/ready_set.h).
          boost::system::error_code released;
          const int fd = socket.release(released);
          auto connection = std::make_shared<Connection>(*this, released ? -1 : fd, number,
                                                         tls ? options_.tls_context : nullptr);
          connections_.Add(connection);
          connection->Start();
        }
        UpdateGauges();
        Accept(acceptor, tls);
      });
}

void ClientPort::ArmEvery(boost::asio::steady_timer& timer, DurationMs every_ms,
                          void (ClientPort::*run)()) {
  timer.expires_after(std::chrono::milliseconds(every_ms));
  std::weak_ptr<bool> alive = alive_;
  timer.async_wait([this, alive, &timer, every_ms, run](boost::system::error_code ec) {
    if (ec || alive.expired() || !*alive.lock() || stopped_) return;
    (this->*run)();
    ArmEvery(timer, every_ms, run);
  });
}

void ClientPort::CheckLiveness() {
  const MonoMs now = server_.clock().NowMonoMs();
  const bool serving = Serving();
  const std::uint64_t leader = server_.LeaderId();
  const bool look_up = sessions_changed_;
  sessions_changed_ = false;
  const state::Store& store = server_.store();
  std::vector<std::shared_ptr<Connection>> ending;
  connections_.ForEach([&](const std::shared_ptr<Connection>& connection) {
    const bool late = now - connection->opened_ms() >= options_.handshake_timeout_ms;
    bool ends = false;
    if (connection->opening()) {
      ends = late;
    } else if (const std::uint64_t to = connection->spliced_to(); to != 0) {
      // Spliced to a server that no longer leads (the client reconnects,
      // and finds the new leader through any server), or to one that has
      // not answered within the handshake's time; once the link ended,
      // what the leader sent last gets that time to be read.
      ends = connection->splice_open()
                 ? to != leader || (!connection->leader_answered() && late)
                 : now - connection->splice_ended_ms() >= options_.handshake_timeout_ms;
    } else if (connection->opened()) {
      // ZooKeeper closes it; the client learns the rest when it reconnects.
      // One closing with no session (a four-letter word's answer, a refused
      // reconnect's) gets the handshake's time to be read.
      ends = !serving ||
             (connection->session() == 0
                  ? late
                  : look_up && store.FindSession(state::NumberedSessionId(connection->session())) ==
                                   nullptr);
    }
    if (ends) ending.push_back(connection);
  });
  for (const std::shared_ptr<Connection>& connection : ending) connection->Close();
}

// Each container that had a child and has none is deleted at the version it
// has now: a child created before the delete applies makes it NOTEMPTY, and
// a container written meanwhile BADVERSION, so only an empty one goes.
void ClientPort::SweepContainers() {
  if (!server_.IsLeader()) return;
  constexpr std::size_t kDeletesPerSweep = 1000;  // the rest at the next sweep
  std::size_t proposed = 0;
  const state::Store& store = server_.store();
  for (const auto& [path, node] : store.zk_nodes()) {
    if (!node.container || node.children != 0 || node.children_created == 0) continue;
    const std::optional<state::ZkStat> stat = store.ZkStatOf(path);
    if (!stat) continue;
    state::ZkOp op;
    op.kind = state::ZkOp::Kind::kDelete;
    op.path = path;
    op.version = stat->version;
    state::ZkWrite one;
    one.ops.push_back(std::move(op));
    // One entry each: one that fails leaves the others to go.
    server_.Propose(std::move(one), [](Result<state::ApplyResult>) {});
    if (++proposed == kDeletesPerSweep) break;
  }
}

bool ClientPort::Serving() const { return server_.IsLeader(); }

void ClientPort::Forget(const Connection* connection) {
  std::shared_ptr<Connection> held = connections_.Remove(connection->number());
  if (held == nullptr) return;
  watches_.RemoveOwner(connection->number());
  // Freed after the caller's stack unwinds: it may be the connection itself.
  asio::post(io_, [held = std::move(held)] {});
  UpdateGauges();
}

void ClientPort::Adopt(std::int64_t session, const std::shared_ptr<Connection>& connection) {
  if (std::shared_ptr<Connection> older = connections_.Adopt(session, connection->number())) {
    older->Close();  // ZooKeeper closes it too (CLIENT_RECONNECT)
  }
}

// processConnectRequest's order: a client ahead of this server is refused
// unanswered; the timeout is clamped; a new session is made, or an
// existing one reopened with its password.
void ClientPort::Connect(const ConnectRequest& request,
                         const std::shared_ptr<Connection>& connection, ConnectDone done) {
  if (!Serving()) return done(Status::Unavailable("not serving ZooKeeper requests"));
  const auto applied = static_cast<std::int64_t>(server_.store().applied_index().value());
  if (request.last_zxid_seen > applied) {
    log::Info("zk", fmt::format("refusing a session request that has seen zxid 0x{:x}, ours is "
                                "0x{:x}: the client must try another server",
                                request.last_zxid_seen, applied));
    return done(Status::Unavailable("client ahead of this server"));
  }
  const std::int32_t timeout_ms = NegotiatedTimeoutMs(
      request.timeout_ms, options_.session_timeout_min_ms, options_.session_timeout_max_ms);
  if (request.session_id == 0) return CreateSession(request, timeout_ms, connection, done);
  const std::string& secret = server_.store().zk_secret();
  const state::SessionId id = state::NumberedSessionId(request.session_id);
  const state::Session* session = server_.store().FindSession(id);
  if (secret.empty() || session == nullptr || session->behavior != state::Behavior::kDelete ||
      server_.IsExpiring(id) || !PasswordMatches(secret, request.session_id, request.password)) {
    log::Info("zk", fmt::format("invalid session 0x{:x}, probably expired", request.session_id));
    return done(Expired(request.read_only.has_value()));
  }
  std::weak_ptr<bool> alive = alive_;
  std::weak_ptr<Connection> weak = connection;
  server_.Renew(id, [this, alive, weak, request, done](Result<const state::Session*> renewed) {
    if (alive.expired() || !*alive.lock()) return;
    if (!renewed.ok()) {
      if (renewed.status().code() == Code::kNotFound)
        return done(Expired(request.read_only.has_value()));
      return done(renewed.status());
    }
    // The session keeps the timeout it was made with: its TTL is replicated.
    const auto ttl_ms = static_cast<std::int32_t>(
        std::min<std::int64_t>((*renewed)->ttl_ns / 1'000'000, INT32_MAX));
    if (std::shared_ptr<Connection> owner = weak.lock()) Adopt(request.session_id, owner);
    done(Opened(request.read_only.has_value(), ttl_ms, request.session_id,
                server_.store().zk_secret()));
  });
}

void ClientPort::EnsureSecret(std::function<void(Status)> done) {
  if (!server_.store().zk_secret().empty()) return done(Status::Ok());
  secret_waiters_.push_back(std::move(done));
  if (secret_waiters_.size() > 1) return;  // one proposal serves them all
  std::string secret(state::kZkSecretBytes, '\0');
  TENURE_ASSERT(RAND_bytes(reinterpret_cast<unsigned char*>(secret.data()),
                           static_cast<int>(secret.size())) == 1);
  std::weak_ptr<bool> alive = alive_;
  server_.Propose(state::ZkSecret{std::move(secret)}, [this, alive](Result<state::ApplyResult>) {
    if (alive.expired() || !*alive.lock()) return;
    // Set by this entry or by another leader's first: either way
    // the Store has it now, or the proposal failed.
    const Status status = server_.store().zk_secret().empty()
                              ? Status::Unavailable("no ZooKeeper secret")
                              : Status::Ok();
    std::vector<std::function<void(Status)>> waiters;
    waiters.swap(secret_waiters_);
    for (auto& waiter : waiters) waiter(status);
  });
}

void ClientPort::CreateSession(const ConnectRequest& request, std::int32_t timeout_ms,
                               const std::shared_ptr<Connection>& connection, ConnectDone done) {
  std::weak_ptr<Connection> weak = connection;
  std::weak_ptr<bool> alive = alive_;
  const bool read_only = request.read_only.has_value();
  EnsureSecret([this, alive, weak, read_only, timeout_ms, done](Status secret) {
    if (alive.expired() || !*alive.lock()) return;
    if (!secret.ok()) return done(secret);
    const std::int64_t number = server_.NewLeaseNumber();
    state::Session session;
    session.id = state::NumberedSessionId(number);
    session.name = state::kZkSessionName;
    session.node = server_.options().node_name;
    session.ttl = std::to_string(timeout_ms) + "ms";
    session.ttl_ns = static_cast<DurationNs>(timeout_ms) * 1'000'000;
    session.behavior = state::Behavior::kDelete;
    server_.Propose(state::SessionCreate{std::move(session)},
                    [this, alive, weak, read_only, number, timeout_ms,
                     done](Result<state::ApplyResult> result) {
                      if (alive.expired() || !*alive.lock()) return;
                      if (!result.ok()) return done(result.status());
                      if (!result->status.ok()) return done(result->status);
                      if (std::shared_ptr<Connection> owner = weak.lock()) {
                        Adopt(number, owner);
                      }
                      done(Opened(read_only, timeout_ms, number, server_.store().zk_secret()));
                    });
  });
}

void ClientPort::UpdateGauges() { server_.SetZkPort(connections_.size(), watches_.size()); }

void ClientPort::CountLatency(DurationMs ms) {
  if (latency_count_ == 0 || ms < latency_min_ms_) latency_min_ms_ = ms;
  latency_max_ms_ = std::max(latency_max_ms_, ms);
  latency_sum_ms_ += ms;
  ++latency_count_;
}

PortFacts ClientPort::Facts() const {
  PortFacts facts;
  const state::Store& store = server_.store();
  // A follower serves too, through the leader's port, once it knows it.
  facts.serving = Serving() || !server_.RouteToLeader().zk_address.empty();
  facts.mode = server_.RaftConfiguration().size() <= 1 ? "standalone"
               : server_.IsLeader()                    ? "leader"
                                                       : "follower";
  facts.version = TENURE_VERSION;
  facts.zxid = static_cast<std::int64_t>(store.applied_index().value());
  // ZooKeeper counts "", "/", "/zookeeper" and its two children too.
  facts.node_count = 5;
  for (const state::KvEntry* entry : store.ListKv("/")) {
    if (entry->key != "/zookeeper" && !entry->key.starts_with("/zookeeper/") &&
        store.IsZnode(entry->key)) {
      ++facts.node_count;
    }
  }
  for (const state::Session* session : store.ListSessions()) {
    if (session->name != state::kZkSessionName || !state::IsNumberedSession(session->id)) continue;
    ++facts.sessions;
    if (const std::set<std::string>* held = store.HeldKeys(session->id)) {
      facts.ephemerals += static_cast<std::int64_t>(held->size());
    }
  }
  facts.connections = static_cast<std::int64_t>(connections_.size());
  connections_.ForEach([&](const std::shared_ptr<Connection>& connection) {
    facts.outstanding += static_cast<std::int64_t>(connection->unanswered());
  });
  facts.received = received_;
  facts.sent = sent_;
  facts.latency_min_ms = latency_min_ms_;
  facts.latency_max_ms = latency_max_ms_;
  facts.latency_avg_ms = latency_count_ == 0 ? 0.0
                                             : static_cast<double>(latency_sum_ms_) /
                                                   static_cast<double>(latency_count_);
  facts.uptime_ms = server_.clock().NowMonoMs() - opened_ms_;
  return facts;
}

}  // namespace tenure::zk
