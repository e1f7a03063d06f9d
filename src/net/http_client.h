// HttpClient: tenure's one HTTP/1.1 client. libtenure, the CLI (through
// BlockingHttpClient) and a follower's forwarder (src/http/forwarder) all
// speak HTTP through it, so TLS and tokens plug in here and nowhere else.
//
// It runs on a boost::asio::io_context that the CALLER runs on ONE thread.
// LOOP THREAD ONLY: every member function must be called on that thread (or
// while the loop is not running), and every callback runs on it. There are no
// locks inside.
//
// Each in-flight request has a connection of its own, so a renewal is never
// stuck behind a parked 5-minute blocking query. A finished connection goes
// back to a small keep-alive pool per address (at most max_idle_per_address
// are kept, the rest closed). A kept connection the server closed while idle
// is detected before use; if it fails anyway before any byte of a response
// arrived, the request is sent once more on a fresh connection (this resend
// does not count as a retry, happens even with RetryPolicy::None(), and in
// the rare case of a server that applied the request and then closed without
// answering, repeats it: see IDEMPOTENCY).
//
// Retries follow Consul's own client (docs/consul-api.md §7): only transport
// errors (refused, reset, EOF before a response, connect timeout) and HTTP
// 500 are retried, up to RetryPolicy::max_retries times with a capped
// exponential backoff, never past the request's deadline (when the next
// backoff would pass it, the last error or 500 is returned at once, not
// kTimeout). Each such failure also moves the client to the next address in
// the list (round-robin failover) for this and later requests: that is how it
// rides out a server restart or a dead server. Any other status (400, 404, 409, 429, 503...) is
// returned at once.
//
// TLS: an https:// address (or one without a scheme when tls.by_default,
// as $CONSUL_HTTP_SSL asks) is dialled over TLS 1.2 or newer. After the TCP
// connect comes a handshake, bounded like the connect by connect_timeout_ms,
// that sends the server's name (SNI) and checks its certificate against the
// CA file and that name (tls.files.server_name, else the host dialled; an IP
// literal against the certificate's IP addresses). A handshake the server or
// the check refused is not retried (it will not heal) and never falls back
// to clear text: the call fails with kUnavailable "cannot reach tenure at
// https://127.0.0.1:8501: TLS handshake failed: certificate verify failed
// (unable to get local issuer certificate)", and later calls start at the
// next address. A timeout or a reset during the handshake is a transport
// error like any other. With TLS, an idle kept connection that became
// readable was closed by the server (close_notify or EOF) and is not reused.
// CA, certificate or key files that cannot be loaded fail every request,
// naming the file.
//
// Results (the `done` callback):
//   - a response arrived: Result holds it, whatever its status (HTTP errors
//     are not Statuses here; a 500 that survived every retry is returned too);
//   - the deadline passed: Code::kTimeout;
//   - transport failure after the last retry: Code::kUnavailable;
//   - Cancel() or Shutdown(): Code::kUnavailable whose message contains
//     kCancelledMarker; test with IsCancelled().
//   IDEMPOTENCY: a failure whose request was fully written on some attempt
//   may have been applied by the server (it can apply and then die before
//   answering). Such Statuses carry kMaybeAppliedMarker; test with
//   MaybeApplied(). A retried request may also have been applied more than
//   once. The retries are safe for what libtenure sends (session create aside,
//   whose duplicates expire by TTL): acquire/release by the same session,
//   renew, reads and CAS writes are idempotent or fail harmlessly on repeat.
//   Callers with non-idempotent writes pass RetryPolicy::None().
//
// Callbacks run exactly once per Request, never inside Request() itself
// (except after Shutdown, below). Cancel() and Shutdown() run the affected
// callbacks synchronously, before they return; afterwards no callback of
// those requests runs, and no callback runs after the client is destroyed.
// REQUIRES: a callback does not destroy the client (post the destruction).
// Messages name the agent and the cause: "cannot reach tenure at
// 127.0.0.1:8500: connection refused", "tenure at 127.0.0.1:8500 did not
// answer GET /v1/kv/x within 5000 ms", "... (3 attempts)" after retries; an
// agent reached over TLS is named with its scheme ("https://h:8501").
// Beast stays inside http_client.cc.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"
#include "net/http_address.h"
#include "tls/context.h"

namespace boost::asio {
class io_context;
}

namespace tenure::net {

struct TlsOptions {
  tls::ClientFiles files;
  bool by_default = false;  // https for addresses without a scheme ($CONSUL_HTTP_SSL)
};

struct HttpClientOptions {
  std::vector<std::string> addresses;  // as ParseHttpAddress takes them
  std::string token;                   // sent as X-Consul-Token when not empty
  std::int64_t connect_timeout_ms = 5'000;
  std::int64_t default_timeout_ms = 30'000;
  std::size_t max_idle_per_address = 2;
  // Not OK when the caller could not resolve its settings (an unreadable
  // token file, a $CONSUL_HTTP_SSL that is not a boolean): every request
  // fails with it, as with a bad address, rather than going out without the
  // token or the TLS that was meant.
  Status settings_status;
  TlsOptions tls;
};

struct RetryPolicy {
  int max_retries = 4;  // attempts after the first; 0 = no retry
  std::int64_t backoff_initial_ms = 100;
  std::int64_t backoff_max_ms = 1'000;
  static RetryPolicy None() { return {0, 0, 0}; }
};

struct HttpCall {
  std::string method;  // "GET", "PUT", "DELETE"...
  std::string target;  // path plus query, already escaped (see EscapeKeyPath)
  std::string body;
  // Bounds the whole call, retries and backoff included; <= 0 = the client's
  // default. Blocking queries pass wait + wait/16 jitter + slack.
  std::int64_t timeout_ms = 0;
  RetryPolicy retry;
  // Extra request headers (name, value), sent as given.
  std::vector<std::pair<std::string, std::string>> headers;
};

struct ClientResponse {
  int status = 0;
  std::string body;
  std::map<std::string, std::string> headers;  // names lower-cased; repeated ones joined by ", "

  // The value of a header (any case), or "" when absent.
  std::string Header(std::string_view name) const;
};

using RequestId = std::uint64_t;
using HttpCallback = std::function<void(Result<ClientResponse>)>;

inline constexpr char kMaybeAppliedMarker[] = "request may have been applied";
inline constexpr char kCancelledMarker[] = "request cancelled";
bool MaybeApplied(const Status& status);
bool IsCancelled(const Status& status);

class HttpClient {
 public:
  // Bad addresses are reported by every Request (the constructor cannot fail).
  // REQUIRES: io outlives this client.
  HttpClient(boost::asio::io_context& io, HttpClientOptions options);
  ~HttpClient();  // Shutdown()

  // What every Request of a client with these options would fail with (a
  // bad address, settings_status, TLS files that cannot be loaded), for
  // commands that check before they start.
  static Status Check(const HttpClientOptions& options);
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // Starts the call; `done` runs once, later, on the loop thread. After
  // Shutdown, `done` runs at once (inside Request) with kUnavailable.
  RequestId Request(HttpCall call, HttpCallback done);

  // Ends an in-flight request: its callback runs now with IsCancelled().
  // Returns false (and does nothing) when the id is unknown or finished.
  bool Cancel(RequestId id);

  // Cancels every in-flight request (callbacks run now, once each, before
  // Shutdown returns) and closes every socket. Idempotent.
  void Shutdown();

  // Requests in flight; idle pooled connections (all addresses). For tests.
  std::size_t in_flight() const;
  std::size_t TEST_IdleConnections() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tenure::net
