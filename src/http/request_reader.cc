// Boost.Beast is included here and in no other file of the project: only its
// request parser is used (the response head is written by wire.cc).
#include "http/request_reader.h"

#include <fmt/format.h>

#include <algorithm>
#include <boost/beast/http/basic_parser.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/optional.hpp>
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

// Beast's request_parser stores every field in its own container before we
// copy it into HttpRequest; this parser writes each straight into the
// HttpRequest instead (one allocation less per header, none for the
// container), and keeps the two fields it must answer about.
class DirectParser final : public beast_http::basic_parser<true> {
 public:
  // Room for what clients send (curl 3 headers, Go's client 4, a client
  // with a token 5-6) without growing the vector mid-parse.
  DirectParser() { request.headers.reserve(12); }

  HttpRequest request;
  int version = 11;
  beast_http::verb verb = beast_http::verb::unknown;
  std::string declared_length;  // Content-Length as sent, for the 413 text
  bool expects_continue = false;
  std::size_t body_bytes_max = limits::kHttpBodyBytesMax;  // what the 413 names

 private:
  using error_code = boost::system::error_code;
  using string_view = boost::beast::string_view;

  void on_request_impl(beast_http::verb method, string_view method_str, string_view target,
                       int http_version, error_code&) override {
    verb = method;
    request.method.assign(method_str.data(), method_str.size());
    request.target.assign(target.data(), target.size());
    version = http_version;
    // PUT /v1/snapshot carries a whole snapshot file (docs/snapshots.md).
    const std::string_view path(target.data(), std::min(target.find('?'), target.size()));
    if (method == beast_http::verb::put && path == "/v1/snapshot") {
      body_limit(std::uint64_t{limits::kSnapshotBytesMax});
      body_bytes_max = limits::kSnapshotBytesMax;
    }
  }
  void on_response_impl(int, string_view, int, error_code& ec) override {
    ec = beast_http::error::bad_method;  // unreachable for a request parser
  }
  void on_field_impl(beast_http::field name, string_view name_string, string_view value,
                     error_code& ec) override {
    if (is_header_done()) {
      // A chunked body's trailer: Beast bounds the header by header_limit,
      // not the trailer, so it gets the same bound here.
      trailer_bytes_ += name_string.size() + value.size();
      if (trailer_bytes_ > limits::kHttpHeaderBytesMax) {
        ec = beast_http::error::header_limit;
        return;
      }
    }
    if (name == beast_http::field::content_length) {
      declared_length.assign(value.data(), value.size());
    } else if (name == beast_http::field::expect) {
      expects_continue = EqualsIgnoreCase({value.data(), value.size()}, "100-continue");
    }
    request.AddHeader({name_string.data(), name_string.size()},
                      std::string(value.data(), value.size()));
  }
  void on_header_impl(error_code&) override {}
  void on_body_init_impl(const boost::optional<std::uint64_t>& content_length,
                         error_code&) override {
    // Within body_limit, which the base class checked before calling.
    if (content_length) request.body.reserve(static_cast<std::size_t>(*content_length));
  }
  std::size_t on_body_impl(string_view body, error_code&) override {
    request.body.append(body.data(), body.size());
    return body.size();
  }
  void on_chunk_header_impl(std::uint64_t, string_view, error_code&) override {}
  std::size_t on_chunk_body_impl(std::uint64_t, string_view body, error_code&) override {
    request.body.append(body.data(), body.size());
    return body.size();
  }
  void on_finish_impl(error_code&) override {}

  std::size_t trailer_bytes_ = 0;
};

struct RequestReader::Impl {
  std::optional<DirectParser> parser;
  bool continue_taken = false;
  HttpResponse error;

  // The refusal for one of Beast's parse errors.
  HttpResponse ErrorFor(beast_http::error error_code) const {
    if (error_code == beast_http::error::body_limit) {
      // Consul's kv_max_value_size text. A declared length is refused before
      // any of the body is read; a chunked body when it crosses the limit.
      const std::string& declared = parser->declared_length;
      std::uint64_t length = 0;
      const auto [end, ec] =
          std::from_chars(declared.data(), declared.data() + declared.size(), length);
      if (!declared.empty() && ec == std::errc() && end == declared.data() + declared.size()) {
        return HttpResponse::Text(
            413, fmt::format("Request body({} bytes) too large, max size: {} bytes. {}", length,
                             parser->body_bytes_max, kBodyLimitDoc));
      }
      return HttpResponse::Text(413, fmt::format("Request body too large, max size: {} bytes. {}",
                                                 parser->body_bytes_max, kBodyLimitDoc));
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
  return parser.version >= 11 && parser.expects_continue;
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
  DirectParser& parser = *impl_->parser;
  Parsed parsed;
  if (parser.version < 10 || parser.version >= 20) {
    parsed.keep_alive = false;
    parsed.refusal = HttpResponse::Text(505, "505 HTTP Version Not Supported");
    impl_->parser.reset();
    return parsed;
  }
  parsed.keep_alive = parser.keep_alive();
  parsed.http10 = parser.version == 10;
  parsed.head_request = parser.verb == beast_http::verb::head;
  parsed.request = std::move(parser.request);
  impl_->parser.reset();
  HttpRequest& request = parsed.request;
  if (Status status = wire::ParseTarget(request.target, &request); !status.ok()) {
    parsed.keep_alive = false;
    parsed.refusal = HttpResponse::Text(400, std::string(status.message()));
  }
  return parsed;
}

}  // namespace tenure::http
