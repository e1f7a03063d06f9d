#include "listen/connection.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <boost/asio/post.hpp>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <utility>
#include <vector>

#include "common/assert.h"
#include "common/log_limiter.h"
#include "listen/connection_internal.h"
#include "listen/http2_session.h"
#include "listen/request_reader.h"
#include "listen/wire.h"
#include "tls/session.h"

namespace tenure::listen {

using connection_detail::kRequestsPerTurn;
using connection_detail::Log;

namespace {

namespace asio = boost::asio;

// The accepted socket's descriptor, taken out of asio (whose reactor then
// forgets it): -1 if that fails.
int TakeDescriptor(asio::ip::tcp::socket& socket) {
  boost::system::error_code ec;
  const int fd = socket.release(ec);
  return ec ? -1 : fd;
}

}  // namespace

ServerShared::ServerShared(asio::io_context& io_context, RequestHandler request_handler)
    : io(io_context),
      handler(std::move(request_handler)),
      deadlines(io_context, &Connection::OnDeadline),
      readiness(io_context, &Connection::OnReadyBatch) {}

Connection::Connection(std::shared_ptr<ServerShared> shared, boost::asio::ip::tcp::socket socket)
    : shared_(std::move(shared)), fd_(TakeDescriptor(socket)) {
  if (shared_->tls != nullptr && fd_ >= 0) {
    // OpenSSL reads and writes with plain read(2)/write(2): without
    // MSG_DONTWAIT the descriptor itself must not block.
    const int flags = ::fcntl(fd_, F_GETFL);
    if (flags >= 0) ::fcntl(fd_, F_SETFL, flags | O_NONBLOCK);
    // ALPN offers h2 only where HTTP/2 is served.
    tls_ = std::make_unique<tls::Session>(*shared_->tls, fd_, shared_->http2);
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
  if (registered_) shared_->readiness.Remove(fd_);
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
  TENURE_ASSERT(shared_->open > 0);
  --shared_->open;
  if (counted_) {
    TENURE_ASSERT(shared_->served > 0);
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
  Http2End();
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
        case Phase::kStreaming:
          more = StreamStep();
          break;
        case Phase::kLinger:
          more = LingerStep();
          break;
        case Phase::kHttp2:
          more = Http2Step();
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

// --- Readiness (decision 0035; listen/readiness_set.h) ---------------------------

bool Connection::Register() {
  if (fd_ >= 0 && shared_->readiness.Add(fd_, this)) {
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

void Connection::OnReadyBatch(std::span<const ReadinessSet::Ready> batch) {
  // One may close another (MakeRoomForOutput): hold them all before any runs.
  const std::shared_ptr<ServerShared> shared = static_cast<Connection*>(batch[0].owner)->shared_;
  std::vector<std::shared_ptr<Connection>>& held = shared->ready_batch;
  held.clear();
  for (const ReadinessSet::Ready& ready : batch) {
    held.push_back(static_cast<Connection*>(ready.owner)->shared_from_this());
  }
  for (std::size_t i = 0; i < batch.size(); ++i) held[i]->OnReady(batch[i].events);
  held.clear();
}

void Connection::OnReady(std::uint32_t events) {
  if (phase_ == Phase::kClosed) return;
  // Errors and hang-ups count as both: the next call reports them.
  const bool readable = (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) != 0;
  if (readable) in_drained_ = false;
  if ((events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) != 0) peer_ended_ = true;
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

// --- TLS and the socket --------------------------------------------------------

ssize_t Connection::ReceiveSome(char* buffer, std::size_t size) {
  if (tls_ == nullptr) return ::recv(fd_, buffer, size, MSG_DONTWAIT);
  return tls_->Receive(buffer, size);
}

ssize_t Connection::ReceiveUnlessDrained(char* buffer, std::size_t size) {
  const bool clear_text = tls_ == nullptr;
  if (clear_text && in_drained_ && !peer_ended_) {
    errno = EAGAIN;  // what the system call would have answered
    return -1;
  }
  const ssize_t n = ReceiveSome(buffer, size);
  if (clear_text && n > 0 && static_cast<std::size_t>(n) < size) in_drained_ = true;
  return n;
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

// --- Deadlines (listen/deadline_set.h)
// -----------------------------------------------------------------

void Connection::SetDeadline(MonoMs deadline_ms, MonoMs now_ms) {
  deadline_ms_ = deadline_ms;
  if (deadline_ms == kNoDeadline) return;  // an armed timer finds no deadline and stops
  if (timer_armed_ && timer_at_ms_ <= deadline_ms) return;
  ArmTimer(std::min(deadline_ms, now_ms + shared_->request_read_timeout_ms));
}

void Connection::ArmTimer(MonoMs at_ms) {
  if (timer_armed_) shared_->deadlines.Remove(timer_at_ms_, this);
  timer_at_ms_ = at_ms;
  timer_armed_ = true;
  shared_->deadlines.Add(at_ms, this);
}

void Connection::DisarmTimer() {
  if (!timer_armed_) return;
  timer_armed_ = false;
  shared_->deadlines.Remove(timer_at_ms_, this);
}

void Connection::OnDeadline(void* owner) {
  auto* connection = static_cast<Connection*>(owner);
  connection->timer_armed_ = false;
  const auto self = connection->shared_from_this();  // Close may drop the last other reference
  self->OnTimer();
}

void Connection::OnTimer() {
  if (phase_ == Phase::kClosed || deadline_ms_ == kNoDeadline) return;
  try {
    const MonoMs now = wire::NowMonoMs();
    if (phase_ == Phase::kHttp2) {
      Http2OnTimer(now);
      return;
    }
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

}  // namespace tenure::listen
