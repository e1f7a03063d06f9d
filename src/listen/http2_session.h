// Http2Session: the HTTP/2 side of one Connection (decision 0053), over
// libnghttp2, which parses and writes frames and does HPACK, SETTINGS, PING
// acknowledgements, flow-control bookkeeping and GOAWAY, and no I/O: the
// connection feeds it what it read (after TLS) and writes what it produces
// through its own write path. Only http2_session.cc includes nghttp2.h.
//
// Each client stream is one of two kinds, decided by its request head:
//   a gRPC stream (content-type application/grpc...): a listen::Stream
//     handed to ServerShared::stream_router, which reads and answers it;
//   any other request: headers and body assembled into an HttpRequest (body
//     limited as HTTP/1.1's) and handed to ServerShared::handler with a
//     Responder that answers it as HEADERS and DATA.
// Loop thread only; owned by its Connection, which outlives every call.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "common/types.h"

struct nghttp2_session;  // nghttp2's, seen only by http2_session.cc

namespace tenure::listen {

class Connection;
class Http2Stream;
struct ServerShared;

class Http2Session {
 public:
  Http2Session(Connection* connection, ServerShared* shared);
  ~Http2Session();
  Http2Session(const Http2Session&) = delete;
  Http2Session& operator=(const Http2Session&) = delete;

  // Feeds bytes the client sent (the preface first). False: the session
  // ended (a protocol error, a flood): its GOAWAY is queued when there is one
  // to send; write the output, then close.
  bool Receive(const char* data, std::size_t size, MonoMs now_ms);
  // The frames to write next ("" when there are none), and how many of them
  // the socket took.
  std::string_view Output();
  void Wrote(std::size_t bytes);
  // Neither side may send more (GOAWAY exchanged, or a fatal error): close
  // once Output() is empty.
  bool finished() const;
  std::size_t open_streams() const { return streams_.size(); }
  // Stream data queued and frames produced, not yet taken by the socket:
  // the connection's share of the unsent-output budget.
  std::size_t queued_bytes() const { return queued_ + (out_.size() - out_at_); }

  // A PING to a silent client (its answer is any byte it sends).
  void Ping(MonoMs now_ms);
  // GOAWAY: `graceful` (NO_ERROR, the server stops) or after an error.
  void GoAway(bool graceful);
  // The connection closed: every stream is closed, its owner told.
  void CloseAll();
  // The run a send posted (Kick) began: a later send posts another.
  void Kicked() { kick_posted_ = false; }

  // Bookkeeping of the connection's timers (connection_http2.cc).
  MonoMs last_receive_ms;               // when the client last sent a byte
  MonoMs idle_since_ms;                 // when it last had no stream open
  MonoMs ping_sent_ms = MonoMs::Max();  // an unanswered PING's, else Max()
  MonoMs progress_ms;                   // when the socket last took output
  std::size_t accounted = 0;            // its share of ServerShared::unsent_bytes

 private:
  friend class Http2Stream;
  friend struct Http2Callbacks;

  // Output was queued from outside Run (a stream's or a responder's send).
  void Kick();
  // A stream's queued data changed by `delta` bytes.
  void Queued(std::ptrdiff_t delta) {
    queued_ = static_cast<std::size_t>(static_cast<std::ptrdiff_t>(queued_) + delta);
  }
  // The client reset a stream: past the limit, GOAWAY ENHANCE_YOUR_CALM.
  void CountReset(MonoMs now_ms);
  Http2Stream* Find(std::int32_t id) const;

  Connection* connection_;
  ServerShared* shared_;
  ::nghttp2_session* session_ = nullptr;
  std::map<std::int32_t, std::shared_ptr<Http2Stream>> streams_;
  std::string out_;  // frames produced, written from out_at_
  std::size_t out_at_ = 0;
  std::size_t queued_ = 0;  // stream data queued, not yet framed
  // Request bodies being assembled (limits::kHttp2RequestBodiesBytesMax).
  std::size_t request_bodies_ = 0;
  bool kick_posted_ = false;  // a run of the connection is posted (Kick)
  MonoMs resets_since_ms_;
  std::size_t resets_ = 0;
  MonoMs now_ms_;  // of the Receive in progress
  bool failed_ = false;
};

}  // namespace tenure::listen
