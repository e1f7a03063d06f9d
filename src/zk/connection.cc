#include "zk/connection.h"

#include <fmt/format.h>

#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
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

Connection::Connection(ClientPort& port, asio::ip::tcp::socket socket, std::uint64_t number,
                       std::shared_ptr<const tls::Context> tls)
    : port_(port),
      number_(number),
      socket_(std::move(socket)),
      // The TLS handshake happens in the first reads, inside the
      // handshake's time limit like the ConnectRequest after it.
      tls_(tls != nullptr ? std::make_unique<tls::Session>(*tls, socket_.native_handle())
                          : nullptr),
      opened_ms_(port.server().clock().NowMonoMs()) {}

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
  ArmRead();
}

void Connection::Close() {
  if (phase_ == Phase::kClosed) return;
  phase_ = Phase::kClosed;
  if (spliced_ != nullptr) spliced_->link->Close();
  boost::system::error_code ignored;
  socket_.close(ignored);
  ClearSlots();
  port_.Forget(this);
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
  std::weak_ptr<Connection> weak = weak_from_this();
  if (tls_ != nullptr && !read_starved_ && tls_->has_pending()) {
    // Records OpenSSL read ahead of a read that stopped early (a backlog,
    // the session being opened): no readiness will announce them. (After
    // a read that wanted more, what it holds is part of a record: the
    // rest comes with readiness.)
    asio::post(port_.io(), [weak] {
      std::shared_ptr<Connection> self = weak.lock();
      if (self == nullptr || self->phase_ == Phase::kClosed) return;
      self->reading_ = false;
      self->OnReadable();
    });
    return;
  }
  // TLS may have to write before it can read on (its handshake's answer).
  const auto wait =
      read_wants_write_ ? asio::ip::tcp::socket::wait_write : asio::ip::tcp::socket::wait_read;
  socket_.async_wait(wait, [weak](boost::system::error_code ec) {
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
    return socket_.read_some(asio::buffer(port_.scratch(), ClientPort::kScratchBytes), ec);
  }
  const ssize_t n = tls_->Receive(port_.scratch(), ClientPort::kScratchBytes);
  if (n > 0) return static_cast<std::size_t>(n);
  if (n == 0) {
    ec = asio::error::eof;
  } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
    read_wants_write_ = tls_->wants_write();
    ec = asio::error::would_block;
  } else {
    // A client without the CA's certificate, or one speaking clear text to
    // the TLS port: worth a line, as the HTTPS listener logs it, but
    // strangers must not flood the log.
    static LogLimiter limiter(20, "zk: ");
    if (errno == EPROTO && limiter.Allow("failed TLS connections")) {
      log::Info("zk", "TLS with " + peer_ + " failed: " + tls_->error());
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
    const std::size_t take = std::min(bytes.size(), 4 - head_.size());
    head_.append(bytes.substr(0, take));
    bytes.remove_prefix(take);
    if (head_.size() < 4) return;
    if (head_ == kRelayMark && !came_spliced_) {
      came_spliced_ = true;
      head_.clear();
      continue;
    }
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

// --- Requests --------------------------------------------------------------------

void Connection::OnRequestFrame(const std::string& frame) {
  std::string why;
  std::optional<DecodedRequest> request = DecodeRequest(frame, &why);
  if (!request) {
    log::Warn("zk", "closing a connection from " + peer_ + ": " + why);
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
    const Reader reader{&caller_.can(), session_, identities_};
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
    log::Warn("zk", "closing a connection from " + peer_ + ": an answer of " +
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
      boost::system::error_code ignored;
      socket_.shutdown(asio::ip::tcp::socket::shutdown_send, ignored);
      Close();
    }
    return;
  }
  writing_ = true;
  sending_.swap(unsent_);
  if (tls_ != nullptr) {
    sent_ = 0;
    return SendTls();
  }
  std::weak_ptr<Connection> weak = weak_from_this();
  asio::async_write(socket_, asio::buffer(sending_),
                    [weak](boost::system::error_code ec, std::size_t) {
                      std::shared_ptr<Connection> self = weak.lock();
                      if (self != nullptr) self->Written(ec);
                    });
}

void Connection::SendTls() {
  while (sent_ < sending_.size()) {
    const ssize_t n = tls_->Send(sending_.data() + sent_, sending_.size() - sent_);
    if (n > 0) {
      sent_ += static_cast<std::size_t>(n);
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      // OpenSSL retries the same bytes after the wait (sending_ stays put).
      const auto wait = tls_->wants_write() ? asio::ip::tcp::socket::wait_write
                                            : asio::ip::tcp::socket::wait_read;
      std::weak_ptr<Connection> weak = weak_from_this();
      socket_.async_wait(wait, [weak](boost::system::error_code ec) {
        std::shared_ptr<Connection> self = weak.lock();
        if (self == nullptr || self->phase_ == Phase::kClosed) return;
        if (ec) return self->Written(ec);
        self->SendTls();
      });
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
