// Connection, streamed answers (Responder::StartStream; decision 0053,
// "Streamed answers"): the head, then each piece as the handler queues it,
// framed as chunks (raw for an HTTP/1.0 client, whose connection closes at
// the end), written at once. Between pieces the connection has no deadline
// and watches its client as a parked request does; queued bytes count
// against the unsent-output budget and the write-stall rule as any
// answer's do.
#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <charconv>
#include <string>
#include <utility>

#include "common/assert.h"
#include "common/log_limiter.h"
#include "listen/connection.h"
#include "listen/connection_internal.h"
#include "listen/wire.h"
#include "tls/session.h"

namespace tenure::listen {

using connection_detail::Log;
using connection_detail::WouldBlock;

namespace {

constexpr std::string_view kLastChunk = "0\r\n\r\n";
// Room a drained stream's buffer keeps for its next pieces; more is given
// back. Written bytes before its middle are dropped once past this.
constexpr std::size_t kStreamKeepBytes = 16 * 1024;

}  // namespace

void Connection::StartStream(ConnectionResponder* responder, int status,
                             const HeaderFields& headers) {
  if (phase_ != Phase::kParked || responder_ != responder) return;
  if (peer_finished_sending_) {
    // The client half-closed while the request waited: a stream has no end
    // that it could be waiting for (Go's server cancels such a request too).
    Close();
    return;
  }
  const MonoMs now = wire::NowMonoMs();
  HttpResponse head;
  head.status = status;
  head.content_type.clear();
  head.headers = headers;
  const bool no_body = head_request_ || status < 200 || status == 204 || status == 304;
  // HTTP/1.0 has no chunks: the end of the body is the end of the connection.
  const bool keep_alive = keep_alive_ && (no_body || !http10_);
  Output& out = NewOutput();
  wire::AppendResponseHead(head, wire::HeadOptions{keep_alive, http10_, head_request_, true},
                           &out.head);
  out.close_after_write = !keep_alive;
  if (no_body) {  // whole now: written as any answer, and the producer told to stop
    responder_ = nullptr;
    BeginOutput(out.head.size(), now);
    responder->MarkClosed();
    AfterRespond();
    return;
  }
  phase_ = Phase::kStreaming;
  out.chunked = !http10_;
  out.body = std::move(out.head);
  out.head = std::string();
  out.accounted = out.body.size();
  shared_->unsent_bytes += out.accounted;
  out.progress_ms = now;
  if (!running_) Run();  // from inside the handler the running loop writes it
}

void Connection::StreamChunk(ConnectionResponder* responder, std::string_view bytes) {
  if (phase_ != Phase::kStreaming || responder_ != responder || bytes.empty()) return;
  const MonoMs now = wire::NowMonoMs();
  char size_line[24];
  std::size_t size_line_bytes = 0;
  if (out_->chunked) {
    const auto [end, ec] = std::to_chars(size_line, size_line + sizeof(size_line) - 2,
                                         static_cast<std::uint64_t>(bytes.size()), 16);
    (void)ec;
    end[0] = '\r';
    end[1] = '\n';
    size_line_bytes = static_cast<std::size_t>(end + 2 - size_line);
  }
  const std::string_view trailer = out_->chunked ? std::string_view("\r\n") : std::string_view();
  const std::size_t framed = size_line_bytes + bytes.size() + trailer.size();
  if (!MakeRoomForOutput(framed, now)) {
    static LogLimiter limiter(20, "http: ");
    if (limiter.Allow("streamed answers cut by the unsent-output budget")) {
      Log("closing a connection whose streamed answer has {} bytes unsent: the unsent-output "
          "budget is spent",
          out_->accounted + framed);
    }
    Close();  // OnClose tells the producer
    return;
  }
  QueueStreamBytes(std::string_view(size_line, size_line_bytes), bytes, trailer, now);
}

void Connection::EndStream(ConnectionResponder* responder) {
  if (phase_ != Phase::kStreaming || responder_ != responder) return;
  responder_ = nullptr;
  out_->ended = true;
  if (out_->chunked) {
    QueueStreamBytes({}, kLastChunk, {}, wire::NowMonoMs());
  } else if (!running_) {
    Run();  // nothing to add: finishes once what is queued is written
  }
}

std::size_t Connection::StreamUnsentBytes(const ConnectionResponder* responder) const {
  if (phase_ != Phase::kStreaming || responder_ != responder) return 0;
  return out_->accounted;
}

void Connection::QueueStreamBytes(std::string_view size_line, std::string_view bytes,
                                  std::string_view trailer, MonoMs now_ms) {
  Output& out = *out_;
  if (out.offset == out.body.size()) {
    out.body.clear();
    out.offset = 0;
    out.progress_ms = now_ms;  // a stall is counted from the first byte waiting
  } else if (out.offset > kStreamKeepBytes && out.offset * 2 >= out.body.size()) {
    out.body.erase(0, out.offset);  // a slow reader: written bytes are not kept
    out.offset = 0;
  }
  const std::size_t framed = size_line.size() + bytes.size() + trailer.size();
  out.body.reserve(out.body.size() + framed);
  out.body.append(size_line);
  out.body.append(bytes);
  out.body.append(trailer);
  out.accounted += framed;
  shared_->unsent_bytes += framed;
  // Waiting for writability already: its wake-up writes this too.
  if (!running_ && !wait_write_) Run();
}

bool Connection::StreamStep() {
  Output& out = *out_;
  bool wrote = false;
  while (out.offset < out.body.size()) {
    const iovec iov{out.body.data() + out.offset, out.body.size() - out.offset};
    const ssize_t n = SendSome(&iov, 1);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (WouldBlock(errno)) {
        if (wrote) out.progress_ms = wire::NowMonoMs();
        // A client that does not read is cut after the read timeout
        // without progress (or sooner when its room is needed).
        SetDeadline(out.progress_ms + shared_->request_read_timeout_ms, wire::NowMonoMs());
        WaitWritable();
        return false;
      }
      Close();
      return false;
    }
    const auto sent = static_cast<std::size_t>(n);
    out.offset += sent;
    TENURE_ASSERT(out.accounted >= sent && shared_->unsent_bytes >= sent);
    out.accounted -= sent;
    shared_->unsent_bytes -= sent;
    wrote = true;
  }
  if (out.ended) return FinishOutput();
  // All written, the stream open: no deadline until more comes, and the
  // client watched meanwhile (its EOF or reset ends the stream).
  if (wrote) {
    out.body.clear();
    out.offset = 0;
    if (out.body.capacity() > kStreamKeepBytes) std::string().swap(out.body);
    if (responder_ != nullptr) responder_->Drained();
  }
  SetDeadline(kNoDeadline, wire::NowMonoMs());
  WatchPeer();
  return false;
}

void Connection::AbandonStream() {
  static LogLimiter limiter(20, "http: ");
  if (limiter.Allow("streamed answers dropped before their end")) {
    Log("a streamed answer was dropped before its end; resetting its connection");
  }
  responder_ = nullptr;
  // A reset, not a FIN: an HTTP/1.0 client would take a FIN for the end.
  const struct linger reset { 1, 0 };
  ::setsockopt(fd_, SOL_SOCKET, SO_LINGER, &reset, sizeof(reset));
  Close();
}

}  // namespace tenure::listen
