// HttpServer: HTTP/1.1 and HTTP/2 listener and connections (own parser in
// request_reader.cc; HTTP/2 frames by nghttp2, http2_session.cc), on the
// single loop thread. Knows nothing of Consul: it parses requests into
// HttpRequest values, enforces the transport limits in common/limits.h
// (header and body size, request read timeout, idle timeout, connection
// count in all and per client address) with clear errors, and writes
// HttpResponses back in order.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "common/limits.h"
#include "common/status.h"
#include "listen/client_table.h"
#include "listen/request.h"
#include "listen/request_reader.h"
#include "listen/stream.h"
#include "tls/context.h"

namespace boost::asio {
class io_context;
}

namespace tenure::listen {

// True for a client address that the per-client limit must not hold back:
// a cluster member's, whose forwarded requests carry its own clients' work
// (`ip` as "10.0.0.2" or "::1"). Asked only of an address at its limit.
using ClientExemption = std::function<bool(const std::string& ip)>;

struct HttpServerOptions {
  std::string host = "127.0.0.1";
  std::uint16_t port = 8500;  // 0 picks a free port (tests)
  // Set: an HTTPS listener; every connection speaks TLS with this context.
  std::shared_ptr<const tls::Context> tls;
  // Who may send a body larger than the usual limit, and how large (the
  // handler's rule, request_reader.h; unset: nobody).
  LargeBodyGate large_body_gate;
  // The answer to a body past its limit (unset: Consul's 413).
  BodyTooLargeAnswer body_too_large;
  // Which parked requests are reads (unset: GET and HEAD).
  ParkedReadRule parked_read = nullptr;
  // Open connections from one client address (limits.h); 0: no limit.
  std::size_t connections_per_client_max = limits::kHttpConnectionsPerClientDefault;
  // Where they are counted: the same table for a server's HTTP and HTTPS
  // listeners (unset: a table of this listener's own).
  std::shared_ptr<ClientTable> clients;
  ClientExemption exempt_client;  // unset: nobody is exempt
  // HTTP/2 as well (decision 0053): a cleartext connection that opens with
  // the HTTP/2 client preface, or a TLS one whose ALPN chose h2 (offered
  // only then), speaks HTTP/2; its requests go to the same handler, except
  // gRPC streams (content-type application/grpc...), which go to
  // stream_router (unset: answered grpc-status 12, Unimplemented). False:
  // HTTP/1.1 only, the preface is a bad request as any other.
  bool http2 = false;
  StreamRouter stream_router;

  // Test-only: the limits.h values, shortened so tests of the timeouts and
  // the connection cap run at the speed of logic. Production leaves them.
  DurationMs TEST_request_read_timeout_ms = limits::kHttpRequestReadTimeoutMs;
  DurationMs TEST_idle_timeout_ms = limits::kHttpIdleTimeoutMs;
  DurationMs TEST_first_byte_timeout_ms = limits::kHttpFirstByteTimeoutMs;
  std::size_t TEST_connections_max = limits::kHttpConnectionsMax;
  std::size_t TEST_unsent_bytes_max = limits::kHttpUnsentBytesMax;
  DurationMs TEST_stalled_writer_ms = limits::kHttpStalledWriterMs;
  std::size_t TEST_descriptor_reserve = limits::kHttpDescriptorReserve;
  std::size_t TEST_http2_streams_max = limits::kHttp2StreamsMax;
  DurationMs TEST_http2_ping_after_ms = limits::kHttp2PingAfterMs;
  DurationMs TEST_http2_ping_timeout_ms = limits::kHttp2PingTimeoutMs;
};

// The connection cap for a descriptor limit of `nofile`:
// min(max, (nofile - reserve) / 2), at least 1 (limits.h explains the half).
// A reserve of 0 (tests only) gives max: accept can then run out of
// descriptors, which tests the spare-descriptor refusal.
std::size_t ConnectionCap(std::uint64_t nofile, std::size_t max, std::size_t reserve);

// Test-only: sets TEST_ fields from the environment of `tenure server`, so
// integration tests of the timeouts need not wait for production values:
// TENURE_TEST_HTTP_FIRST_BYTE_TIMEOUT_MS, TENURE_TEST_HTTP_STALLED_WRITER_MS
// (positive), TENURE_TEST_HTTP_UNSENT_BYTES_MAX, TENURE_TEST_HTTP_CONNECTIONS_MAX,
// TENURE_TEST_HTTP_DESCRIPTOR_RESERVE (zero or more). Unset variables change
// nothing; another value is an error naming the variable.
Status TEST_ApplyEnvironment(HttpServerOptions* options);

class HttpServer {
 public:
  HttpServer(boost::asio::io_context& io, RequestHandler handler);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  Status Listen(const HttpServerOptions& options);
  std::uint16_t port() const;  // the bound port (after Listen)
  // An HTTPS listener's new context (certificates reloaded): connections
  // accepted from now on use it; established ones keep theirs.
  void SetTlsContext(std::shared_ptr<const tls::Context> context);
  // Stops accepting and closes every connection; parked requests get no
  // answer. An HTTP/2 connection is sent GOAWAY first (if its socket takes it).
  void Stop();
  std::size_t connection_count() const;

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

}  // namespace tenure::listen
