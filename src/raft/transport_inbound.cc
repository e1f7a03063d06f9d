// The transport's inbound connections: Incoming (the listener's side of the
// handshake) and InboundLink (network -> MessageGate -> libraft). The
// outbound ones are in transport_outbound.cc; see transport_impl.h.
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

// --- What both directions share (transport_impl.h) ----------------------------

bool PeerHungUp(const boost::system::error_code& ec) {
  return ec == asio::error::eof || ec == asio::error::connection_reset ||
         ec == asio::ssl::error::stream_truncated;
}

void TuneLinkSocket(int fd) {
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  ::setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
  const int idle_s = 30, interval_s = 5, probes = 3;
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle_s, sizeof idle_s);
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval_s, sizeof interval_s);
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &probes, sizeof probes);
}

wire::Nonce FreshNonce() {
  wire::Nonce nonce{};
  wire::RandomBytes(nonce.data(), nonce.size());
  return nonce;
}

// --- Incoming -------------------------------------------------------------------

Incoming::Incoming(std::weak_ptr<Transport::Impl> owner, std::unique_ptr<LinkStream> stream,
                   std::string remote)
    : owner_(std::move(owner)),
      stream_(std::move(stream)),
      timer_(stream_->socket().get_executor()),
      remote_(std::move(remote)),
      buffer_(std::make_unique<char[]>(kHandshakeReadBytes)) {}

void Incoming::Start() {
  auto owner = owner_.lock();
  if (!owner) return;
  TuneLinkSocket(stream_->socket().native_handle());
  std::weak_ptr<Transport::Impl> weak_owner = owner_;
  handshake_ = std::make_unique<wire::ListenerHandshake>(
      &owner->options.key, owner->options.id, FreshNonce(),
      [weak_owner](const wire::Hello& hello) -> std::string {
        auto alive = weak_owner.lock();
        return alive ? alive->AdmitRaft(hello) : std::string("shutting down");
      });
  timer_.expires_after(std::chrono::milliseconds(limits::kRaftHandshakeTimeoutMs));
  timer_.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
    if (ec || self->closed_) return;
    if (auto alive = self->owner_.lock()) ++alive->counters.handshakes_refused;
    self->Close();  // a stranger that sends nothing (or too little) holds no slot
  });
  // With TLS, nothing reaches the cluster handshake from a peer whose
  // certificate the CA did not sign.
  stream_->AsyncHandshake(/*accepting=*/true,
                          [self = shared_from_this()](const boost::system::error_code& ec) {
                            if (self->closed_) return;
                            if (ec) {
                              self->Refused("TLS: " + ec.message());
                              return;
                            }
                            self->Read();
                          });
}

void Incoming::Refused(const std::string& why) {
  if (auto owner = owner_.lock()) {
    ++owner->counters.handshakes_refused;
    if (owner->refusal_log.Allow("refused raft connections")) {
      log::Warn("raft", fmt::format("refused a raft connection from {}: {}", remote_, why));
    }
  }
  Close();
}

void Incoming::Read() {
  stream_->AsyncReadSome(
      asio::buffer(buffer_.get(), kHandshakeReadBytes),
      [self = shared_from_this()](const boost::system::error_code& ec, std::size_t n) {
        if (self->closed_) return;
        auto owner = self->owner_.lock();
        if (ec || !owner) {
          // The dialer checks this server's proof before it sends its own,
          // so one with another cluster key leaves here, silently: without
          // this the members would never learn of it.
          if (owner && self->handshake_->awaiting_proof()) {
            ++owner->counters.handshakes_refused;
            if (owner->refusal_log.Allow("refused raft connections")) {
              log::Warn("raft",
                        fmt::format(
                            "failed raft handshake from {} (says it is server {}): it "
                            "closed the connection before its proof (a different -raft-key-file?)",
                            self->remote_, self->handshake_->hello().id));
            }
          }
          self->Close();
          return;
        }
        wire::Step step = self->handshake_->Feed(std::string_view(self->buffer_.get(), n));
        if (!step.status.ok()) {
          ++owner->counters.handshakes_refused;
          if (owner->refusal_log.Allow("refused raft connections")) {
            const wire::Hello& hello = self->handshake_->hello();
            log::Write(
                log::Level::kWarn, "raft",
                fmt::format("refused a raft connection from {}{}: {}", self->remote_,
                            hello.id != 0 ? fmt::format(" (says it is server {})", hello.id) : "",
                            step.status.message()));
          }
          if (step.send.empty()) {
            self->Close();
          } else {
            self->Send(std::move(step.send), /*then_close=*/true);
          }
          return;
        }
        if (self->handshake_->done()) {
          // The verdict goes out before the socket changes hands.
          self->Send(std::move(step.send), /*then_close=*/false);
          return;
        }
        if (!step.send.empty()) {
          self->Send(std::move(step.send), /*then_close=*/false);
          return;
        }
        self->Read();
      });
}

void Incoming::Send(std::string bytes, bool then_close) {
  sending_ = std::move(bytes);
  stream_->AsyncWrite(
      asio::buffer(sending_),
      [self = shared_from_this(), then_close](const boost::system::error_code& ec, std::size_t) {
        if (self->closed_) return;
        auto owner = self->owner_.lock();
        if (ec || then_close || !owner) {
          if (then_close && !ec) {
            boost::system::error_code ignored;
            self->stream_->socket().shutdown(tcp::socket::shutdown_send, ignored);
          }
          self->Close();
          return;
        }
        if (self->handshake_->done() && !self->waiting_for_answer_) {
          self->waiting_for_answer_ = true;
          self->timer_.expires_after(std::chrono::milliseconds(kJoinAnswerTimeoutMs));
          self->timer_.async_wait(
              [weak = std::weak_ptr<Incoming>(self)](const boost::system::error_code& timer_ec) {
                auto alive = weak.lock();
                if (!timer_ec && alive && !alive->closed_) alive->Close();
              });
          owner->HandshakeDone(self);
          return;
        }
        self->Read();
      });
}

void Incoming::AnswerJoin(const wire::JoinAnswer& answer) {
  if (closed_) return;
  Send(wire::EncodeJoinAnswer(answer), /*then_close=*/true);
}

void Incoming::Close() {
  if (closed_) return;
  closed_ = true;
  timer_.cancel();
  if (stream_) stream_->Close();  // gone to an InboundLink after a raft handshake
  if (auto owner = owner_.lock()) owner->IncomingFinished(this);
}

// --- InboundLink ------------------------------------------------------------------

InboundLink::InboundLink(std::weak_ptr<Transport::Impl> owner, std::unique_ptr<LinkStream> network,
                         asio::local::stream_protocol::socket pipe, std::uint64_t peer_id,
                         std::string remote, wire::GateLimits limits,
                         std::shared_ptr<wire::InboundLedger> ledger)
    : owner_(std::move(owner)),
      network_(std::move(network)),
      pipe_(std::move(pipe)),
      deadline_(network_->socket().get_executor()),
      peer_id_(peer_id),
      remote_(std::move(remote)),
      gate_(peer_id, limits, std::move(ledger)),
      buffer_(std::make_unique<char[]>(kLinkReadBytes)) {}

void InboundLink::Start(std::string leftover) {
  WatchPipe();
  if (leftover.empty()) {
    Read();
  } else {
    Process(leftover);
  }
}

void InboundLink::Read() {
  network_->AsyncReadSome(
      asio::buffer(buffer_.get(), kLinkReadBytes),
      [self = shared_from_this()](const boost::system::error_code& ec, std::size_t n) {
        if (self->closed_) return;
        if (ec) {
          self->Close(PeerHungUp(ec) ? std::string() : "read: " + ec.message());
          if (auto owner = self->owner_.lock()) {
            owner->NotePeerGone(self->peer_id_,
                                "its connection to this server ended: " + ec.message());
          }
          return;
        }
        self->Process(std::string_view(self->buffer_.get(), n));
      });
}

void InboundLink::Process(std::string_view data) {
  auto owner = owner_.lock();
  if (!owner) return;
  std::uint64_t dropped_before = gate_.votes_dropped();
  MonoMs now = TransportNowMs();
  Status passed = gate_.Feed(data, now, &out_);
  owner->counters.votes_dropped += gate_.votes_dropped() - dropped_before;
  if (!passed.ok()) {
    Close(std::string(passed.message()));
    return;
  }
  owner->heard_ms[peer_id_] = now;
  ArmDeadline(now);
  if (out_.empty()) {
    Read();
    return;
  }
  asio::async_write(pipe_, asio::buffer(out_),
                    [self = shared_from_this()](const boost::system::error_code& ec, std::size_t) {
                      if (self->closed_) return;
                      if (ec) {
                        self->Close("");  // libraft closed its end
                        return;
                      }
                      self->out_.clear();
                      // A snapshot passes whole: do not keep its capacity.
                      if (self->out_.capacity() > kLinkReadBytes * 16)
                        std::string().swap(self->out_);
                      self->Read();
                    });
}

void InboundLink::WatchPipe() {
  // libraft never writes on an inbound stream: readable means it closed it.
  pipe_.async_wait(asio::socket_base::wait_read,
                   [self = shared_from_this()](const boost::system::error_code& ec) {
                     if (ec || self->closed_) return;
                     self->Close("");
                   });
}

void InboundLink::ArmDeadline(MonoMs now_ms) {
  ++deadline_generation_;
  if (!gate_.mid_message()) {
    deadline_.cancel();
    return;
  }
  // A whole-message deadline, not one per byte: a peer that trickles a byte
  // now and then is cut as one that stops.
  deadline_.expires_after(
      std::chrono::milliseconds(std::max<DurationMs>(0, gate_.deadline_ms() - now_ms) + 1));
  deadline_.async_wait([self = shared_from_this(),
                        generation = deadline_generation_](const boost::system::error_code& ec) {
    if (ec || self->closed_ || generation != self->deadline_generation_) return;
    const MonoMs now = TransportNowMs();
    std::string none;
    Status late = self->gate_.Feed({}, now, &none);  // nothing but the deadline to check
    if (!late.ok()) {
      self->Close(std::string(late.message()));
      return;
    }
    self->ArmDeadline(now);
  });
}

void InboundLink::Close(const std::string& why) {
  if (closed_) return;
  closed_ = true;
  auto owner = owner_.lock();
  if (owner && !why.empty()) {
    ++owner->counters.links_cut;
    if (owner->link_log.Allow("closed raft connections")) {
      log::Warn("raft", fmt::format("closed the raft connection from server {} ({}): {}", peer_id_,
                                    remote_, why));
    }
  }
  boost::system::error_code ignored;
  deadline_.cancel();
  network_->Close();
  pipe_.close(ignored);
  if (owner) owner->LinkClosed(this);
}

}  // namespace tenure::raft
