#include "net/blocking_http_client.h"

#include <boost/asio/io_context.hpp>
#include <optional>
#include <utility>

#include "net/http_address.h"

namespace tenure::net {

struct BlockingHttpClient::Impl {
  Impl(std::string address, Result<std::string> token)
      : client(io, Options(std::move(address), std::move(token))) {}

  static HttpClientOptions Options(std::string address, Result<std::string> token) {
    HttpClientOptions options;
    options.addresses = {std::move(address)};
    if (token.ok()) {
      options.token = std::move(token).value();
    } else {
      options.token_status = token.status();
    }
    options.max_idle_per_address = 1;
    return options;
  }

  boost::asio::io_context io{1};
  HttpClient client;  // after io: destroyed first
};

BlockingHttpClient::BlockingHttpClient(std::string_view address, std::string token,
                                       std::int64_t timeout_ms)
    : BlockingHttpClient(address, Result<std::string>(std::move(token)), timeout_ms) {}

BlockingHttpClient::BlockingHttpClient(std::string_view address, Result<std::string> token,
                                       std::int64_t timeout_ms)
    : impl_(std::make_unique<Impl>(std::string(address), std::move(token))),
      display_address_(address),
      default_timeout_ms_(timeout_ms > 0 ? timeout_ms : kDefaultTimeoutMs) {
  if (Result<HttpAddress> parsed = ParseHttpAddress(address); parsed.ok()) {
    display_address_ = parsed->ToString();
  }
}

BlockingHttpClient::~BlockingHttpClient() = default;

Result<ClientResponse> BlockingHttpClient::Request(std::string_view method, std::string_view target,
                                                   std::string_view body, std::int64_t timeout_ms) {
  HttpCall call;
  call.method = std::string(method);
  call.target = std::string(target);
  call.body = std::string(body);
  call.timeout_ms = timeout_ms > 0 ? timeout_ms : default_timeout_ms_;
  call.retry = RetryPolicy::None();
  std::optional<Result<ClientResponse>> outcome;
  impl_->client.Request(std::move(call), [&outcome](Result<ClientResponse> result) {
    outcome.emplace(std::move(result));
  });
  // The call's deadline timer guarantees an end; handlers of finished calls
  // (cancelled timers) are drained so none waits for the next request.
  impl_->io.restart();
  while (!outcome && impl_->io.run_one() > 0) {
  }
  impl_->io.poll();
  if (!outcome) return Status::Internal("http client: the request ended without an answer");
  return std::move(*outcome);
}

}  // namespace tenure::net
