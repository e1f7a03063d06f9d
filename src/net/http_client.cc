#include "net/http_client.h"

#include <sys/socket.h>

#include <algorithm>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <cerrno>
#include <chrono>
#include <map>
#include <optional>
#include <utility>

#include "common/strings.h"

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
  std::string message = ec.message();
  if (!message.empty()) message = AsciiLower(message.substr(0, 1)) + message.substr(1);
  return message;
}

// The server closed a kept-alive connection: safe to resend once when no byte
// of an answer came back.
bool IsStaleConnection(const boost::system::error_code& ec) {
  return ec == bhttp::error::end_of_stream || ec == asio::error::eof ||
         ec == asio::error::connection_reset || ec == asio::error::broken_pipe ||
         ec == asio::error::connection_aborted;
}

// One TCP connection to one address. Shared by the pool and by the handlers
// of the operations pending on it, so the stream, buffer and parser outlive
// every operation even after the request finished.
struct Conn {
  Conn(asio::io_context& io, std::size_t address_index) : stream(io), addr(address_index) {}
  beast::tcp_stream stream;
  beast::flat_buffer buffer;
  std::optional<bhttp::response_parser<bhttp::string_body>> parser;
  std::size_t addr;

  // Not closed by the server (FIN/RST show as readable) and no stray bytes.
  bool Usable() {
    if (!stream.socket().is_open()) return false;
    char byte;
    ssize_t n = ::recv(stream.socket().native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
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
    for (const std::string& text : options.addresses) {
      auto parsed = ParseHttpAddress(text);
      if (!parsed.ok()) {
        address_status = parsed.status();
        break;
      }
      addresses.push_back(std::move(parsed).value());
    }
    if (address_status.ok() && addresses.empty()) {
      address_status = Status::InvalidArgument("http client: no server address given");
    }
    if (address_status.ok() && !options.token_status.ok()) address_status = options.token_status;
    idle.resize(addresses.size());
    if (options.default_timeout_ms <= 0) options.default_timeout_ms = 30'000;
    if (options.connect_timeout_ms <= 0) options.connect_timeout_ms = 5'000;
  }

  static bool Stale(const CallPtr& call, unsigned gen) {
    return call->finished || call->gen != gen;
  }

  // "tenure at 127.0.0.1:8500": the agent a message is about.
  std::string Agent(const Call& call) const {
    return "tenure at " +
           (call.addr < addresses.size() ? addresses[call.addr].ToString() : std::string("?"));
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
      conn->stream.close();
    }
    Connect(call);
  }

  void Connect(const CallPtr& call) {
    const unsigned gen = ++call->gen;
    call->reused = false;
    call->conn = std::make_shared<Conn>(io, call->addr);
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
    auto remaining = std::chrono::duration_cast<Ms>(call->deadline - Clock::now());
    conn->stream.expires_after(
        std::max(Ms(1), std::min(remaining, Ms(options.connect_timeout_ms))));
    conn->stream.async_connect(
        endpoints,
        [this, call, conn, gen](const boost::system::error_code& ec, const tcp::endpoint&) {
          if (Stale(call, gen)) return;
          if (ec) return TransportError(call, "cannot reach " + Agent(*call) + ": " + Describe(ec));
          boost::system::error_code ignored;
          conn->stream.socket().set_option(tcp::no_delay(true), ignored);
          Send(call);
        });
  }

  void Send(const CallPtr& call) {
    std::shared_ptr<Conn> conn = call->conn;
    const unsigned gen = call->gen;
    conn->stream.expires_never();  // the call's deadline timer bounds it
    bhttp::async_write(conn->stream, call->request,
                       [this, call, conn, gen](const boost::system::error_code& ec, std::size_t) {
                         if (Stale(call, gen)) return;
                         if (ec) return Failed(call, ec, /*got_bytes=*/false);
                         call->written = true;
                         Receive(call);
                       });
  }

  void Receive(const CallPtr& call) {
    std::shared_ptr<Conn> conn = call->conn;
    const unsigned gen = call->gen;
    conn->parser.emplace();
    conn->parser->body_limit(kResponseBodyBytesMax);
    conn->parser->header_limit(kResponseHeaderBytesMax);
    bhttp::async_read(
        conn->stream, conn->buffer, *conn->parser,
        [this, call, conn, gen](const boost::system::error_code& ec, std::size_t) {
          if (Stale(call, gen)) return;
          if (ec) return Failed(call, ec, conn->parser->got_some() || conn->buffer.size() > 0);
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
            conn->stream.close();
          }
          if (response.status != 500) return Finish(call, std::move(response));
          call->last_error =
              Status::Unavailable(Agent(*call) + " answered " + What(*call) + " with HTTP 500");
          call->last_500 = std::move(response);
          RetryOrFinish(call);
        });
  }

  void Failed(const CallPtr& call, const boost::system::error_code& ec, bool got_bytes) {
    if (call->reused && !call->stale_resent && !got_bytes && IsStaleConnection(ec)) {
      call->stale_resent = true;
      call->conn->stream.close();
      return Connect(call);
    }
    TransportError(call, "connection to " + Agent(*call) + " failed: " + Describe(ec));
  }

  void TransportError(const CallPtr& call, std::string message) {
    if (call->conn) call->conn->stream.close();
    call->conn.reset();
    call->last_500.reset();
    call->last_error = Status::Unavailable(std::move(message));
    RetryOrFinish(call);
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
    if (call->last_500) return Finish(call, std::move(*call->last_500));
    std::string attempts = call->retries == 0
                               ? std::string()
                               : " (" + std::to_string(call->retries + 1) + " attempts)";
    Status error = call->last_error;
    Finish(call, Flag(*call, Status(error.code(), std::string(error.message()) + attempts)));
  }

  void Release(std::shared_ptr<Conn> conn) {
    auto& pool = idle[conn->addr];
    if (shut_down || pool.size() >= options.max_idle_per_address) {
      conn->stream.close();
      return;
    }
    pool.push_back(std::move(conn));
  }

  // The last thing a path does: `done` may re-enter the client.
  void Finish(CallPtr call, Result<ClientResponse> result) {
    call->finished = true;
    live.erase(call->id);
    call->deadline_timer.cancel();
    call->backoff_timer.cancel();
    call->resolver.cancel();
    if (call->conn) call->conn->stream.close();
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
      for (auto& conn : pool) conn->stream.close();
      pool.clear();
    }
  }

  asio::io_context& io;
  HttpClientOptions options;
  std::vector<HttpAddress> addresses;
  Status address_status;
  std::vector<std::vector<std::shared_ptr<Conn>>> idle;  // per address
  std::map<RequestId, CallPtr> live;
  RequestId next_id = 1;
  std::size_t preferred = 0;
  bool shut_down = false;
};

HttpClient::HttpClient(boost::asio::io_context& io, HttpClientOptions options)
    : impl_(std::make_unique<Impl>(io, std::move(options))) {}

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
