// Boost.Beast is included here and in no other file of the project: only its
// request parser is used (the response head is written by wire.cc).
#include "http/request_reader.h"

#include <fmt/format.h>

#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <charconv>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>

#include "common/limits.h"
#include "common/strings.h"
#include "http/wire.h"

namespace tenure::http {
namespace {

namespace asio = boost::asio;
namespace beast_http = boost::beast::http;

constexpr std::string_view kBodyLimitDoc =
    "See https://developer.hashicorp.com/consul/docs/agent/config/config-files#kv_max_value_size.";

HttpResponse BadRequest(std::string_view why) {
  return HttpResponse::Text(400, "400 Bad Request: " + std::string(why));
}

}  // namespace

struct RequestReader::Impl {
  std::optional<beast_http::request_parser<beast_http::string_body>> parser;
  bool continue_taken = false;
  HttpResponse error;

  // The refusal for one of Beast's parse errors.
  HttpResponse ErrorFor(beast_http::error error_code) const {
    if (error_code == beast_http::error::body_limit) {
      // Consul's kv_max_value_size text. A declared length is refused before
      // any of the body is read; a chunked body when it crosses the limit.
      const auto& message = parser->get();
      const auto declared = message[beast_http::field::content_length];
      std::uint64_t length = 0;
      const auto [end, ec] =
          std::from_chars(declared.data(), declared.data() + declared.size(), length);
      if (!declared.empty() && ec == std::errc() && end == declared.data() + declared.size()) {
        return HttpResponse::Text(
            413, fmt::format("Request body({} bytes) too large, max size: {} bytes. {}", length,
                             limits::kHttpBodyBytesMax, kBodyLimitDoc));
      }
      return HttpResponse::Text(413, fmt::format("Request body too large, max size: {} bytes. {}",
                                                 limits::kHttpBodyBytesMax, kBodyLimitDoc));
    }
    if (error_code == beast_http::error::header_limit) {
      return HttpResponse::Text(431, "431 Request Header Fields Too Large");
    }
    return BadRequest(beast_http::make_error_code(error_code).message());
  }
};

RequestReader::RequestReader() : impl_(std::make_unique<Impl>()) {}
RequestReader::~RequestReader() = default;

void RequestReader::Begin() {
  auto& parser = impl_->parser.emplace();
  parser.header_limit(static_cast<std::uint32_t>(limits::kHttpHeaderBytesMax));
  parser.body_limit(std::uint64_t{limits::kHttpBodyBytesMax});
  parser.eager(true);
  impl_->continue_taken = false;
}

RequestReader::Outcome RequestReader::Feed(const char* data, std::size_t size, std::size_t* used) {
  auto& parser = *impl_->parser;
  *used = 0;
  while (*used < size) {
    boost::system::error_code ec;
    std::size_t n = 0;
    try {
      n = parser.put(asio::const_buffer(data + *used, size - *used), ec);
    } catch (const std::length_error&) {
      // Beast bounds the header by header_limit but not a chunked body's
      // trailer: a trailer field over its 64 KiB field size throws. Answer
      // it as the oversized header it is, rather than drop the connection.
      impl_->error = impl_->ErrorFor(beast_http::error::header_limit);
      return Outcome::kError;
    } catch (const std::exception& e) {
      impl_->error = BadRequest(e.what());
      return Outcome::kError;
    }
    *used += n;
    if (ec == beast_http::error::need_more) break;
    if (ec) {
      impl_->error = impl_->ErrorFor(static_cast<beast_http::error>(ec.value()));
      return Outcome::kError;
    }
    if (parser.is_done()) return Outcome::kComplete;
    if (n == 0) break;
  }
  return Outcome::kNeedMore;
}

bool RequestReader::header_done() const {
  return impl_->parser.has_value() && impl_->parser->is_header_done();
}

bool RequestReader::TakeContinue() {
  auto& parser = *impl_->parser;
  if (impl_->continue_taken || !parser.is_header_done() || parser.is_done()) return false;
  impl_->continue_taken = true;
  const auto& message = parser.get();
  if (message.version() < 11) return false;
  const auto expect = message[beast_http::field::expect];
  return EqualsIgnoreCase({expect.data(), expect.size()}, "100-continue");
}

HttpResponse RequestReader::Overlong() {
  // Beast bounds the header, not a chunk-size line or trailer that never ends.
  return impl_->ErrorFor(header_done() ? beast_http::error::bad_chunk
                                       : beast_http::error::header_limit);
}

HttpResponse RequestReader::TakeError() {
  impl_->parser.reset();
  return std::exchange(impl_->error, HttpResponse{});
}

RequestReader::Parsed RequestReader::Take() {
  auto& message = impl_->parser->get();
  Parsed parsed;
  if (message.version() < 10 || message.version() >= 20) {
    parsed.keep_alive = false;
    parsed.refusal = HttpResponse::Text(505, "505 HTTP Version Not Supported");
    impl_->parser.reset();
    return parsed;
  }
  HttpRequest& request = parsed.request;
  const auto method = message.method_string();
  request.method.assign(method.data(), method.size());
  const auto target = message.target();
  request.target.assign(target.data(), target.size());
  parsed.keep_alive = message.keep_alive();
  parsed.http10 = message.version() == 10;
  parsed.head_request = message.method() == beast_http::verb::head;
  if (Status status = wire::ParseTarget(request.target, &request); !status.ok()) {
    parsed.keep_alive = false;
    parsed.refusal = HttpResponse::Text(400, std::string(status.message()));
    impl_->parser.reset();
    return parsed;
  }
  std::size_t field_count = 0;
  for (auto it = message.begin(); it != message.end(); ++it) ++field_count;
  request.headers.reserve(field_count);
  for (const auto& field : message) {
    const auto name = field.name_string();
    const auto value = field.value();
    request.headers.emplace_back(AsciiLower({name.data(), name.size()}),
                                 std::string(value.data(), value.size()));
  }
  request.body = std::move(message.body());
  impl_->parser.reset();
  return parsed;
}

}  // namespace tenure::http
