// Connection's reading and writing on its socket, resumed by the port's
// ready set (zk/ready_set.h, decision 0057); the rest of Connection is in
// connection.cc.
#include <sys/socket.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <cerrno>
#include <string>

#include "common/log.h"
#include "common/log_limiter.h"
#include "tls/session.h"
#include "zk/client_port.h"
#include "zk/connection.h"
#include "zk/leader_splice.h"

namespace tenure::zk {

namespace {

namespace asio = boost::asio;

// The client's address as text ("unknown" if the socket has none), as
// the HTTP listener logs it (listen/connection.cc).
std::string PeerAddress(int fd) {
  asio::ip::tcp::endpoint remote;
  auto size = static_cast<socklen_t>(remote.capacity());
  if (::getpeername(fd, remote.data(), &size) != 0) return "unknown";
  remote.resize(size);
  return remote.address().to_string();
}

}  // namespace

std::string Connection::peer() const { return fd_ < 0 ? "unknown" : PeerAddress(fd_); }

void Connection::OnReady(bool readable, bool writable, bool peer_ended) {
  if (phase_ == Phase::kClosed) return;
  peer_ended_ = peer_ended_ || peer_ended;
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
    // In clear text, the read that was under way when this was posted may
    // have drained the socket since: then readiness resumes it, without a
    // read that can only answer EAGAIN. (TLS reads as before: OpenSSL may
    // hold what readiness will not announce.)
    if (self->tls_ == nullptr && !self->in_ready_) return;
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
    if (tls_ == nullptr && n < ClientPort::kScratchBytes && !peer_ended_) {
      // Fewer bytes than asked for: the socket had no more. Readiness is
      // edge-triggered and reported again for any byte or end of stream
      // that arrives after the report this read answers (one that came
      // before it was in the report: peer_ended_), so the read that would
      // only answer EAGAIN is skipped: a system call per request, on this
      // machine's hypervisor the costliest part of a request.
      in_ready_ = false;
      return ArmRead();
    }
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
  if (n > 0) {
    read_wants_write_ = false;  // whatever it wanted, it had
    return static_cast<std::size_t>(n);
  }
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

// --- Writing ---------------------------------------------------------------------

void Connection::Flush() {
  if (phase_ == Phase::kClosed || writing_) return;
  if (out_ == nullptr || out_->unsent.empty()) {
    if (phase_ == Phase::kClosing && slots_.empty()) {
      if (tls_ != nullptr) tls_->Shutdown();
      ::shutdown(fd_, SHUT_WR);
      Close();
    }
    return;
  }
  writing_ = true;
  out_->sending.swap(out_->unsent);
  out_->sent = 0;
  SendSome();
}

void Connection::SendSome() {
  Outbox& out = *out_;
  while (out.sent < out.sending.size()) {
    const char* from = out.sending.data() + out.sent;
    const std::size_t size = out.sending.size() - out.sent;
    const ssize_t n =
        tls_ != nullptr ? tls_->Send(from, size) : ::send(fd_, from, size, MSG_NOSIGNAL);
    if (n > 0) {
      out.sent += static_cast<std::size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR && tls_ == nullptr) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      // Resumed by OnReady. OpenSSL retries the same bytes after the wait
      // (the outbox's `sending` stays put); it may want to read first (a renegotiation).
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
      out.sent < out.sending.size() ? asio::error::connection_aborted : boost::system::error_code();
  std::weak_ptr<Connection> weak = weak_from_this();
  asio::post(port_.io(), [weak, ec] {
    if (std::shared_ptr<Connection> self = weak.lock()) self->Written(ec);
  });
}

void Connection::Written(boost::system::error_code ec) {
  if (phase_ == Phase::kClosed) return;
  writing_ = false;
  if (out_->unsent.empty()) {
    out_.reset();  // nothing more to send: an idle connection keeps no buffer
  } else {
    out_->sending.clear();
    out_->sent = 0;
  }
  if (ec) return Close();
  Resume();
}

}  // namespace tenure::zk
