// HttpClient (net/http_client.h). Why one file over 500 lines: one request's
// life (dial, TLS, write, read, retry, keep-alive pool) is one state machine
// whose steps share the Call's state, and reads best in the order it runs.
#include "net/http_client.h"

#include <sys/socket.h>

#include <algorithm>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <cerrno>
#include <chrono>
#include <map>
#include <optional>
#include <utility>

#include "common/assert.h"
#include "common/strings.h"
#include "tls/peer_name.h"

namespace tenure::net {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;
using Ms = std::chrono::milliseconds;

constexpr std::uint64_t kResponseBodyBytesMax = 256ull * 1024 * 1024;
constexpr std::uint32_t kResponseHeaderBytesMax = 64 * 1024;

std::string Describe(const boost::system::error_code& ec) {
  if (ec == beast::error::timeout) return "timed out";
  if (ec == asio::ssl::error::stream_truncated) return "end of stream (without TLS close_notify)";
  std::string message = ec.message();
  if (!message.empty()) message = AsciiLower(message.substr(0, 1)) + message.substr(1);
  return message;
}

// The server closed a kept-alive connection: safe to resend once when no byte
// of an answer came back.
bool IsStaleConnection(const boost::system::error_code& ec) {
  return ec == bhttp::error::end_of_stream || ec == asio::error::eof ||
         ec == asio::ssl::error::stream_truncated || ec == asio::error::connection_reset ||
         ec == asio::error::broken_pipe || ec == asio::error::connection_aborted;
}

// OpenSSL refused: a certificate, a protocol version, an alert from the
// server. Retrying gives the same answer.
bool IsTlsRefusal(const boost::system::error_code& ec) {
  return ec.category() == asio::error::get_ssl_category();
}

// A TLS record (handshake 0x16 or alert 0x15, version 3.x) where an HTTP
// answer was expected: a TLS port dialled with http://.
bool LooksLikeTls(const beast::flat_buffer& buffer) {
  if (buffer.size() < 2) return false;
  const auto* bytes = static_cast<const unsigned char*>(buffer.data().data());
  return (bytes[0] == 0x15 || bytes[0] == 0x16) && bytes[1] == 0x03;
}

// One connection to one address: TCP, with TLS over it for https. Shared by
// the pool and by the handlers of the operations pending on it, so the
// streams, buffer and parser outlive every operation even after the request
// finished.
struct Conn {
  Conn(asio::io_context& io, std::size_t address_index, asio::ssl::context* tls_context)
      : tcp(io), addr(address_index) {
    if (tls_context != nullptr) tls.emplace(tcp, *tls_context);
  }
  beast::tcp_stream tcp;  // its expiry bounds connect and handshake
  std::optional<asio::ssl::stream<beast::tcp_stream&>> tls;
  beast::flat_buffer buffer;
  std::optional<bhttp::response_parser<bhttp::string_body>> parser;
  std::size_t addr;

  // Calls f with the stream HTTP goes over.
  template <class F>
  void With(F&& f) {
    if (tls) {
      f(*tls);
    } else {
      f(tcp);
    }
  }

  // Not closed by the server (FIN/RST show as readable) and no stray bytes.
  // Over TLS an idle connection has nothing to say either: readable means
  // close_notify or EOF.
  bool Usable() {
    if (!tcp.socket().is_open()) return false;
    char byte;
    ssize_t n = ::recv(tcp.socket().native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
  }
};

}  // namespace

std::string ClientResponse::Header(std::string_view name) const {
  auto it = headers.find(AsciiLower(name));
  return it == headers.end() ? std::string() : it->second;
}

bool MaybeApplied(const Status& status) {
  return !status.ok() && status.message().find(kMaybeAppliedMarker) != std::string_view::npos;
}

bool IsCancelled(const Status& status) {
  return status.code() == Code::kUnavailable &&
         status.message().find(kCancelledMarker) != std::string_view::npos;
}

// Every handler holds a shared_ptr to its Call and starts by checking
// `finished` (and the attempt generation): once a call finished, no handler
// touches the Impl, so handlers that run after Shutdown or destruction (with
// operation_aborted) are harmless.
struct HttpClient::Impl {
  struct Call {
    explicit Call(asio::io_context& io) : deadline_timer(io), backoff_timer(io), resolver(io) {}
    RequestId id = 0;
    HttpCall spec;
    HttpCallback done;
    bhttp::request<bhttp::string_body> request;
    Clock::time_point deadline;
    std::int64_t timeout_ms = 0;
    asio::steady_timer deadline_timer;
    asio::steady_timer backoff_timer;
    tcp::resolver resolver;
    std::shared_ptr<Conn> conn;
    std::size_t addr = 0;
    unsigned gen = 0;  // bumped per connection attempt; older handlers are ignored
    int retries = 0;
    bool finished = false;
    bool reused = false;        // conn came from the pool
    bool stale_resent = false;  // the one resend after a stale kept connection is used
    bool written = false;       // some attempt wrote the whole request
    std::optional<ClientResponse> last_500;
    Status last_error;
  };
  using CallPtr = std::shared_ptr<Call>;

  Impl(asio::io_context& io_context, HttpClientOptions opts)
      : io(io_context), options(std::move(opts)) {
    address_status = Prepare();
    idle.resize(addresses.size());
    if (options.default_timeout_ms <= 0) options.default_timeout_ms = 30'000;
    if (options.connect_timeout_ms <= 0) options.connect_timeout_ms = 5'000;
  }

  // The addresses parsed and the TLS context built: what fails every Request otherwise.
  Status Prepare() {
    for (const std::string& text : options.addresses) {
      auto parsed = ParseHttpAddress(text, options.tls.by_default);
      if (!parsed.ok()) return parsed.status();
      addresses.push_back(std::move(parsed).value());
    }
    if (addresses.empty()) return Status::InvalidArgument("http client: no server address given");
    if (!options.settings_status.ok()) return options.settings_status;
    const bool any_tls =
        std::any_of(addresses.begin(), addresses.end(), [](const auto& a) { return a.tls; });
    return any_tls ? LoadTls() : Status::Ok();
  }

  // Built only when some address is https, so TLS files given for a plain
  // agent are not read.
  Status LoadTls() {
    auto context = tls::Context::ForClient(options.tls.files);
    if (!context.ok()) {
      return Status::InvalidArgument("TLS: " + std::string(context.status().message()));
    }
    tls_settings = std::move(context).value();
    SSL_CTX_up_ref(tls_settings->raw());  // asio's context frees its own reference
    tls_context.emplace(tls_settings->raw());
    return Status::Ok();
  }

  static bool Stale(const CallPtr& call, unsigned gen) {
    return call->finished || call->gen != gen;
  }

  // "tenure at 127.0.0.1:8500": the agent a message is about.
  std::string Agent(const Call& call) const {
    return "tenure at " +
           (call.addr < addresses.size() ? addresses[call.addr].Describe() : std::string("?"));
  }
  std::string What(const Call& call) const { return call.spec.method + " " + call.spec.target; }

  static Status Flag(const Call& call, Status status) {
    if (!call.written) return status;
    return Status(status.code(), std::string(status.message()) + " (" + kMaybeAppliedMarker + ")");
  }

  RequestId Request(HttpCall spec, HttpCallback done) {
    if (shut_down) {
      done(Status::Unavailable(std::string("http client is shut down, ") + kCancelledMarker));
      return 0;
    }
    auto call = std::make_shared<Call>(io);
    call->id = next_id++;
    call->spec = std::move(spec);
    call->done = std::move(done);
    call->timeout_ms =
        call->spec.timeout_ms > 0 ? call->spec.timeout_ms : options.default_timeout_ms;
    call->deadline = Clock::now() + Ms(call->timeout_ms);
    live.emplace(call->id, call);

    Status invalid = address_status;
    bhttp::verb verb = bhttp::string_to_verb(call->spec.method);
    if (invalid.ok() && verb == bhttp::verb::unknown) {
      invalid =
          Status::InvalidArgument("http client: unknown method " + GoQuote(call->spec.method));
    }
    if (!invalid.ok()) {
      asio::post(io, [this, call, invalid] {
        if (!call->finished) Finish(call, invalid);
      });
      return call->id;
    }
    call->request = {verb, call->spec.target, 11};
    call->request.set(bhttp::field::user_agent, "tenure-client");
    if (!options.token.empty()) call->request.set("X-Consul-Token", options.token);
    for (const auto& [name, value] : call->spec.headers) call->request.set(name, value);
    call->request.keep_alive(true);
    call->request.body() = call->spec.body;
    call->request.prepare_payload();

    call->deadline_timer.expires_at(call->deadline);
    call->deadline_timer.async_wait([this, call](const boost::system::error_code& ec) {
      if (ec || call->finished) return;
      Finish(call,
             Flag(*call, Status::Timeout(Agent(*call) + " did not answer " + What(*call) +
                                         " within " + std::to_string(call->timeout_ms) + " ms")));
    });
    call->addr = preferred;
    StartAttempt(call);
    return call->id;
  }

  void StartAttempt(const CallPtr& call) {
    call->stale_resent = false;
    call->request.set(bhttp::field::host, addresses[call->addr].ToString());
    auto& pool = idle[call->addr];
    while (!pool.empty()) {
      std::shared_ptr<Conn> conn = std::move(pool.back());
      pool.pop_back();
      if (conn->Usable()) {
        ++call->gen;
        call->conn = std::move(conn);
        call->reused = true;
        Send(call);
        return;
      }
      conn->tcp.close();
    }
    Connect(call);
  }

  void Connect(const CallPtr& call) {
    const unsigned gen = ++call->gen;
    call->reused = false;
    call->conn =
        std::make_shared<Conn>(io, call->addr, addresses[call->addr].tls ? &*tls_context : nullptr);
    const HttpAddress& address = addresses[call->addr];
    boost::system::error_code ec;
    asio::ip::address ip = asio::ip::make_address(address.host, ec);
    if (!ec) {
      ConnectTo(call, gen, {tcp::endpoint(ip, address.port)});
      return;
    }
    call->resolver.async_resolve(
        address.host, std::to_string(address.port),
        [this, call, gen](const boost::system::error_code& e, tcp::resolver::results_type found) {
          if (Stale(call, gen)) return;
          if (e) return TransportError(call, "cannot reach " + Agent(*call) + ": " + Describe(e));
          std::vector<tcp::endpoint> endpoints;
          for (const auto& entry : found) endpoints.push_back(entry.endpoint());
          ConnectTo(call, gen, std::move(endpoints));
        });
  }

  void ConnectTo(const CallPtr& call, unsigned gen, std::vector<tcp::endpoint> endpoints) {
    std::shared_ptr<Conn> conn = call->conn;
    conn->tcp.expires_after(ConnectBudget(*call));
    conn->tcp.async_connect(endpoints, [this, call, conn, gen](const boost::system::error_code& ec,
                                                               const tcp::endpoint&) {
      if (Stale(call, gen)) return;
      if (ec) return TransportError(call, "cannot reach " + Agent(*call) + ": " + Describe(ec));
      boost::system::error_code ignored;
      conn->tcp.socket().set_option(tcp::no_delay(true), ignored);
      if (conn->tls) return Handshake(call);
      Send(call);
    });
  }

  // What connecting, or the handshake, may take: the connect timeout, within the deadline.
  Ms ConnectBudget(const Call& call) const {
    auto remaining = std::chrono::duration_cast<Ms>(call.deadline - Clock::now());
    return std::max(Ms(1), std::min(remaining, Ms(options.connect_timeout_ms)));
  }

  void Handshake(const CallPtr& call) {
    std::shared_ptr<Conn> conn = call->conn;
    const unsigned gen = call->gen;
    const std::string& name = tls_settings->server_name().empty() ? addresses[call->addr].host
                                                                  : tls_settings->server_name();
    if (Status set =
            tls::ExpectPeerName(conn->tls->native_handle(), name, tls_settings->verifies_peer());
        !set.ok()) {
      return TlsRefused(call, "cannot reach " + Agent(*call) + ": " + std::string(set.message()));
    }
    conn->tcp.expires_after(ConnectBudget(*call));
    conn->tls->async_handshake(
        asio::ssl::stream_base::client,
        [this, call, conn, gen](const boost::system::error_code& ec) {
          if (Stale(call, gen)) return;
          const std::string failed = "cannot reach " + Agent(*call) + ": TLS handshake failed: ";
          if (IsTlsRefusal(ec)) {
            return TlsRefused(
                call, failed + tls::HandshakeFailure(conn->tls->native_handle(),
                                                     static_cast<unsigned long>(ec.value())));
          }
          if (ec) return TransportError(call, failed + Describe(ec));
          Send(call);
        });
  }

  void Send(const CallPtr& call) {
    std::shared_ptr<Conn> conn = call->conn;
    const unsigned gen = call->gen;
    conn->tcp.expires_never();  // the call's deadline timer bounds it
    const bool written_before = call->written;
    conn->With([&](auto& stream) {
      bhttp::async_write(stream, call->request,
                         [this, call, conn, gen, written_before](
                             const boost::system::error_code& ec, std::size_t) {
                           if (Stale(call, gen)) return;
                           if (ec) return Failed(call, ec, /*got_bytes=*/false);
                           call->written = true;
                           Receive(call, written_before);
                         });
    });
  }

  void Receive(const CallPtr& call, bool written_before) {
    std::shared_ptr<Conn> conn = call->conn;
    const unsigned gen = call->gen;
    conn->parser.emplace();
    conn->parser->body_limit(kResponseBodyBytesMax);
    conn->parser->header_limit(kResponseHeaderBytesMax);
    conn->With([&](auto& stream) {
      bhttp::async_read(stream, conn->buffer, *conn->parser,
                        [this, call, conn, gen, written_before](const boost::system::error_code& ec,
                                                                std::size_t) {
                          if (Stale(call, gen)) return;
                          if (ec) return ReceiveFailed(call, ec, written_before);
                          Received(call);
                        });
    });
  }

  void ReceiveFailed(const CallPtr& call, const boost::system::error_code& ec,
                     bool written_before) {
    Conn& conn = *call->conn;
    const bool got_bytes = conn.parser->got_some() || conn.buffer.size() > 0;
    if (!call->reused && !got_bytes && conn.tls && IsTlsRefusal(ec)) {
      // TLS 1.3 ends the client's handshake before the server checked its
      // certificate: the server's refusal arrives here, and it never read
      // the request.
      call->written = written_before;
      return TlsRefused(call, "cannot reach " + Agent(*call) + ": TLS handshake failed: " +
                                  tls::HandshakeFailure(conn.tls->native_handle(),
                                                        static_cast<unsigned long>(ec.value())));
    }
    if (!conn.tls && LooksLikeTls(conn.buffer)) {
      call->written = written_before;  // a TLS server does not read clear text
      return TlsRefused(
          call, "connection to " + Agent(*call) + " failed: it answered in TLS (use https://)");
    }
    Failed(call, ec, got_bytes);
  }

  void Received(const CallPtr& call) {
    std::shared_ptr<Conn> conn = call->conn;
    bhttp::response<bhttp::string_body> message = conn->parser->release();
    ClientResponse response;
    response.status = static_cast<int>(message.result_int());
    for (const auto& field : message) {
      auto name = field.name_string();
      auto value = field.value();
      std::string& slot = response.headers[AsciiLower({name.data(), name.size()})];
      if (!slot.empty()) slot += ", ";
      slot.append(value.data(), value.size());
    }
    response.body = std::move(message.body());
    call->conn.reset();
    if (message.keep_alive() && conn->buffer.size() == 0) {
      Release(conn);
    } else {
      conn->tcp.close();
    }
    if (response.status != 500) return Finish(call, std::move(response));
    call->last_error =
        Status::Unavailable(Agent(*call) + " answered " + What(*call) + " with HTTP 500");
    call->last_500 = std::move(response);
    RetryOrFinish(call);
  }

  void Failed(const CallPtr& call, const boost::system::error_code& ec, bool got_bytes) {
    if (call->reused && !call->stale_resent && !got_bytes && IsStaleConnection(ec)) {
      call->stale_resent = true;
      call->conn->tcp.close();
      return Connect(call);
    }
    TransportError(call, "connection to " + Agent(*call) + " failed: " + Describe(ec));
  }

  void TransportError(const CallPtr& call, std::string message) {
    if (call->conn) call->conn->tcp.close();
    call->conn.reset();
    call->last_500.reset();
    call->last_error = Status::Unavailable(std::move(message));
    RetryOrFinish(call);
  }

  // TLS was refused (or cannot be set up): no retry, as the next attempt
  // would be refused the same way, but later calls start at the next address.
  void TlsRefused(const CallPtr& call, std::string message) {
    if (call->conn) call->conn->tcp.close();
    call->conn.reset();
    call->last_500.reset();
    call->last_error = Status::Unavailable(std::move(message));
    if (preferred == call->addr) preferred = (call->addr + 1) % addresses.size();
    FinishFailed(call);
  }

  // After a transport error or a 500: move to the next address (for later
  // calls too), then retry after a backoff if the policy and deadline allow.
  void RetryOrFinish(const CallPtr& call) {
    if (preferred == call->addr) preferred = (call->addr + 1) % addresses.size();
    call->addr = (call->addr + 1) % addresses.size();
    const RetryPolicy& policy = call->spec.retry;
    if (call->retries < policy.max_retries) {
      std::int64_t backoff_ms = std::max<std::int64_t>(policy.backoff_initial_ms, 0);
      for (int i = 0; i < call->retries && backoff_ms < policy.backoff_max_ms; ++i) backoff_ms *= 2;
      backoff_ms = std::min(backoff_ms, std::max<std::int64_t>(policy.backoff_max_ms, 0));
      if (Clock::now() + Ms(backoff_ms) < call->deadline) {
        ++call->retries;
        const unsigned gen = ++call->gen;
        call->backoff_timer.expires_after(Ms(backoff_ms));
        call->backoff_timer.async_wait([this, call, gen](const boost::system::error_code& ec) {
          if (ec || Stale(call, gen)) return;
          StartAttempt(call);
        });
        return;
      }
    }
    FinishFailed(call);
  }

  // Ends the call with its last 500, else its last error.
  void FinishFailed(const CallPtr& call) {
    if (call->last_500) return Finish(call, std::move(*call->last_500));
    std::string attempts = call->retries == 0
                               ? std::string()
                               : " (" + std::to_string(call->retries + 1) + " attempts)";
    Status error = call->last_error;
    Finish(call, Flag(*call, Status(error.code(), std::string(error.message()) + attempts)));
  }

  void Release(std::shared_ptr<Conn> conn) {
    TENURE_ASSERT(conn->addr < idle.size());
    auto& pool = idle[conn->addr];
    if (shut_down || pool.size() >= options.max_idle_per_address) {
      conn->tcp.close();
      return;
    }
    pool.push_back(std::move(conn));
  }

  // The last thing a path does: `done` may re-enter the client.
  void Finish(CallPtr call, Result<ClientResponse> result) {
    TENURE_ASSERT(!call->finished);  // every path checks: `done` runs once
    call->finished = true;
    live.erase(call->id);
    call->deadline_timer.cancel();
    call->backoff_timer.cancel();
    call->resolver.cancel();
    if (call->conn) call->conn->tcp.close();
    call->conn.reset();
    HttpCallback done = std::move(call->done);
    call->done = nullptr;
    if (done) done(std::move(result));
  }

  bool Cancel(RequestId id) {
    auto it = live.find(id);
    if (it == live.end()) return false;
    CallPtr call = it->second;
    Finish(call, Flag(*call, Status::Unavailable(What(*call) + " to " + Agent(*call) + ": " +
                                                 kCancelledMarker)));
    return true;
  }

  void Shutdown() {
    shut_down = true;
    std::map<RequestId, CallPtr> calls = std::move(live);
    live.clear();
    for (auto& [id, call] : calls) {
      if (call->finished) continue;
      Finish(call, Flag(*call, Status::Unavailable(What(*call) + " to " + Agent(*call) +
                                                   ": client shut down, " + kCancelledMarker)));
    }
    for (auto& pool : idle) {
      for (auto& conn : pool) conn->tcp.close();
      pool.clear();
    }
  }

  asio::io_context& io;
  HttpClientOptions options;
  std::vector<HttpAddress> addresses;
  Status address_status;
  std::shared_ptr<const tls::Context> tls_settings;      // when some address is https
  std::optional<asio::ssl::context> tls_context;         // the same SSL_CTX, for asio
  std::vector<std::vector<std::shared_ptr<Conn>>> idle;  // per address
  std::map<RequestId, CallPtr> live;
  RequestId next_id = 1;
  std::size_t preferred = 0;
  bool shut_down = false;
};

HttpClient::HttpClient(boost::asio::io_context& io, HttpClientOptions options)
    : impl_(std::make_unique<Impl>(io, std::move(options))) {}

Status HttpClient::Check(const HttpClientOptions& options) {
  asio::io_context io;
  return Impl(io, options).address_status;
}

HttpClient::~HttpClient() {
  if (impl_) impl_->Shutdown();
}

RequestId HttpClient::Request(HttpCall call, HttpCallback done) {
  return impl_->Request(std::move(call), std::move(done));
}

bool HttpClient::Cancel(RequestId id) { return impl_->Cancel(id); }

void HttpClient::Shutdown() { impl_->Shutdown(); }

std::size_t HttpClient::in_flight() const { return impl_->live.size(); }

std::size_t HttpClient::TEST_IdleConnections() const {
  std::size_t total = 0;
  for (const auto& pool : impl_->idle) total += pool.size();
  return total;
}

}  // namespace tenure::net
