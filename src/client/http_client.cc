#include "client/http_client.h"

#include <sys/socket.h>

#include <cerrno>
#include <chrono>
#include <optional>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>

#include "common/strings.h"

namespace tenure::client {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using tcp = asio::ip::tcp;
using SteadyClock = std::chrono::steady_clock;
using Deadline = SteadyClock::time_point;

// Larger than any body tenure sends (a recurse listing of many 512 KiB
// values can be big) but bounded so a broken peer cannot exhaust memory.
constexpr std::uint64_t kResponseBodyBytesMax = 256ull * 1024 * 1024;
constexpr std::uint32_t kResponseHeaderBytesMax = 64 * 1024;

std::string_view ToStd(beast::string_view text) { return {text.data(), text.size()}; }

char ToLower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

std::string Lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = ToLower(c);
  return out;
}

// asio's messages come from strerror ("Connection refused"); ours are
// lower-case sentences with context in front.
std::string Describe(const boost::system::error_code& ec) {
  std::string message = ec.message();
  if (!message.empty()) message[0] = ToLower(message[0]);
  return message;
}

bool IsUnreserved(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '.' || c == '_' || c == '~';
}

std::string Escape(std::string_view text, bool keep_slash) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(text.size());
  for (char ch : text) {
    auto c = static_cast<unsigned char>(ch);
    if (IsUnreserved(c) || (keep_slash && c == '/')) {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

// The port number, or 0 when the text is not a port in 1..65535.
unsigned short ParsePort(std::string_view port) {
  if (port.empty() || port.size() > 5) return 0;
  unsigned value = 0;
  for (char c : port) {
    if (c < '0' || c > '9') return 0;
    value = value * 10 + static_cast<unsigned>(c - '0');
  }
  return value <= 65535 ? static_cast<unsigned short>(value) : 0;
}

// An error that means "the server closed the idle kept-alive connection":
// the request can be sent again on a new connection without risk, because
// no byte of an answer came back.
bool IsStaleConnection(const boost::system::error_code& ec) {
  return ec == bhttp::error::end_of_stream || ec == asio::error::eof ||
         ec == asio::error::connection_reset || ec == asio::error::broken_pipe ||
         ec == asio::error::connection_aborted;
}

}  // namespace

std::string ClientResponse::Header(std::string_view name) const {
  auto it = headers.find(Lower(name));
  return it == headers.end() ? std::string() : it->second;
}

std::string HttpAddress::ToString() const {
  return host.find(':') != std::string::npos ? "[" + host + "]:" + port : host + ":" + port;
}

Result<HttpAddress> ParseHttpAddress(std::string_view address) {
  const std::string original(address);
  auto bad = [&](std::string_view why) {
    return Status::InvalidArgument("http address " + GoQuote(original) + ": " + std::string(why));
  };
  if (std::size_t scheme = address.find("://"); scheme != std::string_view::npos) {
    std::string name = Lower(address.substr(0, scheme));
    if (name != "http") return bad("scheme " + GoQuote(name) + " is not supported (use http://)");
    address.remove_prefix(scheme + 3);
  }
  if (std::size_t slash = address.find('/'); slash != std::string_view::npos) {
    if (address.substr(slash) != "/") return bad("a path is not allowed");
    address = address.substr(0, slash);
  }
  HttpAddress out;
  out.port = "8500";
  if (!address.empty() && address.front() == '[') {
    std::size_t close = address.find(']');
    if (close == std::string_view::npos) return bad("missing ']'");
    out.host = std::string(address.substr(1, close - 1));
    std::string_view rest = address.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') return bad("expected ':' after ']'");
      out.port = std::string(rest.substr(1));
    }
  } else if (address.find(':') != address.rfind(':')) {
    out.host = std::string(address);  // a bare IPv6 address
  } else if (std::size_t colon = address.find(':'); colon != std::string_view::npos) {
    out.host = std::string(address.substr(0, colon));
    out.port = std::string(address.substr(colon + 1));
  } else {
    out.host = std::string(address);
  }
  if (out.host.empty()) return bad("missing host");
  if (ParsePort(out.port) == 0) return bad("bad port " + GoQuote(out.port));
  return out;
}

std::string EscapeKeyPath(std::string_view key) { return Escape(key, /*keep_slash=*/true); }
std::string EscapeQueryValue(std::string_view value) { return Escape(value, /*keep_slash=*/false); }

// All asio state. Every operation is started asynchronously and the
// io_context is run until it completes; the stream's own timer
// (expires_after) makes each operation fail with `timeout` at the deadline,
// so Request cannot hang on a silent server.
struct HttpClient::Impl {
  asio::io_context io{1};
  Status address_status;
  HttpAddress address;
  std::optional<beast::tcp_stream> stream;
  beast::flat_buffer buffer;

  void Close() {
    if (stream) {
      beast::error_code ignored;
      stream->socket().shutdown(tcp::socket::shutdown_both, ignored);
      stream->close();
      stream.reset();
    }
    buffer.clear();
  }

  // Runs the pending operation to completion. The stream timer normally ends
  // it by the deadline; should anything outlive deadline + slack, closing the
  // socket aborts it, and the drain afterwards keeps no handler pending.
  void Run(Deadline deadline) {
    io.restart();
    io.run_until(deadline + std::chrono::seconds(1));
    if (!io.stopped()) {
      Close();
      io.restart();
      io.run();
    }
  }

  // True when a kept connection can carry another request: the server has
  // not closed it (a FIN or RST shows as a readable socket) and no stray
  // bytes are waiting.
  bool ConnectionUsable() {
    if (!stream || !stream->socket().is_open()) return false;
    char byte;
    ssize_t n = ::recv(stream->socket().native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
  }

  Status Connect(Deadline deadline) {
    Close();
    const std::string where = address.ToString();
    std::vector<tcp::endpoint> endpoints;
    beast::error_code ec;
    asio::ip::address ip = asio::ip::make_address(address.host, ec);
    unsigned short port = ParsePort(address.port);  // validated by ParseHttpAddress
    if (!ec) {
      endpoints.emplace_back(ip, port);
    } else {
      // Names go through the system resolver, bounded by its own timeouts
      // (resolv.conf); agents are normally addressed by IP or localhost.
      tcp::resolver resolver(io);
      auto results = resolver.resolve(address.host, address.port, ec);
      if (ec) return Status::Unavailable("cannot reach tenure at " + where + ": " + Describe(ec));
      for (const auto& entry : results) endpoints.push_back(entry.endpoint());
    }
    stream.emplace(io);
    stream->expires_at(deadline);
    ec = asio::error::would_block;
    stream->async_connect(endpoints, [&ec](const beast::error_code& e, const tcp::endpoint&) {
      ec = e;
    });
    Run(deadline);
    if (ec == beast::error::timeout || ec == asio::error::would_block) {
      Close();
      return Status::Timeout("cannot reach tenure at " + where + ": connect timed out");
    }
    if (ec) {
      Close();
      return Status::Unavailable("cannot reach tenure at " + where + ": " + Describe(ec));
    }
    beast::error_code ignored;
    stream->socket().set_option(tcp::no_delay(true), ignored);
    return Status::Ok();
  }

  struct Attempt {
    beast::error_code ec;
    bool got_bytes = false;  // some of a response arrived: never resend
    ClientResponse response;
  };

  Attempt RoundTrip(const bhttp::request<bhttp::string_body>& request, Deadline deadline) {
    Attempt attempt;
    stream->expires_at(deadline);
    attempt.ec = asio::error::would_block;
    bhttp::async_write(*stream, request, [&attempt](const beast::error_code& e, std::size_t) {
      attempt.ec = e;
    });
    Run(deadline);
    if (attempt.ec) return attempt;

    bhttp::response_parser<bhttp::string_body> parser;
    parser.body_limit(kResponseBodyBytesMax);
    parser.header_limit(kResponseHeaderBytesMax);
    stream->expires_at(deadline);
    attempt.ec = asio::error::would_block;
    bhttp::async_read(*stream, buffer, parser, [&attempt](const beast::error_code& e, std::size_t) {
      attempt.ec = e;
    });
    Run(deadline);
    attempt.got_bytes = parser.got_some() || buffer.size() > 0;
    if (attempt.ec) return attempt;

    bhttp::response<bhttp::string_body> message = parser.release();
    attempt.response.status = static_cast<int>(message.result_int());
    for (const auto& field : message) {
      std::string name = Lower(ToStd(field.name_string()));
      std::string& slot = attempt.response.headers[name];
      if (!slot.empty()) slot += ", ";
      slot += ToStd(field.value());
    }
    attempt.response.body = std::move(message.body());
    if (!message.keep_alive()) Close();
    return attempt;
  }
};

HttpClient::HttpClient(std::string_view address, std::string token, std::int64_t timeout_ms)
    : impl_(std::make_unique<Impl>()),
      display_address_(address),
      token_(std::move(token)),
      default_timeout_ms_(timeout_ms > 0 ? timeout_ms : kDefaultTimeoutMs) {
  auto parsed = ParseHttpAddress(address);
  if (parsed.ok()) {
    impl_->address = std::move(parsed).value();
    display_address_ = impl_->address.ToString();
  } else {
    impl_->address_status = parsed.status();
  }
}

HttpClient::~HttpClient() {
  if (impl_) impl_->Close();
}

Result<ClientResponse> HttpClient::Request(std::string_view method, std::string_view target,
                                           std::string_view body, std::int64_t timeout_ms) {
  if (!impl_->address_status.ok()) return impl_->address_status;
  bhttp::verb verb = bhttp::string_to_verb(beast::string_view(method.data(), method.size()));
  if (verb == bhttp::verb::unknown) {
    return Status::InvalidArgument("http client: unknown method " + GoQuote(method));
  }
  if (timeout_ms <= 0) timeout_ms = default_timeout_ms_;
  const Deadline deadline = SteadyClock::now() + std::chrono::milliseconds(timeout_ms);
  const std::string where = impl_->address.ToString();

  bhttp::request<bhttp::string_body> request{
      verb, beast::string_view(target.data(), target.size()), 11};
  request.set(bhttp::field::host, where);
  request.set(bhttp::field::user_agent, "tenure-client");
  if (!token_.empty()) request.set("X-Consul-Token", token_);
  request.keep_alive(true);
  request.body() = std::string(body);
  request.prepare_payload();

  // A kept connection may have been closed by the server in the meantime
  // (idle timeout, restart): then one fresh connection gets a second try.
  bool reused = impl_->ConnectionUsable();
  for (int tries = 0;; ++tries) {
    if (!reused) TENURE_RETURN_IF_ERROR(impl_->Connect(deadline));
    Impl::Attempt attempt = impl_->RoundTrip(request, deadline);
    if (!attempt.ec) return std::move(attempt.response);
    impl_->Close();
    if (attempt.ec == beast::error::timeout || attempt.ec == asio::error::would_block) {
      return Status::Timeout("tenure at " + where + " did not answer " + std::string(method) +
                             " " + std::string(target) + " within " +
                             std::to_string(timeout_ms) + " ms");
    }
    if (reused && tries == 0 && !attempt.got_bytes && IsStaleConnection(attempt.ec)) {
      reused = false;
      continue;
    }
    return Status::Unavailable("connection to tenure at " + where + " failed: " +
                               Describe(attempt.ec));
  }
}

}  // namespace tenure::client
