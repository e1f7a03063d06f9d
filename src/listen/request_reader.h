// RequestReader: turns the bytes of one HTTP/1.1 request into an HttpRequest,
// or into the refusal Consul's agent would answer (400, 413, 431, 505).
// tenure's own parser (RFC 9112; docs/decisions/0022-own-http-request-parser.md),
// checked against Boost.Beast's by tests/fuzz/http_parser_diff_fuzz.cc.
// Connection feeds it what the socket gives and the fuzz targets feed it
// anything. No I/O, no clock; loop thread only (one reader per connection).
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>

#include "listen/request.h"

namespace tenure::listen {

// How large a body a request whose header is in may send when that is more
// than the usual limit (limits::kHttpBodyBytesMax), asked before any of the
// body is read: the handler's rule (Consul's PUT /v1/snapshot from a caller
// allowed to restore, up to limits::kSnapshotBytesMax; a request to the
// etcd gateway, limits::kEtcdGatewayBodyBytesMax). 0: the usual limit.
// Asked only of a request whose body may be larger than the usual limit (a
// Content-Length over it, or chunked).
using LargeBodyGate = std::function<std::size_t(const HttpRequest&)>;
// The answer to a body past its limit: `bytes` is its declared length, or
// what it had reached when it went past. Unset: Consul's 413.
using BodyTooLargeAnswer = std::function<HttpResponse(std::uint64_t bytes, std::size_t max)>;
// Consul's 413 for a body of `bytes` (0: not known yet) past `max`.
HttpResponse ConsulBodyTooLarge(std::uint64_t bytes, std::size_t max);

class RequestReader {
 public:
  enum class Outcome { kNeedMore, kComplete, kError };

  // What Take() hands over: the request, how to frame its answer, or the
  // refusal to answer instead (the connection then closes).
  struct Parsed {
    HttpRequest request;
    bool keep_alive = true;
    bool http10 = false;
    bool head_request = false;
    std::optional<HttpResponse> refusal;  // 400 for a bad target (Go's text)
  };

  RequestReader();
  ~RequestReader();
  RequestReader(const RequestReader&) = delete;
  RequestReader& operator=(const RequestReader&) = delete;

  // Ready for the next request (header and body limits from common/limits.h).
  void Begin();
  // The gate for a large body and the answer past a limit (both kept, not
  // copied; null or empty: no body past the usual limit, and Consul's 413).
  void set_body_rules(const LargeBodyGate* gate, const BodyTooLargeAnswer* too_large);
  // Parses what it can of `data`; *used is how much it consumed. kComplete:
  // call Take(). kError: call TakeError(), then Begin() before reuse.
  // REQUIRES: Begin() since the last Take/TakeError.
  Outcome Feed(const char* data, std::size_t size, std::size_t* used);
  bool header_done() const;
  // True once per request, when its header is in, its body is not, and it
  // asked for "Expect: 100-continue" over HTTP/1.1.
  bool TakeContinue();
  // The caller kept more unparsed bytes than a request may leave (a chunk
  // line or trailer that never ends): the refusal to answer.
  HttpResponse Overlong();
  HttpResponse TakeError();
  Parsed Take();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tenure::listen
