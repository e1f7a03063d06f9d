#include "zk/connection.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <variant>

#include "common/log.h"
#include "server/server.h"
#include "state/command.h"
#include "state/numbered_session.h"
#include "tls/session.h"
#include "zk/client_port.h"
#include "zk/leader_splice.h"
#include "zk/reads.h"
#include "zk/writes.h"

namespace tenure::zk {
namespace {

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
  // Spliced, the client is read while the leader takes its bytes.
  if (spliced_ != nullptr) return spliced_->link->unsent() > kUnsentBytesMax;
  return OutboxBytes() + answered_bytes_ > kUnsentBytesMax;
}

Connection::Connection(ClientPort& port, int fd, std::uint64_t number,
                       std::shared_ptr<const tls::Context> tls)
    : port_(port),
      number_(number),
      fd_(fd),
      // The TLS handshake happens in the first reads, inside the
      // handshake's time limit like the ConnectRequest after it.
      tls_(tls != nullptr ? std::make_unique<tls::Session>(*tls, fd) : nullptr),
      opened_ms_(port.server().clock().NowMonoMs()) {}

Connection::~Connection() {
  if (fd_ >= 0) ::close(fd_);
}

void Connection::Start() {
  const int flags = ::fcntl(fd_, F_GETFL);
  // Answers and events go out as they are made: no Nagle delay behind a
  // client's delayed acknowledgement (40 ms a watch event otherwise).
  const int on = 1;
  bool ok = flags >= 0 && ::fcntl(fd_, F_SETFL, flags | O_NONBLOCK) == 0 &&
            ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on) == 0;
  // Its readiness comes from the port's set (zk/ready_set.h), which tells
  // this connection by its number.
  ok = ok && port_.JoinReadySet(fd_, number_);
  Result<server::Caller> anonymous = port_.server().ResolveCaller("");
  if (anonymous.ok()) {
    caller_ = std::move(*anonymous);
  }
  if (!ok || !anonymous.ok()) return Close();
  ArmRead();
}

void Connection::Close() {
  if (phase_ == Phase::kClosed) return;
  phase_ = Phase::kClosed;
  if (spliced_ != nullptr) spliced_->link->Close();
  if (fd_ >= 0) {
    port_.LeaveReadySet(fd_);
    ::close(fd_);
  }
  fd_ = -1;
  ClearSlots();
  port_.Forget(this);
}

void Connection::ClearSlots() {
  slots_.clear();
  slots_begun_ = 0;
  slots_started_ = 0;
  answered_bytes_ = 0;
}

void Connection::OnBytes(const char* data, std::size_t size) {
  std::string_view bytes(data == nullptr ? "" : data, size);
  if (phase_ == Phase::kSpliced) return spliced_->link->Send(bytes);
  while (!head_checked_) {
    // The first 4 bytes: a four-letter word, or the ConnectRequest's length
    // (after a follower's relay mark, once).
    const std::size_t take = std::min(bytes.size(), sizeof head_ - head_size_);
    bytes.copy(head_ + head_size_, take);
    head_size_ = static_cast<std::uint8_t>(head_size_ + take);
    bytes.remove_prefix(take);
    if (head_size_ < sizeof head_) return;
    const std::string_view head(head_, sizeof head_);
    if (head == kRelayMark && !came_spliced_) {
      came_spliced_ = true;
      head_size_ = 0;
      continue;
    }
    head_checked_ = true;
    if (std::optional<std::string_view> word = FourLetterWord(head)) {
      SendText(FourLetterAnswer(*word, port_.Facts()));
      phase_ = Phase::kClosing;
      return Flush();
    }
    frames_.Feed(head);
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
  if (frames_.failed()) {
    log::Warn("zk", "closing a connection from " + peer() + ": " + frames_.error());
    return Close();
  }
  if (phase_ == Phase::kServing || phase_ == Phase::kClosing) Pump();
}

// --- Requests --------------------------------------------------------------------

void Connection::OnRequestFrame(const std::string& frame) {
  std::string why;
  std::optional<DecodedRequest> request = DecodeRequest(frame, &why);
  if (!request) {
    log::Warn("zk", "closing a connection from " + peer() + ": " + why);
    return Close();
  }
  port_.CountReceived();
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
  // By index: a request may close the connection as it begins, which
  // empties the queue under the loop. Slots before slots_begun_ have begun;
  // one still unanswered (a write, a sync, a ping) holds back the reads
  // after it.
  for (std::size_t at = slots_begun_; at < slots_.size(); at = slots_begun_) {
    if (phase_ == Phase::kClosed) return;
    Slot& slot = slots_[at];
    // A write begins with every read before it run: its entry cannot
    // change what they saw. A read waits for every write before it.
    if (!Deferred(slot.request) && (slots_started_ > 0 || Backlogged())) break;
    slot.state = Slot::State::kStarted;
    ++slots_begun_;
    ++slots_started_;
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
                                  ErrorName(static_cast<ErrorCode>(ReplyError(front.answer))));
    const bool ends = front.ends_connection;
    slots_.pop_front();
    --slots_begun_;
    if (ends) {
      phase_ = Phase::kClosing;
      ClearSlots();
    }
  }
}

void Connection::Begin(Slot& slot) {
  const DecodedRequest& request = slot.request;
  const std::int32_t xid = request.header.xid;
  const auto zxid = static_cast<std::int64_t>(port_.server().store().applied_index().value());
  auto done = [this, &slot](std::string answer, bool ends = false) {
    Answer(slot, std::move(answer), ends);
  };
  if (request.error != ErrorCode::kOk) {
    const std::int64_t at = request.error == ErrorCode::kUnimplemented ? -1 : zxid;
    return done(AnswerCode(xid, at, request.error), request.ends_connection);
  }
  const auto type = static_cast<OpCode>(request.header.type);
  if (type == OpCode::kPing) {
    return StartPing(slot.id);
  }
  if (IsRead(request.header.type)) {
    const std::string ip = type == OpCode::kWhoAmI ? peer() : std::string();
    const Reader reader{&caller_.can(), session_, ip, &authenticated_};
    std::string answer = AnswerRead(port_.server().store(), reader, request);
    if (!MaybeWatch(request, answer)) return done("", /*ends=*/true);
    return done(std::move(answer));
  }
  if (IsWrite(request.header.type)) {
    return StartWrite(slot.id);
  }
  switch (type) {
    case OpCode::kSync:
      return StartSync(slot.id);
    case OpCode::kCloseSession:
      return StartClose(slot.id);
    case OpCode::kAuth:
      return Authenticate(slot);
    case OpCode::kReconfig:
      return done(AnswerCode(xid, zxid, ErrorCode::kReconfigDisabled));
    case OpCode::kCheckWatches:
    case OpCode::kRemoveWatches:
      return WatchCheck(slot, type == OpCode::kRemoveWatches);
    case OpCode::kSetWatches:
    case OpCode::kSetWatches2:
      return SetWatches(slot);
    case OpCode::kAddWatch:
      return AddWatch(slot);
    default:  // an op the decoder knows and no one serves
      return done(AnswerCode(xid, zxid, ErrorCode::kUnimplemented));
  }
}

void Connection::Answer(Slot& slot, std::string answer, bool ends_connection) {
  if (slot.state == Slot::State::kStarted) --slots_started_;
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

// --- Writing ---------------------------------------------------------------------

void Connection::SendFrame(std::string_view frame) {
  if (dropping_) return;  // after an answer too long: nothing the client could match
  if (frame.size() > kFrameBytesMax) {
    dropping_ = true;
    // ZooKeeper's clients refuse a longer frame: the connection would be
    // lost anyway, and the client reconnects.
    log::Warn("zk", "closing a connection from " + peer() + ": an answer of " +
                        std::to_string(frame.size()) + " bytes passes jute.maxbuffer");
    // Closed after the caller's loop: it may be walking this connection's
    // slots (Pump) or the port's events (Deliver).
    return CloseLater();
  }
  AppendFrame(&unsent(), frame);
  port_.CountSent();
}

void Connection::SendText(std::string_view text) { unsent().append(text); }

// Answers drained: what waited for room runs, then reading goes on.
void Connection::Resume() {
  if (phase_ == Phase::kSpliced) {
    Flush();  // what the leader sent while the last write was out
    return spliced_->link->ResumeReading();
  }
  if (phase_ == Phase::kServing || phase_ == Phase::kClosing) Pump();
  if (phase_ == Phase::kServing && !Backlogged()) OnBytes(nullptr, 0);
  Flush();
  ArmRead();
}

}  // namespace tenure::zk
