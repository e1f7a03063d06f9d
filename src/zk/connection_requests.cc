// Connection's requests that wait for the Server (zk/connection.h): writes
// through the log, sync after a barrier, closeSession, pings after their
// renewal is acknowledged, and auth with tenure's tokens.
#include <boost/asio/post.hpp>
#include <variant>

#include "server/server.h"
#include "state/apply_result.h"
#include "state/command.h"
#include "state/numbered_session.h"
#include "zk/client_port.h"
#include "zk/connection.h"
#include "zk/writes.h"

namespace tenure::zk {

namespace asio = boost::asio;

void Connection::StartWrite(std::uint64_t id) {
  Slot& slot = *Find(id);
  const auto zxid = static_cast<std::int64_t>(port_.server().store().applied_index().value());
  PlannedWrite plan = PlanWrite(slot.request, session_, caller_set_);
  if (plan.refused) {
    return Answer(slot, AnswerRefused(slot.request, plan, zxid));
  }
  if (!MayWrite(caller_.can(), plan.write)) {
    return Answer(slot, AnswerCode(slot.request.header.xid, zxid, ErrorCode::kNoAuth));
  }
  std::weak_ptr<Connection> weak = weak_from_this();
  port_.server().Propose(std::move(plan.write), [weak, id](Result<state::ApplyResult> result) {
    std::shared_ptr<Connection> self = weak.lock();
    if (self == nullptr) return;
    Slot* waiting = self->Find(id);
    if (waiting == nullptr) return;
    if (!result.ok()) {
      if (result.status().code() == Code::kInvalidArgument) {
        const auto at =
            static_cast<std::int64_t>(self->port_.server().store().applied_index().value());
        return self->Finish(id,
                            AnswerCode(waiting->request.header.xid, at, ErrorCode::kBadArguments));
      }
      return self->Close();  // not the leader now: the client reconnects
    }
    // Its events first, on this connection and every other.
    std::string answer = AnswerApplied(waiting->request, *result);
    self->port_.AfterEventsOf(result->index, [weak, id, answer = std::move(answer)]() mutable {
      if (std::shared_ptr<Connection> again = weak.lock()) again->Finish(id, std::move(answer));
    });
  });
}

void Connection::StartSync(std::uint64_t id) {
  std::weak_ptr<Connection> weak = weak_from_this();
  port_.server().Barrier([weak, id](Status status) {
    std::shared_ptr<Connection> self = weak.lock();
    if (self == nullptr) return;
    Slot* slot = self->Find(id);
    if (slot == nullptr) return;
    if (!status.ok()) return self->Close();
    const auto zxid =
        static_cast<std::int64_t>(self->port_.server().store().applied_index().value());
    const ReplyHeader header{slot->request.header.xid, zxid, 0};
    self->Finish(id, EncodeReply(header, std::get<PathRecord>(slot->request.body)));
  });
}

void Connection::StartClose(std::uint64_t id) {
  std::weak_ptr<Connection> weak = weak_from_this();
  state::SessionDestroy destroy{state::NumberedSessionId(session_)};
  port_.server().Propose(std::move(destroy), [weak, id](Result<state::ApplyResult> result) {
    std::shared_ptr<Connection> self = weak.lock();
    if (self == nullptr) return;
    Slot* slot = self->Find(id);
    if (slot == nullptr) return;
    if (!result.ok()) return self->Close();
    const auto zxid = static_cast<std::int64_t>(result->index.value());
    self->Finish(id, AnswerCode(slot->request.header.xid, zxid, ErrorCode::kOk),
                 /*ends_connection=*/true);
  });
}

// auth: tenure's token as ZooKeeper's digest credentials ("name:SecretID",
// as kazoo's auth_data and Curator's authorization send them) or scheme
// "tenure" with the SecretID (decision 0056 section 7). A token that does
// not resolve answers AUTHFAILED and ends the connection, as ZooKeeper does.
void Connection::Authenticate(Slot& slot) {
  const auto& packet = std::get<AuthPacket>(slot.request.body);
  std::string_view secret;
  std::string user;
  if (packet.scheme == "digest") {
    const std::size_t colon = packet.auth.find(':');
    if (colon != std::string::npos) {
      user = packet.auth.substr(0, colon);
      secret = std::string_view(packet.auth).substr(colon + 1);
    }
  } else if (packet.scheme == "tenure") {
    secret = packet.auth;
  }
  Result<server::Caller> caller = secret.empty()
                                      ? Result<server::Caller>(Status::NotFound("no credentials"))
                                      : port_.server().ResolveCaller(secret);
  if (!caller.ok()) {
    return Answer(slot, AnswerCode(slot.request.header.xid, 0, ErrorCode::kAuthFailed),
                  /*ends_connection=*/true);
  }
  caller_ = std::move(*caller);
  caller_set_ = true;
  authenticated_.push_back(ClientInfo{packet.scheme, user.empty() ? caller_.accessor_id() : user});
  Answer(slot, AnswerCode(slot.request.header.xid, 0, ErrorCode::kOk));
}

// A ping renews its session and is answered once the renewal is
// acknowledged (Server::Renew: after a barrier on a cluster), so a leader
// that was deposed without knowing it never tells a client its session
// lives (decision 0011). Renewals of one connection's pings share nothing:
// clients ping every third of their timeout.
void Connection::StartPing(std::uint64_t id) {
  std::weak_ptr<Connection> weak = weak_from_this();
  port_.server().Renew(
      state::NumberedSessionId(session_), [weak, id](Result<const state::Session*> renewed) {
        std::shared_ptr<Connection> self = weak.lock();
        if (self == nullptr) return;
        // Ended, or this server no longer leads: the client
        // reconnects and learns which.
        if (!renewed.ok()) return self->CloseLater();
        const auto zxid =
            static_cast<std::int64_t>(self->port_.server().store().applied_index().value());
        self->Finish(id, AnswerCode(kPingXid, zxid, ErrorCode::kOk));
      });
}

// Closes after the caller's stack: it may be walking this connection's
// slots or the port's connections.
void Connection::CloseLater() {
  dropping_ = true;                                         // nothing more is answered
  if (phase_ == Phase::kServing) phase_ = Phase::kClosing;  // nor read
  std::weak_ptr<Connection> weak = weak_from_this();
  asio::post(port_.io(), [weak] {
    if (std::shared_ptr<Connection> self = weak.lock()) self->Close();
  });
}

}  // namespace tenure::zk
