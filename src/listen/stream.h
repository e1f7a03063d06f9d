// Stream: one HTTP/2 stream handed whole to its owner (a gRPC call), as the
// listener's StreamRouter receives it (HttpServerOptions::stream_router,
// decision 0053). The listener reads and writes the frames; the owner sees
// the request's head, its body bytes as they arrive, and answers with
// headers, data and trailers when it likes. No nghttp2 types: the etcd
// layer's gRPC code is written against this header alone.
//
// Loop thread only. Every method is safe on a closed stream (a no-op, and
// closed() is true), so an owner never needs to check first. OnClose's and
// OnDrained's callbacks are posted (never run inside a method of this
// class); OnData's runs as the listener reads the connection (and inside
// OnData for bytes that came first), so it must not block, and may call
// this stream's methods.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "listen/request.h"

namespace tenure::listen {

// HTTP/2 error codes an owner may reset a stream with (RFC 9113 7).
enum class StreamError : std::uint32_t {
  kNoError = 0x0,
  kProtocolError = 0x1,
  kInternalError = 0x2,
  kRefusedStream = 0x7,
  kCancel = 0x8,
  kEnhanceYourCalm = 0xb,
};

class Stream {
 public:
  virtual ~Stream() = default;

  // The request's head: method, target, path and query as HTTP/1.1's
  // (`:path` parsed the same way), headers with lower-cased names
  // (`:authority` as `host`; no other pseudo-header), no body.
  virtual const HttpRequest& request() const = 0;

  // Body bytes as they arrive, in order; `end` is true once, with the last
  // (possibly empty) piece, when the client ended its side. Bytes that came
  // before the callback was set are delivered when it is set. The bytes are
  // valid only during the call.
  virtual void OnData(std::function<void(std::string_view data, bool end)> callback) = 0;
  // Gives `bytes` of received body back to the client's flow-control
  // window: call it as messages are handled (or copied into a bounded
  // buffer of the owner's). Until then the client may send at most the
  // stream's window (limits::kHttp2StreamWindowBytes) unconsumed, so a
  // client faster than its owner is held by flow control, not by memory.
  virtual void Consume(std::size_t bytes) = 0;

  // The response head, `:status` first; at most once, before any data.
  virtual void SendHeaders(int status, const HeaderFields& headers) = 0;
  // Queues body bytes (headers with :status 200 are sent first if none
  // were). They count in unsent_bytes() until written to the socket.
  virtual void SendData(std::string_view bytes) = 0;
  // Ends the stream with `trailers` after the queued data; with no headers
  // sent yet, a trailers-only answer (:status 200 and the trailers in one
  // HEADERS frame, as gRPC's early errors). Nothing may be sent after it.
  virtual void SendTrailers(const HeaderFields& trailers) = 0;
  // Resets the stream (RST_STREAM): queued data is dropped, OnClose runs.
  virtual void Reset(StreamError code) = 0;

  // Bytes queued by SendData and not yet handed to the socket; they count
  // against the listener's unsent-output budget (limits::kHttpUnsentBytesMax).
  virtual std::size_t unsent_bytes() const = 0;
  // Called (posted) each time unsent_bytes() falls to 0, so a producer can
  // pace itself: queue while unsent_bytes() is small, wait for this after.
  virtual void OnDrained(std::function<void()> callback) = 0;

  // True once the stream is over: answered in full, reset by either side,
  // or its connection gone. OnClose's callback then runs (posted) once; set
  // on a closed stream it is posted at once.
  virtual bool closed() const = 0;
  virtual void OnClose(std::function<void()> callback) = 0;
};

// Where the listener hands each gRPC stream (a request whose content-type
// starts with application/grpc). The router owns the stream from then on.
using StreamRouter = std::function<void(std::shared_ptr<Stream> stream)>;

}  // namespace tenure::listen
