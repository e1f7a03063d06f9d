// HttpClient: a small synchronous HTTP/1.1 client for the `tenure` CLI and
// libtenure, speaking to one tenure (or Consul) agent.
//
// One request at a time: Request() blocks until the response is complete, the
// per-request timeout passes, or the transport fails. The connection is kept
// alive between requests; if the server closed the kept connection while it
// sat idle, the request is sent once more on a fresh one (only when no byte of
// a response arrived, so a request the server answered is never repeated).
// Transport failures are Status::Unavailable ("cannot reach tenure at
// 127.0.0.1:8500: connection refused"), timeouts Status::Timeout. HTTP error
// statuses are not errors here: the caller reads ClientResponse::status.
//
// NOT thread-safe: an HttpClient owns its socket and io_context, so use one
// per thread. Beast stays inside http_client.cc (compile time).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "common/status.h"

namespace tenure::client {

struct ClientResponse {
  int status = 0;
  std::string body;
  std::map<std::string, std::string> headers;  // names lower-cased; repeated ones joined by ", "

  // The value of a header (any case), or "" when absent.
  std::string Header(std::string_view name) const;
};

// Where an agent listens. Accepts "host:port", "host" (port 8500),
// "http://host:port[/]" and "[::1]:8500"; https:// and unix:// are refused.
struct HttpAddress {
  std::string host;
  std::string port;
  std::string ToString() const;  // "host:port", as used in messages and Host:
};
Result<HttpAddress> ParseHttpAddress(std::string_view address);

class HttpClient {
 public:
  static constexpr std::int64_t kDefaultTimeoutMs = 30'000;
  // Passed as Request's timeout_ms: use the client's default.
  static constexpr std::int64_t kUseDefault = -1;

  // A bad address is reported by every Request (the constructor cannot fail).
  HttpClient(std::string_view address, std::string token,
             std::int64_t timeout_ms = kDefaultTimeoutMs);
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // Sends `method target` (target = path plus query, already escaped) with
  // the body, X-Consul-Token when a token is set, and Content-Length for
  // writes. timeout_ms bounds the whole call (connect, send, receive):
  // blocking queries pass their wait plus jitter plus slack.
  Result<ClientResponse> Request(std::string_view method, std::string_view target,
                                 std::string_view body = "", std::int64_t timeout_ms = kUseDefault);

  // "127.0.0.1:8500" (or the address as given when it did not parse).
  const std::string& address() const { return display_address_; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::string display_address_;
  std::string token_;
  std::int64_t default_timeout_ms_;
};

// Percent-encodes a KV key for a URL path: unreserved characters
// (A-Z a-z 0-9 - . _ ~) and '/' stay, every other byte becomes %XX.
std::string EscapeKeyPath(std::string_view key);
// Percent-encodes a query value or a single path segment: only unreserved
// characters stay ('/' too is escaped).
std::string EscapeQueryValue(std::string_view value);

}  // namespace tenure::client
