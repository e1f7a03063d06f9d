// HTTP/1.1 wire details shared by the request reader and the connections:
// splitting a request target into path and query, writing a response head,
// and the monotonic time connections measure deadlines in. Used by
// request_reader.cc, connection.cc and server.cc, and by the tests that build
// requests and heads the same way (tests/unit/listen, the in-process tier).
// Pure functions, except that the Date line is cached per thread (the loop
// thread) and NowMonoMs reads the clock.
#pragma once

#include <string>
#include <string_view>

#include "common/status.h"
#include "common/types.h"
#include "listen/request.h"

namespace tenure::listen::wire {

// Fills request->path (percent-decoded, '+' kept), raw_query and query from
// `target` (origin-form "/a%20b?x=1", absolute-form "http://h/a", or "*").
// Errors are Go's: `invalid URL escape "%zz"`.
Status ParseTarget(std::string_view target, HttpRequest* request);

// "OK", "Not Found", ...; "" for codes without a standard phrase.
std::string_view ReasonPhrase(int status);

struct HeadOptions {
  bool keep_alive = true;     // false: "Connection: close"
  bool http10 = false;        // an HTTP/1.0 client needs "Connection: keep-alive" to keep it
  bool head_request = false;  // HEAD: Content-Length of the body, but no body
  // A streamed answer (Responder::StartStream): Transfer-Encoding: chunked
  // instead of Content-Length, none for HTTP/1.0 (whose connection closes
  // at the end: keep_alive false); framing fields of the response's own
  // headers are dropped.
  bool streamed = false;
};

// Appends the status line and headers (Content-Type if non-empty, the
// response's own headers, Date, Content-Length or Transfer-Encoding,
// Connection) and the blank
// line to *out. Returns whether the body must follow on the wire (not for
// HEAD, 1xx, 204, 304). Header fields containing CR or LF are dropped, so a
// handler echoing client data cannot split the response.
bool AppendResponseHead(const HttpResponse& response, const HeadOptions& options, std::string* out);

// The response head's "Date: ...\r\n" line, formatted once per second
// (per thread): a head rendered with the same line may be reused.
std::string_view DateHeader();

// RealClock::NowMonoMs (steady clock): HttpRequest::received_ms and deadlines.
MonoMs NowMonoMs();

}  // namespace tenure::listen::wire
