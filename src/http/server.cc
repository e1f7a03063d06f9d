// The listener: accept loop, connection cap, Stop. Each accepted socket
// becomes a Connection (connection.cc), which does all the HTTP.
#include "http/server.h"

#include <fmt/format.h>
#include <sys/resource.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdlib>

#include "http/connection.h"

namespace tenure::http {
namespace {

namespace asio = boost::asio;
using boost::asio::ip::tcp;

constexpr std::string_view kTooManyConnections =
    "Your IP is issuing too many concurrent connections, please rate limit your calls";
// Out of descriptors or memory: accepting again at once would spin.
constexpr std::chrono::milliseconds kAcceptRetryDelay{100};

template <typename... Args>
void Log(fmt::format_string<Args...> format, Args&&... args) {
  fmt::print(stderr, "http: {}\n", fmt::format(format, std::forward<Args>(args)...));
}

std::string FormatAddress(const std::string& host, std::uint16_t port) {
  return host.find(':') != std::string::npos ? fmt::format("[{}]:{}", host, port)
                                             : fmt::format("{}:{}", host, port);
}

// Thousands of idle keep-alive clients need thousands of descriptors; the
// soft limit is often 1024 while the hard one is far higher.
void RaiseDescriptorLimit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur >= limit.rlim_max) return;
  limit.rlim_cur = limit.rlim_max;
  if (setrlimit(RLIMIT_NOFILE, &limit) != 0) Log("cannot raise RLIMIT_NOFILE: errno {}", errno);
}

bool IsResourceExhaustion(const boost::system::error_code& ec) {
  return ec == asio::error::no_descriptors || ec.value() == ENFILE ||
         ec == asio::error::no_buffer_space || ec == asio::error::no_memory;
}

}  // namespace

struct HttpServer::Impl : std::enable_shared_from_this<Impl> {
  Impl(asio::io_context& io, RequestHandler handler)
      : shared(std::make_shared<ServerShared>(io, std::move(handler))),
        acceptor(io),
        retry_timer(io) {}

  void Accept() {
    acceptor.async_accept(
        [self = shared_from_this()](const boost::system::error_code& ec, tcp::socket socket) {
          self->OnAccept(ec, std::move(socket));
        });
  }

  void OnAccept(const boost::system::error_code& ec, tcp::socket socket) {
    if (shared->stopped || ec == asio::error::operation_aborted) return;
    if (IsResourceExhaustion(ec)) {
      const auto now = std::chrono::steady_clock::now();
      if (now - last_exhaustion_log > std::chrono::seconds(1)) {
        Log("accept on {}: {}; retrying", address, ec.message());
        last_exhaustion_log = now;
      }
      retry_timer.expires_after(kAcceptRetryDelay);
      retry_timer.async_wait([self = shared_from_this()](const boost::system::error_code& wait_ec) {
        if (!wait_ec && !self->shared->stopped) self->Accept();
      });
      return;
    }
    try {
      if (!ec) {
        auto connection = std::make_shared<Connection>(shared, std::move(socket));
        if (shared->served >= shared->connections_max) {
          connection->Reject(HttpResponse::Text(429, std::string(kTooManyConnections)));
        } else {
          connection->Start();
        }
      }
      // Other accept errors (a client that reset before accept) concern one client only.
    } catch (const std::exception& e) {
      Log("accept on {}: {}", address, e.what());
    }
    Accept();
  }

  std::shared_ptr<ServerShared> shared;
  tcp::acceptor acceptor;
  asio::steady_timer retry_timer;
  std::string address;
  std::uint16_t port = 0;
  std::chrono::steady_clock::time_point last_exhaustion_log{};
};

HttpServer::HttpServer(asio::io_context& io, RequestHandler handler)
    : impl_(std::make_shared<Impl>(io, std::move(handler))) {}

HttpServer::~HttpServer() { Stop(); }

Status HttpServer::Listen(const HttpServerOptions& options) {
  if (impl_->acceptor.is_open()) return Status::FailedPrecondition("http: already listening");
  impl_->address = FormatAddress(options.host, options.port);
  const std::string& address = impl_->address;
  auto& shared = *impl_->shared;
  shared.request_read_timeout_ms = options.TEST_request_read_timeout_ms;
  shared.idle_timeout_ms = options.TEST_idle_timeout_ms;
  shared.first_byte_timeout_ms = options.TEST_first_byte_timeout_ms;
  shared.connections_max = options.TEST_connections_max;
  shared.unsent_bytes_max = options.TEST_unsent_bytes_max;
  shared.stalled_writer_ms = options.TEST_stalled_writer_ms;
  shared.stopped = false;
  RaiseDescriptorLimit();

  boost::system::error_code ec;
  tcp::endpoint endpoint;
  const auto ip = asio::ip::make_address(options.host, ec);
  if (!ec) {
    endpoint = tcp::endpoint(ip, options.port);
  } else {  // a host name such as "localhost": take its first address
    tcp::resolver resolver(shared.io);
    const auto results = resolver.resolve(options.host, std::to_string(options.port), ec);
    if (ec || results.empty()) {
      return Status::InvalidArgument(fmt::format("http: cannot resolve listen address {}: {}",
                                                 address, ec ? ec.message() : "no addresses"));
    }
    endpoint = results.begin()->endpoint();
  }

  auto& acceptor = impl_->acceptor;
  auto fail = [&](std::string_view step) {
    boost::system::error_code ignored;
    acceptor.close(ignored);
    return Status::IoError(
        fmt::format("http: cannot listen on {}: {}: {}", address, step, ec.message()));
  };
  if (acceptor.open(endpoint.protocol(), ec)) return fail("open");
  if (acceptor.set_option(tcp::acceptor::reuse_address(true), ec)) return fail("SO_REUSEADDR");
  if (acceptor.bind(endpoint, ec)) return fail("bind");
  if (acceptor.listen(asio::socket_base::max_listen_connections, ec)) return fail("listen");
  impl_->port = acceptor.local_endpoint(ec).port();
  if (ec) return fail("local address");
  impl_->Accept();
  return Status::Ok();
}

Status TEST_ApplyEnvironment(HttpServerOptions* options) {
  auto positive = [](const char* name, std::int64_t* out) -> Result<bool> {
    const char* text = std::getenv(name);
    if (text == nullptr) return false;
    const std::string_view view(text);
    const auto [end, ec] = std::from_chars(view.data(), view.data() + view.size(), *out);
    if (ec != std::errc() || end != view.data() + view.size() || *out <= 0) {
      return Status::InvalidArgument(
          fmt::format("{}=\"{}\": expected a positive number", name, view));
    }
    return true;
  };
  const struct {
    const char* name;
    MonoMs* target;
  } milliseconds[] = {
      {"TENURE_TEST_HTTP_FIRST_BYTE_TIMEOUT_MS", &options->TEST_first_byte_timeout_ms},
      {"TENURE_TEST_HTTP_STALLED_WRITER_MS", &options->TEST_stalled_writer_ms},
  };
  const struct {
    const char* name;
    std::size_t* target;
  } counts[] = {
      {"TENURE_TEST_HTTP_UNSENT_BYTES_MAX", &options->TEST_unsent_bytes_max},
  };
  std::int64_t value = 0;
  for (const auto& variable : milliseconds) {
    TENURE_ASSIGN_OR_RETURN(const bool set, positive(variable.name, &value));
    if (set) *variable.target = value;
  }
  for (const auto& variable : counts) {
    TENURE_ASSIGN_OR_RETURN(const bool set, positive(variable.name, &value));
    if (set) *variable.target = static_cast<std::size_t>(value);
  }
  return Status::Ok();
}

std::uint16_t HttpServer::port() const { return impl_->port; }

void HttpServer::Stop() {
  auto& shared = *impl_->shared;
  shared.stopped = true;
  boost::system::error_code ignored;
  impl_->acceptor.close(ignored);
  impl_->retry_timer.cancel();
  // Close() unlinks the connection, so the list shrinks to empty.
  while (shared.connections != nullptr) shared.connections->Close();
}

std::size_t HttpServer::connection_count() const { return impl_->shared->served; }

}  // namespace tenure::http
