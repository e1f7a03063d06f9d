// One accepted HTTP/1.1 or HTTP/2 client connection of HttpServer, and the
// state the listener shares with its connections. Private to src/listen;
// loop thread only.
//
// Its code is in six files: connection.cc (its life, the driver, readiness
// and deadlines), connection_read.cc (requests in, parked requests),
// connection_write.cc (responses out), connection_stream.cc (streamed
// answers), connection_responder.cc, and connection_http2.cc (an HTTP/2
// connection's driver, over the Http2Session of http2_session.h; decision
// 0053).
//
// A connection is a small state machine driven by Run():
//   kReading  wait for / parse one request (until its first byte the
//             first-byte timeout on a new connection, the idle timeout
//             between requests; then the request read timeout);
//   kParked   the handler owns the request; no timeout; a read-readiness
//             watch notices a client that goes away;
//   kWriting  response bytes go out (a stalled reader is cut after the read
//             timeout without progress, or sooner when the unsent-output
//             budget is needed: MakeRoomForOutput);
//   kStreaming a streamed answer (Responder::StartStream): its head and
//             pieces go out as the handler queues them; while all are
//             written, no timeout, and the client is watched as when parked
//             (its EOF ends the stream); while some wait, the write-stall
//             rule and the unsent-output budget apply as for kWriting;
//   kLinger   after a response that closes the connection: send side shut,
//             input discarded until EOF, so the client reads the response
//             instead of a reset;
//   kHttp2    an HTTP/2 connection (its first bytes were the client preface,
//             or TLS's ALPN chose h2): frames in and out through h2_, many
//             streams at once (connection_http2.cc);
//   kClosed.
// At most one request is in flight: the next one is read only after the
// response was written. Reads and writes are non-blocking system calls made
// from the loop; a connection waits for readiness only right after a call
// that returned EAGAIN, because readiness is edge-triggered: every socket is
// in one epoll set of the listener's (ServerShared::readiness, decision 0035),
// not in asio's reactor, so a connection has no reactor state and no
// pending operation of its own.
// Reads go to one buffer shared by all connections (ServerShared::scratch);
// only unparsed leftovers are kept per connection, so an idle connection
// costs about 1 KiB.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/types.h"
#include "listen/client_table.h"
#include "listen/deadline_set.h"
#include "listen/readiness_set.h"
#include "listen/request.h"
#include "listen/request_reader.h"
#include "listen/stream.h"
#include "tls/context.h"

namespace tenure::listen {

class Connection;
class ConnectionResponder;
class Http2Session;
class RequestReader;
}  // namespace tenure::listen
namespace tenure::tls {
class Session;
}  // namespace tenure::tls
namespace tenure::listen {

// Shared by the listener and its connections; lives as long as any of them,
// so a connection that outlives HttpServer (a parked Responder) stays safe.
struct ServerShared {
  ServerShared(boost::asio::io_context& io_context, RequestHandler request_handler);

  static constexpr std::size_t kScratchBytes = 64 * 1024;

  boost::asio::io_context& io;
  RequestHandler handler;
  DurationMs request_read_timeout_ms = 0;
  DurationMs idle_timeout_ms = 0;
  DurationMs first_byte_timeout_ms = 0;
  std::size_t connections_max = 0;
  // Open connections per client address (ClientTable), shared with the
  // server's other listener; 0: no per-client limit.
  std::shared_ptr<ClientTable> clients;
  std::size_t connections_per_client_max = 0;
  // Set: every connection speaks TLS with it (an HTTPS listener). Replaced
  // on reload; a connection keeps the context it started with.
  std::shared_ptr<const tls::Context> tls;
  // Who may send a large body, the answer to one past its limit, and which
  // parked requests are reads (HttpServerOptions).
  LargeBodyGate large_body_gate;
  BodyTooLargeAnswer body_too_large;
  ParkedReadRule parked_read = nullptr;
  // HTTP/2 (HttpServerOptions::http2): the preface or ALPN's h2 starts it;
  // gRPC streams go to stream_router (unset: answered Unimplemented).
  bool http2 = false;
  StreamRouter stream_router;
  std::size_t http2_streams_max = 0;  // SETTINGS_MAX_CONCURRENT_STREAMS
  DurationMs http2_ping_after_ms = 0;
  DurationMs http2_ping_timeout_ms = 0;
  // Unsent response bytes over every connection, and its budget (limits.h).
  std::size_t unsent_bytes = 0;
  std::size_t unsent_bytes_max = 0;
  DurationMs stalled_writer_ms = 0;
  // Every read lands here and is parsed before the loop runs anything else.
  std::unique_ptr<char[]> scratch = std::make_unique<char[]>(kScratchBytes);
  // Every connection's deadline, behind one timer (decision 0034, addendum).
  DeadlineSet deadlines;
  // Every connection's socket is in this epoll set (decision 0035). Made by
  // the first connection; stopped by HttpServer::Stop, so nothing keeps the
  // loop running.
  ReadinessSet readiness;
  // The connections one drain of `readiness` wakes, held while it runs (reused).
  std::vector<std::shared_ptr<Connection>> ready_batch;
  Connection* connections = nullptr;  // intrusive list of every open connection
  std::size_t served = 0;             // open connections serving requests (not 429s)
  std::size_t open = 0;               // every open connection, 429s included
  bool stopped = false;
};

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(std::shared_ptr<ServerShared> shared, boost::asio::ip::tcp::socket socket);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Serves requests until the client leaves or a limit closes it. `client`:
  // its place in ServerShared::clients, given back when it closes.
  void Start(ClientTable::Slot client);
  // Answers `response` without reading a request, then closes (connection cap).
  void Reject(HttpResponse response);
  // Closes the socket now; a parked request's Responder turns closed and its
  // OnClose callbacks are posted. Idempotent.
  void Close();
  // HttpServer::Stop, before Close: an HTTP/2 connection queues GOAWAY and
  // writes it if the socket takes it at once. Nothing on HTTP/1.1.
  void Http2GoAway();

  Connection* next_open() const { return next_; }
  boost::asio::io_context& io() const { return shared_->io; }

 private:
  friend class ConnectionResponder;
  friend class Http2Session;
  friend class Http2Stream;
  friend struct ServerShared;  // hands OnDeadline and OnReadyBatch to its sets

  enum class Phase : std::uint8_t {
    kReading,
    kParked,
    kWriting,
    kStreaming,
    kLinger,
    kHttp2,
    kClosed
  };
  enum class Sniffed : std::uint8_t { kHttp1, kHttp2, kNeedMore };
  enum class ParseOutcome : std::uint8_t { kNeedMore, kComplete, kError };
  static constexpr MonoMs kNoDeadline = MonoMs::Max();

  void Run();
  void PostRun();
  bool ReadStep();
  bool WriteStep();
  bool LingerStep();
  ParseOutcome Parse(const char* data, std::size_t size, std::size_t* used);
  RequestReader& Reader();
  void MaybeSendContinue();
  // Answers `response` and closes: the request stream cannot be trusted.
  void PrepareRefusal(HttpResponse response);
  void Dispatch();
  void BeginRequest();
  void BeginLinger();
  void PrepareWrite(HttpResponse response, bool keep_alive);
  // An answer other connections send too: its head rendered once per Date
  // line, its bytes shared (decision 0034); a copy for other head options.
  void PrepareSharedWrite(std::shared_ptr<const SharedAnswer> answer, bool keep_alive);
  void BeginOutput(std::size_t bytes, MonoMs now_ms);
  // The response is written: the next request, or lingering before close.
  bool FinishOutput();
  // The response being written: made by PrepareWrite / PrepareSharedWrite,
  // freed when its last byte is sent, so a parked or idle connection holds
  // none of it (decision 0034, addendum).
  struct Output {
    std::string head;
    std::string body;
    // Set instead of head and body: a shared answer's bytes.
    std::shared_ptr<const std::string> shared_head;
    std::shared_ptr<const SharedAnswer> shared_answer;
    std::size_t offset = 0;     // bytes of head + body written
    std::size_t accounted = 0;  // its share of ServerShared::unsent_bytes
    MonoMs progress_ms;         // when the kernel last took some of it
    bool close_after_write = false;
    // A streamed answer's (kStreaming): `body` holds its framed bytes
    // queued, written from `offset`, and `accounted` is what is left of
    // them; `chunked` unless HTTP/1.0; `ended` once its end is queued.
    bool chunked = false;
    bool ended = false;

    std::string_view head_bytes() const {
      return shared_head != nullptr ? std::string_view(*shared_head) : std::string_view(head);
    }
    std::string_view body_bytes() const {
      return shared_answer != nullptr ? std::string_view(shared_answer->response.body)
                                      : std::string_view(body);
    }
  };
  // A fresh Output (the previous one's budget share given back).
  Output& NewOutput();
  // The unsent-output budget: true if `bytes` more fit, after closing
  // writers stalled for stalled_writer_ms (largest first) if need be.
  bool MakeRoomForOutput(std::size_t bytes, MonoMs now_ms);
  // Its share of the budget now, and when the kernel last took any of it:
  // an HTTP/1.1 response's or an HTTP/2 connection's queued frames and data.
  std::size_t accounted_bytes() const;
  MonoMs output_progress_ms() const;

  // HTTP/2 (connection_http2.cc). Whether `bytes`, the first a cleartext
  // connection received, are the client preface (kNeedMore: a prefix of it).
  Sniffed SniffHttp2(std::string_view bytes) const;
  bool SniffStep(std::string_view received);
  // Becomes an HTTP/2 connection; `received` (the preface onwards) is fed
  // to its new session.
  void StartHttp2(std::string_view received);
  bool Http2Step();
  // Output queued from outside Run (a stream's or responder's send): write it.
  void Http2Kick();
  // Its share of the unsent-output budget brought up to date.
  void Http2Account();
  // Its share of the budget given back and every stream closed (it ends).
  void Http2End();
  // The next deadline of an HTTP/2 connection, and what its timer does.
  void Http2SetDeadline(MonoMs now_ms);
  void Http2OnTimer(MonoMs now_ms);
  std::size_t Http2AccountedBytes() const;
  MonoMs Http2ProgressMs() const;
  void ReleaseOutput();
  void WaitReadable();
  void WaitWritable();
  // Readiness (ServerShared::readiness): Register adds the socket to the
  // epoll set (false: it could not, and the connection is closed); a wait is
  // a flag plus a reference to itself, so a waiting connection stays alive
  // as it did when asio's pending operation held it.
  bool Register();
  // Leaves the epoll set and closes the socket. Idempotent.
  void CloseDescriptor();
  void HoldWhileWaiting();
  void OnReady(std::uint32_t events);
  static void OnReadyBatch(std::span<const ReadinessSet::Ready> batch);
  // recv and send, through TLS on an HTTPS connection: bytes, 0 at the end
  // of the stream, -1 with errno (EAGAIN: wait; see WaitReadable).
  ssize_t ReceiveSome(char* buffer, std::size_t size);
  // ReceiveSome, or EAGAIN without the system call when a short clear-text
  // read drained the socket and no edge came since (in_drained_): one
  // system call less per request, on this machine's hypervisor a large
  // part of a request's cost.
  ssize_t ReceiveUnlessDrained(char* buffer, std::size_t size);
  ssize_t SendSome(const struct iovec* iov, int count);
  // A TLS failure (handshake, certificate, protocol): logs it, answers
  // plain HTTP sent to the TLS port as Go's server does, and closes.
  void TlsFailed();
  void WatchPeer();
  void OnPeerReadable();
  // From ConnectionResponder.
  void Respond(ConnectionResponder* responder, HttpResponse response);
  void RespondShared(ConnectionResponder* responder, std::shared_ptr<const SharedAnswer> answer);
  bool TakeResponder(ConnectionResponder* responder);
  void AfterRespond();
  void Abandoned(ConnectionResponder* responder);
  // A streamed answer (connection_stream.cc).
  void StartStream(ConnectionResponder* responder, int status, const HeaderFields& headers);
  void StreamChunk(ConnectionResponder* responder, std::string_view bytes);
  void EndStream(ConnectionResponder* responder);
  std::size_t StreamUnsentBytes(const ConnectionResponder* responder) const;
  // Appends framed bytes to the stream's output and writes them.
  void QueueStreamBytes(std::string_view size_line, std::string_view bytes,
                        std::string_view trailer, MonoMs now_ms);
  bool StreamStep();
  // A dropped stream: the connection reset, as its body cannot be ended.
  void AbandonStream();

  void SetDeadline(MonoMs deadline_ms, MonoMs now_ms);
  void ArmTimer(MonoMs at_ms);
  void DisarmTimer();
  void OnTimer();
  // Its entry in ServerShared::deadlines came due.
  static void OnDeadline(void* owner);
  void Unlink();

  // Ordered so that the small fields share words (decision 0035: 184
  // bytes, a 208-byte block with its control block; 200 with h2_ and
  // sniffed_, decision 0053).
  std::shared_ptr<ServerShared> shared_;
  // Itself while it waits for readiness (wait_read_, wait_write_,
  // watching_): what asio's pending operation used to hold.
  std::shared_ptr<Connection> waiting_self_;
  int fd_;                             // owned: closed by Close or the destructor
  int busy_requests_ = 0;              // requests since its TLS buffers were released
  std::unique_ptr<tls::Session> tls_;  // HTTPS only
  std::unique_ptr<Http2Session> h2_;   // HTTP/2 only (phase kHttp2)

  std::unique_ptr<RequestReader> reader_;  // made by a request's first byte (Reader)
  std::string pending_;                    // received bytes not parsed yet (partial or pipelined)
  ConnectionResponder* responder_ = nullptr;  // the parked request's or open stream's, if any
  std::unique_ptr<Output> out_;               // only while writing
  std::size_t linger_bytes_ = 0;

  // Lazy timer: armed at most one read timeout ahead, so it is never later
  // than any deadline that may follow; only moving earlier re-arms it. Its
  // entry in ServerShared::deadlines is (timer_at_ms_, this) while armed.
  MonoMs deadline_ms_ = kNoDeadline;
  MonoMs timer_at_ms_;

  Connection* prev_ = nullptr;
  Connection* next_ = nullptr;

  // Run() is not re-entered; it yields after a few requests.
  int turn_budget_ = 0;
  // Its entry in ServerShared::clients while served (in the padding after
  // turn_budget_: no bytes added).
  ClientTable::Slot client_slot_ = ClientTable::kNoSlot;

  Phase phase_ = Phase::kReading;
  bool request_started_ = false;  // a byte of the current request has arrived
  bool spoken_ = false;           // a byte has ever arrived on this connection
  // Current request's response framing.
  bool keep_alive_ = true;
  bool http10_ = false;
  bool head_request_ = false;
  bool running_ = false;
  // What readiness it waits for: readable or writable to Run again, or
  // readable to check a parked request's client (WatchPeer).
  bool wait_read_ = false;
  bool wait_write_ = false;
  bool watching_ = false;
  bool registered_ = false;             // in ServerShared::readiness
  bool parked_read_only_ = false;       // a read (ServerShared::parked_read): an EOF ends it
  bool peer_finished_sending_ = false;  // EOF seen while parked: close after answering
  // Clear text only (ReceiveUnlessDrained): a read shorter than asked took
  // all the socket had, and no readable edge came since...
  bool in_drained_ = false;
  // ...unless a readiness report said the client's end of the stream (or an
  // error) had come: that edge is spent, so reads go on to EOF or EAGAIN.
  bool peer_ended_ = false;
  bool timer_armed_ = false;
  bool counted_ = false;
  bool linked_ = false;
  bool sniffed_ = false;  // HTTP/2 or not is decided (listeners with http2 on)
};

// The Responder handed to the handler with each request. It keeps its
// connection alive only while the request is outstanding: once answered or
// abandoned by the client it is a few bytes that pin nothing.
class ConnectionResponder final : public Responder {
 public:
  explicit ConnectionResponder(std::shared_ptr<Connection> connection);
  ~ConnectionResponder() override;

  void Send(HttpResponse response) override;
  void SendShared(std::shared_ptr<const SharedAnswer> answer) override;
  bool closed() const override { return closed_; }
  void OnClose(std::function<void()> callback) override;
  void StartStream(int status, const HeaderFields& headers) override;
  void SendChunk(std::string_view bytes) override;
  void EndStream() override;
  std::size_t unsent_bytes() const override;
  void OnDrained(std::function<void()> callback) override;

 private:
  friend class Connection;
  void MarkClosed();
  void PostOnClose();
  // The stream's output fell to 0 unsent bytes: OnDrained's callback posted.
  void Drained();

  std::shared_ptr<Connection> connection_;  // null once sent (or ended) or closed
  boost::asio::io_context* io_;             // where OnClose callbacks run
  // Most requests register one callback (a parked query's cancel): held
  // here, without a block of its own; a second one is chained to it.
  std::function<void()> on_close_;
  // Only streams use it: a pointer, so other requests pay 8 bytes for it.
  std::unique_ptr<std::function<void()>> on_drained_;
  bool sent_ = false;
  bool closed_ = false;
  bool streaming_ = false;  // StartStream was called
};

}  // namespace tenure::listen
