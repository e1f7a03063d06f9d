// BlockingHttpClient: HttpClient for code that waits for each answer (the
// CLI, tests). One request at a time on one agent address; it owns an
// io_context and runs it inside Request until the answer, the deadline or a
// transport failure. No retries (RetryPolicy::None): a CLI command reports
// the failure; the one resend of a kept connection the server had closed
// while idle still happens (http_client.h). Keep-alive between requests.
//
// Results as HttpClient's: HTTP statuses are not errors (read
// ClientResponse::status); kUnavailable ("cannot reach tenure at
// 127.0.0.1:8500: connection refused") and kTimeout otherwise; a bad address
// or an unresolved token is reported by every Request. Over TLS as
// HttpClient (https:// addresses, or options.tls.by_default).
//
// NOT thread-safe: use one per thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "common/status.h"
#include "net/http_client.h"

namespace tenure::net {

class BlockingHttpClient {
 public:
  static constexpr std::int64_t kDefaultTimeoutMs = 30'000;
  // Passed as Request's timeout_ms: use the client's default.
  static constexpr std::int64_t kUseDefault = -1;

  BlockingHttpClient(std::string_view address, std::string token,
                     std::int64_t timeout_ms = kDefaultTimeoutMs);
  // A token that could not be resolved (client/settings.h): every Request
  // fails with its Status, as with a bad address.
  BlockingHttpClient(std::string_view address, Result<std::string> token,
                     std::int64_t timeout_ms = kDefaultTimeoutMs);
  // Every option of HttpClient (TLS, settings_status...); the first address
  // is the agent's, and max_idle_per_address becomes 1.
  explicit BlockingHttpClient(HttpClientOptions options,
                              std::int64_t timeout_ms = kDefaultTimeoutMs);
  ~BlockingHttpClient();
  BlockingHttpClient(const BlockingHttpClient&) = delete;
  BlockingHttpClient& operator=(const BlockingHttpClient&) = delete;

  // Sends `method target` (target = path plus query, already escaped) with
  // the body and X-Consul-Token when a token is set. timeout_ms bounds the
  // whole call: blocking queries pass their wait plus jitter plus slack.
  Result<ClientResponse> Request(std::string_view method, std::string_view target,
                                 std::string_view body = "", std::int64_t timeout_ms = kUseDefault);

  // "127.0.0.1:8500", "https://h:8501" (or the address as given when it did
  // not parse).
  const std::string& address() const { return display_address_; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::string display_address_;
  std::int64_t default_timeout_ms_;
};

}  // namespace tenure::net
