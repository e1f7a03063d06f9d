#include "net/blocking_http_client.h"

#include <boost/asio/io_context.hpp>
#include <optional>
#include <utility>

#include "net/http_address.h"

namespace tenure::net {

struct BlockingHttpClient::Impl {
  explicit Impl(HttpClientOptions options) : client(io, std::move(options)) {}

  boost::asio::io_context io{1};
  HttpClient client;  // after io: destroyed first
};

namespace {

HttpClientOptions WithToken(std::string_view address, Result<std::string> token) {
  HttpClientOptions options;
  options.addresses = {std::string(address)};
  if (token.ok()) {
    options.token = std::move(token).value();
  } else {
    options.settings_status = token.status();
  }
  return options;
}

}  // namespace

BlockingHttpClient::BlockingHttpClient(std::string_view address, std::string token,
                                       std::int64_t timeout_ms)
    : BlockingHttpClient(address, Result<std::string>(std::move(token)), timeout_ms) {}

BlockingHttpClient::BlockingHttpClient(std::string_view address, Result<std::string> token,
                                       std::int64_t timeout_ms)
    : BlockingHttpClient(WithToken(address, std::move(token)), timeout_ms) {}

BlockingHttpClient::BlockingHttpClient(HttpClientOptions options, std::int64_t timeout_ms)
    : default_timeout_ms_(timeout_ms > 0 ? timeout_ms : kDefaultTimeoutMs) {
  if (options.addresses.size() > 1) options.addresses.resize(1);
  display_address_ = options.addresses.empty() ? std::string() : options.addresses.front();
  if (Result<HttpAddress> parsed = ParseHttpAddress(display_address_, options.tls.by_default);
      parsed.ok()) {
    display_address_ = parsed->Describe();
  }
  options.max_idle_per_address = 1;
  impl_ = std::make_unique<Impl>(std::move(options));
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
