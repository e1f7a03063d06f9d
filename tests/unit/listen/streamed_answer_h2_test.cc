// Streamed answers over HTTP/2 on real loopback sockets (decision 0053,
// "Streamed answers"): HEADERS, DATA per piece and END_STREAM through the
// Responder of a non-gRPC request, with an nghttp2 client session
// (h2_client.h); OnDrained against the client's window, HEAD, a client
// that resets or leaves, the unsent-output budget, a responder dropped
// mid-stream, and a stream outliving the idle timeout. Responders are
// touched on the loop thread only (TestServer::OnLoop).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <boost/asio/post.hpp>
#include <memory>
#include <string>
#include <vector>

#include "listen/server.h"
#include "unit/listen/h2_client.h"
#include "unit/listen/raw_client.h"

namespace tenure::listen::streamed_h2_test {
namespace {

using std::chrono::milliseconds;
using testing::H2Client;
using testing::TestServer;
using testing::WaitFor;

constexpr std::uint32_t kInternalError = 0x2;
constexpr std::uint32_t kCancel = 0x8;

// "/stream" keeps its Responder; anything else is answered "METHOD path".
struct H2StreamRecorder {
  std::vector<std::shared_ptr<Responder>> streams;  // loop thread only
  std::atomic<int> arrived{0};
  std::atomic<int> closed{0};
};

RequestHandler H2StreamHandler(H2StreamRecorder* recorder) {
  return [recorder](HttpRequest request, std::shared_ptr<Responder> responder) {
    if (request.path == "/stream") {
      responder->OnClose([recorder] { ++recorder->closed; });
      recorder->streams.push_back(std::move(responder));
      ++recorder->arrived;
      return;
    }
    responder->Send(HttpResponse::Json(request.method + " " + request.path));
  };
}

// A blocking loopback connection with TCP_NODELAY (frames go one by one).
struct H2Socket {
  explicit H2Socket(std::uint16_t port) : fd(::socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(port);
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
      ::close(fd);
      fd = -1;
      return;
    }
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
  ~H2Socket() { Close(); }
  void Close() {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
  int fd;
};

class StreamedAnswerHttp2Test : public ::testing::Test {
 protected:
  void TearDown() override {
    if (server_ == nullptr) return;
    server_->OnLoop([&] { recorder_.streams.clear(); });
    server_.reset();
  }

  static HttpServerOptions Options() {
    HttpServerOptions options = TestServer::Options();
    options.http2 = true;
    return options;
  }

  void Start(HttpServerOptions options = Options()) {
    server_ = std::make_unique<TestServer>(H2StreamHandler(&recorder_), options);
    ASSERT_TRUE(server_->listen_status().ok()) << server_->listen_status().ToString();
    socket_ = std::make_unique<H2Socket>(server_->port());
    ASSERT_GE(socket_->fd, 0);
    client_ = std::make_unique<H2Client>(socket_->fd);
  }

  template <typename Fn>
  auto OnStream(std::size_t index, Fn fn) {
    return server_->OnLoop([&] { return fn(*recorder_.streams.at(index)); });
  }

  // A streamed request whose responder the handler holds, its head sent.
  std::int32_t StartStreamed(std::string method = "POST") {
    const int count = recorder_.arrived.load() + 1;
    const std::int32_t id = client_->Submit(method, "/stream", {}, "{}");
    EXPECT_TRUE(client_->Pump([&] { return recorder_.arrived.load() == count; }));
    OnStream(count - 1, [](Responder& r) {
      r.StartStream(200, {{"Content-Type", "application/json"}, {"Content-Length", "9"}});
    });
    EXPECT_TRUE(client_->Pump([&] { return client_->results[id].status == 200; }));
    return id;
  }

  // A plain request on the same connection is answered.
  void ExpectAnotherRequestServed() {
    const std::int32_t id = client_->Submit("GET", "/next");
    ASSERT_TRUE(client_->Pump([&] { return client_->results[id].closed; }));
    EXPECT_EQ(client_->results[id].data, "GET /next");
  }

  H2StreamRecorder recorder_;
  std::unique_ptr<TestServer> server_;
  std::unique_ptr<H2Socket> socket_;
  std::unique_ptr<H2Client> client_;
};

TEST_F(StreamedAnswerHttp2Test, PiecesAreDataFramesAndTheEndIsEndStream) {
  Start();
  const std::int32_t id = StartStreamed();
  const auto& result = client_->results[id];
  EXPECT_EQ(result.Header("content-type"), "application/json");
  EXPECT_FALSE(result.Header("content-length").has_value());
  EXPECT_TRUE(result.Header("date").has_value());
  OnStream(0, [](Responder& r) {
    r.SendChunk("{\"result\":1}\n");
    r.SendChunk("");
    r.SendChunk("{\"result\":2}\n");
  });
  ASSERT_TRUE(client_->Pump([&] { return result.data == "{\"result\":1}\n{\"result\":2}\n"; }));
  EXPECT_FALSE(result.closed);
  // A piece past the client's 64 KiB window waits in unsent_bytes until
  // the client reads; OnDrained tells when it has gone.
  auto drained = std::make_shared<std::atomic<int>>(0);
  const std::size_t unsent = OnStream(0, [&](Responder& r) {
    r.OnDrained([drained] { ++*drained; });
    r.SendChunk(std::string(300 * 1024, 'd'));
    return r.unsent_bytes();
  });
  EXPECT_GT(unsent, 0u);
  ASSERT_TRUE(client_->Pump([&] { return drained->load() == 1; }));
  EXPECT_EQ(OnStream(0, [](Responder& r) { return r.unsent_bytes(); }), 0u);
  OnStream(0, [](Responder& r) { r.EndStream(); });
  ASSERT_TRUE(client_->Pump([&] { return result.closed; }));
  EXPECT_EQ(result.error, 0u);
  EXPECT_EQ(result.data.size(), 2 * 13 + 300u * 1024);
  EXPECT_EQ(recorder_.closed.load(), 0);
  ExpectAnotherRequestServed();
}

TEST_F(StreamedAnswerHttp2Test, AHeadRequestGetsTheHeadAloneAndItsProducerIsStopped) {
  Start();
  const std::int32_t id = StartStreamed("HEAD");
  ASSERT_TRUE(client_->Pump([&] { return client_->results[id].closed; }));
  EXPECT_EQ(client_->results[id].error, 0u);
  EXPECT_EQ(client_->results[id].data, "");
  ASSERT_TRUE(WaitFor([&] { return recorder_.closed.load() == 1; }));
  EXPECT_TRUE(OnStream(0, [](Responder& r) { return r.closed(); }));
}

TEST_F(StreamedAnswerHttp2Test, AClientResetOrLeavingRunsOnClose) {
  Start();
  const std::int32_t reset = StartStreamed();
  client_->Reset(reset);
  ASSERT_TRUE(client_->Pump([&] { return recorder_.closed.load() == 1; }));
  EXPECT_TRUE(OnStream(0, [](Responder& r) {
    r.SendChunk("after\n");
    return r.closed() && r.unsent_bytes() == 0;
  }));
  StartStreamed();
  socket_->Close();
  ASSERT_TRUE(WaitFor([&] { return recorder_.closed.load() == 2; }));
  EXPECT_TRUE(OnStream(1, [](Responder& r) {
    r.SendChunk("after\n");
    r.EndStream();
    return r.closed();
  }));
}

TEST_F(StreamedAnswerHttp2Test, AStreamNeverReadIsResetOnceTheUnsentBudgetPasses) {
  HttpServerOptions options = Options();
  options.TEST_unsent_bytes_max = 1024 * 1024;
  Start(options);
  const std::int32_t id = StartStreamed();
  // The client reads nothing meanwhile: its window holds the rest back.
  const int pieces = OnStream(0, [](Responder& r) {
    int count = 0;
    for (; count < 100 && !r.closed(); ++count) r.SendChunk(std::string(64 * 1024, 'p'));
    return count;
  });
  EXPECT_LT(pieces, 100);
  ASSERT_TRUE(WaitFor([&] { return recorder_.closed.load() == 1; }));
  ASSERT_TRUE(client_->Pump([&] { return client_->results[id].closed; }));
  EXPECT_EQ(client_->results[id].error, kCancel);
  ExpectAnotherRequestServed();
}

TEST_F(StreamedAnswerHttp2Test, AResponderDroppedMidStreamResetsItsStream) {
  Start();
  const std::int32_t id = StartStreamed();
  OnStream(0, [](Responder& r) { r.SendChunk("partial\n"); });
  server_->OnLoop([&] { recorder_.streams.clear(); });  // no EndStream
  ASSERT_TRUE(client_->Pump([&] { return client_->results[id].closed; }));
  EXPECT_EQ(client_->results[id].error, kInternalError);
  EXPECT_EQ(client_->results[id].data, "partial\n");
  ExpectAnotherRequestServed();
}

TEST_F(StreamedAnswerHttp2Test, AStreamOutlivesTheIdleTimeout) {
  HttpServerOptions options = Options();
  options.TEST_idle_timeout_ms = 100;
  options.TEST_request_read_timeout_ms = 100;
  options.TEST_http2_ping_after_ms = 100;
  options.TEST_http2_ping_timeout_ms = 1000;
  Start(options);
  const std::int32_t id = StartStreamed();
  const auto& result = client_->results[id];
  std::string expected;
  for (int i = 0; i < 3; ++i) {
    EXPECT_FALSE(client_->Pump([&] { return result.closed || client_->eof; }, milliseconds(300)));
    const std::string piece = "tick " + std::to_string(i) + "\n";
    expected += piece;
    OnStream(0, [&](Responder& r) { r.SendChunk(piece); });
    ASSERT_TRUE(client_->Pump([&] { return result.data == expected; }));
  }
  OnStream(0, [](Responder& r) { r.EndStream(); });
  ASSERT_TRUE(client_->Pump([&] { return result.closed; }));
  EXPECT_EQ(result.error, 0u);
  EXPECT_EQ(recorder_.closed.load(), 0);
  EXPECT_GT(client_->pings, 0);  // the silent client was asked, and answered
}

}  // namespace
}  // namespace tenure::listen::streamed_h2_test
