// The per-client connection limit (Consul's limits.http_max_conns_per_client):
// ClientTable's counting, and HttpServer over real loopback sockets from
// several source addresses (127.0.0.0/8), so one address's connections and
// parked requests are shown not to starve another's.
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/limits.h"
#include "listen/client_table.h"
#include "listen/server.h"
#include "unit/listen/raw_client.h"

namespace tenure::listen {
namespace {

using std::chrono::milliseconds;
using testing::RawClient;
using testing::RawResponse;
using testing::TestServer;
using testing::WaitFor;

constexpr char kGet[] = "GET /v1/kv/x HTTP/1.1\r\nHost: t\r\n\r\n";
constexpr char kPark[] = "GET /park HTTP/1.1\r\nHost: t\r\n\r\n";
constexpr char kConsulsText[] =
    "Your IP is issuing too many concurrent connections, please rate limit your calls\n";

ClientAddress V4(std::uint8_t a, std::uint8_t b, std::uint8_t c, std::uint8_t d) {
  return ClientAddress::V4({a, b, c, d});
}

TEST(ClientTableTest, CountsEachAddressAndForgetsItWithItsLastConnection) {
  ClientTable table;
  const ClientTable::Slot a1 = table.Add(V4(127, 0, 0, 2));
  const ClientTable::Slot a2 = table.Add(V4(127, 0, 0, 2));
  const ClientTable::Slot b1 = table.Add(V4(127, 0, 0, 3));
  EXPECT_EQ(a1, a2);
  EXPECT_NE(a1, b1);
  EXPECT_EQ(table.Count(V4(127, 0, 0, 2)), 2u);
  EXPECT_EQ(table.Count(V4(127, 0, 0, 3)), 1u);
  EXPECT_EQ(table.Count(V4(127, 0, 0, 4)), 0u);
  EXPECT_EQ(table.addresses(), 2u);
  table.Remove(a1);
  EXPECT_EQ(table.Count(V4(127, 0, 0, 2)), 1u);
  table.Remove(a2);
  EXPECT_EQ(table.Count(V4(127, 0, 0, 2)), 0u);
  EXPECT_EQ(table.addresses(), 1u);
  // The freed slot is reused; the other address keeps its count.
  EXPECT_EQ(table.Add(V4(10, 0, 0, 1)), a1);
  EXPECT_EQ(table.Count(V4(127, 0, 0, 3)), 1u);
}

TEST(ClientTableTest, IPv4AndItsMappedIPv6FormAreOneAddress) {
  std::array<std::uint8_t, 16> mapped{};
  mapped[10] = mapped[11] = 0xff;
  mapped[12] = 127;
  mapped[15] = 2;
  EXPECT_EQ(ClientAddress::V6(mapped), V4(127, 0, 0, 2));
  EXPECT_EQ(V4(127, 0, 0, 2).ToString(), "127.0.0.2");
  std::array<std::uint8_t, 16> loopback{};
  loopback[15] = 1;
  EXPECT_EQ(ClientAddress::V6(loopback).ToString(), "::1");
  EXPECT_NE(ClientAddress::V6(loopback), V4(0, 0, 0, 1));
}

// The idle keep-alive time: past the 90 s after which Go's Transport (Consul's
// api client) drops idle connections itself, and far below the 15 minutes a
// forgotten connection used to hold its descriptor.
TEST(HttpTimeoutsTest, IdleKeepAliveOutlastsGoClientsAndEndsWithinTwoMinutes) {
  EXPECT_GT(limits::kHttpIdleTimeoutMs, 90'000);
  EXPECT_LE(limits::kHttpIdleTimeoutMs, 120'000);
  EXPECT_EQ(HttpServerOptions().TEST_idle_timeout_ms, limits::kHttpIdleTimeoutMs);
  EXPECT_EQ(HttpServerOptions().connections_per_client_max, 200u);  // Consul's default
}

// "/park" keeps the Responder (answered by the test); anything else is 200.
struct Parked {
  std::vector<std::shared_ptr<Responder>> responders;  // loop thread only
  std::atomic<int> count{0};
};

RequestHandler Handler(Parked* parked) {
  return [parked](HttpRequest request, std::shared_ptr<Responder> responder) {
    if (request.path == "/park") {
      parked->responders.push_back(std::move(responder));
      ++parked->count;
      return;
    }
    responder->Send(HttpResponse::Json("ok"));
  };
}

class ClientLimitTest : public ::testing::Test {
 protected:
  void TearDown() override {
    if (server_ == nullptr) return;
    server_->OnLoop([&] { parked_.responders.clear(); });
    server_.reset();
  }

  void Start(std::size_t per_client, ClientExemption exempt = {}) {
    HttpServerOptions options = TestServer::Options();
    options.connections_per_client_max = per_client;
    options.exempt_client = std::move(exempt);
    server_ = std::make_unique<TestServer>(Handler(&parked_), options);
    ASSERT_TRUE(server_->listen_status().ok()) << server_->listen_status().ToString();
  }

  // A connection from `source` that was served one request (so it counts).
  std::unique_ptr<RawClient> Served(const char* source) {
    auto client = std::make_unique<RawClient>(server_->port(), source);
    EXPECT_TRUE(client->connected()) << source;
    EXPECT_TRUE(client->Send(kGet));
    const auto response = client->ReadResponse();
    EXPECT_TRUE(response.has_value()) << source;
    EXPECT_EQ(response.value_or(RawResponse{}).status, 200) << source;
    return client;
  }

  // A new connection from `source`: Consul's 429, then the close.
  void ExpectRefused(const char* source) {
    RawClient client(server_->port(), source);
    ASSERT_TRUE(client.connected());
    const auto started = testing::Clock::now();
    const auto response = client.ReadResponse();  // sent before any request
    ASSERT_TRUE(response.has_value()) << source;
    EXPECT_EQ(response->status, 429);
    EXPECT_EQ(response->Header("content-type"), "text/plain");
    EXPECT_EQ(response->body, kConsulsText);
    EXPECT_TRUE(client.WaitClosed());
    EXPECT_LT(testing::Clock::now() - started, milliseconds(2000));  // at once, not after a wait
  }

  Parked parked_;
  std::unique_ptr<TestServer> server_;
};

TEST_F(ClientLimitTest, AnAddressOverItsLimitGetsConsuls429AndOthersAreServed) {
  Start(3);
  std::vector<std::unique_ptr<RawClient>> flood;
  for (int i = 0; i < 3; ++i) flood.push_back(Served("127.0.0.2"));
  ExpectRefused("127.0.0.2");
  ExpectRefused("127.0.0.2");
  // Another address is served, up to its own limit.
  std::vector<std::unique_ptr<RawClient>> other;
  for (int i = 0; i < 3; ++i) other.push_back(Served("127.0.0.3"));
  ExpectRefused("127.0.0.3");
  // The flooding address's own connections still work.
  ASSERT_TRUE(flood[0]->Send(kGet));
  EXPECT_EQ(flood[0]->ReadResponse().value_or(RawResponse{}).status, 200);
  EXPECT_EQ(server_->connection_count(), 6u);
}

TEST_F(ClientLimitTest, AClosedConnectionGivesItsPlaceBack) {
  Start(2);
  auto first = Served("127.0.0.2");
  auto second = Served("127.0.0.2");
  ExpectRefused("127.0.0.2");
  first->Close();
  ASSERT_TRUE(WaitFor([&] { return server_->connection_count() == 1; }));
  auto third = Served("127.0.0.2");
  ExpectRefused("127.0.0.2");
}

TEST_F(ClientLimitTest, ParkedRequestsHoldTheirAddresssPlacesNotOthers) {
  Start(4);
  std::vector<std::unique_ptr<RawClient>> parked;
  for (int i = 0; i < 4; ++i) {
    parked.push_back(std::make_unique<RawClient>(server_->port(), "127.0.0.2"));
    ASSERT_TRUE(parked.back()->Send(kPark));
  }
  ASSERT_TRUE(WaitFor([&] { return parked_.count == 4; }));
  ExpectRefused("127.0.0.2");
  // Another address parks and is answered.
  RawClient other(server_->port(), "127.0.0.3");
  ASSERT_TRUE(other.Send(kPark));
  ASSERT_TRUE(WaitFor([&] { return parked_.count == 5; }));
  server_->OnLoop([&] {
    for (auto& responder : parked_.responders) responder->Send(HttpResponse::Json("woken"));
  });
  EXPECT_EQ(other.ReadResponse().value_or(RawResponse{}).body, "woken");
  for (auto& client : parked)
    EXPECT_EQ(client->ReadResponse().value_or(RawResponse{}).body, "woken");
}

TEST_F(ClientLimitTest, AnExemptAddressIsNotLimitedAndIsAskedOnlyAtItsLimit) {
  std::mutex mutex;
  std::vector<std::string> asked;
  Start(2, [&](const std::string& ip) {
    std::lock_guard lock(mutex);
    asked.push_back(ip);
    return ip == "127.0.0.4";
  });
  std::vector<std::unique_ptr<RawClient>> member;
  for (int i = 0; i < 5; ++i) member.push_back(Served("127.0.0.4"));
  auto a = Served("127.0.0.2");
  auto b = Served("127.0.0.2");
  ExpectRefused("127.0.0.2");
  std::lock_guard lock(mutex);
  // Three of the member's connections found it at its limit, and one of 127.0.0.2's.
  EXPECT_EQ(asked, (std::vector<std::string>{"127.0.0.4", "127.0.0.4", "127.0.0.4", "127.0.0.2"}));
}

TEST_F(ClientLimitTest, ZeroTurnsThePerClientLimitOff) {
  Start(0);
  std::vector<std::unique_ptr<RawClient>> many;
  for (int i = 0; i < 300; ++i) many.push_back(Served("127.0.0.2"));
  EXPECT_EQ(server_->connection_count(), 300u);
}

// Both listeners of a server count in one table, as Consul's one limiter: a
// client cannot double its share by using both ports.
TEST(ClientLimitSharedTest, TwoListenersCountOneAddressTogether) {
  boost::asio::io_context io;
  const auto work = boost::asio::make_work_guard(io);
  Parked parked;
  HttpServer first(io, Handler(&parked));
  HttpServer second(io, Handler(&parked));
  HttpServerOptions options = TestServer::Options();
  options.connections_per_client_max = 2;
  options.clients = std::make_shared<ClientTable>();
  ASSERT_TRUE(first.Listen(options).ok());
  ASSERT_TRUE(second.Listen(options).ok());
  std::thread loop([&] { io.run(); });
  {
    RawClient one(first.port(), "127.0.0.2");
    RawClient two(second.port(), "127.0.0.2");
    ASSERT_TRUE(one.Send(kGet));
    ASSERT_TRUE(two.Send(kGet));
    EXPECT_EQ(one.ReadResponse().value_or(RawResponse{}).status, 200);
    EXPECT_EQ(two.ReadResponse().value_or(RawResponse{}).status, 200);
    for (const std::uint16_t port : {first.port(), second.port()}) {
      RawClient third(port, "127.0.0.2");
      const auto response = third.ReadResponse();
      ASSERT_TRUE(response.has_value()) << port;
      EXPECT_EQ(response->status, 429) << port;
      EXPECT_EQ(response->body, kConsulsText);
    }
  }
  boost::asio::post(io, [&] {
    first.Stop();
    second.Stop();
    io.stop();
  });
  loop.join();
  EXPECT_EQ(options.clients->addresses(), 0u);  // every connection gave its place back
}

}  // namespace
}  // namespace tenure::listen
