// HttpServer speaking HTTP/2 over real loopback sockets (decision 0053): an
// nghttp2 client session (h2_client.h) against the real listener, and raw
// frames for what a client session would never send. Consul-style requests,
// gRPC streams through a StreamRouter and the default answer without one,
// the limits (streams, rapid resets, garbage, PING, idle, unsent output),
// HTTP/1.1 on the same listener, ALPN over TLS, and GOAWAY on Stop.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/ssl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <boost/asio/post.hpp>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/limits.h"
#include "listen/server.h"
#include "listen/stream.h"
#include "tls/context.h"
#include "unit/listen/h2_client.h"
#include "unit/listen/raw_client.h"
#include "unit/tls/test_certs.h"

namespace tenure::listen {
namespace {

using std::chrono::milliseconds;
using testing::FindGoAway;
using testing::H2Client;
using testing::H2Frame;
using testing::kH2Preface;
using testing::RawClient;
using testing::TestServer;
using testing::WaitFor;

constexpr std::uint32_t kProtocolError = 0x1;
constexpr std::uint32_t kRefusedStream = 0x7;
constexpr std::uint32_t kEnhanceYourCalm = 0xb;

// "/big?n=N" answers N bytes; "/shared" a shared answer; anything else
// echoes "METHOD path token body".
RequestHandler Echo() {
  return [](HttpRequest request, std::shared_ptr<Responder> responder) {
    if (request.path == "/big") {
      const auto n = std::stoul(std::string(request.Query("n").value_or("0")));
      responder->Send(HttpResponse::Text(200, std::string(n, 'x')));
      return;
    }
    if (request.path == "/shared") {
      auto answer = std::make_shared<SharedAnswer>();
      answer->response = HttpResponse::Json("{\"shared\":true}");
      answer->response.headers.emplace_back("X-Consul-Index", "7");
      responder->SendShared(std::move(answer));
      return;
    }
    HttpResponse response =
        HttpResponse::Json(request.method + " " + request.path + " " +
                           std::string(request.TokenHeader()) + " " + request.body);
    response.headers.emplace_back("X-Consul-Index", "42");
    response.headers.emplace_back("Connection", "keep-alive");  // dropped over HTTP/2
    responder->Send(std::move(response));
  };
}

int Connect(std::uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    ::close(fd);
    return -1;
  }
  // Frames are written one by one: Nagle would hold each behind an ACK.
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

// A connected socket, closed at the end of the test.
struct Socket {
  explicit Socket(std::uint16_t port) : fd(Connect(port)) {}
  ~Socket() {
    if (fd >= 0) ::close(fd);
  }
  int fd;
};

// Everything the server sends until it closes (or `timeout`).
std::string ReadUntilClosed(int fd, milliseconds timeout = milliseconds(5000)) {
  std::string received;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  char buffer[65536];
  for (;;) {
    const auto left =
        std::chrono::duration_cast<milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return received;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
    const ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
    if (n <= 0) return received;
    received.append(buffer, static_cast<std::size_t>(n));
  }
}

bool SendAll(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n <= 0) return false;
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

HttpServerOptions H2Options() {
  HttpServerOptions options = TestServer::Options();
  options.http2 = true;
  return options;
}

// A router that echoes each gRPC stream: what arrives is consumed as it is
// read, and sent back whole with trailers once the client ends. Its OnData
// is set a loop turn after the stream arrives, so bytes that came first
// wait for it.
struct EchoRouter {
  std::atomic<int> streams{0};
  std::mutex mutex;
  std::string path;
  std::string te;
  std::vector<std::shared_ptr<Stream>> held;  // hold=true: kept open, unanswered
  bool hold = false;

  StreamRouter Router(boost::asio::io_context* io) {
    return [this, io](std::shared_ptr<Stream> stream) {
      ++streams;
      {
        std::lock_guard lock(mutex);
        path = stream->request().path;
        te = std::string(stream->request().Header("te").value_or(""));
        if (hold) {
          held.push_back(stream);
          return;
        }
      }
      boost::asio::post(*io, [stream] {
        auto echoed = std::make_shared<std::string>();
        stream->OnData([stream, echoed](std::string_view data, bool end) {
          echoed->append(data);
          stream->Consume(data.size());
          if (!end) return;
          stream->SendHeaders(200, {{"content-type", "application/grpc"}});
          stream->SendData(*echoed);
          stream->SendTrailers({{"grpc-status", "0"}});
        });
      });
    };
  }
};

// An HTTP/2 listener whose router is `echo`'s, on a TestServer's loop (the
// router posts to that loop); stopped on the loop at the end.
struct RoutedServer {
  RoutedServer(EchoRouter* router, HttpServerOptions options)
      : host(Echo(), H2Options()), echo(router) {
    options.stream_router = router->Router(&host.io());
    server = std::make_unique<HttpServer>(host.io(), Echo());
    status = host.OnLoop([&] { return server->Listen(options); });
    port = host.OnLoop([&] { return server->port(); });
  }
  ~RoutedServer() {
    host.OnLoop([&] {
      {
        std::lock_guard lock(echo->mutex);
        echo->held.clear();
      }
      server->Stop();
      server.reset();
      return 0;
    });
  }
  std::size_t connection_count() {
    return host.OnLoop([&] { return server->connection_count(); });
  }

  TestServer host;
  EchoRouter* echo;
  std::unique_ptr<HttpServer> server;
  Status status;
  std::uint16_t port = 0;
};

TEST(Http2Test, ConsulStyleRequestsAreServedOverHttp2) {
  TestServer server(Echo(), H2Options());
  ASSERT_TRUE(server.listen_status().ok());
  Socket socket(server.port());
  ASSERT_GE(socket.fd, 0);
  H2Client client(socket.fd);
  const auto put =
      client.Submit("PUT", "/v1/kv/a%20b?cas=0", {{"x-consul-token", "secret"}}, "hello");
  const auto big = client.Submit("GET", "/big?n=300000");
  const auto shared = client.Submit("GET", "/shared");
  const auto head = client.Submit("HEAD", "/big?n=10");
  ASSERT_TRUE(client.Pump([&] {
    return client.results[put].closed && client.results[big].closed &&
           client.results[shared].closed && client.results[head].closed;
  }));
  const auto& answer = client.results[put];
  EXPECT_EQ(answer.status, 200);
  EXPECT_EQ(answer.data, "PUT /v1/kv/a b secret hello");
  EXPECT_EQ(answer.Header("content-type"), "application/json");
  EXPECT_EQ(answer.Header("x-consul-index"), "42");
  EXPECT_EQ(answer.Header("content-length"), "27");
  EXPECT_FALSE(answer.Header("connection").has_value());
  EXPECT_TRUE(answer.Header("date").has_value());
  EXPECT_EQ(client.results[big].data, std::string(300000, 'x'));  // past the 64 KiB windows
  EXPECT_EQ(client.results[shared].data, "{\"shared\":true}");
  EXPECT_EQ(client.results[shared].Header("x-consul-index"), "7");
  EXPECT_EQ(client.results[head].data, "");
  EXPECT_EQ(client.results[head].Header("content-length"), "10");
  EXPECT_EQ(client.results[head].error, 0u);
}

TEST(Http2Test, AGrpcStreamGoesToTheRouterWithFlowControlGivenBackAsConsumed) {
  EchoRouter echo;
  RoutedServer routed(&echo, H2Options());
  ASSERT_TRUE(routed.status.ok());
  const std::uint16_t port = routed.port;
  Socket socket(port);
  H2Client client(socket.fd);
  // 3 MiB: three times the stream's window, so it flows only if consumed.
  const std::string body(3 * 1024 * 1024, 'g');
  const auto id = client.Submit("POST", "/etcdserverpb.KV/Range",
                                {{"content-type", "application/grpc"}, {"te", "trailers"}}, body);
  ASSERT_TRUE(client.Pump([&] { return client.results[id].closed; }, milliseconds(20000)));
  const auto& result = client.results[id];
  EXPECT_EQ(result.status, 200);
  EXPECT_EQ(result.error, 0u);
  EXPECT_EQ(result.data.size(), body.size());
  EXPECT_TRUE(result.data == body);
  EXPECT_EQ(result.Header("grpc-status"), "0");
  ASSERT_EQ(result.trailers.size(), 1u);  // grpc-status came as trailers, after the data
  EXPECT_EQ(echo.streams.load(), 1);
  std::lock_guard lock(echo.mutex);
  EXPECT_EQ(echo.path, "/etcdserverpb.KV/Range");
  EXPECT_EQ(echo.te, "trailers");
}

// An owner that does not consume holds its client to the stream's window;
// what it consumes lets the rest come, and unsent_bytes/OnDrained pace its
// answer.
TEST(Http2Test, AClientFasterThanItsStreamsOwnerIsHeldByFlowControl) {
  EchoRouter echo;
  echo.hold = true;
  RoutedServer routed(&echo, H2Options());
  Socket socket(routed.port);
  H2Client client(socket.fd);
  const std::size_t window = limits::kHttp2StreamWindowBytes;
  const auto id = client.Submit("POST", "/s", {{"content-type", "application/grpc"}},
                                std::string(2 * window, 'd'), true);
  ASSERT_TRUE(client.Pump([&] { return echo.streams.load() == 1; }));
  std::shared_ptr<Stream> stream;
  auto received = std::make_shared<std::size_t>(0);
  auto ended = std::make_shared<bool>(false);
  routed.host.OnLoop([&] {
    std::lock_guard lock(echo.mutex);
    stream = echo.held.front();
    stream->OnData([received, ended](std::string_view data, bool end) {
      *received += data.size();
      *ended = *ended || end;
    });
    return 0;
  });
  auto seen = [&] { return routed.host.OnLoop([&] { return *received; }); };
  // The client sends until the window is spent, and no further.
  ASSERT_TRUE(client.Pump([&] { return seen() == window; }));
  client.Pump([] { return false; }, milliseconds(200));
  EXPECT_EQ(seen(), window);
  routed.host.OnLoop([&] {
    stream->Consume(window);
    return 0;
  });
  ASSERT_TRUE(client.Pump([&] { return routed.host.OnLoop([&] { return *ended; }); }));
  EXPECT_EQ(seen(), 2 * window);
  // An answer larger than the client's window waits in unsent_bytes, and
  // OnDrained tells when it has gone.
  auto drained = std::make_shared<std::atomic<bool>>(false);
  const std::size_t queued = routed.host.OnLoop([&] {
    stream->OnDrained([drained] { *drained = true; });
    stream->SendData(std::string(200 * 1024, 'a'));
    return stream->unsent_bytes();
  });
  EXPECT_GT(queued, 0u);
  ASSERT_TRUE(client.Pump([&] { return drained->load(); }));
  routed.host.OnLoop([&] {
    stream->SendTrailers({{"grpc-status", "0"}});
    return 0;
  });
  ASSERT_TRUE(client.Pump([&] { return client.results[id].closed; }));
  EXPECT_EQ(client.results[id].data.size(), 200u * 1024);
  EXPECT_TRUE(routed.host.OnLoop([&] { return stream->closed(); }));
}

TEST(Http2Test, WithoutARouterAGrpcStreamIsAnsweredUnimplementedTrailersOnly) {
  TestServer server(Echo(), H2Options());
  Socket socket(server.port());
  H2Client client(socket.fd);
  const auto id = client.Submit("POST", "/etcdserverpb.KV/Put",
                                {{"content-type", "application/grpc+proto"}}, "\0\0\0\0\0", true);
  ASSERT_TRUE(client.Pump([&] { return client.results[id].closed; }));
  const auto& result = client.results[id];
  EXPECT_EQ(result.status, 200);
  EXPECT_EQ(result.header_blocks, 1);  // trailers-only: one HEADERS that ends the stream
  EXPECT_EQ(result.data, "");
  EXPECT_EQ(result.Header("content-type"), "application/grpc");
  EXPECT_EQ(result.Header("grpc-status"), "12");
  EXPECT_EQ(result.Header("grpc-message"), "tenure: gRPC is not served on this port");
}

// Streams sent before the client read the server's SETTINGS: those past
// the cap are refused (REFUSED_STREAM), the others served.
TEST(Http2Test, StreamsPastTheCapAreRefused) {
  EchoRouter echo;
  echo.hold = true;
  HttpServerOptions options = H2Options();
  options.TEST_http2_streams_max = 2;
  RoutedServer routed(&echo, options);
  ASSERT_TRUE(routed.status.ok());
  Socket socket(routed.port);
  H2Client client(socket.fd);
  std::vector<std::int32_t> ids;
  for (int i = 0; i < 4; ++i) {
    ids.push_back(client.Submit("POST", "/s", {{"content-type", "application/grpc"}}, "", false));
  }
  ASSERT_TRUE(client.Flush());  // all four before anything is read
  ASSERT_TRUE(
      client.Pump([&] { return client.results[ids[2]].closed && client.results[ids[3]].closed; }));
  EXPECT_EQ(client.results[ids[2]].error, kRefusedStream);
  EXPECT_EQ(client.results[ids[3]].error, kRefusedStream);
  EXPECT_FALSE(client.results[ids[0]].closed);
  EXPECT_FALSE(client.results[ids[1]].closed);
  EXPECT_TRUE(WaitFor([&] { return echo.streams.load() == 2; }));
}

// A request header block: GET / over http (HPACK static table entries) to
// :authority localhost (a literal, not indexed).
constexpr std::string_view kGetRoot = "\x82\x86\x84\x01\x09localhost";

TEST(Http2Test, RapidResetsEndTheConnectionWithEnhanceYourCalm) {
  TestServer server(Echo(), H2Options());
  Socket socket(server.port());
  std::string frames(kH2Preface);
  frames += H2Frame(0x4, 0, 0, "");  // SETTINGS
  const std::string cancel("\0\0\0\x08", 4);
  for (std::uint32_t i = 0; i < 1100; ++i) {
    const std::uint32_t id = 2 * i + 1;
    frames += H2Frame(0x1, 0x4, id, kGetRoot);  // HEADERS, END_HEADERS (no END_STREAM)
    frames += H2Frame(0x3, 0, id, cancel);      // RST_STREAM CANCEL
  }
  ASSERT_TRUE(SendAll(socket.fd, frames));
  const std::string received = ReadUntilClosed(socket.fd);
  EXPECT_EQ(FindGoAway(received), kEnhanceYourCalm);
}

TEST(Http2Test, GarbageAfterThePrefaceIsAProtocolError) {
  TestServer server(Echo(), H2Options());
  Socket socket(server.port());
  ASSERT_TRUE(SendAll(socket.fd, std::string(kH2Preface) + "this is not HTTP/2 at all"));
  const std::string received = ReadUntilClosed(socket.fd);
  EXPECT_EQ(FindGoAway(received), kProtocolError);
}

TEST(Http2Test, Http11StillWorksOnTheSameListenerAndThePrefaceIsRefusedWhenOff) {
  TestServer server(Echo(), H2Options());
  RawClient http11(server.port());
  ASSERT_TRUE(http11.Send("GET /v1/kv/x HTTP/1.1\r\nHost: t\r\n\r\n"));
  auto response = http11.ReadResponse();
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->status, 200);
  EXPECT_EQ(response->body, "GET /v1/kv/x  ");
  // The preface's first bytes arriving alone still wait for the rest.
  RawClient slow(server.port());
  ASSERT_TRUE(slow.Send("GET /v1/kv/y HT"));
  ASSERT_TRUE(slow.Send("TP/1.1\r\nHost: t\r\n\r\n"));
  response = slow.ReadResponse();
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->body, "GET /v1/kv/y  ");

  TestServer off(Echo());  // http2 false: the preface is a bad HTTP/1.1 request
  RawClient refused(off.port());
  ASSERT_TRUE(refused.Send(std::string(kH2Preface)));
  response = refused.ReadResponse();
  ASSERT_TRUE(response.has_value());
  EXPECT_GE(response->status, 400);
}

TEST(Http2Test, ASilentClientWithOpenStreamsIsPingedThenClosed) {
  EchoRouter echo;
  echo.hold = true;
  HttpServerOptions options = H2Options();
  options.TEST_http2_ping_after_ms = 150;
  options.TEST_http2_ping_timeout_ms = 150;
  RoutedServer routed(&echo, options);
  ASSERT_TRUE(routed.status.ok());
  Socket socket(routed.port);
  H2Client client(socket.fd);
  client.Submit("POST", "/s", {{"content-type", "application/grpc"}}, "", false);
  // A client that answers its PINGs stays.
  ASSERT_TRUE(client.Pump([&] { return client.pings >= 3; }));
  EXPECT_FALSE(client.eof);
  // One that stops answering is closed.
  const auto stopped = std::chrono::steady_clock::now();
  (void)ReadUntilClosed(socket.fd, milliseconds(5000));
  EXPECT_LT(std::chrono::steady_clock::now() - stopped, milliseconds(4000));
  EXPECT_TRUE(WaitFor([&] { return routed.connection_count() == 0; }));
}

TEST(Http2Test, AnIdleConnectionIsClosedWithGoAway) {
  HttpServerOptions options = H2Options();
  options.TEST_idle_timeout_ms = 200;
  TestServer server(Echo(), options);
  Socket socket(server.port());
  H2Client client(socket.fd);
  const auto id = client.Submit("GET", "/v1/kv/x");
  ASSERT_TRUE(client.Pump([&] { return client.results[id].closed; }));
  ASSERT_TRUE(client.Pump([&] { return client.eof; }));
  EXPECT_EQ(client.goaway, 0u);  // NO_ERROR
}

TEST(Http2Test, StopSendsGoAway) {
  TestServer server(Echo(), H2Options());
  Socket socket(server.port());
  H2Client client(socket.fd);
  const auto id = client.Submit("GET", "/v1/kv/x");
  ASSERT_TRUE(client.Pump([&] { return client.results[id].closed; }));
  server.OnLoop([&] {
    server.server().Stop();
    return 0;
  });
  ASSERT_TRUE(client.Pump([&] { return client.goaway.has_value(); }));
  EXPECT_EQ(client.goaway, 0u);
}

// Request bodies being assembled on one connection are bounded: past the
// bound a stream is refused (REFUSED_STREAM, retried by clients); the
// others, and a body over the usual limit (413), are answered.
TEST(Http2Test, RequestBodiesInFlightOnAConnectionAreBounded) {
  TestServer server(Echo(), H2Options());
  Socket socket(server.port());
  H2Client client(socket.fd);
  const std::size_t body = limits::kHttpBodyBytesMax;  // the most one request may send
  const auto over = client.Submit("PUT", "/v1/kv/over", {}, std::string(body + 1, 'o'));
  ASSERT_TRUE(client.Pump([&] { return client.results[over].closed; }, milliseconds(20000)));
  EXPECT_EQ(client.results[over].status, 413);
  std::vector<std::int32_t> ids;
  const std::size_t count = limits::kHttp2RequestBodiesBytesMax / body + 8;
  for (std::size_t i = 0; i < count; ++i) {
    // Ended later: every body is in flight at once.
    ids.push_back(client.Submit("PUT", "/v1/kv/b", {}, std::string(body - 1, 'b'), false));
  }
  for (const auto id : ids) client.SendData(id, "b", true);
  ASSERT_TRUE(client.Pump(
      [&] {
        for (const auto id : ids) {
          if (!client.results[id].closed) return false;
        }
        return true;
      },
      milliseconds(20000)));
  std::size_t refused = 0;
  std::size_t answered = 0;
  for (const auto id : ids) {
    if (client.results[id].error == kRefusedStream) ++refused;
    if (client.results[id].status == 200) ++answered;
  }
  EXPECT_GT(refused, 0u);
  EXPECT_GE(answered, limits::kHttp2RequestBodiesBytesMax / body - 1);
  EXPECT_EQ(refused + answered, count);
}

// SETTINGS_MAX_HEADER_LIST_SIZE is HTTP/1.1's header limit; a larger
// header list is answered 431 as over HTTP/1.1, and the connection goes on.
TEST(Http2Test, AHeaderListPastTheLimitIs431) {
  TestServer server(Echo(), H2Options());
  Socket socket(server.port());
  H2Client client(socket.fd);
  const std::string half(40'000, 'h');
  const auto large = client.Submit("GET", "/v1/kv/x", {{"x-a", half}, {"x-b", half}});
  const auto small = client.Submit("GET", "/v1/kv/y", {{"x-a", half}});
  ASSERT_TRUE(
      client.Pump([&] { return client.results[large].closed && client.results[small].closed; }));
  EXPECT_EQ(client.results[large].status, 431) << "reset with " << client.results[large].error;
  EXPECT_EQ(client.results[small].status, 200);
}

TEST(Http2Test, ALargeAnswerPastTheUnsentBudgetIs429) {
  HttpServerOptions options = H2Options();
  options.TEST_unsent_bytes_max = 100 * 1024;
  TestServer server(Echo(), options);
  Socket socket(server.port());
  H2Client client(socket.fd);
  const auto id = client.Submit("GET", "/big?n=200000");
  ASSERT_TRUE(client.Pump([&] { return client.results[id].closed; }));
  EXPECT_EQ(client.results[id].status, 429);
}

// --- ALPN over TLS ---------------------------------------------------------------

testutil::TestPki& Pki() {
  static testutil::TestPki* pki = testutil::NewProcessPki();
  return *pki;
}

// A TLS client connection offering `alpn` (wire format, "" for none).
struct TlsConnection {
  TlsConnection(std::uint16_t port, std::string_view alpn) : socket(port) {
    tls::ClientFiles files;
    files.ca_file = Pki().ca.cert_file;
    context = *tls::Context::ForClient(files);
    ssl = SSL_new(context->raw());
    SSL_set_fd(ssl, socket.fd);
    SSL_set_tlsext_host_name(ssl, "localhost");
    if (!alpn.empty()) {
      SSL_set_alpn_protos(ssl, reinterpret_cast<const unsigned char*>(alpn.data()),
                          static_cast<unsigned int>(alpn.size()));
    }
    timeval timeout{5, 0};
    ::setsockopt(socket.fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
    connected = SSL_connect(ssl) == 1;
  }
  ~TlsConnection() { SSL_free(ssl); }
  std::string Selected() const {
    const unsigned char* data = nullptr;
    unsigned int size = 0;
    SSL_get0_alpn_selected(ssl, &data, &size);
    return std::string(reinterpret_cast<const char*>(data), size);
  }
  // One HTTP/1.1 GET over TLS: its response's status line.
  std::string Http11Get() {
    const std::string request = "GET /v1/kv/x HTTP/1.1\r\nHost: t\r\n\r\n";
    if (SSL_write(ssl, request.data(), static_cast<int>(request.size())) <= 0) return "";
    char buffer[4096];
    const int n = SSL_read(ssl, buffer, sizeof buffer);
    if (n <= 0) return "";
    const std::string received(buffer, static_cast<std::size_t>(n));
    return received.substr(0, received.find("\r\n"));
  }

  Socket socket;
  std::shared_ptr<const tls::Context> context;
  SSL* ssl = nullptr;
  bool connected = false;
};

constexpr std::string_view kOfferBoth("\x02h2\x08http/1.1", 12);
constexpr std::string_view kOfferHttp11("\x08http/1.1", 9);

TEST(Http2Test, AlpnChoosesHttp2OverTlsWhereServed) {
  auto context = tls::Context::ForServer(
      {Pki().server.cert_file, Pki().server.key_file, Pki().ca.cert_file, false});
  ASSERT_TRUE(context.ok());
  HttpServerOptions options = H2Options();
  options.tls = *context;
  TestServer server(Echo(), options);
  {
    TlsConnection h2(server.port(), kOfferBoth);
    ASSERT_TRUE(h2.connected);
    EXPECT_EQ(h2.Selected(), "h2");
    H2Client client(h2.socket.fd, h2.ssl);
    const auto id = client.Submit("GET", "/v1/kv/tls");
    ASSERT_TRUE(client.Pump([&] { return client.results[id].closed; }));
    EXPECT_EQ(client.results[id].data, "GET /v1/kv/tls  ");
  }
  {
    TlsConnection http11(server.port(), kOfferHttp11);
    ASSERT_TRUE(http11.connected);
    EXPECT_EQ(http11.Selected(), "http/1.1");
    EXPECT_EQ(http11.Http11Get(), "HTTP/1.1 200 OK");
  }
  {
    TlsConnection none(server.port(), "");
    ASSERT_TRUE(none.connected);
    EXPECT_EQ(none.Selected(), "");
    EXPECT_EQ(none.Http11Get(), "HTTP/1.1 200 OK");
  }
  // A listener without HTTP/2 never chooses h2.
  HttpServerOptions plain = TestServer::Options();
  plain.tls = *context;
  TestServer consul(Echo(), plain);
  TlsConnection offered(consul.port(), kOfferBoth);
  ASSERT_TRUE(offered.connected);
  EXPECT_EQ(offered.Selected(), "http/1.1");
  EXPECT_EQ(offered.Http11Get(), "HTTP/1.1 200 OK");
}

}  // namespace
}  // namespace tenure::listen
