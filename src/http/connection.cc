#include "http/connection.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <boost/asio/post.hpp>
#include <cerrno>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <utility>
#include <vector>

#include "common/limits.h"
#include "common/log.h"
#include "common/log_limiter.h"
#include "common/strings.h"
#include "http/request_reader.h"
#include "http/wire.h"
#include "tls/session.h"

namespace tenure::http {
namespace {

namespace asio = boost::asio;

// Requests answered, or full 64 KiB reads of a body, in one Run before
// yielding the loop to other clients.
constexpr int kRequestsPerTurn = 16;
// After a response that closes the connection, unread input is discarded for
// at most this long / this much, then the socket is closed regardless.
constexpr MonoMs kLingerMs = 1000;
constexpr std::size_t kLingerBytesMax = 4 * 1024 * 1024;
// Leftover-buffer capacity kept between requests; more is given back.
constexpr std::size_t kPendingKeepBytes = 16 * 1024;
// A KV answer's head with Consul's headers is about 220 bytes.
constexpr std::size_t kHeadReserveBytes = 256;
// Unparsed bytes one request may leave: a header at its limit plus one read.
constexpr std::size_t kPendingBytesMax = limits::kHttpHeaderBytesMax + ServerShared::kScratchBytes;

constexpr std::string_view kOutputBudgetFull =
    "Too many large responses are waiting for slow clients; retry later";

constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";

template <typename... Args>
void Log(fmt::format_string<Args...> format, Args&&... args) {
  log::Warn("http", fmt::format(format, std::forward<Args>(args)...));
}

bool WouldBlock(int error) { return error == EAGAIN || error == EWOULDBLOCK; }

// An OnClose callback that throws is logged; the others still run.
void RunOnClose(const std::function<void()>& callback) {
  try {
    callback();
  } catch (const std::exception& e) {
    Log("OnClose callback threw: {}", e.what());
  } catch (...) {
    Log("OnClose callback threw");
  }
}

}  // namespace

namespace {

// The accepted socket's descriptor, taken out of asio (whose reactor then
// forgets it): -1 if that fails.
int TakeDescriptor(asio::ip::tcp::socket& socket) {
  boost::system::error_code ec;
  const int fd = socket.release(ec);
  return ec ? -1 : fd;
}

}  // namespace

Connection::Connection(std::shared_ptr<ServerShared> shared, boost::asio::ip::tcp::socket socket)
    : shared_(std::move(shared)), fd_(TakeDescriptor(socket)) {
  if (shared_->tls != nullptr && fd_ >= 0) {
    // OpenSSL reads and writes with plain read(2)/write(2): without
    // MSG_DONTWAIT the descriptor itself must not block.
    const int flags = ::fcntl(fd_, F_GETFL);
    if (flags >= 0) ::fcntl(fd_, F_SETFL, flags | O_NONBLOCK);
    tls_ = std::make_unique<tls::Session>(*shared_->tls, fd_);
  }
  next_ = shared_->connections;
  if (next_ != nullptr) next_->prev_ = this;
  shared_->connections = this;
  linked_ = true;
  ++shared_->open;
}

Connection::~Connection() {
  DisarmTimer();
  Unlink();
  CloseDescriptor();
}

// Out of the epoll set first: a descriptor duplicated elsewhere would keep
// its registration, and with it a pointer to this connection, alive.
void Connection::CloseDescriptor() {
  if (fd_ < 0) return;
  if (registered_ && shared_->poll != nullptr) {
    ::epoll_ctl(shared_->poll->native_handle(), EPOLL_CTL_DEL, fd_, nullptr);
  }
  registered_ = false;
  ::close(fd_);
  fd_ = -1;
}

void Connection::Unlink() {
  if (!linked_) return;
  if (prev_ != nullptr) {
    prev_->next_ = next_;
  } else {
    shared_->connections = next_;
  }
  if (next_ != nullptr) next_->prev_ = prev_;
  prev_ = next_ = nullptr;
  linked_ = false;
  --shared_->open;
  if (counted_) {
    --shared_->served;
    counted_ = false;
  }
  if (client_slot_ != ClientTable::kNoSlot) {
    shared_->clients->Remove(client_slot_);
    client_slot_ = ClientTable::kNoSlot;
  }
}

void Connection::Start(ClientTable::Slot client) {
  counted_ = true;
  ++shared_->served;
  client_slot_ = client;
  if (!Register()) return;
  // Responses are written whole; Nagle would only delay the last segment.
  const int one = 1;
  ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  BeginRequest();
  Run();
}

void Connection::Reject(HttpResponse response) {
  if (!Register()) return;
  http10_ = false;
  head_request_ = false;
  PrepareWrite(std::move(response), /*keep_alive=*/false);
  Run();
}

void Connection::Close() {
  if (phase_ == Phase::kClosed) {
    Unlink();
    return;
  }
  // The parked request's Responder may hold the last reference.
  const auto self = shared_from_this();
  phase_ = Phase::kClosed;
  if (responder_ != nullptr) {
    ConnectionResponder* responder = responder_;
    responder_ = nullptr;
    responder->MarkClosed();
  }
  CloseDescriptor();
  wait_read_ = wait_write_ = watching_ = false;
  waiting_self_.reset();  // `self` above keeps it alive until we return
  DisarmTimer();
  Unlink();
  ReleaseOutput();
  out_.reset();
  reader_.reset();
  std::string().swap(pending_);
}

// --- The driver --------------------------------------------------------------

void Connection::Run() {
  if (running_) return;  // Send from inside the handler: the running loop picks it up
  auto self = shared_from_this();
  running_ = true;
  turn_budget_ = kRequestsPerTurn;
  try {
    for (bool more = true; more;) {
      switch (phase_) {
        case Phase::kReading:
          more = ReadStep();
          break;
        case Phase::kWriting:
          more = WriteStep();
          break;
        case Phase::kLinger:
          more = LingerStep();
          break;
        case Phase::kParked:
          WatchPeer();
          more = false;
          break;
        case Phase::kClosed:
          more = false;
          break;
      }
    }
  } catch (const std::exception& e) {
    Log("connection closed after an unexpected exception: {}", e.what());
    Close();
  } catch (...) {
    Log("connection closed after an unexpected exception");
    Close();
  }
  running_ = false;
}

void Connection::PostRun() {
  asio::post(shared_->io, [self = shared_from_this()] { self->Run(); });
}

// TLS may need the other direction: a read that must first write (its
// handshake's answer, a key update) or a write that must first read.
void Connection::WaitReadable() {
  // A parked request's disconnect watch is a read-wait too: after the
  // answer it carries on as the wait for the next request (OnPeerReadable),
  // which saves cancelling one epoll registration and arming another.
  if (watching_) return;
  if (tls_ != nullptr && tls_->wants_write()) {
    wait_write_ = true;
  } else {
    wait_read_ = true;
  }
  HoldWhileWaiting();
}

void Connection::WaitWritable() {
  if (tls_ != nullptr && !tls_->wants_write()) {
    wait_read_ = true;
  } else {
    wait_write_ = true;
  }
  HoldWhileWaiting();
}

void Connection::HoldWhileWaiting() {
  if (waiting_self_ == nullptr) waiting_self_ = shared_from_this();
}

// --- Readiness (decision 0035) ---------------------------------------------------

bool Connection::Register() {
  epoll_event event{};
  // Edge-triggered, both directions, once: a wait is only a flag then.
  event.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
  event.data.ptr = this;
  if (fd_ >= 0 && EnsurePolling(shared_) &&
      ::epoll_ctl(shared_->poll->native_handle(), EPOLL_CTL_ADD, fd_, &event) == 0) {
    registered_ = true;
    return true;
  }
  const int error = errno;
  static LogLimiter limiter(20, "http: ");
  if (limiter.Allow("connections not watched")) {
    Log("closing a connection: cannot watch it: {}", std::strerror(error));
  }
  Close();
  return false;
}

bool Connection::EnsurePolling(const std::shared_ptr<ServerShared>& shared) {
  if (shared->poll != nullptr) return true;
  if (shared->stopped) return false;
  const int fd = ::epoll_create1(EPOLL_CLOEXEC);
  if (fd < 0) return false;
  shared->poll = std::make_unique<asio::posix::stream_descriptor>(shared->io, fd);
  ArmPoll(shared, /*drain_now=*/false);
  return true;
}

// Waits until the epoll set has events, or drains it again at once when the
// last drain may have left some (a full batch). Either way a wait is queued
// before control returns to the loop, so no edge of the set is missed.
void Connection::ArmPoll(const std::shared_ptr<ServerShared>& shared, bool drain_now) {
  if (shared->poll_armed || shared->poll == nullptr) return;
  shared->poll_armed = true;
  asio::posix::stream_descriptor* poll = shared->poll.get();
  auto drain = [weak = std::weak_ptr<ServerShared>(shared), poll] {
    const auto alive = weak.lock();
    // Stopped meanwhile (a newer set may exist: its own wait is pending).
    if (alive == nullptr || alive->poll.get() != poll) return;
    alive->poll_armed = false;
    Poll(alive);
  };
  if (drain_now) {
    asio::post(shared->io, std::move(drain));
    return;
  }
  shared->poll->async_wait(asio::posix::descriptor_base::wait_read,
                           [drain = std::move(drain)](const boost::system::error_code& ec) {
                             if (!ec) drain();
                           });
}

void Connection::Poll(const std::shared_ptr<ServerShared>& shared) {
  constexpr int kBatch = 256;
  epoll_event events[kBatch];
  int n = 0;
  do {
    n = ::epoll_wait(shared->poll->native_handle(), events, kBatch, 0);
  } while (n < 0 && errno == EINTR);
  if (n < 0) {
    Log("epoll_wait: {}", std::strerror(errno));
    n = 0;
  }
  // Every connection in the set is alive (one leaves the set before it
  // goes), but one may close another (MakeRoomForOutput): hold them all
  // before any runs.
  std::vector<std::shared_ptr<Connection>>& batch = shared->poll_batch;
  batch.clear();
  for (int i = 0; i < n; ++i) {
    batch.push_back(static_cast<Connection*>(events[i].data.ptr)->shared_from_this());
  }
  for (int i = 0; i < n; ++i) batch[static_cast<std::size_t>(i)]->OnReady(events[i].events);
  batch.clear();
  ArmPoll(shared, /*drain_now=*/n == kBatch);
}

void Connection::OnReady(std::uint32_t events) {
  if (phase_ == Phase::kClosed) return;
  // Errors and hang-ups count as both: the next call reports them.
  const bool readable = (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) != 0;
  const bool writable = (events & (EPOLLOUT | EPOLLHUP | EPOLLERR)) != 0;
  bool run = false;
  bool watch = false;
  if (readable && wait_read_) {
    wait_read_ = false;
    run = true;
  }
  if (writable && wait_write_) {
    wait_write_ = false;
    run = true;
  }
  if (readable && watching_) {
    watching_ = false;
    watch = true;
  }
  // An edge nobody waits for is dropped: whoever wants that direction next
  // makes its call first and waits only after EAGAIN.
  if (!wait_read_ && !wait_write_ && !watching_) waiting_self_.reset();  // Poll holds it
  if (watch) OnPeerReadable();
  if (run) Run();
}

void Connection::StopPolling(ServerShared& shared) {
  if (shared.poll == nullptr) return;
  boost::system::error_code ignored;
  shared.poll->close(ignored);  // its pending wait completes, aborted
  shared.poll.reset();
  shared.poll_armed = false;
}

ssize_t Connection::ReceiveSome(char* buffer, std::size_t size) {
  if (tls_ == nullptr) return ::recv(fd_, buffer, size, MSG_DONTWAIT);
  return tls_->Receive(buffer, size);
}

ssize_t Connection::SendSome(const iovec* iov, int count) {
  if (tls_ == nullptr) {
    msghdr message{};
    message.msg_iov = const_cast<iovec*>(iov);
    message.msg_iovlen = static_cast<std::size_t>(count);
    return ::sendmsg(fd_, &message, MSG_NOSIGNAL | MSG_DONTWAIT);
  }
  // A head and a body that fit one TLS record go out as one (one write(2)
  // and one record instead of two), staged in the shared scratch buffer:
  // a retry after EAGAIN stages the same bytes again. Otherwise one record
  // at a time; the caller comes back for the rest.
  constexpr std::size_t kTlsRecordBytes = 16 * 1024;
  std::size_t total = 0;
  for (int i = 0; i < count; ++i) total += iov[i].iov_len;
  if (count > 1 && total <= kTlsRecordBytes) {
    char* staging = shared_->scratch.get();
    std::size_t at = 0;
    for (int i = 0; i < count; ++i) {
      std::memcpy(staging + at, iov[i].iov_base, iov[i].iov_len);
      at += iov[i].iov_len;
    }
    return tls_->Send(staging, total);
  }
  return tls_->Send(static_cast<const char*>(iov[0].iov_base), iov[0].iov_len);
}

void Connection::TlsFailed() {
  static LogLimiter limiter(20, "http: ");  // strangers must not flood the log
  if (limiter.Allow("failed TLS connections")) {
    asio::ip::tcp::endpoint remote;
    socklen_t size = static_cast<socklen_t>(remote.capacity());
    const bool known = ::getpeername(fd_, remote.data(), &size) == 0;
    if (known) remote.resize(size);
    Log("TLS: closing a connection from {}:{}: {}", known ? remote.address().to_string() : "?",
        known ? remote.port() : 0, tls_->error());
  }
  if (tls_->plain_http()) {
    // The client wrote clear text: it can read a clear answer.
    constexpr std::string_view kBody = "Client sent an HTTP request to an HTTPS server.\n";
    const std::string answer = fmt::format(
        "HTTP/1.0 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\n"
        "Content-Length: {}\r\nConnection: close\r\n\r\n{}",
        kBody.size(), kBody);
    [[maybe_unused]] const ssize_t n =
        ::send(fd_, answer.data(), answer.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
    ::shutdown(fd_, SHUT_WR);
  }
  Close();
}

// --- Reading and parsing -----------------------------------------------------

void Connection::BeginRequest() {
  phase_ = Phase::kReading;
  if (reader_ != nullptr) reader_->Begin();  // else made by the first byte (Reader)
  if (pending_.empty() && pending_.capacity() > kPendingKeepBytes) std::string().swap(pending_);
  request_started_ = !pending_.empty();  // pipelined bytes count as a started request
  const MonoMs wait_ms = request_started_ ? shared_->request_read_timeout_ms
                         : spoken_        ? shared_->idle_timeout_ms
                                          : shared_->first_byte_timeout_ms;
  const MonoMs now = wire::NowMonoMs();
  SetDeadline(now + wait_ms, now);
}

bool Connection::ReadStep() {
  if (!pending_.empty()) {
    std::size_t used = 0;
    const ParseOutcome outcome = Parse(pending_.data(), pending_.size(), &used);
    if (phase_ == Phase::kClosed) return false;
    pending_.erase(0, used);
    if (outcome == ParseOutcome::kComplete) {
      Dispatch();
      return true;
    }
    if (outcome == ParseOutcome::kError) return true;
  }
  char* scratch = shared_->scratch.get();
  const ssize_t n = ReceiveSome(scratch, ServerShared::kScratchBytes);
  if (n < 0) {
    if (errno == EINTR) return true;
    if (WouldBlock(errno)) {  // only now is waiting safe: the reactor is edge-triggered
      WaitReadable();
      return false;
    }
    if (errno == EPROTO && tls_ != nullptr) {
      TlsFailed();
      return false;
    }
    Close();  // reset by peer and the like
    return false;
  }
  if (n == 0) {  // EOF: between requests a normal goodbye; mid-request the request is dropped
    Close();
    return false;
  }
  // A short read does not prove the socket drained: a FIN may wait behind
  // the data, and its edge is already spent. Only EAGAIN proves it.
  const auto size = static_cast<std::size_t>(n);
  spoken_ = true;
  if (!request_started_) {
    request_started_ = true;
    const MonoMs now = wire::NowMonoMs();
    SetDeadline(now + shared_->request_read_timeout_ms, now);
  }
  if (!pending_.empty()) {  // continue a partial header or chunk line: parse it whole
    pending_.append(scratch, size);
    if (pending_.size() > kPendingBytesMax) PrepareRefusal(Reader().Overlong());
    return true;
  }
  std::size_t used = 0;
  const ParseOutcome outcome = Parse(scratch, size, &used);
  if (phase_ == Phase::kClosed) return false;
  // Keep what the parser left (a partial header, the next pipelined request)
  // before anything else can reuse the scratch buffer.
  if (outcome != ParseOutcome::kError) pending_.append(scratch + used, size - used);
  if (outcome == ParseOutcome::kComplete) {
    Dispatch();
    return true;
  }
  // A large body arriving fast would otherwise be read whole in one turn
  // (a 64 MiB restore: hundreds of ms of the loop). A full read costs one
  // request of the turn's budget: at most 1 MiB of body per turn.
  if (size == ServerShared::kScratchBytes && --turn_budget_ <= 0 && phase_ == Phase::kReading) {
    PostRun();
    return false;
  }
  return true;
}

// Made when a request's first byte arrives, not when the connection starts
// waiting for one: a woken watcher waits for its next request without one
// (~430 bytes), and WatchPeer frees it again when that request parks.
RequestReader& Connection::Reader() {
  if (reader_ == nullptr) {
    reader_ = std::make_unique<RequestReader>();
    reader_->set_large_body_gate(&shared_->large_body_gate);
    reader_->Begin();
  }
  return *reader_;
}

Connection::ParseOutcome Connection::Parse(const char* data, std::size_t size, std::size_t* used) {
  switch (Reader().Feed(data, size, used)) {
    case RequestReader::Outcome::kComplete:
      return ParseOutcome::kComplete;
    case RequestReader::Outcome::kError:
      PrepareRefusal(reader_->TakeError());
      return ParseOutcome::kError;
    case RequestReader::Outcome::kNeedMore:
      break;
  }
  MaybeSendContinue();
  return ParseOutcome::kNeedMore;
}

// A client that sent "Expect: 100-continue" waits for this before the body
// (curl does for bodies over 1 KiB). Not sent when the body is refused: the
// 413 goes out instead.
void Connection::MaybeSendContinue() {
  if (!reader_->TakeContinue()) return;
  // The send buffer is empty (one request in flight), so this fits at once;
  // if it does not, the client just sends the body after its own timeout.
  const iovec iov{const_cast<char*>(kContinue.data()), kContinue.size()};
  const ssize_t n = SendSome(&iov, 1);
  if (n > 0 && static_cast<std::size_t>(n) != kContinue.size()) {
    Log("closing a connection after a partial 100 Continue");
    Close();  // the stream is no longer valid HTTP; Run's loop stops on kClosed
  }
}

void Connection::PrepareRefusal(HttpResponse response) {
  http10_ = false;
  head_request_ = false;
  pending_.clear();  // nothing after a malformed request can be trusted
  PrepareWrite(std::move(response), /*keep_alive=*/false);
}

void Connection::Dispatch() {
  RequestReader::Parsed parsed = reader_->Take();
  keep_alive_ = parsed.keep_alive;
  http10_ = parsed.http10;
  head_request_ = parsed.head_request;
  if (parsed.refusal) {
    pending_.clear();
    PrepareWrite(std::move(*parsed.refusal), false);
    return;
  }
  HttpRequest request = std::move(parsed.request);
  request.received_ms = wire::NowMonoMs();
  // A second request in a row: a busy keep-alive connection, worth keeping
  // its TLS buffers for (given back when it parks a read or goes idle).
  if (tls_ != nullptr && ++busy_requests_ == 2) tls_->KeepBuffers();

  phase_ = Phase::kParked;
  request_started_ = false;
  // A fair acquire (PUT ?acquire&queue, decision 0027) waits like a blocking
  // query, and a client that half-closes has gone: its place in the queue
  // is given up (the handler's OnClose proposes the dequeue).
  parked_read_only_ = request.method == "GET" || request.method == "HEAD" ||
                      (request.method == "PUT" && request.HasQuery("queue"));
  peer_finished_sending_ = false;
  SetDeadline(kNoDeadline, request.received_ms);  // blocking queries wait as long as they need
  auto responder = std::make_shared<ConnectionResponder>(shared_from_this());
  responder_ = responder.get();
  try {
    shared_->handler(std::move(request), responder);
  } catch (const std::exception& e) {
    Log("request handler threw: {}", e.what());
    responder->Send(HttpResponse::Text(500, std::string("internal error: ") + e.what()));
  } catch (...) {
    Log("request handler threw");
    responder->Send(HttpResponse::Text(500, "internal error"));
  }
  // If the handler kept no reference and never answered, the responder's
  // destructor answers 500 here.
}

// --- Parked requests -----------------------------------------------------------

// While a request is parked, the socket is watched so that a client that
// goes away frees its parked work. Bytes it pipelines meanwhile are read into
// pending_ (bounded), so the watch always sees a later EOF or reset. An EOF is
// only a half-close: the answer to a write (PUT, DELETE) is still owed and is
// sent, as Go's server does; a parked read (a blocking query) is dropped.
void Connection::WatchPeer() {
  if (watching_ || peer_finished_sending_) return;
  for (;;) {
    const ssize_t n = ReceiveSome(shared_->scratch.get(), ServerShared::kScratchBytes);
    if (n > 0) {
      pending_.append(shared_->scratch.get(), static_cast<std::size_t>(n));
      if (pending_.size() > kPendingBytesMax) {
        Close();  // pipelining without bound while waiting: not a client we can serve
        return;
      }
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && WouldBlock(errno)) break;
    if (n == 0 && !parked_read_only_) {
      peer_finished_sending_ = true;  // answer, then finish the connection
      return;
    }
    Close();  // reset, or EOF on a parked read: the client is gone, and so is the work
    return;
  }
  // A parked read is most likely a blocking query, which may wait minutes:
  // its TLS record buffers (~34 KiB) go back meanwhile.
  if (tls_ != nullptr && parked_read_only_) {
    tls_->ReleaseBuffers();
    busy_requests_ = 0;
  }
  // So do its parser (~430 bytes with the allocator's share) and an empty
  // leftover buffer (the previous answer's buffers went with its Output):
  // 10,000 watchers park 7 MiB less. BeginRequest makes the parser again
  // for the next request.
  // And its timer entry: a parked request has no deadline (Dispatch), and
  // SetDeadline arms one again.
  if (parked_read_only_) {
    reader_.reset();
    if (pending_.empty()) std::string().swap(pending_);
    if (deadline_ms_ == kNoDeadline) DisarmTimer();
  }
  watching_ = true;
  HoldWhileWaiting();
}

void Connection::OnPeerReadable() {
  if (phase_ == Phase::kClosed) return;
  if (phase_ == Phase::kReading || phase_ == Phase::kLinger) {  // answered meanwhile
    Run();
    return;
  }
  if (phase_ != Phase::kParked) return;  // writing: the write-wait drives the connection
  try {
    WatchPeer();
  } catch (const std::exception& e) {
    Log("closing a connection: {}", e.what());
    Close();
  }
}

bool Connection::TakeResponder(ConnectionResponder* responder) {
  if (phase_ != Phase::kParked || responder_ != responder) return false;
  responder_ = nullptr;
  return true;
}

void Connection::RespondShared(ConnectionResponder* responder,
                               std::shared_ptr<const SharedAnswer> answer) {
  if (!TakeResponder(responder)) return;
  PrepareSharedWrite(std::move(answer), keep_alive_);
  AfterRespond();
}

void Connection::Respond(ConnectionResponder* responder, HttpResponse response) {
  if (!TakeResponder(responder)) return;
  PrepareWrite(std::move(response), keep_alive_);
  AfterRespond();
}

void Connection::AfterRespond() {
  // From inside the handler the running loop writes it. From elsewhere (a
  // woken blocking query, a raft commit) write now: a wake-up of 1,000
  // watchers is 1,000 writes in one turn, with no posted handler each. A
  // pipelined next request may then be dispatched from here; callers of
  // Send (Waiters::Wake, proposal completions) hold no state that forbids it.
  if (!running_) Run();
}

void Connection::Abandoned(ConnectionResponder* responder) {
  if (phase_ != Phase::kParked || responder_ != responder) return;
  Log("a request was dropped without a response; answering 500");
  Respond(responder, HttpResponse::Text(500, "internal error: request dropped without a response"));
}

// --- Writing -------------------------------------------------------------------

Connection::Output& Connection::NewOutput() {
  ReleaseOutput();
  if (out_ == nullptr) {
    out_ = std::make_unique<Output>();
  } else {
    *out_ = Output();
  }
  return *out_;
}

void Connection::PrepareWrite(HttpResponse response, bool keep_alive) {
  const MonoMs now = wire::NowMonoMs();
  ReleaseOutput();
  // Large answers held for clients that do not read could take all memory:
  // past the budget, the answer is dropped and the client told to retry.
  if (!head_request_ && response.body.size() > limits::kHttpSmallResponseBytes &&
      !MakeRoomForOutput(response.body.size(), now)) {
    response = HttpResponse::Text(429, std::string(kOutputBudgetFull));
  }
  Output& out = NewOutput();
  // One allocation for a typical head, not four growing copies.
  out.head.reserve(kHeadReserveBytes);
  const bool with_body = wire::AppendResponseHead(
      response, wire::HeadOptions{keep_alive, http10_, head_request_}, &out.head);
  if (with_body) out.body = std::move(response.body);
  out.close_after_write = !keep_alive;
  BeginOutput(out.head.size() + out.body.size(), now);
}

void Connection::PrepareSharedWrite(std::shared_ptr<const SharedAnswer> answer, bool keep_alive) {
  const HttpResponse& response = answer->response;
  // The shared head is the one of a keep-alive HTTP/1.1 GET with a body,
  // small enough to need no room in the output budget; anything else is
  // rendered for this connection alone, from a copy.
  if (!keep_alive || http10_ || head_request_ || response.status < 200 || response.status == 204 ||
      response.status == 304 || response.body.size() > limits::kHttpSmallResponseBytes) {
    PrepareWrite(response, keep_alive);
    return;
  }
  const MonoMs now = wire::NowMonoMs();
  const std::string_view date = wire::DateHeader();
  if (answer->head == nullptr || answer->head_date != date) {
    auto head = std::make_shared<std::string>();
    head->reserve(kHeadReserveBytes);
    wire::AppendResponseHead(response, wire::HeadOptions{}, head.get());
    answer->head_date = date;
    answer->head = std::move(head);
  }
  Output& out = NewOutput();
  out.shared_head = answer->head;
  out.shared_answer = std::move(answer);
  BeginOutput(out.shared_head->size() + out.shared_answer->response.body.size(), now);
}

void Connection::BeginOutput(std::size_t bytes, MonoMs now_ms) {
  phase_ = Phase::kWriting;
  out_->accounted = bytes;
  shared_->unsent_bytes += bytes;
  out_->progress_ms = now_ms;
  SetDeadline(now_ms + shared_->request_read_timeout_ms, now_ms);  // a client that never reads
}

void Connection::ReleaseOutput() {
  if (out_ == nullptr) return;
  shared_->unsent_bytes -= out_->accounted;
  out_->accounted = 0;
}

bool Connection::MakeRoomForOutput(std::size_t bytes, MonoMs now_ms) {
  auto fits = [&] { return shared_->unsent_bytes + bytes <= shared_->unsent_bytes_max; };
  if (fits()) return true;
  std::vector<std::pair<std::size_t, std::shared_ptr<Connection>>> stalled;
  for (Connection* c = shared_->connections; c != nullptr; c = c->next_) {
    if (c != this && c->phase_ == Phase::kWriting && c->out_ != nullptr && c->out_->accounted > 0 &&
        now_ms - c->out_->progress_ms >= shared_->stalled_writer_ms) {
      stalled.emplace_back(c->out_->accounted, c->shared_from_this());
    }
  }
  std::sort(stalled.begin(), stalled.end(),
            [](const auto& a, const auto& b) { return a.first > b.first; });
  for (auto& [size, connection] : stalled) {
    if (fits()) break;
    Log("closing a connection whose {}-byte response made no progress for {} ms", size,
        now_ms - connection->out_->progress_ms);
    connection->Close();
  }
  return fits();
}

bool Connection::WriteStep() {
  // A shared answer's head and body are written from where they are, with
  // the same one sendmsg.
  Output& out = *out_;
  const std::string_view head = out.head_bytes();
  const std::string_view body = out.body_bytes();
  const std::size_t total = head.size() + body.size();
  while (out.offset < total) {
    iovec iov[2];
    int count = 0;
    if (out.offset < head.size()) {
      iov[count++] = {const_cast<char*>(head.data()) + out.offset, head.size() - out.offset};
      if (!body.empty()) iov[count++] = {const_cast<char*>(body.data()), body.size()};
    } else {
      const std::size_t body_offset = out.offset - head.size();
      iov[count++] = {const_cast<char*>(body.data()) + body_offset, body.size() - body_offset};
    }
    const ssize_t n = SendSome(iov, count);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (WouldBlock(errno)) {
        WaitWritable();
        return false;
      }
      Close();
      return false;
    }
    out.offset += static_cast<std::size_t>(n);
    if (out.offset < total) {
      const MonoMs now = wire::NowMonoMs();
      out.progress_ms = now;
      SetDeadline(now + shared_->request_read_timeout_ms, now);  // progress extends it
    }
  }
  ReleaseOutput();
  const bool close_after_write = out.close_after_write;
  out_.reset();  // written: a parked or idle connection holds no output
  if (close_after_write) {
    BeginLinger();
    return true;
  }
  BeginRequest();
  // An answered parked request still has its disconnect watch armed, and it
  // was armed when nothing was waiting in the socket: it will fire for the
  // next request, so reading now would only cost an EAGAIN. Unless the next
  // request already arrived with this one (pipelined, read with its body):
  // then nothing more may come to fire the watch, and it is parsed now.
  if (watching_ && pending_.empty()) return false;
  if (--turn_budget_ <= 0) {  // let other clients run; continue on a fresh turn
    PostRun();
    return false;
  }
  return true;
}

void Connection::BeginLinger() {
  phase_ = Phase::kLinger;
  reader_.reset();
  std::string().swap(pending_);
  linger_bytes_ = 0;
  if (tls_ != nullptr) tls_->Shutdown();  // close_notify; what follows is discarded raw
  ::shutdown(fd_, SHUT_WR);
  const MonoMs now = wire::NowMonoMs();
  SetDeadline(now + std::min(kLingerMs, shared_->request_read_timeout_ms), now);
}

bool Connection::LingerStep() {
  const ssize_t n = ::recv(fd_, shared_->scratch.get(), ServerShared::kScratchBytes, MSG_DONTWAIT);
  if (n < 0) {
    if (errno == EINTR) return true;
    if (WouldBlock(errno)) {
      WaitReadable();
      return false;
    }
    Close();
    return false;
  }
  linger_bytes_ += static_cast<std::size_t>(n);
  if (n == 0 || linger_bytes_ > kLingerBytesMax) {
    Close();
    return false;
  }
  return true;
}

// --- Deadlines -----------------------------------------------------------------

void Connection::SetDeadline(MonoMs deadline_ms, MonoMs now_ms) {
  deadline_ms_ = deadline_ms;
  if (deadline_ms == kNoDeadline) return;  // an armed timer finds no deadline and stops
  if (timer_armed_ && timer_at_ms_ <= deadline_ms) return;
  ArmTimer(std::min(deadline_ms, now_ms + shared_->request_read_timeout_ms));
}

// A set entry (~64 bytes) instead of an asio timer and its pending wait per
// connection (~250 bytes): 10,000 woken watchers each arm an idle deadline
// at once (decision 0034, addendum).
void Connection::ArmTimer(MonoMs at_ms) {
  if (timer_armed_) shared_->timers.erase({timer_at_ms_, this});
  timer_at_ms_ = at_ms;
  timer_armed_ = true;
  shared_->timers.emplace(at_ms, this);
  ArmSharedTimer(shared_);
}

void Connection::DisarmTimer() {
  if (!timer_armed_) return;
  timer_armed_ = false;
  shared_->timers.erase({timer_at_ms_, this});
  // Nothing left to time: no wait may keep the loop running (Stop).
  if (shared_->timers.empty() && shared_->timer != nullptr) {
    shared_->timer->cancel();
    shared_->timer_at_ms = -1;
  }
}

void Connection::ArmSharedTimer(const std::shared_ptr<ServerShared>& shared) {
  if (shared->timers.empty()) return;
  const MonoMs earliest = shared->timers.begin()->first;
  // Armed for a time no later: it fires early at worst, and re-arms.
  if (shared->timer_at_ms != -1 && shared->timer_at_ms <= earliest) return;
  if (shared->timer == nullptr) shared->timer = std::make_unique<asio::steady_timer>(shared->io);
  shared->timer_at_ms = earliest;
  // Cancels a later wait, whose handler then sees operation_aborted.
  shared->timer->expires_at(
      std::chrono::steady_clock::time_point(std::chrono::milliseconds(earliest)));
  shared->timer->async_wait(
      [weak = std::weak_ptr<ServerShared>(shared)](const boost::system::error_code& ec) {
        if (ec) return;
        if (const auto alive = weak.lock()) OnSharedTimer(alive);
      });
}

void Connection::OnSharedTimer(const std::shared_ptr<ServerShared>& shared) {
  shared->timer_at_ms = -1;
  const MonoMs now = wire::NowMonoMs();
  // An entry that fires re-arms later than now (OnTimer), or not at all.
  while (!shared->timers.empty() && shared->timers.begin()->first <= now) {
    Connection* connection = shared->timers.begin()->second;
    shared->timers.erase(shared->timers.begin());
    connection->timer_armed_ = false;
    const auto self = connection->shared_from_this();  // Close may drop the last other reference
    self->OnTimer();
  }
  ArmSharedTimer(shared);
}

void Connection::OnTimer() {
  if (phase_ == Phase::kClosed || deadline_ms_ == kNoDeadline) return;
  try {
    const MonoMs now = wire::NowMonoMs();
    if (now >= deadline_ms_) {
      Close();  // idle, half a request, a reader that stalled, or lingering done
      return;
    }
    // Waiting for a next request for a while now: an idle keep-alive
    // connection need not hold TLS buffers (a busy one gets here once per
    // read timeout).
    if (tls_ != nullptr && phase_ == Phase::kReading && !request_started_) {
      tls_->ReleaseBuffers();
      busy_requests_ = 0;
    }
    ArmTimer(std::min(deadline_ms_, now + shared_->request_read_timeout_ms));
  } catch (const std::exception& e) {
    Log("closing a connection: {}", e.what());
    Close();
  }
}

// --- ConnectionResponder -------------------------------------------------------

ConnectionResponder::ConnectionResponder(std::shared_ptr<Connection> connection)
    : connection_(std::move(connection)), io_(&connection_->io()) {}

ConnectionResponder::~ConnectionResponder() {
  if (connection_ != nullptr) connection_->Abandoned(this);
}

void ConnectionResponder::Send(HttpResponse response) {
  if (connection_ == nullptr) return;  // sent before, or the client left
  sent_ = true;
  const auto connection = std::move(connection_);
  connection->Respond(this, std::move(response));
}

void ConnectionResponder::SendShared(std::shared_ptr<const SharedAnswer> answer) {
  if (connection_ == nullptr) return;
  sent_ = true;
  const auto connection = std::move(connection_);
  connection->RespondShared(this, std::move(answer));
}

void ConnectionResponder::OnClose(std::function<void()> callback) {
  if (!callback || sent_) return;  // an answered request can no longer be abandoned
  if (!on_close_) {
    on_close_ = std::move(callback);
  } else {  // in the order given, each on its own (a throw stops only itself)
    on_close_ = [first = std::move(on_close_), then = std::move(callback)] {
      RunOnClose(first);
      RunOnClose(then);
    };
  }
  if (closed_) PostOnClose();
}

void ConnectionResponder::MarkClosed() {
  closed_ = true;
  connection_.reset();  // the caller (Close) holds the connection
  PostOnClose();
}

// Posted, so a callback never runs inside Close() (which may itself run inside
// a handler or Stop()) nor inside OnClose().
void ConnectionResponder::PostOnClose() {
  if (!on_close_) return;
  asio::post(*io_, [callback = std::move(on_close_)] { RunOnClose(callback); });
  on_close_ = nullptr;
}

}  // namespace tenure::http
