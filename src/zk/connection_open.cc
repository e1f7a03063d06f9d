// Connection (zk/connection.h): opening a session, and on a follower the
// splice of the connection to the leader's port (zk/leader_splice.h).
#include <fmt/format.h>

#include <cstdint>
#include <string>

#include "common/log.h"
#include "common/log_limiter.h"
#include "server/server.h"
#include "zk/client_port.h"
#include "zk/connection.h"
#include "zk/leader_splice.h"

namespace tenure::zk {

void Connection::OnConnectFrame(const std::string& frame) {
  std::string why;
  std::optional<ConnectRequest> request = DecodeConnectRequest(frame, &why);
  if (!request) {
    log::Warn("zk", "closing a connection from " + peer() + ": " + why);
    return Close();
  }
  // A follower splices the connection to the leader (one hop: one that a
  // follower spliced here is refused by Connect when this server does not
  // lead either, and its client tries another server).
  if (!port_.Serving() && !came_spliced_) return Splice(frame);
  phase_ = Phase::kConnecting;
  std::weak_ptr<Connection> weak = weak_from_this();
  port_.Connect(*request, shared_from_this(), [weak](Result<ConnectResponse> answer) {
    if (std::shared_ptr<Connection> self = weak.lock()) self->OnConnected(std::move(answer));
  });
}

void Connection::OnConnected(Result<ConnectResponse> answer) {
  if (phase_ != Phase::kConnecting) return;
  if (!answer.ok()) return Close();  // unanswered: the client tries another server
  SendFrame(EncodeConnectResponse(*answer));
  if (answer->timeout_ms <= 0) {
    phase_ = Phase::kClosing;  // the session cannot be reopened
    return Flush();
  }
  session_ = answer->session_id;
  phase_ = Phase::kServing;
  OnBytes(nullptr, 0);  // requests that came behind the ConnectRequest
  Flush();
  ArmRead();
}

void Connection::Splice(const std::string& connect_frame) {
  const server::Server::LeaderRoute leader = port_.server().RouteToLeader();
  // No leader, or no address for its port yet: unanswered, as before.
  if (leader.id == 0 || leader.zk_address.empty()) return Close();
  phase_ = Phase::kSpliced;
  spliced_ = std::make_unique<Spliced>();
  spliced_->leader = leader.id;
  std::weak_ptr<Connection> weak = weak_from_this();
  LeaderSplice::Events events;
  events.bytes = [weak](std::string_view bytes) {
    std::shared_ptr<Connection> self = weak.lock();
    if (self == nullptr || self->phase_ == Phase::kClosed) return;
    self->spliced_->leader_answered = true;
    self->SendText(bytes);
    self->Flush();
  };
  events.may_read = [weak] {
    std::shared_ptr<Connection> self = weak.lock();
    return self != nullptr && self->phase_ == Phase::kSpliced &&
           self->OutboxBytes() <= kUnsentBytesMax;
  };
  events.drained = [weak] {
    if (std::shared_ptr<Connection> self = weak.lock()) self->ArmRead();
  };
  events.closed = [weak](const std::string& why) {
    std::shared_ptr<Connection> self = weak.lock();
    if (self == nullptr || self->phase_ != Phase::kSpliced) return;
    static LogLimiter limiter(20, "zk: ");
    if (limiter.Allow("spliced connections ending")) {
      log::Info("zk", "a connection from " + self->peer() + " spliced to the leader ends: " + why);
    }
    // What the leader sent goes out first, within the handshake's time
    // (ClientPort::CheckLiveness).
    self->phase_ = Phase::kClosing;
    self->spliced_->ended_ms = self->port_.server().clock().NowMonoMs();
    self->Flush();
  };
  spliced_->link =
      std::make_shared<LeaderSplice>(port_.io(), port_.options().leader_tls, std::move(events));
  // The ConnectRequest as it came, then whatever the client sent behind it.
  std::string first;
  AppendFrame(&first, connect_frame);
  first += frames_.TakeRest();
  LeaderSplice& link = *spliced_->link;
  link.Send(first);
  link.Start(leader.zk_address);
  ArmRead();
}

}  // namespace tenure::zk
