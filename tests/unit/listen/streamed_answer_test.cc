// Streamed answers over HTTP/1.1 on real loopback sockets (Responder::
// StartStream, SendChunk, EndStream; decision 0053, "Streamed answers"):
// chunked framing and keep-alive after the end, HTTP/1.0 and HEAD, a
// client that leaves or stops reading, the unsent-output budget, OnDrained,
// a responder dropped mid-stream, and a stream outliving every timeout.
// Responders are touched on the loop thread only (TestServer::OnLoop).
#include <gtest/gtest.h>

#include <atomic>
#include <boost/asio/post.hpp>
#include <memory>
#include <string>
#include <vector>

#include "listen/server.h"
#include "unit/listen/raw_client.h"

namespace tenure::listen::streamed_test {
namespace {

using std::chrono::milliseconds;
using testing::RawClient;
using testing::TestServer;
using testing::WaitFor;

constexpr char kStreamPost[] = "POST /stream HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\n\r\n{}";

// "/stream" keeps its Responder (the test streams through it); anything
// else is answered "METHOD path".
struct StreamRecorder {
  std::vector<std::shared_ptr<Responder>> streams;  // loop thread only
  std::atomic<int> arrived{0};
  std::atomic<int> closed{0};
};

RequestHandler StreamHandler(StreamRecorder* recorder) {
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

// Queues `piece` once per loop turn until the responder closes or `max`
// pieces went; `count` counts them.
void Produce(boost::asio::io_context* io, std::shared_ptr<Responder> responder,
             std::shared_ptr<const std::string> piece, int max, std::atomic<int>* count) {
  if (responder->closed() || count->load() >= max) return;
  responder->SendChunk(*piece);
  ++*count;
  boost::asio::post(
      *io, [io, responder = std::move(responder), piece = std::move(piece), max, count]() mutable {
        Produce(io, std::move(responder), piece, max, count);
      });
}

class StreamedAnswerTest : public ::testing::Test {
 protected:
  void TearDown() override {
    if (server_ == nullptr) return;
    server_->OnLoop([&] { recorder_.streams.clear(); });
    server_.reset();
  }

  void Start(HttpServerOptions options = TestServer::Options()) {
    server_ = std::make_unique<TestServer>(StreamHandler(&recorder_), options);
    ASSERT_TRUE(server_->listen_status().ok()) << server_->listen_status().ToString();
  }

  std::unique_ptr<RawClient> Connect() {
    auto client = std::make_unique<RawClient>(server_->port());
    EXPECT_TRUE(client->connected());
    return client;
  }

  // Sends `request` and waits for the handler to hold its responder.
  void Arrive(RawClient& client, std::string_view request, int count = 1) {
    ASSERT_TRUE(client.Send(request));
    ASSERT_TRUE(WaitFor([&] { return recorder_.arrived.load() == count; }));
  }

  // Runs `fn` with stream `index`'s responder on the loop thread.
  template <typename Fn>
  auto OnStream(std::size_t index, Fn fn) {
    return server_->OnLoop([&] { return fn(*recorder_.streams.at(index)); });
  }

  StreamRecorder recorder_;
  std::unique_ptr<TestServer> server_;
};

TEST_F(StreamedAnswerTest, ChunkedPiecesThenTheNextRequestOnTheSameConnection) {
  Start();
  auto client = Connect();
  Arrive(*client, kStreamPost);
  OnStream(0, [](Responder& r) {
    r.StartStream(200, {{"Content-Type", "application/json"}, {"Content-Length", "9"}});
  });
  auto head = client->ReadResponse();
  ASSERT_TRUE(head.has_value());
  EXPECT_EQ(head->status, 200);
  EXPECT_EQ(head->Header("transfer-encoding"), "chunked");
  EXPECT_EQ(head->Header("content-type"), "application/json");
  EXPECT_FALSE(head->Header("content-length").has_value());  // the handler's is dropped
  EXPECT_FALSE(head->Header("connection").has_value());
  EXPECT_TRUE(head->Header("date").has_value());
  const std::vector<std::string> pieces = {"{\"result\":1}\n", "{\"result\":2}\n",
                                           std::string(100000, 'x')};
  for (const std::string& piece : pieces) {
    OnStream(0, [&](Responder& r) {
      r.SendChunk("");  // ignored: an empty chunk would end the body
      r.SendChunk(piece);
    });
    EXPECT_EQ(client->ReadChunk(), piece);
  }
  OnStream(0, [](Responder& r) { r.EndStream(); });
  EXPECT_EQ(client->ReadChunk(), "");  // the last chunk
  EXPECT_TRUE(OnStream(0, [](Responder& r) { return !r.closed() && r.unsent_bytes() == 0; }));
  ASSERT_TRUE(client->Send("GET /next HTTP/1.1\r\nHost: t\r\n\r\n"));
  auto next = client->ReadResponse();
  ASSERT_TRUE(next.has_value());
  EXPECT_EQ(next->body, "GET /next");
  EXPECT_EQ(server_->connection_count(), 1u);
  EXPECT_EQ(recorder_.closed.load(), 0);  // an ended stream is not closed by the client
}

TEST_F(StreamedAnswerTest, Http10GetsTheBodyRawAndTheConnectionClosedAtTheEnd) {
  Start();
  auto client = Connect();
  Arrive(*client, "GET /stream HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
  OnStream(0, [](Responder& r) {
    r.StartStream(200, {{"Content-Type", "application/json"}});
    r.SendChunk("one\n");
  });
  auto head = client->ReadResponse();
  ASSERT_TRUE(head.has_value());
  EXPECT_FALSE(head->Header("transfer-encoding").has_value());
  EXPECT_FALSE(head->Header("content-length").has_value());
  EXPECT_EQ(head->Header("connection"), "close");
  OnStream(0, [](Responder& r) {
    r.SendChunk("two\n");
    r.EndStream();
  });
  ASSERT_TRUE(client->WaitClosed());
  EXPECT_EQ(client->buffered(), "one\ntwo\n");
}

TEST_F(StreamedAnswerTest, AHeadRequestGetsTheHeadAloneAndItsProducerIsStopped) {
  Start();
  auto client = Connect();
  Arrive(*client, "HEAD /stream HTTP/1.1\r\nHost: t\r\n\r\n");
  OnStream(0, [](Responder& r) { r.StartStream(200, {{"Content-Type", "application/json"}}); });
  auto head = client->ReadResponse();
  ASSERT_TRUE(head.has_value());
  EXPECT_EQ(head->Header("transfer-encoding"), "chunked");  // as a GET's would say
  ASSERT_TRUE(WaitFor([&] { return recorder_.closed.load() == 1; }));
  OnStream(0, [](Responder& r) {
    EXPECT_TRUE(r.closed());
    r.SendChunk("dropped");
    r.EndStream();
  });
  ASSERT_TRUE(client->Send("GET /next HTTP/1.1\r\nHost: t\r\n\r\n"));
  auto next = client->ReadResponse();
  ASSERT_TRUE(next.has_value());
  EXPECT_EQ(next->body, "GET /next");  // nothing of the HEAD's body came first
}

TEST_F(StreamedAnswerTest, AClientLeavingMidStreamRunsOnCloseAndLaterPiecesAreNoOps) {
  Start();
  auto client = Connect();
  Arrive(*client, kStreamPost);
  OnStream(0, [](Responder& r) {
    r.StartStream(200, {});
    r.SendChunk("first\n");
  });
  ASSERT_TRUE(client->ReadResponse().has_value());
  EXPECT_EQ(client->ReadChunk(), "first\n");
  client->Close();
  ASSERT_TRUE(WaitFor([&] { return recorder_.closed.load() == 1; }));
  EXPECT_TRUE(OnStream(0, [](Responder& r) {
    r.SendChunk("after\n");
    r.EndStream();
    return r.closed() && r.unsent_bytes() == 0;
  }));
  EXPECT_TRUE(WaitFor([&] { return server_->connection_count() == 0; }));
}

TEST_F(StreamedAnswerTest, OnDrainedRunsWhenTheUnsentBytesFallToZero) {
  Start();
  auto client = Connect();
  Arrive(*client, kStreamPost);
  OnStream(0, [](Responder& r) { r.StartStream(200, {}); });
  ASSERT_TRUE(client->ReadResponse().has_value());
  auto drained = std::make_shared<std::atomic<int>>(0);
  // More than loopback's socket buffers take at once.
  const std::string piece(24 * 1024 * 1024, 'd');
  const std::size_t unsent = OnStream(0, [&](Responder& r) {
    r.OnDrained([drained] { ++*drained; });
    r.SendChunk(piece);
    return r.unsent_bytes();
  });
  EXPECT_GT(unsent, 0u);
  EXPECT_EQ(drained->load(), 0);
  EXPECT_EQ(client->ReadChunk(milliseconds(10000)), piece);
  ASSERT_TRUE(WaitFor([&] { return drained->load() == 1; }));
  EXPECT_EQ(OnStream(0, [](Responder& r) { return r.unsent_bytes(); }), 0u);
  OnStream(0, [](Responder& r) { r.EndStream(); });
  EXPECT_EQ(client->ReadChunk(), "");
}

TEST_F(StreamedAnswerTest, AClientThatNeverReadsIsDroppedOnceTheUnsentBudgetPasses) {
  HttpServerOptions options = TestServer::Options();
  options.TEST_unsent_bytes_max = 1024 * 1024;
  Start(options);
  auto client = Connect();
  Arrive(*client, kStreamPost);
  OnStream(0, [](Responder& r) { r.StartStream(200, {}); });
  std::atomic<int> count{0};
  constexpr int kMax = 4000;  // 256 MiB: far past what the sockets and the budget hold
  server_->OnLoop([&] {
    Produce(&server_->io(), recorder_.streams.at(0),
            std::make_shared<const std::string>(64 * 1024, 'p'), kMax, &count);
  });
  ASSERT_TRUE(WaitFor([&] { return recorder_.closed.load() == 1; }));
  EXPECT_LT(count.load(), kMax);
  EXPECT_TRUE(OnStream(0, [](Responder& r) { return r.closed() && r.unsent_bytes() == 0; }));
  EXPECT_TRUE(WaitFor([&] { return server_->connection_count() == 0; }));
  EXPECT_TRUE(client->WaitClosed());  // once it reads what the sockets held
}

TEST_F(StreamedAnswerTest, AReaderThatStallsIsCutByTheWriteStallRule) {
  HttpServerOptions options = TestServer::Options();
  options.TEST_request_read_timeout_ms = 200;
  Start(options);
  auto client = Connect();
  Arrive(*client, kStreamPost);
  OnStream(0, [](Responder& r) {
    r.StartStream(200, {});
    r.SendChunk(std::string(24 * 1024 * 1024, 's'));  // more than the sockets take
  });
  ASSERT_TRUE(WaitFor([&] { return recorder_.closed.load() == 1; }, milliseconds(3000)));
  EXPECT_TRUE(WaitFor([&] { return server_->connection_count() == 0; }));
}

TEST_F(StreamedAnswerTest, AResponderDroppedMidStreamResetsTheConnection) {
  Start();
  auto client = Connect();
  Arrive(*client, kStreamPost);
  OnStream(0, [](Responder& r) {
    r.StartStream(200, {});
    r.SendChunk("partial\n");
  });
  ASSERT_TRUE(client->ReadResponse().has_value());
  EXPECT_EQ(client->ReadChunk(), "partial\n");
  server_->OnLoop([&] { recorder_.streams.clear(); });  // no EndStream
  ASSERT_TRUE(client->WaitClosed());
  EXPECT_EQ(client->buffered(), "");  // no last chunk: the body is not taken for whole
  EXPECT_TRUE(WaitFor([&] { return server_->connection_count() == 0; }));
}

TEST_F(StreamedAnswerTest, AStreamOutlivesTheIdleAndReadTimeouts) {
  HttpServerOptions options = TestServer::Options();
  options.TEST_request_read_timeout_ms = 100;
  options.TEST_idle_timeout_ms = 100;
  options.TEST_first_byte_timeout_ms = 100;
  Start(options);
  auto client = Connect();
  Arrive(*client, kStreamPost);
  OnStream(0, [](Responder& r) { r.StartStream(200, {}); });
  ASSERT_TRUE(client->ReadResponse().has_value());
  // Three times the timeouts between pieces, three times over.
  for (int i = 0; i < 3; ++i) {
    EXPECT_FALSE(client->WaitClosed(milliseconds(300)));
    const std::string piece = "tick " + std::to_string(i) + "\n";
    OnStream(0, [&](Responder& r) { r.SendChunk(piece); });
    EXPECT_EQ(client->ReadChunk(), piece);
  }
  OnStream(0, [](Responder& r) { r.EndStream(); });
  EXPECT_EQ(client->ReadChunk(), "");
  ASSERT_TRUE(client->Send("GET /next HTTP/1.1\r\nHost: t\r\n\r\n"));
  ASSERT_TRUE(client->ReadResponse().has_value());
  EXPECT_TRUE(client->WaitClosed(milliseconds(2000)));  // the idle timeout is back
  EXPECT_EQ(recorder_.closed.load(), 0);
}

}  // namespace
}  // namespace tenure::listen::streamed_test
