// Connection, requests in: reading and parsing one request, dispatching it
// to the handler, and watching the client while the request is parked.
#include <sys/socket.h>
#include <sys/uio.h>

#include <exception>
#include <string>
#include <utility>

#include "listen/connection.h"
#include "listen/connection_internal.h"
#include "listen/request_reader.h"
#include "listen/wire.h"
#include "tls/session.h"

namespace tenure::listen {

using connection_detail::kPendingBytesMax;
using connection_detail::Log;
using connection_detail::WouldBlock;

namespace {

// Leftover-buffer capacity kept between requests; more is given back.
constexpr std::size_t kPendingKeepBytes = 16 * 1024;

constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";

}  // namespace

// --- Reading and parsing -----------------------------------------------------

void Connection::BeginRequest() {
  phase_ = Phase::kReading;
  if (reader_ != nullptr) reader_->Begin();  // else made by the first byte (Reader)
  if (pending_.empty() && pending_.capacity() > kPendingKeepBytes) std::string().swap(pending_);
  request_started_ = !pending_.empty();  // pipelined bytes count as a started request
  const DurationMs wait_ms = request_started_ ? shared_->request_read_timeout_ms
                             : spoken_        ? shared_->idle_timeout_ms
                                              : shared_->first_byte_timeout_ms;
  const MonoMs now = wire::NowMonoMs();
  SetDeadline(now + wait_ms, now);
}

bool Connection::ReadStep() {
  // (Until HTTP/2 or not is decided, pending_ holds a preface's beginning.)
  if (!pending_.empty() && (sniffed_ || !shared_->http2)) {
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
  const ssize_t n = ReceiveUnlessDrained(scratch, ServerShared::kScratchBytes);
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
  // A short read proves the socket drained only without a FIN behind the
  // data, whose edge is already spent: ReceiveUnlessDrained knows which.
  const auto size = static_cast<std::size_t>(n);
  if (shared_->http2 && !sniffed_ && SniffStep(std::string_view(scratch, size))) return true;
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

// The first bytes of a connection on a listener that serves HTTP/2: over
// TLS, ALPN has chosen; in clear text, the client preface decides (its
// first bytes are kept until it is whole or has differed). True: the bytes
// were taken (an HTTP/2 connection now, or kept in pending_ to be parsed).
bool Connection::SniffStep(std::string_view received) {
  if (tls_ != nullptr) {
    sniffed_ = true;
    if (!tls_->alpn_h2()) return false;
    spoken_ = true;
    StartHttp2(received);
    return true;
  }
  spoken_ = true;
  pending_.append(received);
  const Sniffed sniffed = SniffHttp2(pending_);
  if (sniffed == Sniffed::kHttp2) {
    sniffed_ = true;
    StartHttp2(pending_);
    return true;
  }
  if (sniffed == Sniffed::kHttp1) sniffed_ = true;  // ReadStep parses pending_ next
  if (!request_started_) {
    request_started_ = true;
    const MonoMs now = wire::NowMonoMs();
    SetDeadline(now + shared_->request_read_timeout_ms, now);
  }
  return true;
}

// Made when a request's first byte arrives, not when the connection starts
// waiting for one: a woken watcher waits for its next request without one
// (~430 bytes), and WatchPeer frees it again when that request parks.
RequestReader& Connection::Reader() {
  if (reader_ == nullptr) {
    reader_ = std::make_unique<RequestReader>();
    reader_->set_body_rules(&shared_->large_body_gate, &shared_->body_too_large);
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
  // A read's client that half-closes has gone (the handler's OnClose drops
  // its work); the handler may count more requests as reads (Consul's fair
  // acquire, whose place in the queue is then given up).
  parked_read_only_ = shared_->parked_read != nullptr
                          ? shared_->parked_read(request)
                          : request.method == "GET" || request.method == "HEAD";
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
// A streamed answer's client is watched the same way while every byte queued
// is written; its EOF ends the stream.
void Connection::WatchPeer() {
  if (watching_ || peer_finished_sending_) return;
  for (;;) {
    const ssize_t n = ReceiveUnlessDrained(shared_->scratch.get(), ServerShared::kScratchBytes);
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
    if (n == 0 && !parked_read_only_ && phase_ == Phase::kParked) {
      peer_finished_sending_ = true;  // answer, then finish the connection
      return;
    }
    // A reset, or EOF on a parked read or a stream: the client is gone, and
    // so is the work.
    Close();
    return;
  }
  // A parked read is most likely a blocking query, which may wait minutes:
  // its TLS record buffers (~34 KiB) go back meanwhile.
  if (tls_ != nullptr && parked_read_only_ && phase_ == Phase::kParked) {
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
  // Writing: the write-wait drives the connection.
  if (phase_ != Phase::kParked && phase_ != Phase::kStreaming) return;
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
  if (phase_ == Phase::kStreaming && responder_ == responder) {
    AbandonStream();
    return;
  }
  if (phase_ != Phase::kParked || responder_ != responder) return;
  Log("a request was dropped without a response; answering 500");
  Respond(responder, HttpResponse::Text(500, "internal error: request dropped without a response"));
}

}  // namespace tenure::listen
