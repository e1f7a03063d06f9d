#include "zk/connection.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/post.hpp>
#include <cerrno>
#include <variant>

#include "common/log.h"
#include "common/log_limiter.h"
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

namespace asio = boost::asio;

// Requests read and not answered, past which reading stops (ZooKeeper's
// globalOutstandingLimit is 1,000 too).
constexpr std::size_t kSlotsMax = 1000;

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
  return unsent_.size() + sending_.size() + answered_bytes_ > kUnsentBytesMax;
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

namespace {

// The client's address as text ("unknown" if the socket has none).
std::string PeerAddress(int fd) {
  sockaddr_storage address{};
  socklen_t size = sizeof address;
  char text[INET6_ADDRSTRLEN] = {};
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&address), &size) != 0) return "unknown";
  const void* bytes = nullptr;
  if (address.ss_family == AF_INET) {
    bytes = &reinterpret_cast<const sockaddr_in*>(&address)->sin_addr;
  } else if (address.ss_family == AF_INET6) {
    bytes = &reinterpret_cast<const sockaddr_in6*>(&address)->sin6_addr;
  }
  if (bytes == nullptr || ::inet_ntop(address.ss_family, bytes, text, sizeof text) == nullptr) {
    return "unknown";
  }
  return text;
}

}  // namespace

void Connection::Start() {
  const int flags = ::fcntl(fd_, F_GETFL);
  // Answers and events go out as they are made: no Nagle delay behind a
  // client's delayed acknowledgement (40 ms a watch event otherwise).
  const int on = 1;
  bool ok = flags >= 0 && ::fcntl(fd_, F_SETFL, flags | O_NONBLOCK) == 0 &&
            ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on) == 0;
  // Its readiness comes from the port's set (zk/ready_set.h), which tells
  // this connection by its number.
  ok = ok && port_.Watch(fd_, number_);
  Result<server::Caller> anonymous = port_.server().ResolveCaller("");
  if (anonymous.ok()) {
    caller_ = std::move(*anonymous);
  }
  if (!ok || !anonymous.ok()) return Close();
  ArmRead();
}

std::string Connection::peer() const { return fd_ < 0 ? "unknown" : PeerAddress(fd_); }

void Connection::Close() {
  if (phase_ == Phase::kClosed) return;
  phase_ = Phase::kClosed;
  if (spliced_ != nullptr) spliced_->link->Close();
  // Closing the socket takes it out of the port's set.
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  ClearSlots();
  port_.Forget(this);
}

void Connection::OnReady(bool readable, bool writable) {
  if (phase_ == Phase::kClosed) return;
  in_ready_ = in_ready_ || readable;
  out_ready_ = out_ready_ || writable;
  if (write_waiting_ && (write_wants_read_ ? in_ready_ : out_ready_)) {
    write_waiting_ = false;
    SendSome();
    if (phase_ == Phase::kClosed) return;
  }
  if (reading_ && (read_wants_write_ ? out_ready_ : in_ready_)) {
    reading_ = false;
    OnReadable();
  }
}

void Connection::ClearSlots() {
  slots_.clear();
  slots_begun_ = 0;
  slots_started_ = 0;
  answered_bytes_ = 0;
}

// --- Reading -----------------------------------------------------------------

void Connection::ArmRead() {
  if (reading_ || !Reading() || ClientEnded()) return;
  if (Backlogged() || slots_.size() >= kSlotsMax) return;
  reading_ = true;
  // Records OpenSSL read ahead of a read that stopped early (a backlog,
  // the session being opened): no readiness will announce them. (After a
  // read that wanted more, what it holds is part of a record: the rest
  // comes with readiness.) TLS may have to write before it can read on
  // (its handshake's answer).
  const bool pending = tls_ != nullptr && !read_starved_ && tls_->has_pending();
  if (!pending && !(read_wants_write_ ? out_ready_ : in_ready_)) return;  // OnReady goes on
  // Not at once: callers of ArmRead do not expect to read inside it.
  std::weak_ptr<Connection> weak = weak_from_this();
  asio::post(port_.io(), [weak] {
    std::shared_ptr<Connection> self = weak.lock();
    if (self == nullptr || self->phase_ == Phase::kClosed || !self->reading_) return;
    self->reading_ = false;
    self->OnReadable();
  });
}

void Connection::OnReadable() {
  // A bounded number of reads per wakeup, so one busy client cannot hold
  // the loop; the rest is read at the next readiness.
  for (int i = 0; i < 16; ++i) {
    if (!Reading() || ClientEnded()) return;
    if (Backlogged() || slots_.size() >= kSlotsMax) return;
    boost::system::error_code ec;
    const std::size_t n = ReadSome(ec);
    read_starved_ = ec == asio::error::would_block || ec == asio::error::try_again;
    if (read_starved_) return ArmRead();
    if (ec == asio::error::eof && phase_ == Phase::kSpliced) {
      // What the client sent before it closed still goes to the leader
      // (its closeSession, say); the leader's end of that closes this.
      spliced_->client_ended = true;
      return spliced_->link->FinishSending();
    }
    if (ec) return Close();  // end of stream or a reset: the session stays
    OnBytes(port_.scratch(), n);
  }
  if (Reading() && !ClientEnded()) {
    std::weak_ptr<Connection> weak = weak_from_this();
    asio::post(port_.io(), [weak] {
      if (std::shared_ptr<Connection> self = weak.lock()) self->OnReadable();
    });
  }
}

std::size_t Connection::ReadSome(boost::system::error_code& ec) {
  if (tls_ == nullptr) {
    ssize_t n = 0;
    do {
      n = ::recv(fd_, port_.scratch(), ClientPort::kScratchBytes, 0);
    } while (n < 0 && errno == EINTR);
    if (n > 0) return static_cast<std::size_t>(n);
    if (n == 0) {
      ec = asio::error::eof;
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      in_ready_ = false;  // until the set says otherwise
      ec = asio::error::would_block;
    } else {
      ec = boost::system::error_code(errno, boost::system::system_category());
    }
    return 0;
  }
  const ssize_t n = tls_->Receive(port_.scratch(), ClientPort::kScratchBytes);
  if (n > 0) return static_cast<std::size_t>(n);
  if (n == 0) {
    ec = asio::error::eof;
  } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
    read_wants_write_ = tls_->wants_write();
    (read_wants_write_ ? out_ready_ : in_ready_) = false;
    ec = asio::error::would_block;
  } else {
    // A client without the CA's certificate, or one speaking clear text to
    // the TLS port: worth a line, as the HTTPS listener logs it, but
    // strangers must not flood the log.
    static LogLimiter limiter(20, "zk: ");
    if (errno == EPROTO && limiter.Allow("failed TLS connections")) {
      log::Info("zk", "TLS with " + peer() + " failed: " + tls_->error());
    }
    ec = asio::error::connection_aborted;
  }
  return 0;
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
  AppendFrame(&unsent_, frame);
  port_.CountSent();
}

void Connection::SendText(std::string_view text) { unsent_.append(text); }

void Connection::Flush() {
  if (phase_ == Phase::kClosed || writing_) return;
  if (unsent_.empty()) {
    if (phase_ == Phase::kClosing && slots_.empty()) {
      if (tls_ != nullptr) tls_->Shutdown();
      ::shutdown(fd_, SHUT_WR);
      Close();
    }
    return;
  }
  writing_ = true;
  sending_.swap(unsent_);
  sent_ = 0;
  SendSome();
}

void Connection::SendSome() {
  while (sent_ < sending_.size()) {
    const char* from = sending_.data() + sent_;
    const std::size_t size = sending_.size() - sent_;
    const ssize_t n =
        tls_ != nullptr ? tls_->Send(from, size) : ::send(fd_, from, size, MSG_NOSIGNAL);
    if (n > 0) {
      sent_ += static_cast<std::size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR && tls_ == nullptr) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      // Resumed by OnReady. OpenSSL retries the same bytes after the wait
      // (sending_ stays put); it may want to read first (a renegotiation).
      write_wants_read_ = tls_ != nullptr && !tls_->wants_write();
      (write_wants_read_ ? in_ready_ : out_ready_) = false;
      write_waiting_ = true;
      return;
    }
    break;
  }
  // Done later, as async_write's handler would be: callers of Flush (the
  // port delivering one change's events to every connection) do not
  // expect this connection to move on, or close, inside it.
  const boost::system::error_code ec =
      sent_ < sending_.size() ? asio::error::connection_aborted : boost::system::error_code();
  std::weak_ptr<Connection> weak = weak_from_this();
  asio::post(port_.io(), [weak, ec] {
    if (std::shared_ptr<Connection> self = weak.lock()) self->Written(ec);
  });
}

void Connection::Written(boost::system::error_code ec) {
  if (phase_ == Phase::kClosed) return;
  writing_ = false;
  sending_.clear();
  if (unsent_.empty()) {
    // Nothing more to send: an idle connection keeps no buffer.
    sending_.shrink_to_fit();
    unsent_.shrink_to_fit();
  }
  if (ec) return Close();
  Resume();
}

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
