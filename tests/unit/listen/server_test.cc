// HttpServer over real loopback sockets: framing, keep-alive, limits,
// timeouts and parked requests. The server runs on its own thread; the test
// talks raw HTTP/1.1 from the test thread (raw_client.h).
#include "listen/server.h"

#include <gtest/gtest.h>

#include <future>
#include <memory>
#include <mutex>
#include <stdexcept>

#include "common/limits.h"
#include "unit/listen/raw_client.h"

namespace tenure::listen {
namespace {

using std::chrono::milliseconds;
using testing::RawClient;
using testing::RawResponse;
using testing::TestServer;
using testing::WaitFor;

constexpr char kGet[] = "GET /v1/kv/x HTTP/1.1\r\nHost: t\r\n\r\n";

// What the handler saw and kept. Requests are copied under a mutex; parked
// Responders are touched only on the loop thread.
struct Recorder {
  std::mutex mutex;
  std::vector<HttpRequest> requests;
  std::vector<std::shared_ptr<Responder>> parked;
  std::atomic<int> parked_count{0};
  std::atomic<int> closed_count{0};

  HttpRequest Last() {
    std::lock_guard lock(mutex);
    return requests.empty() ? HttpRequest{} : requests.back();
  }
};

// "/park" keeps the Responder; "/drop" forgets it; "/throw" throws;
// "/big?n=N" answers N bytes; anything else echoes "METHOD path body".
RequestHandler MakeHandler(Recorder* recorder) {
  return [recorder](HttpRequest request, std::shared_ptr<Responder> responder) {
    {
      std::lock_guard lock(recorder->mutex);
      recorder->requests.push_back(request);
    }
    if (request.path == "/park") {
      responder->OnClose([recorder] { ++recorder->closed_count; });
      recorder->parked.push_back(std::move(responder));
      ++recorder->parked_count;
      return;
    }
    if (request.path == "/drop") return;
    if (request.path == "/throw") throw std::runtime_error("boom");
    if (request.path == "/big") {
      const auto n = std::stoul(std::string(request.Query("n").value_or("0")));
      responder->Send(HttpResponse::Text(200, std::string(n, 'x')));
      return;
    }
    responder->Send(HttpResponse::Json(request.method + " " + request.path + " " + request.body));
  };
}

class HttpServerTest : public ::testing::Test {
 protected:
  // Responders are asio-bound: drop the parked ones before the io_context goes.
  void TearDown() override {
    if (server_ == nullptr) return;
    server_->OnLoop([&] { recorder_.parked.clear(); });
    server_.reset();
  }

  void Start(HttpServerOptions options = TestServer::Options()) {
    server_ = std::make_unique<TestServer>(MakeHandler(&recorder_), options);
    ASSERT_TRUE(server_->listen_status().ok()) << server_->listen_status().ToString();
    ASSERT_NE(server_->port(), 0);
  }

  std::unique_ptr<RawClient> Connect(const char* source = nullptr) {
    auto client = std::make_unique<RawClient>(server_->port(), source);
    EXPECT_TRUE(client->connected());
    return client;
  }

  // One GET on a fresh connection; the response or a failed expectation.
  RawResponse GetOnNewConnection() {
    auto client = Connect();
    EXPECT_TRUE(client->Send(kGet));
    auto response = client->ReadResponse();
    EXPECT_TRUE(response.has_value());
    return response.value_or(RawResponse{});
  }

  // Answers parked request `index` from the loop thread.
  void AnswerParked(std::size_t index, HttpResponse response) {
    server_->OnLoop([&] { recorder_.parked.at(index)->Send(std::move(response)); });
  }

  Recorder recorder_;
  std::unique_ptr<TestServer> server_;
};

TEST_F(HttpServerTest, KeepAliveServesTwoRequestsOnOneConnection) {
  Start();
  auto client = Connect();
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(client->Send("PUT /v1/kv/k HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\nhello"));
    auto response = client->ReadResponse();
    ASSERT_TRUE(response.has_value());
    EXPECT_EQ(response->status, 200);
    EXPECT_EQ(response->body, "PUT /v1/kv/k hello");
    EXPECT_EQ(response->Header("content-type"), "application/json");
    EXPECT_FALSE(response->Header("connection").has_value());
    EXPECT_TRUE(response->Header("date").has_value());
  }
  EXPECT_EQ(server_->connection_count(), 1u);
}

TEST_F(HttpServerTest, RequestFieldsAreDecodedAndHeadersLowerCased) {
  Start();
  auto client = Connect();
  ASSERT_TRUE(
      client->Send("GET /v1/kv/a%20b+c?recurse&wait=1s&x=1+2&y=%2F HTTP/1.1\r\nHost: t\r\n"
                   "X-Consul-Token: Secret\r\n\r\n"));
  ASSERT_TRUE(client->ReadResponse().has_value());
  const HttpRequest request = recorder_.Last();
  EXPECT_EQ(request.method, "GET");
  EXPECT_EQ(request.target, "/v1/kv/a%20b+c?recurse&wait=1s&x=1+2&y=%2F");
  EXPECT_EQ(request.path, "/v1/kv/a b+c");
  EXPECT_EQ(request.raw_query, "recurse&wait=1s&x=1+2&y=%2F");
  EXPECT_EQ(request.query, (std::vector<std::pair<std::string, std::string>>{
                               {"recurse", ""}, {"wait", "1s"}, {"x", "1 2"}, {"y", "/"}}));
  EXPECT_EQ(request.Header("X-Consul-Token"), "Secret");
  bool saw_lower = false;
  for (const auto& [name, value] : request.headers) saw_lower |= name == "x-consul-token";
  EXPECT_TRUE(saw_lower);
  EXPECT_GT(request.received_ms, MonoMs(0));
}

TEST_F(HttpServerTest, RequestFollowedByHalfCloseIsAnsweredAndClosed) {
  Start();
  auto client = Connect();
  ASSERT_TRUE(client->Send(kGet));
  ASSERT_EQ(::shutdown(client->fd(), SHUT_WR), 0);  // FIN right behind the request
  auto response = client->ReadResponse();
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->status, 200);
  EXPECT_TRUE(client->WaitClosed(milliseconds(2000)));  // not after the idle timeout
}

// After a read shorter than its buffer a connection waits for the next
// edge instead of reading again (Connection::ReceiveUnlessDrained): the
// client's end of the stream after an answer, and the rest of a request
// sent in pieces, must reach it all the same.
TEST_F(HttpServerTest, HalfCloseAfterAnAnswerClosesTheConnection) {
  Start();
  auto client = Connect();
  ASSERT_TRUE(client->Send(kGet));
  ASSERT_TRUE(client->ReadResponse().has_value());
  ASSERT_EQ(::shutdown(client->fd(), SHUT_WR), 0);
  EXPECT_TRUE(client->WaitClosed(milliseconds(2000)));  // not after the idle timeout
}

TEST_F(HttpServerTest, AnEndOfStreamThatCameWithTheRequestIsSeen) {
  Start();
  auto client = Connect();
  ASSERT_TRUE(WaitFor([&] { return server_->connection_count() == 1; }));
  // The loop held while the request and the FIN both arrive, so that one
  // readiness report carries both: the FIN's edge is spent with it, and
  // only the report's EPOLLRDHUP tells that the short read did not drain.
  std::promise<void> entered;
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  boost::asio::post(server_->io(), [&entered, released] {
    entered.set_value();
    released.wait();
  });
  entered.get_future().wait();
  const bool sent = client->Send(kGet);
  const int shut = ::shutdown(client->fd(), SHUT_WR);
  release.set_value();  // before any ASSERT: the loop must not stay held
  ASSERT_TRUE(sent);
  ASSERT_EQ(shut, 0);
  auto response = client->ReadResponse();
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->status, 200);
  EXPECT_TRUE(client->WaitClosed(milliseconds(2000)));  // not after the idle timeout
}

TEST_F(HttpServerTest, ARequestSentInPiecesIsAnsweredOnceWhole) {
  Start();
  auto client = Connect();
  const std::string request = "PUT /pieces HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\nhello";
  for (std::size_t at = 0; at < request.size(); at += 7) {
    ASSERT_TRUE(client->Send(request.substr(at, 7)));
  }
  auto response = client->ReadResponse();
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->status, 200);
  EXPECT_EQ(recorder_.Last().body, "hello");
  ASSERT_TRUE(client->Send(kGet));  // and the connection serves the next one
  ASSERT_TRUE(client->ReadResponse().has_value());
}

TEST_F(HttpServerTest, PipelinedRequestsAreAnsweredInOrder) {
  Start();
  auto client = Connect();
  std::string batch;
  for (int i = 0; i < 20; ++i) {
    batch += "PUT /p" + std::to_string(i) + " HTTP/1.1\r\nHost: t\r\nContent-Length: 1\r\n\r\nx";
  }
  ASSERT_TRUE(client->Send(batch));
  for (int i = 0; i < 20; ++i) {
    auto response = client->ReadResponse();
    ASSERT_TRUE(response.has_value()) << i;
    EXPECT_EQ(response->body, "PUT /p" + std::to_string(i) + " x");
  }
}

TEST_F(HttpServerTest, RequestSplitIntoTinyPiecesIsReassembled) {
  Start();
  auto client = Connect();
  const std::string request = "PUT /v1/kv/slow HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\n\r\nabc";
  for (char c : request) {
    ASSERT_TRUE(client->Send(std::string_view(&c, 1)));
    if (c == '\n') std::this_thread::sleep_for(milliseconds(1));  // separate segments
  }
  auto response = client->ReadResponse();
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->body, "PUT /v1/kv/slow abc");
}

TEST_F(HttpServerTest, ChunkedBodyIsReassembled) {
  Start();
  auto client = Connect();
  ASSERT_TRUE(
      client->Send("PUT /v1/txn HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"
                   "5\r\nhello\r\n"));
  ASSERT_TRUE(client->Send("1;ext=1\r\n \r\n6\r\nworld!\r\n0\r\n\r\n"));
  auto response = client->ReadResponse();
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->status, 200);
  EXPECT_EQ(response->body, "PUT /v1/txn hello world!");
  // The connection stays usable.
  ASSERT_TRUE(client->Send(kGet));
  ASSERT_TRUE(client->ReadResponse().has_value());
}

TEST_F(HttpServerTest, BodyAtTheLimitIsAccepted) {
  Start();
  auto client = Connect();
  const std::string body(limits::kHttpBodyBytesMax, 'v');
  ASSERT_TRUE(client->Send("PUT /v1/kv/big HTTP/1.1\r\nHost: t\r\nContent-Length: " +
                           std::to_string(body.size()) + "\r\n\r\n" + body));
  auto response = client->ReadResponse();
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->status, 200);
  EXPECT_EQ(recorder_.Last().body.size(), limits::kHttpBodyBytesMax);
}

TEST_F(HttpServerTest, OversizedContentLengthGets413WithoutTheBody) {
  Start();
  auto client = Connect();
  // Only the head is sent: the answer must not wait for the body.
  ASSERT_TRUE(
      client->Send("PUT /v1/kv/big HTTP/1.1\r\nHost: t\r\nContent-Length: 10000000\r\n\r\n"));
  auto response = client->ReadResponse();
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->status, 413);
  EXPECT_EQ(response->body,
            "Request body(10000000 bytes) too large, max size: 524288 bytes. See "
            "https://developer.hashicorp.com/consul/docs/agent/config/config-files"
            "#kv_max_value_size.");
  EXPECT_EQ(response->Header("connection"), "close");
  EXPECT_TRUE(client->WaitClosed());
  EXPECT_EQ(GetOnNewConnection().status, 200);  // the server still serves others
}

TEST_F(HttpServerTest, OversizedChunkedBodyGets413) {
  Start();
  auto client = Connect();
  ASSERT_TRUE(
      client->Send("PUT /v1/txn HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"));
  const std::string chunk(64 * 1024, 'c');
  char size_line[32];
  std::snprintf(size_line, sizeof(size_line), "%zx\r\n", chunk.size());
  bool refused = false;
  for (int i = 0; i < 12 && !refused; ++i) {  // 768 KiB in total, more than the limit
    refused = !client->Send(size_line + chunk + "\r\n");
  }
  auto response = client->ReadResponse();
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->status, 413);
  EXPECT_EQ(response->body.rfind("Request body too large, max size: 524288 bytes.", 0), 0u)
      << response->body;
  EXPECT_TRUE(client->WaitClosed());
  EXPECT_EQ(GetOnNewConnection().status, 200);
}

TEST_F(HttpServerTest, EndlessChunkLineGets400) {
  Start();
  auto client = Connect();
  ASSERT_TRUE(
      client->Send("PUT /v1/txn HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"
                   "5;ext="));
  const std::string endless(16 * 1024, 'e');
  bool refused = false;
  for (int i = 0; i < 16 && !refused; ++i) refused = !client->Send(endless);  // 256 KiB, no CRLF
  auto response = client->ReadResponse();
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->status, 400);
  EXPECT_TRUE(client->WaitClosed());
}

// Beast bounds the header but not a chunked body's trailer: a trailer field
// over its 64 KiB field size used to throw and drop the connection unanswered.
TEST_F(HttpServerTest, OversizedTrailerGets431WithABody) {
  Start();
  auto client = Connect();
  ASSERT_TRUE(
      client->Send("PUT /v1/txn HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"
                   "5\r\nhello\r\n0\r\nX-Trailer: " +
                   std::string(70'000, 't') + "\r\n\r\n"));
  auto response = client->ReadResponse();
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->status, 431);
  EXPECT_EQ(response->body, "431 Request Header Fields Too Large");
  EXPECT_EQ(response->Header("connection"), "close");
  EXPECT_TRUE(client->WaitClosed());
  EXPECT_EQ(recorder_.requests.size(), 0u);  // the handler never saw it
  EXPECT_EQ(GetOnNewConnection().status, 200);
}

TEST_F(HttpServerTest, GarbageGets400AndClose) {
  Start();
  auto client = Connect();
  ASSERT_TRUE(client->Send("HELLO THERE\r\n\r\n"));
  auto response = client->ReadResponse();
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->status, 400);
  EXPECT_EQ(response->body.rfind("400 Bad Request", 0), 0u) << response->body;
  EXPECT_EQ(response->Header("content-type"), "text/plain; charset=utf-8");
  EXPECT_TRUE(client->WaitClosed());

  auto bad_header = Connect();
  ASSERT_TRUE(bad_header->Send("GET / HTTP/1.1\r\nBad Header\r\n\r\n"));
  response = bad_header->ReadResponse();
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->status, 400);
  EXPECT_EQ(GetOnNewConnection().status, 200);
}

TEST_F(HttpServerTest, BadPercentEncodingGets400WithGosText) {
  Start();
  auto in_path = Connect();
  ASSERT_TRUE(in_path->Send("GET /v1/kv/%zz HTTP/1.1\r\nHost: t\r\n\r\n"));
  auto response = in_path->ReadResponse();
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->status, 400);
  EXPECT_EQ(response->body, "invalid URL escape \"%zz\"");

  auto in_query = Connect();
  ASSERT_TRUE(in_query->Send("GET /v1/kv/a?index=%4 HTTP/1.1\r\nHost: t\r\n\r\n"));
  response = in_query->ReadResponse();
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->status, 400);
  EXPECT_EQ(response->body, "invalid URL escape \"%4\"");
}

TEST_F(HttpServerTest, OversizedHeaderGets431) {
  Start();
  auto client = Connect();
  const std::string huge(limits::kHttpHeaderBytesMax + 10, 'h');
  ASSERT_TRUE(client->Send("GET / HTTP/1.1\r\nX-Huge: " + huge + "\r\n\r\n"));
  auto response = client->ReadResponse();
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->status, 431);
  EXPECT_TRUE(client->WaitClosed());
}

TEST_F(HttpServerTest, Http10AndConnectionCloseAreHonoured) {
  Start();
  auto old_client = Connect();
  ASSERT_TRUE(old_client->Send("GET /a HTTP/1.0\r\n\r\n"));
  auto response = old_client->ReadResponse();
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->Header("connection"), "close");
  EXPECT_TRUE(old_client->WaitClosed());

  auto old_keep_alive = Connect();
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(old_keep_alive->Send("GET /a HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"));
    response = old_keep_alive->ReadResponse();
    ASSERT_TRUE(response.has_value());
    EXPECT_EQ(response->Header("connection"), "keep-alive");
  }

  auto closing = Connect();
  ASSERT_TRUE(closing->Send("GET /a HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"));
  response = closing->ReadResponse();
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->Header("connection"), "close");
  EXPECT_TRUE(closing->WaitClosed());
}

TEST_F(HttpServerTest, ExpectContinueGetsAnInterimResponse) {
  Start();
  auto client = Connect();
  ASSERT_TRUE(client->Send(
      "PUT /v1/kv/c HTTP/1.1\r\nHost: t\r\nContent-Length: 4\r\nExpect: 100-continue\r\n\r\n"));
  auto interim = client->ReadResponse();
  ASSERT_TRUE(interim.has_value());
  EXPECT_EQ(interim->status, 100);
  ASSERT_TRUE(client->Send("body"));
  auto response = client->ReadResponse();
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->body, "PUT /v1/kv/c body");
}

TEST_F(HttpServerTest, HeadResponseHasNoBody) {
  Start();
  auto client = Connect();
  ASSERT_TRUE(client->Send("HEAD /h HTTP/1.1\r\nHost: t\r\n\r\n"));
  client->ExpectHeadResponse(true);
  auto response = client->ReadResponse();
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->Header("content-length"), std::to_string(std::string("HEAD /h ").size()));
  client->ExpectHeadResponse(false);
  ASSERT_TRUE(client->Send(kGet));  // the next response starts right after the head
  response = client->ReadResponse();
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->body, "GET /v1/kv/x ");
}

TEST_F(HttpServerTest, LargeResponseReachesASlowReader) {
  Start();
  auto client = Connect();
  const std::size_t size = 8 * 1024 * 1024;  // far beyond the socket buffers
  ASSERT_TRUE(client->Send("GET /big?n=" + std::to_string(size) + " HTTP/1.1\r\nHost: t\r\n\r\n"));
  std::this_thread::sleep_for(milliseconds(50));  // let the server hit a full send buffer
  auto response = client->ReadResponse(milliseconds(20000));
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->body.size(), size);
  ASSERT_TRUE(client->Send(kGet));
  EXPECT_TRUE(client->ReadResponse().has_value());
}

TEST_F(HttpServerTest, StalledHalfRequestIsClosedAfterTheReadTimeout) {
  auto options = TestServer::Options();
  options.TEST_request_read_timeout_ms = 300;
  Start(options);
  auto staller = Connect();
  const auto started = testing::Clock::now();
  ASSERT_TRUE(staller->Send("PUT /v1/kv/x HTTP/1.1\r\nHost: t\r\nContent-Len"));
  // Meanwhile other clients are served at once.
  for (int i = 0; i < 3; ++i) EXPECT_EQ(GetOnNewConnection().status, 200);
  EXPECT_TRUE(staller->WaitClosed(milliseconds(5000)));
  EXPECT_GE(testing::Clock::now() - started, milliseconds(250));
  EXPECT_TRUE(WaitFor([&] { return server_->connection_count() == 0; }));
}

TEST_F(HttpServerTest, StalledBodyIsClosedAfterTheReadTimeout) {
  auto options = TestServer::Options();
  options.TEST_request_read_timeout_ms = 300;
  Start(options);
  auto staller = Connect();
  ASSERT_TRUE(staller->Send("PUT /v1/kv/x HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\nabc"));
  EXPECT_TRUE(staller->WaitClosed(milliseconds(5000)));
}

TEST_F(HttpServerTest, IdleConnectionIsClosedAfterTheIdleTimeout) {
  auto options = TestServer::Options();
  options.TEST_request_read_timeout_ms = 100;
  options.TEST_idle_timeout_ms = 400;
  Start(options);
  auto client = Connect();
  // The idle time starts after the response was written, so after this.
  const auto sent = testing::Clock::now();
  ASSERT_TRUE(client->Send(kGet));
  ASSERT_TRUE(client->ReadResponse().has_value());
  EXPECT_TRUE(client->WaitClosed(milliseconds(5000)));
  EXPECT_GE(testing::Clock::now() - sent, milliseconds(395));
}

TEST_F(HttpServerTest, SilentConnectionIsClosedAfterTheFirstByteTimeout) {
  auto options = TestServer::Options();
  options.TEST_first_byte_timeout_ms = 300;
  Start(options);
  const auto connected = testing::Clock::now();
  auto silent = Connect();
  ASSERT_TRUE(WaitFor([&] { return server_->connection_count() == 1; }));
  EXPECT_TRUE(silent->WaitClosed(milliseconds(5000)));
  EXPECT_GE(testing::Clock::now() - connected, milliseconds(295));
  EXPECT_TRUE(WaitFor([&] { return server_->connection_count() == 0; }));
}

TEST_F(HttpServerTest, KeepAliveIdleBetweenRequestsIsNotCutByTheFirstByteTimeout) {
  auto options = TestServer::Options();
  options.TEST_first_byte_timeout_ms = 100;
  options.TEST_idle_timeout_ms = 60'000;
  Start(options);
  auto client = Connect();
  ASSERT_TRUE(client->Send(kGet));
  ASSERT_TRUE(client->ReadResponse().has_value());
  EXPECT_FALSE(client->WaitClosed(milliseconds(600)));  // six first-byte timeouts
  ASSERT_TRUE(client->Send(kGet));
  EXPECT_TRUE(client->ReadResponse().has_value());
}

TEST_F(HttpServerTest, AConnectionThatStartedARequestIsNotCutByTheFirstByteTimeout) {
  auto options = TestServer::Options();
  options.TEST_first_byte_timeout_ms = 100;
  options.TEST_request_read_timeout_ms = 60'000;
  Start(options);
  auto client = Connect();
  ASSERT_TRUE(client->Send("GET /v1/kv/x HTTP/1.1\r\n"));
  EXPECT_FALSE(client->WaitClosed(milliseconds(500)));
  ASSERT_TRUE(client->Send("Host: t\r\n\r\n"));
  EXPECT_TRUE(client->ReadResponse().has_value());
}

TEST_F(HttpServerTest, ParkedRequestOutlivesTheReadTimeout) {
  auto options = TestServer::Options();
  options.TEST_request_read_timeout_ms = 100;
  options.TEST_idle_timeout_ms = 100;
  Start(options);
  auto client = Connect();
  ASSERT_TRUE(client->Send("GET /park HTTP/1.1\r\nHost: t\r\n\r\n"));
  ASSERT_TRUE(WaitFor([&] { return recorder_.parked_count == 1; }));
  // Several timeouts pass: the connection must still be open and waiting.
  EXPECT_FALSE(client->WaitClosed(milliseconds(500)));
  AnswerParked(0, HttpResponse::Json("late"));
  auto response = client->ReadResponse();
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->body, "late");
  EXPECT_EQ(recorder_.closed_count, 0);
  // Keep-alive continues after a late answer.
  ASSERT_TRUE(client->Send(kGet));
  EXPECT_TRUE(client->ReadResponse().has_value());
}

TEST_F(HttpServerTest, ClientLeavingAParkedRequestRunsOnClose) {
  Start();
  auto client = Connect();
  ASSERT_TRUE(client->Send("GET /park HTTP/1.1\r\nHost: t\r\n\r\n"));
  ASSERT_TRUE(WaitFor([&] { return recorder_.parked_count == 1; }));
  EXPECT_EQ(server_->connection_count(), 1u);
  client->Close();
  ASSERT_TRUE(WaitFor([&] { return recorder_.closed_count == 1; }));
  EXPECT_TRUE(server_->OnLoop([&] { return recorder_.parked[0]->closed(); }));
  AnswerParked(0, HttpResponse::Json("nobody listens"));  // a no-op, not a crash
  EXPECT_EQ(server_->connection_count(), 0u);
  EXPECT_EQ(GetOnNewConnection().status, 200);
}

TEST_F(HttpServerTest, ManyParkedRequestsAreAnsweredLater) {
  Start();
  std::vector<std::unique_ptr<RawClient>> clients;
  for (int i = 0; i < 50; ++i) {
    clients.push_back(Connect());
    ASSERT_TRUE(clients.back()->Send("GET /park HTTP/1.1\r\nHost: t\r\n\r\n"));
  }
  ASSERT_TRUE(WaitFor([&] { return recorder_.parked_count == 50; }));
  server_->OnLoop([&] {
    for (auto& responder : recorder_.parked) responder->Send(HttpResponse::Json("woken"));
  });
  for (auto& client : clients) {
    auto response = client->ReadResponse();
    ASSERT_TRUE(response.has_value());
    EXPECT_EQ(response->body, "woken");
  }
}

TEST_F(HttpServerTest, TwoThousandIdleConnectionsDoNotDelayARequest) {
  auto options = TestServer::Options();
  options.connections_per_client_max = 0;  // all from 127.0.0.1
  Start(options);
  std::vector<std::unique_ptr<RawClient>> idle;
  for (int i = 0; i < 2000; ++i) {
    idle.push_back(Connect());
    ASSERT_TRUE(idle.back()->connected()) << i;
    // A quarter of them stall halfway through a request.
    if (i % 4 == 0) {
      ASSERT_TRUE(idle.back()->Send("GET /v1/kv/x HTTP/1.1\r\nHo"));
    }
  }
  ASSERT_TRUE(WaitFor([&] { return server_->connection_count() == 2000; }, milliseconds(10000)));
  const auto started = testing::Clock::now();
  EXPECT_EQ(GetOnNewConnection().status, 200);
  EXPECT_LT(testing::Clock::now() - started, milliseconds(1000));
  // The idle ones are still served when they speak.
  ASSERT_TRUE(idle[1]->Send(kGet));
  EXPECT_TRUE(idle[1]->ReadResponse().has_value());
  ASSERT_TRUE(idle[0]->Send("st: t\r\n\r\n"));
  EXPECT_TRUE(idle[0]->ReadResponse().has_value());
}

TEST_F(HttpServerTest, ConnectionsBeyondTheCapGet429) {
  auto options = TestServer::Options();
  options.TEST_connections_max = 2;
  Start(options);
  auto first = Connect();
  auto second = Connect();
  ASSERT_TRUE(WaitFor([&] { return server_->connection_count() == 2; }));
  auto third = Connect();
  auto response = third->ReadResponse();
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->status, 429);
  // The cap of every client together: nothing about this client's IP.
  EXPECT_EQ(response->body,
            "Too many concurrent connections to this server from all clients (limit 2); retry "
            "later");
  EXPECT_TRUE(third->WaitClosed());
  ASSERT_TRUE(first->Send(kGet));
  EXPECT_TRUE(first->ReadResponse().has_value());
  first->Close();
  ASSERT_TRUE(WaitFor([&] { return server_->connection_count() == 1; }));
  EXPECT_EQ(GetOnNewConnection().status, 200);
}

TEST(ConnectionCapTest, KeepsTheReserveAndHalvesTheRest) {
  EXPECT_EQ(ConnectionCap(1'048'576, 20'000, 256), 20'000u);
  EXPECT_EQ(ConnectionCap(20'000, 20'000, 256), 9'872u);
  EXPECT_EQ(ConnectionCap(1024, 20'000, 256), 384u);
  EXPECT_EQ(ConnectionCap(200, 20'000, 256), 1u);  // never 0
  EXPECT_EQ(ConnectionCap(1024, 2, 256), 2u);
  EXPECT_EQ(ConnectionCap(1024, 5'000, 0), 5'000u);  // tests only
}

TEST_F(HttpServerTest, DroppedOrThrowingHandlerAnswers500) {
  Start();
  auto client = Connect();
  ASSERT_TRUE(client->Send("GET /drop HTTP/1.1\r\nHost: t\r\n\r\n"));
  auto response = client->ReadResponse();
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->status, 500);
  ASSERT_TRUE(client->Send("GET /throw HTTP/1.1\r\nHost: t\r\n\r\n"));
  response = client->ReadResponse();
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->status, 500);
  EXPECT_EQ(response->body, "internal error: boom");
}

TEST_F(HttpServerTest, StopClosesEveryConnection) {
  Start();
  auto idle = Connect();
  auto parked = Connect();
  ASSERT_TRUE(parked->Send("GET /park HTTP/1.1\r\nHost: t\r\n\r\n"));
  ASSERT_TRUE(WaitFor([&] { return recorder_.parked_count == 1; }));
  server_->OnLoop([&] { server_->server().Stop(); });
  EXPECT_TRUE(idle->WaitClosed());
  EXPECT_TRUE(parked->WaitClosed());
  EXPECT_TRUE(WaitFor([&] { return recorder_.closed_count == 1; }));
  EXPECT_EQ(server_->connection_count(), 0u);
  RawClient refused(server_->port());
  EXPECT_FALSE(refused.connected());
}

TEST_F(HttpServerTest, ListenOnABusyPortNamesTheAddress) {
  Start();
  boost::asio::io_context io;
  HttpServer second(io, [](HttpRequest, std::shared_ptr<Responder>) {});
  HttpServerOptions options;
  options.host = "127.0.0.1";
  options.port = server_->port();
  const Status status = second.Listen(options);
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("127.0.0.1:" + std::to_string(options.port)), std::string::npos)
      << status.ToString();
}

}  // namespace
}  // namespace tenure::listen
