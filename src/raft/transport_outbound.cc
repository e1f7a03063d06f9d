// The transport's outbound connections: Outgoing (dial, the dialer's side of
// the handshake, the hand-over to libraft) and OutboundLink (libraft ->
// network, through TLS). The inbound ones are in transport_inbound.cc; see
// transport_impl.h.
#include <fmt/core.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/write.hpp>
#include <cerrno>
#include <cstring>

#include "common/assert.h"
#include "common/host_port.h"
#include "common/limits.h"
#include "common/log.h"
#include "raft/transport_impl.h"

namespace tenure::raft {

// --- Outgoing ------------------------------------------------------------------------

Outgoing::Outgoing(std::weak_ptr<Transport::Impl> owner, std::uint64_t peer_id, std::string address,
                   wire::Purpose purpose)
    : owner_(std::move(owner)),
      peer_id_(peer_id),
      address_(std::move(address)),
      purpose_(purpose),
      socket_(owner_.lock()->io),
      resolver_(owner_.lock()->io),
      timer_(owner_.lock()->io),
      buffer_(std::make_unique<char[]>(kHandshakeReadBytes)) {}

void Outgoing::StartRaft(struct raft_uv_connect* req, raft_uv_connect_cb cb) {
  req_ = req;
  cb_ = cb;
  Connect();
}

void Outgoing::StartJoin(JoinDone done) {
  join_done_ = std::move(done);
  Connect();
}

void Outgoing::Connect() {
  Result<HostPort> where = ParseHostPort(address_);
  if (!where.ok()) {
    auto self = shared_from_this();
    asio::post(socket_.get_executor(),
               [self, why = std::string(where.status().message())] { self->Fail(why); });
    return;
  }
  timer_.expires_after(std::chrono::milliseconds(limits::kRaftHandshakeTimeoutMs));
  timer_.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
    if (ec || self->finished_) return;
    self->Fail(fmt::format("no handshake within {} ms", limits::kRaftHandshakeTimeoutMs));
  });
  auto connected = [self = shared_from_this()](const boost::system::error_code& ec) {
    if (self->finished_) return;
    if (ec) {
      self->Fail("connect: " + ec.message());
      auto owner = self->owner_.lock();
      if (owner && self->purpose_ == wire::Purpose::kRaft && ec != asio::error::operation_aborted) {
        owner->NotePeerGone(self->peer_id_, "connecting to it failed: " + ec.message());
      }
      return;
    }
    self->SecureThenHandshake();
  };
  boost::system::error_code ec;
  asio::ip::address ip = asio::ip::make_address(where->host, ec);
  if (!ec) {
    if (std::string why = BindSource(ip); !why.empty()) {
      asio::post(socket_.get_executor(), [self = shared_from_this(), why] { self->Fail(why); });
      return;
    }
    socket_.async_connect(tcp::endpoint(ip, where->port), connected);
    return;
  }
  resolver_.async_resolve(
      where->host, std::to_string(where->port),
      [self = shared_from_this(), connected](const boost::system::error_code& resolve_ec,
                                             const tcp::resolver::results_type& results) {
        if (self->finished_) return;
        if (resolve_ec) {
          self->Fail("resolve: " + resolve_ec.message());
          return;
        }
        asio::async_connect(self->socket_, results,
                            [connected](const boost::system::error_code& connect_ec,
                                        const tcp::endpoint&) { connected(connect_ec); });
      });
}

// With -raft-bind-addr on a specific IP, dials leave from that IP too: on a
// multi-homed host raft traffic stays on the cluster's interface, and peers
// (and the test proxy) see which server dialled from where it comes from.
std::string Outgoing::BindSource(const asio::ip::address& target) {
  auto owner = owner_.lock();
  if (!owner || owner->options.bind_address.empty()) return "";
  Result<HostPort> bind = ParseHostPort(owner->options.bind_address);
  if (!bind.ok()) return "";
  boost::system::error_code ec;
  const asio::ip::address source = asio::ip::make_address(bind->host, ec);
  if (ec || source.is_unspecified() || source.is_v4() != target.is_v4()) return "";
  socket_.open(source.is_v4() ? tcp::v4() : tcp::v6(), ec);
  if (!ec) socket_.bind(tcp::endpoint(source, 0), ec);
  return ec ? fmt::format("bind to {}: {}", source.to_string(), ec.message()) : "";
}

void Outgoing::SecureThenHandshake() {
  auto owner = owner_.lock();
  if (!owner) return;
  TuneLinkSocket(socket_.native_handle());
  stream_ = owner->options.tls_dial
                ? std::make_unique<LinkStream>(std::move(socket_), *owner->options.tls_dial)
                : std::make_unique<LinkStream>(std::move(socket_));
  stream_->AsyncHandshake(/*accepting=*/false,
                          [self = shared_from_this()](const boost::system::error_code& ec) {
                            if (self->finished_) return;
                            if (ec) {
                              self->Fail("TLS: " + ec.message());
                              return;
                            }
                            self->Handshake();
                          });
}

void Outgoing::Handshake() {
  auto owner = owner_.lock();
  if (!owner) return;
  wire::Hello hello;
  hello.purpose = purpose_;
  hello.id = owner->options.id;
  hello.nonce = FreshNonce();
  hello.raft_address = owner->options.address;
  hello.node_name = owner->options.node_name;
  hello.http_address = owner->options.http_address;
  hello.etcd_address = owner->options.etcd_address;
  hello.zk_address = owner->options.zk_address;
  handshake_ =
      std::make_unique<wire::DialerHandshake>(&owner->options.key, std::move(hello), peer_id_);
  auto first = std::make_shared<std::string>(handshake_->Start());
  stream_->AsyncWrite(asio::buffer(*first), [self = shared_from_this(), first](
                                                const boost::system::error_code& ec, std::size_t) {
    if (self->finished_) return;
    if (ec) {
      self->Fail("write: " + ec.message());
      return;
    }
    self->Read();
  });
}

void Outgoing::Read() {
  stream_->AsyncReadSome(
      asio::buffer(buffer_.get(), kHandshakeReadBytes),
      [self = shared_from_this()](const boost::system::error_code& ec, std::size_t n) {
        if (self->finished_) return;
        if (ec) {
          // A peer that closes after a refusal it could not send us.
          self->Fail(ec == asio::error::eof ? "the peer closed the connection during the handshake"
                                            : "read: " + ec.message());
          return;
        }
        std::string_view data(self->buffer_.get(), n);
        if (self->handshake_->done()) {  // a join answer arriving
          self->received_.append(data);
          self->Succeed();
          return;
        }
        wire::Step step = self->handshake_->Feed(data);
        if (!step.status.ok()) {
          self->Fail(std::string(step.status.message()));
          return;
        }
        if (step.send.empty()) {
          if (self->handshake_->done()) {
            self->received_ = self->handshake_->TakeLeftover();
            self->Succeed();
          } else {
            self->Read();
          }
          return;
        }
        auto bytes = std::make_shared<std::string>(std::move(step.send));
        self->stream_->AsyncWrite(
            asio::buffer(*bytes),
            [self, bytes](const boost::system::error_code& write_ec, std::size_t) {
              if (self->finished_) return;
              if (write_ec) {
                self->Fail("write: " + write_ec.message());
                return;
              }
              if (self->handshake_->done()) {
                self->received_ = self->handshake_->TakeLeftover();
                self->Succeed();
              } else {
                self->Read();
              }
            });
      });
}

void Outgoing::Succeed() {
  auto owner = owner_.lock();
  if (!owner) return;
  if (purpose_ == wire::Purpose::kJoin) {
    Result<std::optional<wire::JoinAnswer>> answer = wire::TryDecodeJoinAnswer(received_);
    if (!answer.ok()) {
      Fail(std::string(answer.status().message()));
      return;
    }
    if (!answer->has_value()) {
      // Wait for it: the leader answers once the server is added.
      timer_.expires_after(std::chrono::milliseconds(kJoinAnswerTimeoutMs + 5'000));
      timer_.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
        if (ec || self->finished_) return;
        self->Fail("no join answer in time");
      });
      Read();
      return;
    }
    finished_ = true;
    timer_.cancel();
    stream_->Close();
    JoinDone done = std::move(join_done_);
    owner->OutgoingFinished(this);
    done(std::move(**answer));
    return;
  }
  finished_ = true;
  timer_.cancel();
  owner->NoteDialSuccess(peer_id_, address_);
  if (stream_->tls()) {
    uv_stream_t* pipe_stream = nullptr;
    if (!HandToRaftThroughTls(*owner, &pipe_stream)) return;
    struct raft_uv_connect* req = req_;
    raft_uv_connect_cb cb = cb_;
    owner->PostToRaft([req, cb, pipe_stream] { cb(req, pipe_stream, 0); });
    owner->OutgoingFinished(this);
    return;
  }
  int fd = stream_->socket().release();
  auto* stream = static_cast<uv_tcp_t*>(raft_malloc(sizeof(uv_tcp_t)));
  TENURE_ASSERT(stream != nullptr);
  uv_tcp_init(owner->loop, stream);
  if (int rv = uv_tcp_open(stream, fd); rv != 0) {
    ::close(fd);
    uv_close(reinterpret_cast<uv_handle_t*>(stream), [](uv_handle_t* h) { raft_free(h); });
    finished_ = false;
    Fail(std::string("uv_tcp_open: ") + uv_strerror(rv));
    return;
  }
  struct raft_uv_connect* req = req_;
  raft_uv_connect_cb cb = cb_;
  owner->PostToRaft([req, cb, stream] { cb(req, reinterpret_cast<uv_stream_t*>(stream), 0); });
  owner->OutgoingFinished(this);
}

bool Outgoing::HandToRaftThroughTls(Transport::Impl& owner, uv_stream_t** stream) {
  uv_pipe_t* pipe = nullptr;
  asio::local::stream_protocol::socket ours(owner.io);
  if (std::string why = owner.PipeToRaft(&pipe, &ours); !why.empty()) {
    finished_ = false;
    Fail(why);
    return false;
  }
  auto link = std::make_shared<OutboundLink>(owner_, std::move(stream_), std::move(ours), peer_id_);
  owner.outbound_links.insert(link);
  link->Start();
  *stream = reinterpret_cast<uv_stream_t*>(pipe);
  return true;
}

void Outgoing::Fail(const std::string& why) { Finish(why, RAFT_NOCONNECTION); }

void Outgoing::Cancel() { Finish("shutting down", RAFT_CANCELED); }

void Outgoing::Finish(const std::string& why, int raft_status) {
  if (finished_) return;
  finished_ = true;
  timer_.cancel();
  resolver_.cancel();
  boost::system::error_code ignored;
  socket_.close(ignored);
  if (stream_) stream_->Close();
  auto owner = owner_.lock();
  if (!owner) return;
  if (purpose_ == wire::Purpose::kJoin) {
    JoinDone done = std::move(join_done_);
    owner->OutgoingFinished(this);
    if (done) done(Status::Unavailable(why));
    return;
  }
  // A cancel is ours (shutting down), not the peer's failure.
  if (raft_status == RAFT_NOCONNECTION) owner->NoteDialFailure(peer_id_, address_, why);
  struct raft_uv_connect* req = req_;
  raft_uv_connect_cb cb = cb_;
  owner->PostToRaft([req, cb, raft_status] { cb(req, nullptr, raft_status); });
  owner->OutgoingFinished(this);
}

// --- OutboundLink -------------------------------------------------------------------

OutboundLink::OutboundLink(std::weak_ptr<Transport::Impl> owner,
                           std::unique_ptr<LinkStream> network,
                           asio::local::stream_protocol::socket pipe, std::uint64_t peer_id)
    : owner_(std::move(owner)),
      network_(std::move(network)),
      pipe_(std::move(pipe)),
      peer_id_(peer_id),
      from_raft_(std::make_unique<char[]>(kLinkReadBytes)),
      from_peer_(std::make_unique<char[]>(kHandshakeReadBytes)) {}

void OutboundLink::Start() {
  ReadPipe();
  ReadNetwork();
}

void OutboundLink::ReadPipe() {
  pipe_.async_read_some(
      asio::buffer(from_raft_.get(), kLinkReadBytes),
      [self = shared_from_this()](const boost::system::error_code& ec, std::size_t n) {
        if (self->closed_) return;
        if (ec) {
          self->Close("");  // libraft closed the connection
          return;
        }
        self->network_->AsyncWrite(asio::buffer(self->from_raft_.get(), n),
                                   [self](const boost::system::error_code& write_ec, std::size_t) {
                                     if (self->closed_) return;
                                     if (write_ec) {
                                       self->Close("write: " + write_ec.message());
                                       return;
                                     }
                                     self->ReadPipe();
                                   });
      });
}

void OutboundLink::ReadNetwork() {
  network_->AsyncReadSome(
      asio::buffer(from_peer_.get(), kHandshakeReadBytes),
      [self = shared_from_this()](const boost::system::error_code& ec, std::size_t) {
        if (self->closed_) return;
        if (ec) {
          self->Close(PeerHungUp(ec) ? std::string() : "read: " + ec.message());
          if (auto owner = self->owner_.lock()) {
            owner->NotePeerGone(self->peer_id_,
                                "this server's connection to it ended: " + ec.message());
          }
          return;
        }
        self->ReadNetwork();  // raft peers never answer on this connection
      });
}

void OutboundLink::Close(const std::string& why) {
  if (closed_) return;
  closed_ = true;
  auto owner = owner_.lock();
  if (owner && !why.empty() && owner->link_log.Allow("closed raft connections")) {
    log::Warn("raft", fmt::format("closed the raft connection to server {}: {}", peer_id_, why));
  }
  boost::system::error_code ignored;
  network_->Close();
  pipe_.close(ignored);  // libraft sees its connection end and dials again
  if (owner) owner->OutboundLinkClosed(this);
}

}  // namespace tenure::raft
