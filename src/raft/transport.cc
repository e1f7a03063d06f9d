// Transport: the libraft glue, the listener, the mailbox into libraft and
// the bookkeeping. The connections are in transport_inbound.cc and
// transport_outbound.cc.
#include "raft/transport.h"

#include "common/log.h"

// clang-format off
#include <utility>  // before any Boost header: asio 1.74 + g++ 12 (std::exchange)
// clang-format on
#include <fmt/core.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/ip/address.hpp>
#include <cerrno>
#include <cstring>

#include "common/assert.h"
#include "common/host_port.h"
#include "common/limits.h"
#include "raft/transport_impl.h"

namespace tenure::raft {

MonoMs TransportNowMs() {
  return MonoMs(std::chrono::duration_cast<std::chrono::milliseconds>(
                    std::chrono::steady_clock::now().time_since_epoch())
                    .count());
}

Transport::Impl::Impl(asio::io_context& io_context, uv_loop_t* uv_loop,
                      TransportOptions transport_options)
    : io(io_context),
      loop(uv_loop),
      options(std::move(transport_options)),
      ledger(std::make_shared<wire::InboundLedger>(MakeGateLimits())),
      acceptor(io_context) {
  raw.data = nullptr;
  raw.impl = this;
  raw.init = &Impl::RawInit;
  raw.listen = &Impl::RawListen;
  raw.connect = &Impl::RawConnect;
  raw.close = &Impl::RawClose;
}

Transport::Impl::~Impl() {
  ShutDownNetwork();
  // libraft closes the transport before it closes itself; this is only for
  // a start that failed between the two (Node::FreeIo runs the loop after).
  if (mailbox_initialized) {
    uv_close(reinterpret_cast<uv_handle_t*>(&mailbox), nullptr);
    mailbox_initialized = false;
  }
}

wire::GateLimits Transport::Impl::MakeGateLimits() const {
  wire::GateLimits limits = wire::DefaultGateLimits(options.election_timeout_ms);
  limits.message_time_ms = options.message_time_ms;
  limits.inbound_bytes_max = options.inbound_bytes_max;
  return limits;
}

int Transport::Impl::RawInit(struct raft_uv_transport* t, raft_id id, const char* address) {
  auto* self = static_cast<Impl*>(t->impl);
  if (id != self->options.id || self->options.address != address) {
    std::snprintf(t->errmsg, sizeof t->errmsg, "transport built for server %llu at %s",
                  static_cast<unsigned long long>(self->options.id), self->options.address.c_str());
    return RAFT_INVALID;
  }
  if (!self->mailbox_initialized) {
    uv_timer_init(self->loop, &self->mailbox);
    self->mailbox.data = self;
    self->mailbox_initialized = true;
  }
  return 0;
}

int Transport::Impl::RawListen(struct raft_uv_transport* t, raft_uv_accept_cb cb) {
  auto* self = static_cast<Impl*>(t->impl);
  self->accept_cb = cb;
  if (!self->listening) {
    if (Status listened = self->Listen(); !listened.ok()) {
      std::snprintf(t->errmsg, sizeof t->errmsg, "%s", std::string(listened.message()).c_str());
      return RAFT_IOERR;
    }
  }
  self->Accept();
  return 0;
}

int Transport::Impl::RawConnect(struct raft_uv_transport* t, struct raft_uv_connect* req,
                                raft_id id, const char* address, raft_uv_connect_cb cb) {
  auto* self = static_cast<Impl*>(t->impl);
  if (self->raft_closing) return RAFT_CANCELED;
  auto dial = std::make_shared<Outgoing>(self->weak_from_this(), id, address, wire::Purpose::kRaft);
  self->outgoing.insert(dial);
  dial->StartRaft(req, cb);
  return 0;
}

void Transport::Impl::RawClose(struct raft_uv_transport* t, raft_uv_transport_close_cb cb) {
  auto* self = static_cast<Impl*>(t->impl);
  self->raft_closing = true;
  self->ShutDownNetwork();  // cancelled connects are posted first
  self->PostToRaft([self, t, cb] {
    // The last mail: nothing is posted after the transport closed.
    uv_close(reinterpret_cast<uv_handle_t*>(&self->mailbox), nullptr);
    self->mailbox_initialized = false;
    cb(t);
  });
}

Status Transport::Impl::Listen() {
  const std::string& where = options.bind_address.empty() ? options.address : options.bind_address;
  Result<HostPort> parsed = ParseHostPort(where, /*allow_zero_port=*/true);
  if (!parsed.ok()) return parsed.status().Annotate("raft: listen");
  boost::system::error_code ec;
  tcp::endpoint endpoint;
  asio::ip::address ip = asio::ip::make_address(parsed->host, ec);
  if (!ec) {
    endpoint = tcp::endpoint(ip, parsed->port);
  } else {
    tcp::resolver resolver(io);
    auto results = resolver.resolve(parsed->host, std::to_string(parsed->port), ec);
    if (ec || results.empty()) {
      return Status::IoError(fmt::format("raft: listen on {}: cannot resolve {}: {}", where,
                                         parsed->host, ec ? ec.message() : "no address"));
    }
    endpoint = results.begin()->endpoint();
  }
  acceptor.open(endpoint.protocol(), ec);
  if (!ec) acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec) acceptor.bind(endpoint, ec);
  if (!ec) acceptor.listen(128, ec);
  if (ec) {
    boost::system::error_code ignored;
    acceptor.close(ignored);
    return Status::IoError(fmt::format("raft: listen on {}: {}", where, ec.message()));
  }
  listening = true;
  return Status();
}

void Transport::Impl::Accept() {
  if (accepting || !listening || raft_closing) return;
  accepting = true;
  acceptor.async_accept([weak = weak_from_this()](const boost::system::error_code& ec,
                                                  tcp::socket socket) {
    auto self = weak.lock();
    if (!self) return;
    self->accepting = false;
    if (ec == asio::error::operation_aborted || self->raft_closing) return;
    if (ec) {
      // Out of descriptors, most likely: do not spin; try again shortly.
      if (self->refusal_log.Allow("refused raft connections")) {
        log::Warn("raft", fmt::format("accepting a raft connection failed: {}", ec.message()));
      }
      auto retry = std::make_shared<asio::steady_timer>(self->io, std::chrono::milliseconds(100));
      retry->async_wait(
          [weak = std::weak_ptr<Impl>(self), retry](const boost::system::error_code&) {
            if (auto owner = weak.lock()) owner->Accept();
          });
      return;
    }
    boost::system::error_code ignored;
    tcp::endpoint peer = socket.remote_endpoint(ignored);
    std::string remote = fmt::format("{}:{}", peer.address().to_string(ignored), peer.port());
    // One host may hold only part of the handshake slots, so a stranger
    // who keeps opening idle connections cannot lock members out.
    std::string host = peer.address().to_string(ignored);
    std::size_t from_host = 0;
    for (const auto& pending : self->incoming) {
      if (pending->remote().compare(0, host.size() + 1, host + ":") == 0) ++from_host;
    }
    if (self->incoming.size() >= limits::kRaftHandshakesMax ||
        from_host >= limits::kRaftHandshakesPerHostMax) {
      ++self->counters.handshakes_refused;
      if (self->refusal_log.Allow("refused raft connections")) {
        log::Warn("raft", fmt::format("refused a raft connection from {}: {} handshakes already in "
                                      "progress ({} from that host)",
                                      remote, self->incoming.size(), from_host));
      }
      socket.close(ignored);
    } else {
      auto stream = self->options.tls_accept
                        ? std::make_unique<LinkStream>(std::move(socket), *self->options.tls_accept)
                        : std::make_unique<LinkStream>(std::move(socket));
      auto connection = std::make_shared<Incoming>(self, std::move(stream), std::move(remote));
      self->incoming.insert(connection);
      connection->Start();
    }
    self->Accept();
  });
}

void Transport::Impl::PostToRaft(std::function<void()> callback) {
  if (!mailbox_initialized) return;  // libraft has closed the transport
  mail.push_back(std::move(callback));
  if (!mailbox_armed) {
    uv_timer_start(&mailbox, &Impl::MailboxFired, 0, 0);
    mailbox_armed = true;
  }
  if (hooks.poke) hooks.poke();
}

void Transport::Impl::MailboxFired(uv_timer_t* timer) {
  auto* self = static_cast<Impl*>(timer->data);
  self->mailbox_armed = false;
  std::vector<std::function<void()>> batch;
  batch.swap(self->mail);
  for (auto& callback : batch) callback();
}

void Transport::Impl::ShutDownNetwork() {
  boost::system::error_code ignored;
  acceptor.close(ignored);
  listening = false;
  for (const auto& connection : std::set<std::shared_ptr<Incoming>>(incoming)) connection->Close();
  for (const auto& link : std::list<std::shared_ptr<InboundLink>>(links)) link->Close("");
  for (const auto& link : std::set<std::shared_ptr<OutboundLink>>(outbound_links)) {
    link->Close("");
  }
  for (const auto& dial : std::set<std::shared_ptr<Outgoing>>(outgoing)) dial->Cancel();
}

std::string Transport::Impl::AdmitRaft(const wire::Hello& hello) {
  if (hello.purpose == wire::Purpose::kJoin) return "";  // the node decides, with the answer
  std::size_t open = 0;
  for (const auto& link : links) open += link->closed() ? 0 : 1;
  if (open >= limits::kRaftLinksMax) {
    return fmt::format("{} raft connections are open, the limit", limits::kRaftLinksMax);
  }
  return hooks.admit ? hooks.admit(hello) : std::string();
}

std::string Transport::Impl::PipeToRaft(uv_pipe_t** raft_end,
                                        asio::local::stream_protocol::socket* ours) {
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds) != 0) {
    return std::string("socketpair: ") + std::strerror(errno);
  }
  auto* pipe = static_cast<uv_pipe_t*>(raft_malloc(sizeof(uv_pipe_t)));
  TENURE_ASSERT(pipe != nullptr);
  uv_pipe_init(loop, pipe, 0);
  if (int rv = uv_pipe_open(pipe, fds[1]); rv != 0) {
    ::close(fds[1]);
    ::close(fds[0]);
    uv_close(reinterpret_cast<uv_handle_t*>(pipe), [](uv_handle_t* h) { raft_free(h); });
    return std::string("uv_pipe_open: ") + uv_strerror(rv);
  }
  boost::system::error_code ec;
  ours->assign(asio::local::stream_protocol(), fds[0], ec);
  TENURE_ASSERT(!ec);
  *raft_end = pipe;
  return "";
}

void Transport::Impl::HandshakeDone(const std::shared_ptr<Incoming>& connection) {
  wire::Hello hello = connection->handshake().hello();
  if (hello.purpose == wire::Purpose::kJoin) {
    if (!hooks.join) {
      connection->AnswerJoin({wire::JoinStatus::kRefused, 0, "", "this server takes no joins"});
      return;
    }
    std::weak_ptr<Incoming> weak = connection;
    hooks.join(hello, [weak](wire::JoinAnswer answer) {
      if (auto alive = weak.lock()) alive->AnswerJoin(answer);
    });
    return;
  }
  incoming.erase(connection);
  if (raft_closing || accept_cb == nullptr) {
    connection->Close();
    return;
  }
  // One peer keeps at most kRaftLinksPerPeerMax connections: the oldest goes.
  std::size_t of_peer = 0;
  for (const auto& link : links) of_peer += !link->closed() && link->peer_id() == hello.id;
  for (auto it = links.begin(); of_peer >= limits::kRaftLinksPerPeerMax && it != links.end();) {
    auto link = *it++;
    if (!link->closed() && link->peer_id() == hello.id) {
      link->Close("replaced by a newer connection from the same server");
      --of_peer;
    }
  }
  uv_pipe_t* pipe = nullptr;
  asio::local::stream_protocol::socket ours(io);
  if (std::string why = PipeToRaft(&pipe, &ours); !why.empty()) {
    if (link_log.Allow("raft connection failures")) {
      log::Info("raft", fmt::format("server {}'s connection: {}", hello.id, why));
    }
    connection->Close();
    return;
  }
  std::string leftover = connection->handshake().TakeLeftover();
  auto link =
      std::make_shared<InboundLink>(weak_from_this(), connection->TakeStream(), std::move(ours),
                                    hello.id, connection->remote(), MakeGateLimits(), ledger);
  links.push_back(link);
  ++counters.links_open;
  lost.erase(hello.id);
  adverts[hello.id] = {hello.id,           hello.raft_address, hello.node_name,
                       hello.http_address, hello.etcd_address, hello.zk_address};
  connection->Close();  // the socket moved to the link; this only drops the handshake state
  PostToRaft([self = this, id = hello.id, address = hello.raft_address, pipe] {
    if (self->raft_closing) {
      uv_close(reinterpret_cast<uv_handle_t*>(pipe), [](uv_handle_t* h) { raft_free(h); });
      return;
    }
    self->accept_cb(&self->raw, id, address.c_str(), reinterpret_cast<uv_stream_t*>(pipe));
  });
  link->Start(std::move(leftover));
}

void Transport::Impl::IncomingFinished(Incoming* connection) {
  for (auto it = incoming.begin(); it != incoming.end(); ++it) {
    if (it->get() == connection) {
      incoming.erase(it);
      return;
    }
  }
}

void Transport::Impl::LinkClosed(InboundLink* link) {
  for (auto it = links.begin(); it != links.end(); ++it) {
    if (it->get() == link) {
      links.erase(it);
      --counters.links_open;
      return;
    }
  }
}

void Transport::Impl::OutboundLinkClosed(OutboundLink* link) {
  for (auto it = outbound_links.begin(); it != outbound_links.end(); ++it) {
    if (it->get() == link) {
      outbound_links.erase(it);
      return;
    }
  }
}

void Transport::Impl::OutgoingFinished(Outgoing* dial) {
  for (auto it = outgoing.begin(); it != outgoing.end(); ++it) {
    if (it->get() == dial) {
      outgoing.erase(it);
      return;
    }
  }
}

void Transport::Impl::NoteDialFailure(std::uint64_t id, const std::string& address,
                                      const std::string& why) {
  constexpr DurationMs kRepeatMs = 60'000;
  DialState& state = dial_state[id];
  MonoMs now = TransportNowMs();
  if (why != state.last_failure || state.logged_at_ms < MonoMs() ||
      now - state.logged_at_ms >= kRepeatMs) {
    log::Warn("raft", fmt::format("cannot reach server {} at {}: {} (retrying)", id, address, why));
    state.logged_at_ms = now;
  }
  state.last_failure = why;
  state.failing = true;
}

void Transport::Impl::NotePeerGone(std::uint64_t id, const std::string& why) {
  if (raft_closing || id == 0) return;
  for (const auto& link : links) {
    if (!link->closed() && link->peer_id() == id) return;  // it still talks to us
  }
  if (lost.emplace(id, why).second) ++counters.peers_lost;
  if (hooks.poke) hooks.poke();  // the node looks after the next uv_run
}

void Transport::Impl::NoteDialSuccess(std::uint64_t id, const std::string& address) {
  DialState& state = dial_state[id];
  if (state.failing) log::Info("raft", fmt::format("reached server {} at {}", id, address));
  state = DialState{};
}

// --- Transport ----------------------------------------------------------------

Transport::Transport(asio::io_context& io, uv_loop_t* loop, TransportOptions options)
    : impl_(std::make_shared<Impl>(io, loop, std::move(options))) {}

Transport::~Transport() = default;

void Transport::set_hooks(Hooks hooks) { impl_->hooks = std::move(hooks); }

struct raft_uv_transport* Transport::raw() {
  return &impl_->raw;
}

Status Transport::Listen() { return impl_->Listen(); }

std::uint16_t Transport::port() const {
  boost::system::error_code ec;
  auto endpoint = impl_->acceptor.local_endpoint(ec);
  return ec ? 0 : endpoint.port();
}

void Transport::SetTls(std::shared_ptr<const tls::Context> accept,
                       std::shared_ptr<const tls::Context> dial) {
  TENURE_ASSERT(impl_->options.tls_accept != nullptr);
  TENURE_ASSERT(accept != nullptr);
  TENURE_ASSERT(dial != nullptr);
  impl_->options.tls_accept = std::move(accept);
  impl_->options.tls_dial = std::move(dial);
}

namespace {

// `text` as an address, IPv4-mapped IPv6 as its IPv4; unspecified if not one.
asio::ip::address Normalized(std::string_view text) {
  boost::system::error_code ec;
  asio::ip::address ip = asio::ip::make_address(text, ec);
  if (ec) return {};
  if (ip.is_v6() && ip.to_v6().is_v4_mapped()) {
    return asio::ip::make_address_v4(asio::ip::v4_mapped, ip.to_v6());
  }
  return ip;
}

}  // namespace

bool Transport::HasLinkFrom(const std::string& ip) const {
  const asio::ip::address wanted = Normalized(ip);
  if (wanted.is_unspecified()) return false;
  for (const auto& link : impl_->links) {
    if (link->closed()) continue;
    const std::string& remote = link->remote();
    const std::size_t colon = remote.rfind(':');
    if (colon == std::string::npos) continue;
    if (Normalized(std::string_view(remote).substr(0, colon)) == wanted) return true;
  }
  return false;
}

std::vector<PeerAdvert> Transport::Adverts() const {
  std::vector<PeerAdvert> out;
  for (const auto& [id, advert] : impl_->adverts) out.push_back(advert);
  return out;
}

const TransportCounters& Transport::counters() const { return impl_->counters; }

DurationMs Transport::SinceHeardMs(std::uint64_t id) const {
  auto it = impl_->heard_ms.find(id);
  if (it == impl_->heard_ms.end()) return -1;
  return std::max<DurationMs>(0, TransportNowMs() - it->second);
}

bool Transport::LinkLost(std::uint64_t id, std::string* why) const {
  auto it = impl_->lost.find(id);
  if (it == impl_->lost.end()) return false;
  if (why != nullptr) *why = it->second;
  return true;
}

void Transport::Join(const std::string& address,
                     std::function<void(Result<wire::JoinAnswer>)> done) {
  auto dial = std::make_shared<Outgoing>(impl_, 0, address, wire::Purpose::kJoin);
  impl_->outgoing.insert(dial);
  dial->StartJoin(std::move(done));
}

}  // namespace tenure::raft
