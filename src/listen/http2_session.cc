// Http2Session over libnghttp2 (the one file that includes nghttp2.h), its
// streams (listen::Stream for gRPC; an assembled HttpRequest otherwise) and
// the Responder of an HTTP/2 request, streamed answers included. See
// http2_session.h and decision 0053.
// Why one file over 500 lines: nghttp2's callbacks, its data source and the
// two stream kinds share the C types that no other file may see.
#include "listen/http2_session.h"

#include <nghttp2/nghttp2.h>

#include <algorithm>
#include <boost/asio/post.hpp>
#include <cstring>
#include <exception>
#include <functional>
#include <utility>
#include <vector>

#include "common/limits.h"
#include "common/log_limiter.h"
#include "listen/connection.h"
#include "listen/connection_internal.h"
#include "listen/wire.h"

namespace tenure::listen {

using connection_detail::kOutputBudgetFull;
using connection_detail::Log;

namespace {

// Frames produced per refill of the connection's output.
constexpr std::size_t kOutputChunkBytes = 64 * 1024;
constexpr std::string_view kGrpcNotServed = "tenure: gRPC is not served on this port";

nghttp2_nv Field(std::string_view name, std::string_view value) {
  return {reinterpret_cast<std::uint8_t*>(const_cast<char*>(name.data())),
          reinterpret_cast<std::uint8_t*>(const_cast<char*>(value.data())), name.size(),
          value.size(), NGHTTP2_NV_FLAG_NONE};
}

char LowerNameChar(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

// Fields HTTP/2 forbids (RFC 9113 8.2.2), and values that could not be
// sent as they are: dropped, as HTTP/1.1's head drops CR and LF.
bool Sendable(std::string_view lower_name, std::string_view value) {
  if (lower_name.empty() || lower_name.front() == ':') return false;
  if (lower_name == "connection" || lower_name == "keep-alive" ||
      lower_name == "proxy-connection" || lower_name == "transfer-encoding" ||
      lower_name == "upgrade" || lower_name == "content-length" || lower_name == "date") {
    return false;
  }
  return value.find_first_of(std::string_view("\r\n\0", 3)) == std::string_view::npos;
}

// A header block: names lower-cased and kept alive beside the nghttp2_nv
// list that points into them (nghttp2 copies both when submitted).
class Block {
 public:
  void Add(std::string_view name, std::string_view value) {
    std::string lower(name);
    for (char& c : lower) c = LowerNameChar(c);
    if ((name.empty() || name.front() != ':') && !Sendable(lower, value)) return;
    fields_.emplace_back(std::move(lower), std::string(value));
  }
  void AddRaw(std::string name, std::string value) {
    fields_.emplace_back(std::move(name), std::move(value));
  }
  std::vector<nghttp2_nv> List() const {
    std::vector<nghttp2_nv> list;
    list.reserve(fields_.size());
    for (const auto& [name, value] : fields_) list.push_back(Field(name, value));
    return list;
  }

 private:
  std::vector<std::pair<std::string, std::string>> fields_;
};

// An OnClose or OnDrained callback that throws is logged; nothing else stops.
void RunCallback(const std::function<void()>& callback, std::string_view what) {
  try {
    callback();
  } catch (const std::exception& e) {
    Log("HTTP/2 {} callback threw: {}", what, e.what());
  } catch (...) {
    Log("HTTP/2 {} callback threw", what);
  }
}

// OnClose of both stream kinds: posted at once on a closed stream, else run
// after any callback set before it.
void AddOnClose(boost::asio::io_context& io, bool closed, std::function<void()>* on_close,
                std::function<void()> callback) {
  if (closed) {
    boost::asio::post(io, [callback = std::move(callback)] { RunCallback(callback, "OnClose"); });
    return;
  }
  if (!*on_close) {
    *on_close = std::move(callback);
    return;
  }
  *on_close = [first = std::move(*on_close), then = std::move(callback)] {
    RunCallback(first, "OnClose");
    RunCallback(then, "OnClose");
  };
}

}  // namespace

class Http2Responder;

// One client stream. The session holds it in streams_ while nghttp2 has
// it open; its owner (the router's code, or an Http2Responder) may hold it
// longer, and finds it closed.
class Http2Stream final : public Stream, public std::enable_shared_from_this<Http2Stream> {
 public:
  enum class Kind : std::uint8_t { kHead, kGrpc, kRequest, kRefused };

  Http2Stream(Http2Session* session, std::int32_t id)
      : session_(session),
        connection_(session->connection_->shared_from_this()),
        io_(&session->connection_->io()),
        id_(id) {}

  // --- Stream -----------------------------------------------------------------
  const HttpRequest& request() const override { return request_; }

  void OnData(std::function<void(std::string_view, bool)> callback) override {
    on_data_ = std::move(callback);
    if (!on_data_ || (early_.empty() && !early_end_)) return;
    std::string early = std::move(early_);
    early_.clear();
    const bool end = early_end_;
    early_end_ = false;
    // Outside a read: what the callback sends is written on a later turn
    // (Kick), so the connection is not read (and the callback re-entered)
    // meanwhile.
    Deliver(early, end);
  }

  void Consume(std::size_t bytes) override {
    if (closed_) return;
    bytes = std::min(bytes, unconsumed_);
    if (bytes == 0) return;
    unconsumed_ -= bytes;
    nghttp2_session_consume(session_->session_, id_, bytes);
    session_->Kick();  // a WINDOW_UPDATE to send
  }

  void SendHeaders(int status, const HeaderFields& headers) override {
    if (closed_ || headers_sent_) return;
    Block block;
    block.AddRaw(":status", std::to_string(status));
    for (const auto& [name, value] : headers) block.Add(name, value);
    SubmitWithData(block);
    session_->Kick();
  }

  void SendData(std::string_view bytes) override {
    if (closed_ || ending_) return;
    if (!headers_sent_) SendHeaders(200, {});
    if (bytes.empty()) return;
    if (out_at_ == out_.size()) {
      out_.clear();
      out_at_ = 0;
    }
    out_.append(bytes);
    session_->Queued(static_cast<std::ptrdiff_t>(bytes.size()));
    Resume();
    session_->Kick();
  }

  void SendTrailers(const HeaderFields& trailers) override {
    if (closed_ || ending_) return;
    ending_ = true;
    if (!headers_sent_) {  // trailers-only: one HEADERS frame that ends the stream
      headers_sent_ = true;
      Block block;
      block.AddRaw(":status", "200");
      for (const auto& [name, value] : trailers) block.Add(name, value);
      const std::vector<nghttp2_nv> list = block.List();
      nghttp2_submit_response(session_->session_, id_, list.data(), list.size(), nullptr);
    } else {
      trailers_ = trailers;
      has_trailers_ = true;
      Resume();
    }
    session_->Kick();
  }

  void Reset(StreamError code) override {
    if (closed_) return;
    nghttp2_submit_rst_stream(session_->session_, NGHTTP2_FLAG_NONE, id_,
                              static_cast<std::uint32_t>(code));
    session_->Kick();
  }

  std::size_t unsent_bytes() const override { return Body().size() - out_at_; }
  void OnDrained(std::function<void()> callback) override { on_drained_ = std::move(callback); }
  bool closed() const override { return closed_; }
  void OnClose(std::function<void()> callback) override {
    if (!callback) return;
    AddOnClose(*io_, closed_, &on_close_, std::move(callback));
  }

  // --- The session's side ---------------------------------------------------------
  // The request's head is in: which kind of stream, and where it goes.
  void HeadDone();
  // The client ended its side (END_STREAM).
  void RemoteEnded();
  void Received(const std::uint8_t* data, std::size_t size);
  // nghttp2 closed it (`from_session`), or the connection went.
  void Closed(bool from_session);
  // An HttpResponse (or a shared answer's) as HEADERS and DATA: the
  // Http2Responder's Send.
  void Answer(HttpResponse response, std::shared_ptr<const SharedAnswer> shared);
  // A streamed answer, the Http2Responder's: HEADERS without END_STREAM
  // (with it where no body may follow: the answer is then whole), DATA per
  // piece, END_STREAM at the end. A piece that does not fit the
  // unsent-output budget resets the stream and closes its responder.
  void StartAnswerStream(int status, const HeaderFields& headers);
  void AnswerChunk(std::string_view bytes);
  void EndAnswerStream();
  void ResponderGone(Http2Responder* responder) {
    if (responder_ == responder) responder_ = nullptr;
  }
  // Nothing more may be sent: the answer is whole, or its end is queued.
  bool ending() const { return ending_; }
  boost::asio::io_context& io() const { return *io_; }
  ssize_t Read(std::uint8_t* buffer, std::size_t length, std::uint32_t* flags);
  Http2Responder* responder_ = nullptr;

 private:
  std::string_view Body() const {
    return shared_body_ != nullptr ? std::string_view(shared_body_->response.body)
                                   : std::string_view(out_);
  }
  void SubmitWithData(const Block& block) {
    headers_sent_ = true;
    const std::vector<nghttp2_nv> list = block.List();
    nghttp2_data_provider provider{};
    provider.source.ptr = this;
    provider.read_callback = [](nghttp2_session*, std::int32_t, std::uint8_t* buffer,
                                std::size_t length, std::uint32_t* flags,
                                nghttp2_data_source* source, void*) -> ssize_t {
      return static_cast<Http2Stream*>(source->ptr)->Read(buffer, length, flags);
    };
    nghttp2_submit_response(session_->session_, id_, list.data(), list.size(), &provider);
  }
  void Resume() {
    if (!deferred_) return;
    deferred_ = false;
    nghttp2_session_resume_data(session_->session_, id_);
  }
  void Deliver(std::string_view data, bool end) {
    try {
      on_data_(data, end);
    } catch (const std::exception& e) {
      Log("HTTP/2 stream's OnData threw: {}", e.what());
      Reset(StreamError::kInternalError);
    }
  }
  // A refusal decided here (431, 413, 400): answered, the rest of the
  // request read and dropped.
  void Refuse(HttpResponse response) {
    kind_ = Kind::kRefused;
    Uncount();
    std::string().swap(request_.body);
    Answer(std::move(response), nullptr);
  }
  void Dispatch();
  // Its body leaves the connection's count of bodies being assembled.
  void Uncount() {
    session_->request_bodies_ -= counted_body_;
    counted_body_ = 0;
  }

  Http2Session* session_;                   // null once closed
  std::shared_ptr<Connection> connection_;  // held while open
  boost::asio::io_context* io_;
  std::int32_t id_;

 public:  // filled by the session's header callbacks
  HttpRequest request_;
  std::size_t header_bytes_ = 0;
  bool header_too_large_ = false;

 private:
  Kind kind_ = Kind::kHead;
  bool head_request_ = false;
  bool remote_ended_ = false;
  bool gate_asked_ = false;
  std::size_t body_max_ = limits::kHttpBodyBytesMax;
  std::size_t counted_body_ = 0;  // in Http2Session::request_bodies_
  // gRPC input not yet delivered (no OnData yet), and not yet given back.
  std::string early_;
  bool early_end_ = false;
  std::size_t unconsumed_ = 0;
  std::function<void(std::string_view, bool)> on_data_;
  // Output: queued data (out_ from out_at_, or a shared answer's body).
  std::string out_;
  std::shared_ptr<const SharedAnswer> shared_body_;
  std::size_t out_at_ = 0;
  HeaderFields trailers_;
  bool has_trailers_ = false;
  bool headers_sent_ = false;
  bool ending_ = false;    // no more data after what is queued
  bool deferred_ = false;  // nghttp2 waits for Resume
  bool closed_ = false;
  std::function<void()> on_drained_;
  std::function<void()> on_close_;
};

// The Responder of an HTTP/2 request: as ConnectionResponder, over a stream.
class Http2Responder final : public Responder {
 public:
  // Its io_context from the start: OnClose before any close binds it.
  explicit Http2Responder(std::shared_ptr<Http2Stream> stream)
      : stream_(std::move(stream)), io_(&stream_->io()) {}
  ~Http2Responder() override {
    if (stream_ == nullptr) return;
    const auto stream = std::move(stream_);
    if (stream->closed()) return;
    stream->ResponderGone(this);
    if (streaming_ && stream->ending()) return;  // whole (HEAD, 204, 304)
    if (streaming_) {                            // its body cannot be ended honestly
      static LogLimiter limiter(20, "http: ");
      if (limiter.Allow("streamed answers dropped before their end")) {
        Log("a streamed answer was dropped before its end; resetting its HTTP/2 stream");
      }
      stream->Reset(StreamError::kInternalError);
      return;
    }
    Log("a request was dropped without a response; answering 500");
    stream->Answer(HttpResponse::Text(500, "internal error: request dropped without a response"),
                   nullptr);
  }
  void Send(HttpResponse response) override {
    if (stream_ == nullptr || streaming_) return;
    sent_ = true;
    const auto stream = std::move(stream_);
    stream->ResponderGone(this);
    stream->Answer(std::move(response), nullptr);
  }
  void SendShared(std::shared_ptr<const SharedAnswer> answer) override {
    if (stream_ == nullptr || streaming_) return;
    sent_ = true;
    const auto stream = std::move(stream_);
    stream->ResponderGone(this);
    stream->Answer(HttpResponse(), std::move(answer));
  }
  bool closed() const override { return closed_; }
  void OnClose(std::function<void()> callback) override {
    if (!callback || sent_) return;
    AddOnClose(*io_, closed_, &on_close_, std::move(callback));
  }
  // A streamed answer: the stream keeps this responder until EndStream, so
  // a reset or a lost connection meanwhile closes it. Each call holds the
  // stream, which a close inside may let go.
  void StartStream(int status, const HeaderFields& headers) override {
    if (stream_ == nullptr || streaming_) return;
    streaming_ = true;
    const auto stream = stream_;
    stream->StartAnswerStream(status, headers);
  }
  void SendChunk(std::string_view bytes) override {
    if (stream_ == nullptr || !streaming_ || bytes.empty()) return;
    const auto stream = stream_;
    stream->AnswerChunk(bytes);
  }
  void EndStream() override {
    if (stream_ == nullptr || !streaming_) return;
    sent_ = true;
    on_close_ = nullptr;  // an ended stream is answered: nothing to drop any more
    const auto stream = std::move(stream_);
    stream->ResponderGone(this);
    stream->EndAnswerStream();
  }
  std::size_t unsent_bytes() const override {
    return stream_ != nullptr ? stream_->unsent_bytes() : 0;
  }
  void OnDrained(std::function<void()> callback) override {
    if (stream_ != nullptr) stream_->OnDrained(std::move(callback));
  }
  // The client reset the stream, or the connection went, before the answer.
  void MarkClosed(boost::asio::io_context* io) {
    closed_ = true;
    io_ = io;
    stream_.reset();
    if (!on_close_) return;
    boost::asio::post(*io, [callback = std::move(on_close_)] { RunCallback(callback, "OnClose"); });
    on_close_ = nullptr;
  }

 private:
  std::shared_ptr<Http2Stream> stream_;  // null once sent or closed
  boost::asio::io_context* io_;
  std::function<void()> on_close_;
  bool sent_ = false;
  bool closed_ = false;
  bool streaming_ = false;  // StartStream was called
};

void Http2Stream::HeadDone() {
  if (header_too_large_) {
    Refuse(HttpResponse::Text(431, "431 Request Header Fields Too Large"));
    return;
  }
  const std::string_view content_type = request_.Header("content-type").value_or("");
  if (content_type.substr(0, 16) == "application/grpc") {
    kind_ = Kind::kGrpc;
    if (const Status parsed = wire::ParseTarget(request_.target, &request_); !parsed.ok()) {
      request_.path = request_.target;
    }
    const StreamRouter& router = session_->shared_->stream_router;
    if (!router) {
      kind_ = Kind::kRefused;  // what it sends is read and dropped
      SendTrailers({{"content-type", "application/grpc"},
                    {"grpc-status", "12"},
                    {"grpc-message", std::string(kGrpcNotServed)}});
      return;
    }
    try {
      router(shared_from_this());
    } catch (const std::exception& e) {
      Log("HTTP/2 stream router threw: {}", e.what());
      Reset(StreamError::kInternalError);
    }
    return;
  }
  kind_ = Kind::kRequest;
  if (const Status parsed = wire::ParseTarget(request_.target, &request_); !parsed.ok()) {
    Refuse(HttpResponse::Text(400, std::string(parsed.message())));
  }
}

void Http2Stream::Received(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  if (kind_ == Kind::kGrpc) {
    unconsumed_ += size;  // given back by the owner's Consume
    if (on_data_) {
      Deliver(bytes, false);
    } else {
      early_.append(bytes);
    }
    return;
  }
  nghttp2_session_consume(session_->session_, id_, size);  // bounded below, or dropped
  if (kind_ != Kind::kRequest || remote_ended_) return;
  if (request_.body.size() + size > body_max_ && !gate_asked_) {
    gate_asked_ = true;
    const LargeBodyGate& gate = session_->shared_->large_body_gate;
    if (gate) body_max_ = std::max(body_max_, gate(request_));
  }
  if (request_.body.size() + size > body_max_) {
    const BodyTooLargeAnswer& answer = session_->shared_->body_too_large;
    Refuse(answer ? answer(0, body_max_) : ConsulBodyTooLarge(0, body_max_));
    return;
  }
  // Every body counts but a snapshot's restore (one request, from a caller
  // allowed to restore): an etcd gateway's large bodies share the budget.
  const bool counted = body_max_ != limits::kSnapshotBytesMax;
  if (counted && session_->request_bodies_ + size > limits::kHttp2RequestBodiesBytesMax) {
    Reset(StreamError::kRefusedStream);  // too many bodies at once on this connection
    kind_ = Kind::kRefused;
    Uncount();
    std::string().swap(request_.body);
    return;
  }
  if (counted) {
    counted_body_ += size;
    session_->request_bodies_ += size;
  }
  request_.body.append(bytes);
}

void Http2Stream::RemoteEnded() {
  if (remote_ended_) return;
  remote_ended_ = true;
  if (kind_ == Kind::kGrpc) {
    if (on_data_) {
      Deliver({}, true);
    } else {
      early_end_ = true;
    }
  } else if (kind_ == Kind::kRequest) {
    Dispatch();
  }
}

void Http2Stream::Dispatch() {
  Uncount();
  HttpRequest request = std::move(request_);
  request_ = HttpRequest();
  request.received_ms = session_->now_ms_;
  head_request_ = request.method == "HEAD";
  auto responder = std::make_shared<Http2Responder>(shared_from_this());
  responder_ = responder.get();
  try {
    session_->shared_->handler(std::move(request), responder);
  } catch (const std::exception& e) {
    Log("request handler threw: {}", e.what());
    responder->Send(HttpResponse::Text(500, std::string("internal error: ") + e.what()));
  } catch (...) {
    Log("request handler threw");
    responder->Send(HttpResponse::Text(500, "internal error"));
  }
}

void Http2Stream::Answer(HttpResponse response, std::shared_ptr<const SharedAnswer> shared) {
  if (closed_ || headers_sent_) return;
  responder_ = nullptr;
  const HttpResponse& view = shared != nullptr ? shared->response : response;
  const MonoMs now = wire::NowMonoMs();
  const bool no_body =
      head_request_ || view.status < 200 || view.status == 204 || view.status == 304;
  // Large answers for clients that do not read: the budget HTTP/1.1's share.
  if (!no_body && view.body.size() > limits::kHttpSmallResponseBytes &&
      !connection_->MakeRoomForOutput(view.body.size(), now)) {
    shared.reset();
    response = HttpResponse::Text(429, std::string(kOutputBudgetFull));
  }
  if (closed_) return;  // MakeRoomForOutput closes only others, but be sure
  const HttpResponse& answer = shared != nullptr ? shared->response : response;
  Block block;
  block.AddRaw(":status", std::to_string(answer.status));
  if (!answer.content_type.empty()) block.Add("content-type", answer.content_type);
  for (const auto& [name, value] : answer.headers) block.Add(name, value);
  std::string_view date = wire::DateHeader();  // "Date: ...\r\n"
  if (date.size() > 8) block.AddRaw("date", std::string(date.substr(6, date.size() - 8)));
  if (answer.status >= 200 && answer.status != 204 && answer.status != 304) {
    block.AddRaw("content-length", std::to_string(answer.body.size()));
  }
  ending_ = true;
  if (no_body || answer.body.empty()) {
    headers_sent_ = true;
    const std::vector<nghttp2_nv> list = block.List();
    nghttp2_submit_response(session_->session_, id_, list.data(), list.size(), nullptr);
  } else {
    if (shared != nullptr) {
      shared_body_ = std::move(shared);
    } else {
      out_ = std::move(response.body);
    }
    out_at_ = 0;
    session_->Queued(static_cast<std::ptrdiff_t>(Body().size()));
    SubmitWithData(block);
  }
  session_->Kick();
}

void Http2Stream::StartAnswerStream(int status, const HeaderFields& headers) {
  if (closed_ || headers_sent_) return;
  Block block;
  block.AddRaw(":status", std::to_string(status));
  for (const auto& [name, value] : headers) block.Add(name, value);
  const std::string_view date = wire::DateHeader();  // "Date: ...\r\n"
  if (date.size() > 8) block.AddRaw("date", std::string(date.substr(6, date.size() - 8)));
  if (head_request_ || status < 200 || status == 204 || status == 304) {
    // Whole now: its close (both sides ended) closes the responder too.
    headers_sent_ = true;
    ending_ = true;
    const std::vector<nghttp2_nv> list = block.List();
    nghttp2_submit_response(session_->session_, id_, list.data(), list.size(), nullptr);
  } else {
    SubmitWithData(block);
  }
  session_->Kick();
}

void Http2Stream::AnswerChunk(std::string_view bytes) {
  if (closed_ || ending_ || !headers_sent_ || bytes.empty()) return;
  if (!connection_->MakeRoomForOutput(bytes.size(), wire::NowMonoMs())) {
    static LogLimiter limiter(20, "http: ");
    if (limiter.Allow("streamed answers cut by the unsent-output budget")) {
      Log("HTTP/2: resetting a streamed answer with {} bytes unsent: the unsent-output budget "
          "is spent",
          unsent_bytes() + bytes.size());
    }
    const auto self = shared_from_this();  // its responder lets go of it
    session_->Queued(-static_cast<std::ptrdiff_t>(Body().size() - out_at_));
    out_.clear();
    out_at_ = 0;
    Reset(StreamError::kCancel);
    if (responder_ != nullptr) {  // the producer is told now, not once the RST is out
      Http2Responder* responder = responder_;
      responder_ = nullptr;
      responder->MarkClosed(io_);
    }
    return;
  }
  SendData(bytes);
}

void Http2Stream::EndAnswerStream() {
  if (closed_ || ending_ || !headers_sent_) return;
  ending_ = true;
  Resume();  // Read ends it (END_STREAM) once the queued data is out
  session_->Kick();
}

ssize_t Http2Stream::Read(std::uint8_t* buffer, std::size_t length, std::uint32_t* flags) {
  const std::string_view body = Body();
  const std::size_t n = std::min(length, body.size() - out_at_);
  if (n > 0) std::memcpy(buffer, body.data() + out_at_, n);
  out_at_ += n;
  session_->Queued(-static_cast<std::ptrdiff_t>(n));
  if (out_at_ < body.size()) return static_cast<ssize_t>(n);
  if (n > 0 && on_drained_) {
    boost::asio::post(*io_, [self = shared_from_this()] {
      if (self->on_drained_ && self->unsent_bytes() == 0)
        RunCallback(self->on_drained_, "OnDrained");
    });
  }
  if (!ending_) {
    if (n > 0) return static_cast<ssize_t>(n);
    deferred_ = true;
    return NGHTTP2_ERR_DEFERRED;
  }
  *flags |= NGHTTP2_DATA_FLAG_EOF;
  if (has_trailers_) {
    *flags |= NGHTTP2_DATA_FLAG_NO_END_STREAM;
    Block block;
    for (const auto& [name, value] : trailers_) block.Add(name, value);
    const std::vector<nghttp2_nv> list = block.List();
    nghttp2_submit_trailer(session_->session_, id_, list.data(), list.size());
  }
  return static_cast<ssize_t>(n);
}

void Http2Stream::Closed(bool from_session) {
  if (closed_) return;
  closed_ = true;
  if (from_session && unconsumed_ > 0) {
    // Its window is gone with it; the connection's comes back.
    nghttp2_session_consume_connection(session_->session_, unconsumed_);
  }
  unconsumed_ = 0;
  Uncount();
  session_->Queued(-static_cast<std::ptrdiff_t>(Body().size() - out_at_));
  out_.clear();
  shared_body_.reset();
  out_at_ = 0;
  session_ = nullptr;
  if (responder_ != nullptr) {
    Http2Responder* responder = responder_;
    responder_ = nullptr;
    responder->MarkClosed(io_);
  }
  if (on_close_) {
    boost::asio::post(*io_,
                      [callback = std::move(on_close_)] { RunCallback(callback, "OnClose"); });
    on_close_ = nullptr;
  }
  on_data_ = nullptr;
  connection_.reset();  // the connection's Run or Close holds it meanwhile
}

// --- nghttp2's callbacks --------------------------------------------------------

struct Http2Callbacks {
  static Http2Session& Self(void* user_data) { return *static_cast<Http2Session*>(user_data); }

  static int OnBeginHeaders(nghttp2_session*, const nghttp2_frame* frame, void* user_data) {
    if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST) return 0;
    Http2Session& self = Self(user_data);
    self.streams_[frame->hd.stream_id] = std::make_shared<Http2Stream>(&self, frame->hd.stream_id);
    return 0;
  }

  static int OnHeader(nghttp2_session*, const nghttp2_frame* frame, const std::uint8_t* name,
                      std::size_t name_size, const std::uint8_t* value, std::size_t value_size,
                      std::uint8_t, void* user_data) {
    Http2Stream* stream = Self(user_data).Find(frame->hd.stream_id);
    if (stream == nullptr || frame->hd.type != NGHTTP2_HEADERS ||
        frame->headers.cat != NGHTTP2_HCAT_REQUEST || stream->header_too_large_) {
      return 0;  // trailers (gRPC clients send none) are read and dropped
    }
    stream->header_bytes_ += name_size + value_size + 32;
    if (stream->header_bytes_ > limits::kHttp2HeaderListBytesMax) {
      stream->header_too_large_ = true;
      return 0;
    }
    const std::string_view key(reinterpret_cast<const char*>(name), name_size);
    const std::string_view text(reinterpret_cast<const char*>(value), value_size);
    HttpRequest& request = stream->request_;
    if (key == ":method") {
      request.method = text;
    } else if (key == ":path") {
      request.target = text;
    } else if (key == ":authority") {
      request.AddHeader("host", text);
    } else if (key.empty() || key.front() != ':') {
      request.AddHeader(key, text);
    }
    return 0;
  }

  static int OnFrameRecv(nghttp2_session*, const nghttp2_frame* frame, void* user_data) {
    Http2Session& self = Self(user_data);
    if (frame->hd.type == NGHTTP2_RST_STREAM) {
      self.CountReset(self.now_ms_);
      return 0;
    }
    if (frame->hd.type != NGHTTP2_HEADERS && frame->hd.type != NGHTTP2_DATA) return 0;
    // Found again after each step: a step may close the stream.
    if (frame->hd.type == NGHTTP2_HEADERS && frame->headers.cat == NGHTTP2_HCAT_REQUEST) {
      if (Http2Stream* stream = self.Find(frame->hd.stream_id)) stream->HeadDone();
    }
    if ((frame->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0) {
      if (Http2Stream* stream = self.Find(frame->hd.stream_id)) stream->RemoteEnded();
    }
    return 0;
  }

  static int OnDataChunk(nghttp2_session* session, std::uint8_t, std::int32_t stream_id,
                         const std::uint8_t* data, std::size_t size, void* user_data) {
    Http2Stream* stream = Self(user_data).Find(stream_id);
    if (stream == nullptr) {
      nghttp2_session_consume(session, stream_id, size);
      return 0;
    }
    stream->Received(data, size);
    return 0;
  }

  static int OnStreamClose(nghttp2_session*, std::int32_t stream_id, std::uint32_t,
                           void* user_data) {
    Http2Session& self = Self(user_data);
    const auto found = self.streams_.find(stream_id);
    if (found == self.streams_.end()) return 0;
    const std::shared_ptr<Http2Stream> stream = std::move(found->second);
    self.streams_.erase(found);
    stream->Closed(/*from_session=*/true);
    if (self.streams_.empty()) self.idle_since_ms = wire::NowMonoMs();
    return 0;
  }
};

// --- The session -------------------------------------------------------------------

Http2Session::Http2Session(Connection* connection, ServerShared* shared)
    : connection_(connection), shared_(shared) {
  const MonoMs now = wire::NowMonoMs();
  last_receive_ms = idle_since_ms = progress_ms = resets_since_ms_ = now_ms_ = now;
  nghttp2_session_callbacks* callbacks = nullptr;
  nghttp2_option* option = nullptr;
  if (nghttp2_session_callbacks_new(&callbacks) != 0 || nghttp2_option_new(&option) != 0) {
    throw std::bad_alloc();
  }
  nghttp2_session_callbacks_set_on_begin_headers_callback(callbacks,
                                                          &Http2Callbacks::OnBeginHeaders);
  nghttp2_session_callbacks_set_on_header_callback(callbacks, &Http2Callbacks::OnHeader);
  nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks, &Http2Callbacks::OnFrameRecv);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks,
                                                            &Http2Callbacks::OnDataChunk);
  nghttp2_session_callbacks_set_on_stream_close_callback(callbacks, &Http2Callbacks::OnStreamClose);
  // Windows come back only as the data is handled (Stream::Consume).
  nghttp2_option_set_no_auto_window_update(option, 1);
  // No closed streams kept for the priority tree, which nothing here uses:
  // nghttp2 would keep up to SETTINGS_MAX_CONCURRENT_STREAMS (1,024) of
  // them per connection, 18 MB over 64 busy gRPC connections (heaptrack).
  nghttp2_option_set_no_closed_streams(option, 1);
  // nghttp2's own rapid-reset bucket, well above ours (CountReset), so ours
  // decides and answers ENHANCE_YOUR_CALM.
  nghttp2_option_set_stream_reset_rate_limit(option, 4 * limits::kHttp2ResetsMax,
                                             4 * limits::kHttp2ResetsMax);
  const int created = nghttp2_session_server_new2(&session_, callbacks, this, option);
  nghttp2_session_callbacks_del(callbacks);
  nghttp2_option_del(option);
  if (created != 0) throw std::bad_alloc();
  const nghttp2_settings_entry settings[] = {
      {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS,
       static_cast<std::uint32_t>(shared->http2_streams_max)},
      {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE,
       static_cast<std::uint32_t>(limits::kHttp2HeaderListBytesMax)},
      {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE,
       static_cast<std::uint32_t>(limits::kHttp2StreamWindowBytes)},
  };
  nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, settings, std::size(settings));
  nghttp2_session_set_local_window_size(
      session_, NGHTTP2_FLAG_NONE, 0,
      static_cast<std::int32_t>(limits::kHttp2ConnectionWindowBytes));
}

Http2Session::~Http2Session() {
  CloseAll();
  nghttp2_session_del(session_);
}

bool Http2Session::Receive(const char* data, std::size_t size, MonoMs now_ms) {
  now_ms_ = now_ms;
  last_receive_ms = now_ms;
  ping_sent_ms = MonoMs::Max();  // any byte answers a PING: the client is there
  if (failed_) return false;
  const ssize_t used =
      nghttp2_session_mem_recv(session_, reinterpret_cast<const std::uint8_t*>(data), size);
  if (used < 0) {
    static LogLimiter limiter(20, "http: ");
    if (limiter.Allow("HTTP/2 sessions ended by an error")) {
      Log("HTTP/2: closing a connection: {}", nghttp2_strerror(static_cast<int>(used)));
    }
    failed_ = true;
    if (!nghttp2_is_fatal(static_cast<int>(used))) {
      nghttp2_session_terminate_session(session_, NGHTTP2_PROTOCOL_ERROR);
    }
    return false;
  }
  return true;
}

std::string_view Http2Session::Output() {
  if (out_at_ == out_.size()) {
    out_.clear();
    out_at_ = 0;
    while (out_.size() < kOutputChunkBytes) {
      const std::uint8_t* frames = nullptr;
      const ssize_t n = nghttp2_session_mem_send(session_, &frames);
      if (n < 0) {
        failed_ = true;
        break;
      }
      if (n == 0) break;
      out_.append(reinterpret_cast<const char*>(frames), static_cast<std::size_t>(n));
    }
    // Nothing to write: an idle connection keeps no output buffer.
    if (out_.empty()) std::string().swap(out_);
  }
  return std::string_view(out_).substr(out_at_);
}

void Http2Session::Wrote(std::size_t bytes) { out_at_ += bytes; }

bool Http2Session::finished() const {
  if (failed_) return true;
  return nghttp2_session_want_read(session_) == 0 && nghttp2_session_want_write(session_) == 0;
}

void Http2Session::Ping(MonoMs now_ms) {
  nghttp2_submit_ping(session_, NGHTTP2_FLAG_NONE, nullptr);
  ping_sent_ms = now_ms;
}

void Http2Session::GoAway(bool graceful) {
  nghttp2_session_terminate_session(session_, graceful ? NGHTTP2_NO_ERROR : NGHTTP2_INTERNAL_ERROR);
}

void Http2Session::CloseAll() {
  std::map<std::int32_t, std::shared_ptr<Http2Stream>> streams;
  streams.swap(streams_);
  for (auto& [id, stream] : streams) stream->Closed(/*from_session=*/false);
}

void Http2Session::Kick() {
  // Always on a later turn, never inside the caller: a run reads the socket
  // too, so a caller sending from outside the connection's own turn (the
  // watch hub applying a batch to many watchers, an election's observer)
  // would have the client's next messages handled under it, and one of
  // them may free what it iterates (a watcher canceled mid-batch: a
  // use-after-free ASan caught). One posted run however many sends a turn
  // makes, which also writes them in one go.
  // The unsent-output budget counts what was queued at once, so a burst of
  // sends in one turn meets it (MakeRoomForOutput) before the run.
  if (connection_->h2_.get() == this) connection_->Http2Account();  // not while torn down
  if (kick_posted_) return;
  kick_posted_ = true;
  boost::asio::post(connection_->io(),
                    [connection = connection_->shared_from_this()] { connection->Http2Kick(); });
}

void Http2Session::CountReset(MonoMs now_ms) {
  if (now_ms - resets_since_ms_ >= limits::kHttp2ResetWindowMs) {
    resets_since_ms_ = now_ms;
    resets_ = 0;
  }
  if (++resets_ != limits::kHttp2ResetsMax + 1) return;
  static LogLimiter limiter(20, "http: ");
  if (limiter.Allow("HTTP/2 connections closed for rapid resets")) {
    Log("HTTP/2: closing a connection that reset more than {} streams in {} ms (GOAWAY "
        "ENHANCE_YOUR_CALM)",
        limits::kHttp2ResetsMax, limits::kHttp2ResetWindowMs);
  }
  nghttp2_session_terminate_session(session_, NGHTTP2_ENHANCE_YOUR_CALM);
}

Http2Stream* Http2Session::Find(std::int32_t id) const {
  const auto found = streams_.find(id);
  return found == streams_.end() ? nullptr : found->second.get();
}

}  // namespace tenure::listen
