// Connection, HTTP/2 (decision 0053): choosing the protocol (the client
// preface on a cleartext connection, ALPN's h2 over TLS), the driver of an
// HTTP/2 connection over its Http2Session, its share of the unsent-output
// budget, and its deadlines: the idle timeout without open streams, a PING
// to a silent client with open streams, a reader that stalls.
#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <string_view>

#include "common/assert.h"
#include "listen/connection.h"
#include "listen/connection_internal.h"
#include "listen/http2_session.h"
#include "listen/wire.h"
#include "tls/session.h"

namespace tenure::listen {

using connection_detail::WouldBlock;

namespace {

constexpr std::string_view kPreface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

}  // namespace

Connection::Sniffed Connection::SniffHttp2(std::string_view bytes) const {
  const std::size_t n = std::min(bytes.size(), kPreface.size());
  if (bytes.substr(0, n) != kPreface.substr(0, n)) return Sniffed::kHttp1;
  return n == kPreface.size() ? Sniffed::kHttp2 : Sniffed::kNeedMore;
}

void Connection::StartHttp2(std::string_view received) {
  phase_ = Phase::kHttp2;
  reader_.reset();
  request_started_ = false;
  h2_ = std::make_unique<Http2Session>(this, shared_.get());
  const MonoMs now = wire::NowMonoMs();
  h2_->Receive(received.data(), received.size(), now);  // a failure: written, then closed
  std::string().swap(pending_);                         // after: `received` may be in it
  Http2SetDeadline(now);
}

bool Connection::Http2Step() {
  // What the last input, a timer or a stream's send produced goes out first.
  bool write_blocked = false;
  for (;;) {
    const std::string_view out = h2_->Output();
    if (out.empty()) break;
    const iovec iov{const_cast<char*>(out.data()), out.size()};
    const ssize_t n = SendSome(&iov, 1);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (WouldBlock(errno)) {
        write_blocked = true;
        break;
      }
      Close();
      return false;
    }
    h2_->Wrote(static_cast<std::size_t>(n));
    h2_->progress_ms = wire::NowMonoMs();
  }
  Http2Account();
  if (h2_->finished()) {
    if (!write_blocked) {  // its GOAWAY is out (or there was none to send)
      Http2End();
      BeginLinger();
      return true;
    }
    wait_write_ = true;
    HoldWhileWaiting();
    Http2SetDeadline(wire::NowMonoMs());  // a client that does not read its GOAWAY
    return false;
  }
  char* scratch = shared_->scratch.get();
  const ssize_t n = ReceiveUnlessDrained(scratch, ServerShared::kScratchBytes);
  if (n < 0) {
    if (errno == EINTR) return true;
    if (WouldBlock(errno)) {
      // Edge-triggered: wait for both when both are owed.
      if (write_blocked) {
        wait_read_ = wait_write_ = true;
        HoldWhileWaiting();
      } else {
        WaitReadable();
      }
      Http2SetDeadline(wire::NowMonoMs());
      return false;
    }
    Close();  // reset by peer, a TLS failure after the handshake
    return false;
  }
  if (n == 0) {
    Close();
    return false;
  }
  const auto size = static_cast<std::size_t>(n);
  h2_->Receive(scratch, size, wire::NowMonoMs());  // a failure: written, then closed
  // A fast sender yields the loop as HTTP/1.1's large bodies do.
  if (size == ServerShared::kScratchBytes && --turn_budget_ <= 0) {
    PostRun();
    return false;
  }
  return true;
}

void Connection::Http2End() {
  if (h2_ == nullptr) return;
  TENURE_ASSERT(shared_->unsent_bytes >= h2_->accounted);
  shared_->unsent_bytes -= h2_->accounted;
  h2_->accounted = 0;
  h2_->CloseAll();
}

void Connection::Http2Kick() {
  if (h2_ != nullptr) h2_->Kicked();
  if (phase_ != Phase::kHttp2 || running_) return;  // the running loop writes it
  Run();
}

void Connection::Http2Account() {
  const std::size_t bytes = h2_->queued_bytes();
  if (h2_->accounted == 0 && bytes > 0) h2_->progress_ms = wire::NowMonoMs();
  TENURE_ASSERT(shared_->unsent_bytes >= h2_->accounted);
  shared_->unsent_bytes = shared_->unsent_bytes - h2_->accounted + bytes;
  h2_->accounted = bytes;
}

std::size_t Connection::Http2AccountedBytes() const { return h2_ != nullptr ? h2_->accounted : 0; }

MonoMs Connection::Http2ProgressMs() const { return h2_ != nullptr ? h2_->progress_ms : MonoMs(); }

void Connection::Http2SetDeadline(MonoMs now_ms) {
  MonoMs at = kNoDeadline;
  if (h2_->open_streams() == 0) {
    at = h2_->idle_since_ms + shared_->idle_timeout_ms;
  } else if (h2_->ping_sent_ms == MonoMs::Max()) {
    at = h2_->last_receive_ms + shared_->http2_ping_after_ms;
  } else {
    at = h2_->ping_sent_ms + shared_->http2_ping_timeout_ms;
  }
  if (h2_->accounted > 0) {
    at = std::min(at, h2_->progress_ms + shared_->request_read_timeout_ms);
  }
  SetDeadline(at, now_ms);
}

void Connection::Http2OnTimer(MonoMs now_ms) {
  if (now_ms < deadline_ms_) {
    ArmTimer(std::min(deadline_ms_, now_ms + shared_->request_read_timeout_ms));
    return;
  }
  if (h2_->accounted > 0 && now_ms - h2_->progress_ms >= shared_->request_read_timeout_ms) {
    Close();  // a client that stopped reading
    return;
  }
  if (h2_->open_streams() == 0) {
    if (now_ms - h2_->idle_since_ms >= shared_->idle_timeout_ms) {
      Http2GoAway();
      Close();
      return;
    }
  } else if (h2_->ping_sent_ms != MonoMs::Max()) {
    if (now_ms - h2_->ping_sent_ms >= shared_->http2_ping_timeout_ms) {
      Close();  // silent with open streams, and no answer to the PING
      return;
    }
  } else if (now_ms - h2_->last_receive_ms >= shared_->http2_ping_after_ms) {
    h2_->Ping(now_ms);
    Run();
    if (phase_ != Phase::kHttp2) return;
  }
  Http2SetDeadline(now_ms);
}

void Connection::Http2GoAway() {
  if (phase_ != Phase::kHttp2 || h2_ == nullptr) return;
  h2_->GoAway(/*graceful=*/true);
  // Twice: frames produced before it may fill the first batch.
  for (int i = 0; i < 2; ++i) {
    const std::string_view out = h2_->Output();
    if (out.empty()) return;
    const iovec iov{const_cast<char*>(out.data()), out.size()};
    const ssize_t n = SendSome(&iov, 1);
    if (n <= 0) return;
    h2_->Wrote(static_cast<std::size_t>(n));
    if (static_cast<std::size_t>(n) < out.size()) return;
  }
}

}  // namespace tenure::listen
