#include "zk/connection.h"

#include <fmt/format.h>

#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <variant>

#include "common/log.h"
#include "server/server.h"
#include "state/command.h"
#include "state/numbered_session.h"
#include "zk/client_port.h"
#include "zk/reads.h"
#include "zk/writes.h"

namespace tenure::zk {
namespace {

namespace asio = boost::asio;

// Requests read and not answered, past which reading stops (ZooKeeper's
// globalOutstandingLimit is 1,000 too).
constexpr std::size_t kSlotsMax = 1000;

std::int32_t ReplyErr(const std::string& answer) {
  if (answer.size() < 16) return 0;
  const auto byte = [&answer](std::size_t i) {
    return static_cast<std::uint32_t>(static_cast<unsigned char>(answer[i]));
  };
  return static_cast<std::int32_t>(byte(12) << 24 | byte(13) << 16 | byte(14) << 8 | byte(15));
}

bool Is(const DecodedRequest& request, OpCode op) {
  return request.header.type == static_cast<std::int32_t>(op);
}

// A request whose answer comes later (from a log entry or a barrier);
// others are answered at once from this server's Store.
bool Deferred(const DecodedRequest& request) {
  if (request.error != ErrorCode::kOk) return false;
  return IsWrite(request.header.type) || Is(request, OpCode::kSync) ||
         Is(request, OpCode::kCloseSession) || Is(request, OpCode::kPing);
}

}  // namespace

bool Connection::Backlogged() const {
  return unsent_.size() + sending_.size() + answered_bytes_ > kUnsentBytesMax;
}

Connection::Connection(ClientPort& port, asio::ip::tcp::socket socket, std::uint64_t number)
    : port_(port), number_(number), socket_(std::move(socket)), timer_(port.io()) {}

Connection::~Connection() = default;

void Connection::Start() {
  boost::system::error_code ec;
  const auto remote = socket_.remote_endpoint(ec);
  peer_ = ec ? std::string("unknown") : remote.address().to_string();
  identities_.push_back(ClientInfo{"ip", peer_});
  socket_.non_blocking(true, ec);
  // Answers and events go out as they are made: no Nagle delay behind a
  // client's delayed acknowledgement (40 ms a watch event otherwise).
  if (!ec) socket_.set_option(asio::ip::tcp::no_delay(true), ec);
  Result<server::Caller> anonymous = port_.server().ResolveCaller("");
  if (anonymous.ok()) {
    caller_ = std::move(*anonymous);
  }
  if (ec || !anonymous.ok()) return Close();
  ArmTimer(port_.options().handshake_timeout_ms);
  ArmRead();
}

void Connection::Close() {
  if (phase_ == Phase::kClosed) return;
  phase_ = Phase::kClosed;
  boost::system::error_code ignored;
  socket_.close(ignored);
  timer_.cancel();
  port_.AddOutstanding(-static_cast<std::int64_t>(slots_.size()));
  slots_.clear();
  answered_bytes_ = 0;
  port_.Forget(this);
}

// --- Reading -----------------------------------------------------------------

void Connection::ArmRead() {
  if (reading_ || (phase_ != Phase::kHandshake && phase_ != Phase::kServing)) return;
  if (Backlogged() || slots_.size() >= kSlotsMax) return;
  reading_ = true;
  std::weak_ptr<Connection> weak = weak_from_this();
  socket_.async_wait(asio::ip::tcp::socket::wait_read, [weak](boost::system::error_code ec) {
    std::shared_ptr<Connection> self = weak.lock();
    if (self == nullptr || self->phase_ == Phase::kClosed) return;
    self->reading_ = false;
    if (ec) return self->Close();
    self->OnReadable();
  });
}

void Connection::OnReadable() {
  // A bounded number of reads per wakeup, so one busy client cannot hold
  // the loop; the rest is read at the next readiness.
  for (int i = 0; i < 16; ++i) {
    if (phase_ != Phase::kHandshake && phase_ != Phase::kServing) return;
    if (Backlogged() || slots_.size() >= kSlotsMax) return;
    boost::system::error_code ec;
    const std::size_t n =
        socket_.read_some(asio::buffer(port_.scratch(), ClientPort::kScratchBytes), ec);
    if (ec == asio::error::would_block || ec == asio::error::try_again) return ArmRead();
    if (ec) return Close();  // end of stream or a reset: the session stays
    OnBytes(port_.scratch(), n);
  }
  if (phase_ == Phase::kHandshake || phase_ == Phase::kServing) {
    std::weak_ptr<Connection> weak = weak_from_this();
    asio::post(port_.io(), [weak] {
      if (std::shared_ptr<Connection> self = weak.lock()) self->OnReadable();
    });
  }
}

void Connection::OnBytes(const char* data, std::size_t size) {
  std::string_view bytes(data == nullptr ? "" : data, size);
  if (!head_checked_) {
    // The first 4 bytes: a four-letter word, or the ConnectRequest's length.
    const std::size_t take = std::min(bytes.size(), 4 - head_.size());
    head_.append(bytes.substr(0, take));
    bytes.remove_prefix(take);
    if (head_.size() < 4) return;
    head_checked_ = true;
    if (std::optional<std::string_view> word = FourLetterWord(head_)) {
      SendText(FourLetterAnswer(*word, port_.Facts()));
      phase_ = Phase::kClosing;
      return Flush();
    }
    frames_.Feed(head_);
    head_.clear();
    head_.shrink_to_fit();
  }
  frames_.Feed(bytes);
  std::string frame;
  while (phase_ == Phase::kHandshake || phase_ == Phase::kServing) {
    if (!frames_.Next(&frame)) break;
    if (phase_ == Phase::kHandshake) {
      OnConnectFrame(frame);
    } else {
      OnRequestFrame(frame);
      // The rest waits in frames_ until answers drain (Resume).
      if (slots_.size() >= kSlotsMax || Backlogged()) break;
    }
  }
  if (!frames_.error().empty()) {
    log::Warn("zk", "closing a connection from " + peer_ + ": " + frames_.error());
    return Close();
  }
  if (phase_ == Phase::kServing || phase_ == Phase::kClosing) Pump();
}

// --- Connect -------------------------------------------------------------------

void Connection::OnConnectFrame(const std::string& frame) {
  std::string why;
  std::optional<ConnectRequest> request = DecodeConnectRequest(frame, &why);
  if (!request) {
    log::Warn("zk", "closing a connection from " + peer_ + ": " + why);
    return Close();
  }
  phase_ = Phase::kConnecting;
  const bool sent_read_only = request->read_only.has_value();
  std::weak_ptr<Connection> weak = weak_from_this();
  port_.Connect(*request, shared_from_this(),
                [weak, sent_read_only](Result<ConnectResponse> answer) {
                  if (std::shared_ptr<Connection> self = weak.lock()) {
                    self->OnConnected(std::move(answer), sent_read_only);
                  }
                });
}

void Connection::OnConnected(Result<ConnectResponse> answer, bool sent_read_only) {
  (void)sent_read_only;
  if (phase_ != Phase::kConnecting) return;
  if (!answer.ok()) return Close();  // unanswered: the client tries another server
  SendFrame(EncodeConnectResponse(*answer));
  if (answer->timeout_ms <= 0) {
    phase_ = Phase::kClosing;  // the session cannot be reopened
    return Flush();
  }
  session_ = answer->session_id;
  timeout_ms_ = answer->timeout_ms;
  phase_ = Phase::kServing;
  ArmTimer(std::max<DurationMs>(timeout_ms_ / 3, 500));
  OnBytes(nullptr, 0);  // requests that came behind the ConnectRequest
  Flush();
  ArmRead();
}

// --- Requests --------------------------------------------------------------------

void Connection::OnRequestFrame(const std::string& frame) {
  std::string why;
  std::optional<DecodedRequest> request = DecodeRequest(frame, &why);
  if (!request) {
    log::Warn("zk", "closing a connection from " + peer_ + ": " + why);
    return Close();
  }
  port_.CountReceived();
  port_.AddOutstanding(1);
  Slot slot;
  slot.id = next_slot_++;
  slot.request = std::move(*request);
  slot.read_ms = port_.server().clock().NowMonoMs();
  const bool closes = Is(slot.request, OpCode::kCloseSession);
  const bool ping = Is(slot.request, OpCode::kPing);
  slots_.push_back(std::move(slot));
  // Every request renews the session. A ping's answer waits for the
  // renewal's acknowledgement (Begin); the others move the deadline only.
  if (!ping) {
    if (Status touched = port_.server().Touch(state::NumberedSessionId(session_)); !touched.ok()) {
      return CloseLater();  // ended, or this server no longer leads
    }
  }
  // Nothing after a closeSession is read: the connection ends with it.
  if (closes) phase_ = Phase::kClosing;
}

Connection::Slot* Connection::Find(std::uint64_t id) {
  if (slots_.empty() || id < slots_.front().id) return nullptr;
  const std::uint64_t at = id - slots_.front().id;
  return at < slots_.size() ? &slots_[at] : nullptr;
}

// Runs what may run and writes the answers that are due, in order. An
// answer that comes while it runs (a renewal or barrier acknowledged at
// once) asks for another pass instead of running it inside this one.
void Connection::Pump() {
  if (pumping_) {
    pump_again_ = true;
    return;
  }
  pumping_ = true;
  do {
    pump_again_ = false;
    PumpOnce();
  } while (pump_again_ && phase_ != Phase::kClosed);
  pumping_ = false;
  if (phase_ == Phase::kClosed) return;
  port_.UpdateGauges();
  Flush();
  ArmRead();
}

void Connection::PumpOnce() {
  bool deferred_ahead = false;
  for (Slot& slot : slots_) {
    if (phase_ == Phase::kClosed) return;
    if (slot.state == Slot::State::kDone) continue;
    if (slot.state == Slot::State::kStarted) {
      deferred_ahead = true;
      continue;
    }
    if (Deferred(slot.request)) {
      // Every read before it has run: its entry cannot change what they saw.
      slot.state = Slot::State::kStarted;
      Begin(slot);
      if (slot.state != Slot::State::kDone) deferred_ahead = true;
      continue;
    }
    if (deferred_ahead || Backlogged()) break;
    Begin(slot);
  }
  while (!slots_.empty() && slots_.front().state == Slot::State::kDone &&
         phase_ != Phase::kClosed) {
    Slot& front = slots_.front();
    answered_bytes_ -= front.answer.size();
    for (const std::string& event : front.events) SendFrame(event);
    if (!front.answer.empty()) SendFrame(front.answer);
    port_.CountLatency(port_.server().clock().NowMonoMs() - front.read_ms);
    port_.server().CountZkRequest(OpName(front.request.header.type),
                                  ErrorName(static_cast<ErrorCode>(ReplyErr(front.answer))));
    port_.AddOutstanding(-1);
    const bool ends = front.ends_connection;
    slots_.pop_front();
    if (ends) {
      phase_ = Phase::kClosing;
      port_.AddOutstanding(-static_cast<std::int64_t>(slots_.size()));
      slots_.clear();
      answered_bytes_ = 0;
    }
  }
}

bool Connection::Begin(Slot& slot) {
  const DecodedRequest& request = slot.request;
  const std::int32_t xid = request.header.xid;
  const auto zxid = static_cast<std::int64_t>(port_.server().store().applied_index().value());
  auto done = [this, &slot](std::string answer, bool ends = false) {
    Answer(slot, std::move(answer), ends);
    return true;
  };
  if (request.error != ErrorCode::kOk) {
    const std::int64_t at = request.error == ErrorCode::kUnimplemented ? -1 : zxid;
    return done(AnswerCode(xid, at, request.error), request.ends_connection);
  }
  const auto type = static_cast<OpCode>(request.header.type);
  if (type == OpCode::kPing) {
    StartPing(slot.id);
    return false;
  }
  if (IsRead(request.header.type)) {
    const Reader reader{&caller_.can(), session_, identities_};
    std::string answer = AnswerRead(port_.server().store(), reader, request);
    if (!MaybeWatch(request, answer)) {
      log::Warn("zk", fmt::format("closing a connection from {}: more than {} watches", peer_,
                                  kWatchesMax));
      return done("", /*ends=*/true);
    }
    return done(std::move(answer));
  }
  if (IsWrite(request.header.type)) {
    StartWrite(slot.id);
    return slot.state == Slot::State::kDone;
  }
  switch (type) {
    case OpCode::kSync:
      StartSync(slot.id);
      return false;
    case OpCode::kCloseSession:
      StartClose(slot.id);
      return false;
    case OpCode::kAuth:
      Authenticate(slot);
      return true;
    case OpCode::kReconfig:
      return done(AnswerCode(xid, zxid, ErrorCode::kReconfigDisabled));
    case OpCode::kCheckWatches:
    case OpCode::kRemoveWatches:
      WatchCheck(slot, type == OpCode::kRemoveWatches);
      return true;
    case OpCode::kSetWatches:
    case OpCode::kSetWatches2:
      SetWatches(slot);
      return true;
    default:  // setACL, addWatch: not served yet
      return done(AnswerCode(xid, zxid, ErrorCode::kUnimplemented));
  }
}

void Connection::Answer(Slot& slot, std::string answer, bool ends_connection) {
  answered_bytes_ += answer.size();
  slot.answer = std::move(answer);
  slot.ends_connection = ends_connection;
  slot.state = Slot::State::kDone;
}

void Connection::Finish(std::uint64_t id, std::string answer, bool ends_connection) {
  Slot* slot = Find(id);
  if (slot == nullptr || phase_ == Phase::kClosed) return;
  Answer(*slot, std::move(answer), ends_connection);
  Pump();
}

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
  identities_.push_back(ClientInfo{packet.scheme, user.empty() ? caller_.accessor_id() : user});
  Answer(slot, AnswerCode(slot.request.header.xid, 0, ErrorCode::kOk));
}

// --- Watches -------------------------------------------------------------------

// A read with its watch flag sets a watch where ZooKeeper sets one: exists
// on a node or on a missing one, getData and getChildren on a node. False
// past kWatchesMax.
bool Connection::MaybeWatch(const DecodedRequest& request, const std::string& answer) {
  const auto* read = std::get_if<PathWatchRequest>(&request.body);
  if (read == nullptr || !read->watch) return true;
  const std::int32_t err = ReplyErr(answer);
  const auto type = static_cast<OpCode>(request.header.type);
  WatchTable::Kind kind = WatchTable::Kind::kData;
  if (type == OpCode::kExists) {
    if (err != 0 && err != static_cast<std::int32_t>(ErrorCode::kNoNode)) return true;
  } else if (type == OpCode::kGetData) {
    if (err != 0) return true;
  } else if (type == OpCode::kGetChildren || type == OpCode::kGetChildren2) {
    if (err != 0) return true;
    kind = WatchTable::Kind::kChild;
  } else {
    return true;
  }
  WatchTable& watches = port_.watches();
  if (watches.OwnerCount(number_) >= kWatchesMax && !watches.Has(number_, kind, read->path)) {
    return false;
  }
  watches.Add(number_, kind, read->path);
  return true;
}

// setWatches and setWatches2 (a reconnecting client's watches): each fires
// at once if it missed a change after relativeZxid, else is set, as
// ZooKeeper's DataTree.setWatches does; the events go before the answer.
void Connection::SetWatches(Slot& slot) {
  const auto& request =
      slot.request.header.type == static_cast<std::int32_t>(OpCode::kSetWatches2)
          ? static_cast<const zk::SetWatches&>(std::get<SetWatches2>(slot.request.body))
          : std::get<zk::SetWatches>(slot.request.body);
  const state::Store& store = port_.server().store();
  const auto zxid = static_cast<std::int64_t>(store.applied_index().value());
  if (!request.persistent_watches.empty() || !request.persistent_recursive_watches.empty()) {
    // Persistent watches are not served (addWatch answers UNIMPLEMENTED).
    return Answer(slot, AnswerCode(slot.request.header.xid, zxid, ErrorCode::kUnimplemented));
  }
  const Reader reader{&caller_.can(), session_, identities_};
  WatchTable& watches = port_.watches();
  auto event = [&slot](EventType type, const std::string& path) {
    slot.events.push_back(EncodeNotification(
        WatcherEvent{static_cast<std::int32_t>(type),
                     static_cast<std::int32_t>(KeeperState::kSyncConnected), path}));
  };
  const std::int64_t seen = request.relative_zxid;
  std::size_t count = watches.OwnerCount(number_);
  auto room = [&count] { return ++count <= kWatchesMax; };
  for (const std::string& path : request.data_watches) {
    if (!MayReadPath(reader, path)) continue;
    const std::optional<Stat> stat = StatOf(store, path);
    if (!stat) {
      event(EventType::kNodeDeleted, path);
    } else if (stat->mzxid > seen) {
      event(EventType::kNodeDataChanged, path);
    } else if (room()) {
      watches.Add(number_, WatchTable::Kind::kData, path);
    }
  }
  for (const std::string& path : request.exist_watches) {
    if (!MayReadPath(reader, path)) continue;
    if (StatOf(store, path)) {
      event(EventType::kNodeCreated, path);
    } else if (room()) {
      watches.Add(number_, WatchTable::Kind::kData, path);
    }
  }
  for (const std::string& path : request.child_watches) {
    if (!MayListPath(reader, path)) continue;
    const std::optional<Stat> stat = StatOf(store, path);
    if (!stat) {
      event(EventType::kNodeDeleted, path);
    } else if (stat->pzxid > seen) {
      event(EventType::kNodeChildrenChanged, path);
    } else if (room()) {
      watches.Add(number_, WatchTable::Kind::kChild, path);
    }
  }
  Answer(slot, AnswerCode(slot.request.header.xid, zxid, ErrorCode::kOk));
}

// checkWatches and removeWatches: the watch of the given type (1 children,
// 2 data, 3 either) on the path, NOWATCHER if there is none; another type
// MARSHALLINGERROR, as ZooKeeper answers it.
void Connection::WatchCheck(Slot& slot, bool remove) {
  const auto& request = std::get<PathModeRequest>(slot.request.body);
  const auto zxid = static_cast<std::int64_t>(port_.server().store().applied_index().value());
  const std::int32_t xid = slot.request.header.xid;
  if (request.mode < 1 || request.mode > 3) {
    return Answer(slot, AnswerCode(xid, zxid, ErrorCode::kMarshallingError));
  }
  WatchTable& watches = port_.watches();
  bool found = false;
  for (const WatchTable::Kind kind : {WatchTable::Kind::kChild, WatchTable::Kind::kData}) {
    const bool wanted =
        request.mode == 3 || (request.mode == 1) == (kind == WatchTable::Kind::kChild);
    if (!wanted) continue;
    found |= remove ? watches.Remove(number_, kind, request.path)
                    : watches.Has(number_, kind, request.path);
  }
  Answer(slot, AnswerCode(xid, zxid, found ? ErrorCode::kOk : ErrorCode::kNoWatcher));
}

void Connection::SendEvent(EventType type, const std::string& path) {
  if (phase_ != Phase::kServing && phase_ != Phase::kClosing) return;
  SendFrame(EncodeNotification(WatcherEvent{static_cast<std::int32_t>(type),
                                            static_cast<std::int32_t>(KeeperState::kSyncConnected),
                                            path}));
  Flush();
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

// --- Writing ---------------------------------------------------------------------

void Connection::SendFrame(std::string_view frame) {
  if (dropping_) return;  // after an answer too long: nothing the client could match
  if (frame.size() > kFrameBytesMax) {
    dropping_ = true;
    // ZooKeeper's clients refuse a longer frame: the connection would be
    // lost anyway, and the client reconnects.
    log::Warn("zk", "closing a connection from " + peer_ + ": an answer of " +
                        std::to_string(frame.size()) + " bytes passes jute.maxbuffer");
    // Closed after the caller's loop: it may be walking this connection's
    // slots (Pump) or the port's events (Deliver).
    return CloseLater();
  }
  const auto n = static_cast<std::uint32_t>(frame.size());
  const char length[4] = {static_cast<char>(n >> 24), static_cast<char>(n >> 16),
                          static_cast<char>(n >> 8), static_cast<char>(n)};
  unsent_.append(length, 4);
  unsent_.append(frame);
  port_.CountSent();
}

void Connection::SendText(std::string_view text) { unsent_.append(text); }

void Connection::Flush() {
  if (phase_ == Phase::kClosed || writing_) return;
  if (unsent_.empty()) {
    if (phase_ == Phase::kClosing && slots_.empty()) {
      boost::system::error_code ignored;
      socket_.shutdown(asio::ip::tcp::socket::shutdown_send, ignored);
      Close();
    }
    return;
  }
  writing_ = true;
  sending_.swap(unsent_);
  std::weak_ptr<Connection> weak = weak_from_this();
  asio::async_write(socket_, asio::buffer(sending_),
                    [weak](boost::system::error_code ec, std::size_t) {
                      std::shared_ptr<Connection> self = weak.lock();
                      if (self == nullptr || self->phase_ == Phase::kClosed) return;
                      self->writing_ = false;
                      self->sending_.clear();
                      if (ec) return self->Close();
                      self->Resume();
                    });
}

// Answers drained: what waited for room runs, then reading goes on.
void Connection::Resume() {
  if (phase_ == Phase::kServing || phase_ == Phase::kClosing) Pump();
  if (phase_ == Phase::kServing && !Backlogged()) OnBytes(nullptr, 0);
  Flush();
  ArmRead();
}

// --- Time --------------------------------------------------------------------------

void Connection::ArmTimer(DurationMs after_ms) {
  timer_.expires_after(std::chrono::milliseconds(after_ms));
  std::weak_ptr<Connection> weak = weak_from_this();
  timer_.async_wait([weak](boost::system::error_code ec) {
    if (ec) return;
    if (std::shared_ptr<Connection> self = weak.lock()) self->OnTimer();
  });
}

void Connection::OnTimer() {
  if (phase_ == Phase::kClosed) return;
  if (phase_ == Phase::kHandshake || phase_ == Phase::kConnecting) return Close();
  // The session ended (its timeout passed with no request, or another
  // connection closed it), or this server stopped leading: ZooKeeper closes
  // the connection; the client learns the rest when it reconnects.
  const server::Server& server = port_.server();
  if (!port_.Serving() ||
      server.store().FindSession(state::NumberedSessionId(session_)) == nullptr) {
    return Close();
  }
  ArmTimer(std::max<DurationMs>(timeout_ms_ / 3, 500));
}

}  // namespace tenure::zk
