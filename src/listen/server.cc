// The listener: accept loop, connection caps (in all and per client
// address), Stop. Each accepted socket becomes a Connection (connection.cc),
// which does all the HTTP.
#include "listen/server.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <limits>

#include "common/log.h"
#include "common/log_limiter.h"
#include "listen/connection.h"
#include "listen/connection_internal.h"
#include "listen/wire.h"

namespace tenure::listen {
using connection_detail::Log;

namespace {

namespace asio = boost::asio;
using boost::asio::ip::tcp;

// Consul's answer (go-connlimit's body and Content-Type) to a client address
// over limits.http_max_conns_per_client.
HttpResponse TooManyFromClient() {
  HttpResponse response = HttpResponse::Text(
      429, "Your IP is issuing too many concurrent connections, please rate limit your calls\n");
  response.content_type = "text/plain";
  return response;
}
// The listener's own cap, reached by every client together: not about the
// IP of the one refused.
HttpResponse TooManyInAll(std::size_t cap) {
  return HttpResponse::Text(
      429, fmt::format("Too many concurrent connections to this server from all clients "
                       "(limit {}); retry later",
                       cap));
}
// Out of descriptors or memory: accepting again at once would spin.
constexpr std::chrono::milliseconds kAcceptRetryDelay{100};
// Refused connections linger up to a second so the client reads its 429.
// Beyond this many at once, a refusal is written and closed at once.
constexpr std::size_t kLingeringRefusalsMax = 64;

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

std::uint64_t DescriptorLimit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) {
    return std::numeric_limits<std::uint64_t>::max();
  }
  return limit.rlim_cur;
}

bool IsOutOfDescriptors(const boost::system::error_code& ec) {
  return ec == asio::error::no_descriptors || ec.value() == ENFILE;
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

  // Out of descriptors although the cap should prevent it (raft or
  // forwarded requests took more than their reserve): the spare descriptor
  // is given up for a moment so the waiting client gets its 429 instead of
  // a connection that hangs, then taken back.
  void RefuseWithSpareDescriptor() {
    ::close(spare_fd);
    spare_fd = -1;
    const int fd =
        ::accept4(acceptor.native_handle(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    const int accept_errno = errno;
    if (fd >= 0) {
      RefuseNow(fd, all_refusal);
      ::close(fd);
    }
    spare_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (spare_fd < 0 || (fd < 0 && accept_errno != EAGAIN && accept_errno != EWOULDBLOCK)) {
      RetryLater(boost::system::error_code(accept_errno, boost::system::system_category()));
      return;
    }
    if (fd >= 0) {
      const auto now = std::chrono::steady_clock::now();
      if (now - last_exhaustion_log > std::chrono::seconds(1)) {
        Log("accept on {}: out of descriptors; refused a connection with 429", address);
        last_exhaustion_log = now;
      }
      Accept();
      return;
    }
    // Nobody waiting: sleep until a client connects.
    acceptor.async_wait(tcp::acceptor::wait_read,
                        [self = shared_from_this()](const boost::system::error_code& wait_ec) {
                          if (!wait_ec && !self->shared->stopped) self->Accept();
                        });
  }

  // Answers 429 without lingering (the caller closes fd at once): what the
  // client already sent is read first so the close is a FIN, not a reset.
  void RefuseNow(int fd, const std::string& refusal) {
    while (::recv(fd, shared->scratch.get(), ServerShared::kScratchBytes, MSG_DONTWAIT) > 0) {
    }
    // Over TLS the 429 would need a handshake first: just close.
    if (shared->tls == nullptr) {
      (void)::send(fd, refusal.data(), refusal.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
    }
    ::shutdown(fd, SHUT_WR);
  }

  void RetryLater(const boost::system::error_code& ec) {
    const auto now = std::chrono::steady_clock::now();
    if (now - last_exhaustion_log > std::chrono::seconds(1)) {
      Log("accept on {}: {}; retrying", address, ec.message());
      last_exhaustion_log = now;
    }
    retry_timer.expires_after(kAcceptRetryDelay);
    retry_timer.async_wait([self = shared_from_this()](const boost::system::error_code& wait_ec) {
      if (!wait_ec && !self->shared->stopped) self->Accept();
    });
  }

  void OnAccept(const boost::system::error_code& ec, tcp::socket socket) {
    if (shared->stopped || ec == asio::error::operation_aborted) return;
    if (IsOutOfDescriptors(ec) && spare_fd >= 0) {
      RefuseWithSpareDescriptor();
      return;
    }
    if (IsResourceExhaustion(ec)) {
      RetryLater(ec);
      return;
    }
    try {
      // Other accept errors (a client that reset before accept) concern one client only.
      if (!ec) Admit(std::move(socket));
    } catch (const std::exception& e) {
      Log("accept on {}: {}", address, e.what());
    }
    Accept();
  }

  // Serves the connection, or answers 429 at once: first the limit of its
  // address (Consul's text), then the cap of the listener.
  void Admit(tcp::socket socket) {
    boost::system::error_code peer_ec;
    const tcp::endpoint peer = socket.remote_endpoint(peer_ec);
    if (peer_ec) return;  // gone already (reset): nobody to answer
    const ClientAddress client = ToClientAddress(peer.address());
    const bool over_client = OverClientLimit(client, peer.address());
    if (!over_client && shared->served < shared->connections_max) {
      auto connection = std::make_shared<Connection>(shared, std::move(socket));
      connection->Start(shared->clients->Add(client));
      return;
    }
    if (shared->open - shared->served >= kLingeringRefusalsMax) {
      // The socket's destructor closes it.
      RefuseNow(socket.native_handle(), over_client ? client_refusal : all_refusal);
      return;
    }
    auto connection = std::make_shared<Connection>(shared, std::move(socket));
    connection->Reject(over_client ? TooManyFromClient() : TooManyInAll(shared->connections_max));
  }

  static ClientAddress ToClientAddress(const asio::ip::address& ip) {
    if (ip.is_v4()) return ClientAddress::V4(ip.to_v4().to_bytes());
    return ClientAddress::V6(ip.to_v6().to_bytes());
  }

  bool OverClientLimit(const ClientAddress& client, const asio::ip::address& ip) {
    const std::size_t max = shared->connections_per_client_max;
    if (max == 0 || shared->clients->Count(client) < max) return false;
    // An IPv4 peer of a dual-stack socket is named as IPv4, as members are.
    const std::string text =
        ip.is_v6() && ip.to_v6().is_v4_mapped()
            ? asio::ip::make_address_v4(asio::ip::v4_mapped, ip.to_v6()).to_string()
            : ip.to_string();
    if (exempt_client && exempt_client(text)) return false;
    static LogLimiter limiter(20, "http: ");  // a flood must not flood the log
    if (limiter.Allow("connections refused for their client's limit")) {
      Log("refused a connection from {}: {} connections open from that address, the most "
          "allowed (-http-max-conns-per-client)",
          text, max);
    }
    return true;
  }

  std::shared_ptr<ServerShared> shared;
  tcp::acceptor acceptor;
  asio::steady_timer retry_timer;
  std::string address;
  std::uint16_t port = 0;
  std::chrono::steady_clock::time_point last_exhaustion_log{};
  int spare_fd = -1;
  std::string all_refusal;     // the 429s written by RefuseNow: the listener's cap,
  std::string client_refusal;  // an address's limit
  ClientExemption exempt_client;
};

HttpServer::HttpServer(asio::io_context& io, RequestHandler handler)
    : impl_(std::make_shared<Impl>(io, std::move(handler))) {}

HttpServer::~HttpServer() {
  Stop();
  if (impl_->spare_fd >= 0) ::close(impl_->spare_fd);
}

void HttpServer::SetTlsContext(std::shared_ptr<const tls::Context> context) {
  impl_->shared->tls = std::move(context);
}

std::size_t ConnectionCap(std::uint64_t nofile, std::size_t max, std::size_t reserve) {
  if (reserve == 0) return max;  // tests of running out of descriptors
  const std::uint64_t usable = nofile > reserve ? (nofile - reserve) / 2 : 0;
  return static_cast<std::size_t>(std::max<std::uint64_t>(1, std::min<std::uint64_t>(max, usable)));
}

Status HttpServer::Listen(const HttpServerOptions& options) {
  if (impl_->acceptor.is_open()) return Status::FailedPrecondition("http: already listening");
  impl_->address = FormatAddress(options.host, options.port);
  const std::string& address = impl_->address;
  auto& shared = *impl_->shared;
  shared.request_read_timeout_ms = options.TEST_request_read_timeout_ms;
  shared.idle_timeout_ms = options.TEST_idle_timeout_ms;
  shared.first_byte_timeout_ms = options.TEST_first_byte_timeout_ms;
  shared.unsent_bytes_max = options.TEST_unsent_bytes_max;
  shared.stalled_writer_ms = options.TEST_stalled_writer_ms;
  shared.stopped = false;
  RaiseDescriptorLimit();
  // Client connections never take the descriptors raft needs.
  const std::uint64_t nofile = DescriptorLimit();
  shared.connections_max =
      ConnectionCap(nofile, options.TEST_connections_max, options.TEST_descriptor_reserve);
  shared.tls = options.tls;
  shared.large_body_gate = options.large_body_gate;
  shared.body_too_large = options.body_too_large;
  shared.parked_read = options.parked_read;
  shared.http2 = options.http2;
  shared.stream_router = options.stream_router;
  shared.http2_streams_max = options.TEST_http2_streams_max;
  shared.http2_ping_after_ms = options.TEST_http2_ping_after_ms;
  shared.http2_ping_timeout_ms = options.TEST_http2_ping_timeout_ms;
  shared.connections_per_client_max = options.connections_per_client_max;
  shared.clients = options.clients != nullptr ? options.clients : std::make_shared<ClientTable>();
  impl_->exempt_client = options.exempt_client;
  if (shared.connections_max < options.TEST_connections_max) {
    Log("serving at most {} connections: RLIMIT_NOFILE is {}, {} kept for raft",
        shared.connections_max, nofile, options.TEST_descriptor_reserve);
  }
  if (impl_->spare_fd < 0) impl_->spare_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  auto render = [](const HttpResponse& response, std::string* out) {
    out->clear();
    wire::AppendResponseHead(response, wire::HeadOptions{false, false, false}, out);
    *out += response.body;
  };
  render(TooManyInAll(shared.connections_max), &impl_->all_refusal);
  render(TooManyFromClient(), &impl_->client_refusal);

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
  auto number = [](const char* name, std::int64_t min, std::int64_t* out) -> Result<bool> {
    const char* text = std::getenv(name);
    if (text == nullptr) return false;
    const std::string_view view(text);
    const auto [end, ec] = std::from_chars(view.data(), view.data() + view.size(), *out);
    if (ec != std::errc() || end != view.data() + view.size() || *out < min) {
      return Status::InvalidArgument(
          fmt::format("{}=\"{}\": expected a number of at least {}", name, view, min));
    }
    return true;
  };
  const struct {
    const char* name;
    DurationMs* target;
  } milliseconds[] = {
      {"TENURE_TEST_HTTP_FIRST_BYTE_TIMEOUT_MS", &options->TEST_first_byte_timeout_ms},
      {"TENURE_TEST_HTTP_STALLED_WRITER_MS", &options->TEST_stalled_writer_ms},
  };
  const struct {
    const char* name;
    std::size_t* target;
  } counts[] = {
      {"TENURE_TEST_HTTP_UNSENT_BYTES_MAX", &options->TEST_unsent_bytes_max},
      {"TENURE_TEST_HTTP_CONNECTIONS_MAX", &options->TEST_connections_max},
      {"TENURE_TEST_HTTP_DESCRIPTOR_RESERVE", &options->TEST_descriptor_reserve},
  };
  std::int64_t value = 0;
  for (const auto& variable : milliseconds) {
    TENURE_ASSIGN_OR_RETURN(const bool set, number(variable.name, 1, &value));
    if (set) *variable.target = value;
  }
  for (const auto& variable : counts) {
    TENURE_ASSIGN_OR_RETURN(const bool set, number(variable.name, 0, &value));
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
  while (shared.connections != nullptr) {
    shared.connections->Http2GoAway();  // nothing on an HTTP/1.1 connection
    shared.connections->Close();
  }
  shared.readiness.Stop();
}

std::size_t HttpServer::connection_count() const { return impl_->shared->served; }

}  // namespace tenure::listen
