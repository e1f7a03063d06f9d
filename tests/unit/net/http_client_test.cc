// HttpClient against real loopback sockets: small POSIX stub servers
// (one thread per connection) inject the faults; the client runs on an
// io_context driven by the test thread. Every wait polls with a deadline.
#include "net/http_client.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "unit/client/server_process.h"
#include "unit/net/outcome.h"

namespace tenure::net {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// ---- stub server (test_support, unit/client/server_process.h) -------------

using test_support::ReadRequest;
using test_support::StubServer;
using test_support::WriteResponse;

// An address where nothing listens: connections are refused.
std::string RefusedAddress() { return test_support::FreeAddress(); }

// Answers every request: 200 with "METHOD TARGET BODY token=TOKEN".
void Echo(int fd) {
  while (auto request = ReadRequest(fd)) {
    std::string token;
    if (std::size_t at = request->head.find("X-Consul-Token: "); at != std::string::npos) {
      token = request->head.substr(at + 16, request->head.find("\r\n", at) - at - 16);
    }
    WriteResponse(
        fd, 200, request->method + " " + request->target + " " + request->body + " token=" + token);
  }
}

// ---- client side ----------------------------------------------------------

using testing::Outcome;

class AsyncHttpTest : public ::testing::Test {
 protected:
  HttpClientOptions Options(std::vector<std::string> addresses) {
    HttpClientOptions options;
    options.addresses = std::move(addresses);
    options.token = "secret";
    options.connect_timeout_ms = 1'000;
    options.default_timeout_ms = 5'000;
    return options;
  }

  static HttpCall Call(std::string method, std::string target, std::string body = "",
                       std::int64_t timeout_ms = 0) {
    HttpCall call;
    call.method = std::move(method);
    call.target = std::move(target);
    call.body = std::move(body);
    call.timeout_ms = timeout_ms;
    call.retry.backoff_initial_ms = 10;
    call.retry.backoff_max_ms = 50;
    return call;
  }

  // Runs the loop until `done` holds or the deadline passes.
  bool RunUntil(const std::function<bool()>& done, std::chrono::milliseconds limit = 5s) {
    const auto deadline = Clock::now() + limit;
    while (!done()) {
      if (Clock::now() > deadline) return false;
      io_.restart();
      if (io_.run_for(5ms) == 0) std::this_thread::yield();
    }
    return true;
  }

  boost::asio::io_context io_;
};

TEST_F(AsyncHttpTest, GetAndPutReachTheServerWithToken) {
  StubServer server(Echo);
  HttpClient client(io_, Options({"http://" + server.address()}));
  Outcome get, put;
  client.Request(Call("GET", "/v1/kv/a?index=3"), get.Callback());
  client.Request(Call("PUT", "/v1/kv/b", "value"), put.Callback());
  ASSERT_TRUE(RunUntil([&] { return get.calls && put.calls; }));
  ASSERT_EQ(get.status(), 200);
  EXPECT_EQ((*get.result)->body, "GET /v1/kv/a?index=3  token=secret");
  EXPECT_EQ((*get.result)->Header("X-Consul-Index"), "7");
  ASSERT_EQ(put.status(), 200);
  EXPECT_EQ((*put.result)->body, "PUT /v1/kv/b value token=secret");
  EXPECT_EQ(client.in_flight(), 0u);
}

TEST_F(AsyncHttpTest, SequentialRequestsReuseOneKeptConnection) {
  StubServer server(Echo);
  HttpClient client(io_, Options({server.address()}));
  for (int i = 0; i < 3; ++i) {
    Outcome outcome;
    client.Request(Call("GET", "/v1/kv/x"), outcome.Callback());
    ASSERT_TRUE(RunUntil([&] { return outcome.calls == 1; }));
    EXPECT_EQ(outcome.status(), 200);
  }
  EXPECT_EQ(server.connections(), 1);
  EXPECT_EQ(client.TEST_IdleConnections(), 1u);
}

TEST_F(AsyncHttpTest, TenConcurrentRequestsEachGetAConnection) {
  // The stub answers nothing until all ten requests are parked at once.
  std::atomic<int> parked{0};
  StubServer server([&](int fd) {
    while (auto request = ReadRequest(fd)) {
      ++parked;
      const auto deadline = Clock::now() + 5s;
      while (parked.load() < 10 && Clock::now() < deadline) std::this_thread::yield();
      WriteResponse(fd, 200, request->target);
    }
  });
  HttpClientOptions options = Options({server.address()});
  options.max_idle_per_address = 4;
  HttpClient client(io_, options);
  std::vector<Outcome> outcomes(10);
  for (int i = 0; i < 10; ++i) {
    client.Request(Call("GET", "/r/" + std::to_string(i)), outcomes[i].Callback());
  }
  EXPECT_EQ(client.in_flight(), 10u);
  ASSERT_TRUE(RunUntil([&] {
    for (auto& o : outcomes) {
      if (o.calls == 0) return false;
    }
    return true;
  }));
  for (int i = 0; i < 10; ++i) {
    ASSERT_EQ(outcomes[i].status(), 200);
    EXPECT_EQ((*outcomes[i].result)->body, "/r/" + std::to_string(i));
  }
  EXPECT_EQ(server.connections(), 10);
  EXPECT_EQ(client.TEST_IdleConnections(), 4u);  // the other six were closed
}

TEST_F(AsyncHttpTest, PerRequestTimeoutFiresAndFlagsMaybeApplied) {
  StubServer server([](int fd) { ReadRequest(fd) && ReadRequest(fd); });  // never answers
  HttpClient client(io_, Options({server.address()}));
  Outcome outcome;
  const auto start = Clock::now();
  client.Request(Call("PUT", "/v1/kv/slow", "v", 200), outcome.Callback());
  ASSERT_TRUE(RunUntil([&] { return outcome.calls == 1; }));
  EXPECT_LT(Clock::now() - start, 2s);
  ASSERT_FALSE(outcome.result->ok());
  EXPECT_EQ(outcome.result->status().code(), Code::kTimeout);
  EXPECT_TRUE(MaybeApplied(outcome.result->status())) << outcome.result->status().ToString();
  EXPECT_EQ(outcome.calls, 1);
}

TEST_F(AsyncHttpTest, Http500IsRetriedThenSucceeds) {
  std::atomic<int> seen{0};
  StubServer server([&](int fd) {
    while (auto request = ReadRequest(fd)) {
      if (++seen <= 2) {
        WriteResponse(fd, 500, "No cluster leader");
      } else {
        WriteResponse(fd, 200, "true");
      }
    }
  });
  HttpClient client(io_, Options({server.address()}));
  Outcome outcome;
  client.Request(Call("PUT", "/v1/session/renew/x"), outcome.Callback());
  ASSERT_TRUE(RunUntil([&] { return outcome.calls == 1; }));
  ASSERT_EQ(outcome.status(), 200);
  EXPECT_EQ((*outcome.result)->body, "true");
  EXPECT_EQ(seen.load(), 3);
}

TEST_F(AsyncHttpTest, Http500ReturnedWhenRetriesRunOut) {
  std::atomic<int> seen{0};
  StubServer server([&](int fd) {
    while (ReadRequest(fd)) {
      ++seen;
      WriteResponse(fd, 500, "boom");
    }
  });
  HttpClient client(io_, Options({server.address()}));
  Outcome outcome;
  HttpCall call = Call("GET", "/v1/kv/x");
  call.retry.max_retries = 2;
  client.Request(call, outcome.Callback());
  ASSERT_TRUE(RunUntil([&] { return outcome.calls == 1; }));
  EXPECT_EQ(outcome.status(), 500);
  EXPECT_EQ((*outcome.result)->body, "boom");
  EXPECT_EQ(seen.load(), 3);
}

TEST_F(AsyncHttpTest, OtherErrorStatusesAreNotRetried) {
  for (int status : {400, 403, 404, 409, 429, 503}) {
    std::atomic<int> seen{0};
    StubServer server([&](int fd) {
      while (ReadRequest(fd)) {
        ++seen;
        WriteResponse(fd, status, "no");
      }
    });
    HttpClient client(io_, Options({server.address()}));
    Outcome outcome;
    client.Request(Call("PUT", "/v1/kv/x"), outcome.Callback());
    ASSERT_TRUE(RunUntil([&] { return outcome.calls == 1; }));
    EXPECT_EQ(outcome.status(), status);
    EXPECT_EQ(seen.load(), 1) << status;
  }
}

TEST_F(AsyncHttpTest, RefusedFirstAddressFailsOverToSecond) {
  StubServer server(Echo);
  HttpClient client(io_, Options({RefusedAddress(), server.address()}));
  Outcome first, second;
  client.Request(Call("GET", "/v1/status/leader"), first.Callback());
  ASSERT_TRUE(RunUntil([&] { return first.calls == 1; }));
  EXPECT_EQ(first.status(), 200);
  // Later requests start at the address that worked: no retry needed.
  HttpCall call = Call("GET", "/v1/status/leader");
  call.retry = RetryPolicy::None();
  client.Request(call, second.Callback());
  ASSERT_TRUE(RunUntil([&] { return second.calls == 1; }));
  EXPECT_EQ(second.status(), 200);
}

TEST_F(AsyncHttpTest, CloseMidRequestFailsOverAndIsFlaggedWhenNotRetried) {
  // Address 1 reads the request, then drops the connection unanswered.
  StubServer dropper([](int fd) {
    ReadRequest(fd);
    ::shutdown(fd, SHUT_RDWR);
  });
  StubServer good(Echo);
  {
    HttpClient client(io_, Options({dropper.address()}));
    Outcome outcome;
    HttpCall call = Call("PUT", "/v1/kv/k?acquire=s", "v");
    call.retry = RetryPolicy::None();
    client.Request(call, outcome.Callback());
    ASSERT_TRUE(RunUntil([&] { return outcome.calls == 1; }));
    ASSERT_FALSE(outcome.result->ok());
    EXPECT_EQ(outcome.result->status().code(), Code::kUnavailable);
    EXPECT_TRUE(MaybeApplied(outcome.result->status())) << outcome.result->status().ToString();
    EXPECT_FALSE(IsCancelled(outcome.result->status()));
  }
  HttpClient client(io_, Options({dropper.address(), good.address()}));
  Outcome outcome;
  client.Request(Call("PUT", "/v1/kv/k?acquire=s", "v"), outcome.Callback());
  ASSERT_TRUE(RunUntil([&] { return outcome.calls == 1; }));
  ASSERT_EQ(outcome.status(), 200);
  EXPECT_EQ((*outcome.result)->body, "PUT /v1/kv/k?acquire=s v token=secret");
}

TEST_F(AsyncHttpTest, RefusedEverywhereFailsUnavailableNotApplied) {
  HttpClient client(io_, Options({RefusedAddress(), RefusedAddress()}));
  Outcome outcome;
  client.Request(Call("PUT", "/v1/kv/x", "v"), outcome.Callback());
  ASSERT_TRUE(RunUntil([&] { return outcome.calls == 1; }));
  ASSERT_FALSE(outcome.result->ok());
  EXPECT_EQ(outcome.result->status().code(), Code::kUnavailable);
  EXPECT_FALSE(MaybeApplied(outcome.result->status())) << outcome.result->status().ToString();
  EXPECT_NE(outcome.result->status().message().find("5 attempts"), std::string_view::npos)
      << outcome.result->status().ToString();
}

TEST_F(AsyncHttpTest, KeptConnectionClosedByServerIsResentOnFreshOne) {
  // Answers one request per connection, claiming keep-alive, then closes.
  StubServer server([](int fd) {
    if (ReadRequest(fd)) WriteResponse(fd, 200, "ok");
    ::shutdown(fd, SHUT_RDWR);
  });
  HttpClient client(io_, Options({server.address()}));
  for (int i = 0; i < 3; ++i) {
    Outcome outcome;
    HttpCall call = Call("GET", "/v1/kv/x");
    call.retry = RetryPolicy::None();  // success must not depend on retries
    client.Request(call, outcome.Callback());
    ASSERT_TRUE(RunUntil([&] { return outcome.calls == 1; }));
    EXPECT_EQ(outcome.status(), 200) << i;
  }
  EXPECT_EQ(server.connections(), 3);
}

TEST_F(AsyncHttpTest, KeptConnectionDroppedAfterSendIsResentOnceWithoutRetries) {
  // Connection 1 answers one request, then reads the next and drops it
  // unanswered (the server closed the kept connection as we sent). Later
  // connections echo.
  std::atomic<int> accepted{0};
  StubServer server([&](int fd) {
    if (++accepted == 1) {
      if (ReadRequest(fd)) WriteResponse(fd, 200, "first");
      ReadRequest(fd);
      ::shutdown(fd, SHUT_RDWR);
      return;
    }
    Echo(fd);
  });
  HttpClient client(io_, Options({server.address()}));
  HttpCall call = Call("GET", "/v1/kv/x");
  call.retry = RetryPolicy::None();
  Outcome first, second;
  client.Request(call, first.Callback());
  ASSERT_TRUE(RunUntil([&] { return first.calls == 1; }));
  EXPECT_EQ(first.status(), 200);
  client.Request(call, second.Callback());
  ASSERT_TRUE(RunUntil([&] { return second.calls == 1; }));
  ASSERT_EQ(second.status(), 200);
  EXPECT_EQ((*second.result)->body, "GET /v1/kv/x  token=secret");
  EXPECT_EQ(server.connections(), 2);
}

TEST_F(AsyncHttpTest, CancelRunsCallbackOnceWithCancelled) {
  StubServer server([](int fd) { ReadRequest(fd) && ReadRequest(fd); });
  HttpClient client(io_, Options({server.address()}));
  Outcome outcome;
  RequestId id =
      client.Request(Call("GET", "/v1/kv/x?index=5&wait=5m", "", 600'000), outcome.Callback());
  ASSERT_TRUE(RunUntil([&] { return server.connections() == 1; }));
  EXPECT_TRUE(client.Cancel(id));
  EXPECT_EQ(outcome.calls, 1);  // synchronously
  ASSERT_FALSE(outcome.result->ok());
  EXPECT_TRUE(IsCancelled(outcome.result->status())) << outcome.result->status().ToString();
  EXPECT_FALSE(client.Cancel(id));
  RunUntil([] { return false; }, 100ms);  // aborted handlers run: no second callback
  EXPECT_EQ(outcome.calls, 1);
  EXPECT_EQ(client.in_flight(), 0u);
}

TEST_F(AsyncHttpTest, ShutdownEndsEveryRequestExactlyOnce) {
  StubServer server([](int fd) { ReadRequest(fd) && ReadRequest(fd); });
  std::vector<Outcome> outcomes(5);
  Outcome late;
  {
    HttpClient client(io_, Options({server.address(), RefusedAddress()}));
    for (auto& outcome : outcomes) client.Request(Call("PUT", "/v1/kv/x", "v"), outcome.Callback());
    ASSERT_TRUE(RunUntil([&] { return server.connections() == 5; }));
    client.Shutdown();
    for (auto& outcome : outcomes) {
      ASSERT_EQ(outcome.calls, 1);
      EXPECT_TRUE(IsCancelled(outcome.result->status()));
    }
    client.Request(Call("GET", "/"), late.Callback());
    EXPECT_EQ(late.calls, 1);
    EXPECT_TRUE(IsCancelled(late.result->status()));
    client.Shutdown();  // idempotent
  }
  RunUntil([] { return false; }, 100ms);
  for (auto& outcome : outcomes) EXPECT_EQ(outcome.calls, 1);
}

TEST_F(AsyncHttpTest, DestructionWithRequestsInFlightRunsCallbacksFirst) {
  StubServer server([](int fd) { ReadRequest(fd) && ReadRequest(fd); });
  Outcome connected, connecting;
  {
    HttpClient client(io_, Options({server.address()}));
    client.Request(Call("GET", "/a"), connected.Callback());
    ASSERT_TRUE(RunUntil([&] { return server.connections() == 1; }));
    client.Request(Call("GET", "/b"), connecting.Callback());  // connect not yet run
  }
  EXPECT_EQ(connected.calls, 1);
  EXPECT_EQ(connecting.calls, 1);
  RunUntil([] { return false; }, 100ms);  // pending handlers of a dead client: no effect
  EXPECT_EQ(connected.calls, 1);
  EXPECT_EQ(connecting.calls, 1);
}

TEST_F(AsyncHttpTest, LongBlockingQueryCoexistsWithShortRequests) {
  std::atomic<bool> release{false};
  StubServer server([&](int fd) {
    while (auto request = ReadRequest(fd)) {
      if (request->target.find("wait=") != std::string::npos) {
        const auto deadline = Clock::now() + 5s;
        while (!release.load() && Clock::now() < deadline) std::this_thread::yield();
        WriteResponse(fd, 200, "changed");
      } else {
        WriteResponse(fd, 200, "short");
      }
    }
  });
  HttpClient client(io_, Options({server.address()}));
  Outcome blocking;
  client.Request(Call("GET", "/v1/kv/k?index=9&wait=5m", "", 330'000), blocking.Callback());
  for (int i = 0; i < 5; ++i) {
    Outcome renew;
    client.Request(Call("PUT", "/v1/session/renew/s"), renew.Callback());
    ASSERT_TRUE(RunUntil([&] { return renew.calls == 1; }));
    EXPECT_EQ(renew.status(), 200);
    EXPECT_EQ(blocking.calls, 0);
  }
  EXPECT_EQ(server.connections(), 2);  // the renewals share one kept connection
  release = true;
  ASSERT_TRUE(RunUntil([&] { return blocking.calls == 1; }));
  ASSERT_EQ(blocking.status(), 200);
  EXPECT_EQ((*blocking.result)->body, "changed");
}

TEST_F(AsyncHttpTest, BadAddressOrMethodIsReportedAsynchronously) {
  HttpClient bad(io_, Options({"unix:///tmp/x"}));
  Outcome outcome;
  bad.Request(Call("GET", "/"), outcome.Callback());
  EXPECT_EQ(outcome.calls, 0);
  ASSERT_TRUE(RunUntil([&] { return outcome.calls == 1; }));
  EXPECT_EQ(outcome.result->status().code(), Code::kInvalidArgument);

  StubServer server(Echo);
  HttpClient client(io_, Options({server.address()}));
  Outcome method;
  client.Request(Call("FROB", "/"), method.Callback());
  ASSERT_TRUE(RunUntil([&] { return method.calls == 1; }));
  EXPECT_EQ(method.result->status().code(), Code::kInvalidArgument);
}

// ---- end to end against the real server ------------------------------------

// `tenure server -dev` as a child process; restartable on the same ports/data.
class RealServer {
 public:
  RealServer() : http_(RefusedAddress()), raft_(RefusedAddress()) {
    char dir[] = "/tmp/tenure-async-http-XXXXXX";
    dir_ = ::mkdtemp(dir);
  }
  ~RealServer() {
    Kill();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  void Start() {
    pid_ = test_support::SpawnServer(
        test_support::TenureBinary(),
        {"-dev", "-http-addr", http_, "-raft-addr", raft_, "-data-dir", dir_ + "/data"},
        dir_ + "/server.log");
  }
  void Kill() { test_support::KillServer(&pid_); }
  const std::string& http() const { return http_; }

 private:
  std::string http_, raft_, dir_;
  pid_t pid_ = -1;
};

TEST_F(AsyncHttpTest, RealServerRoundTripAndRestart) {
  ASSERT_FALSE(test_support::TenureBinary().empty())
      << "no tenure binary (build/src/tenure or $TENURE_BIN)";
  RealServer server;
  server.Start();
  // The server's startup and restart are covered by retries alone.
  auto patient = [&](std::string method, std::string target, std::string body = "") {
    HttpCall call = Call(std::move(method), std::move(target), std::move(body), 30'000);
    call.retry = {200, 50, 200};
    return call;
  };
  HttpClient client(io_, Options({server.http()}));
  Outcome put;
  client.Request(patient("PUT", "/v1/kv/e2e", "hello"), put.Callback());
  ASSERT_TRUE(RunUntil([&] { return put.calls == 1; }, 35s));
  ASSERT_EQ(put.status(), 200) << (put.result->ok() ? (*put.result)->body
                                                    : put.result->status().ToString());
  EXPECT_EQ((*put.result)->body, "true");

  server.Kill();
  server.Start();
  Outcome get;
  client.Request(patient("GET", "/v1/kv/e2e?raw"), get.Callback());
  ASSERT_TRUE(RunUntil([&] { return get.calls == 1; }, 35s));
  ASSERT_EQ(get.status(), 200) << (get.result->ok() ? (*get.result)->body
                                                    : get.result->status().ToString());
  EXPECT_EQ((*get.result)->body, "hello");

  Outcome missing;
  client.Request(patient("GET", "/v1/kv/absent"), missing.Callback());
  ASSERT_TRUE(RunUntil([&] { return missing.calls == 1; }, 35s));
  EXPECT_EQ(missing.status(), 404);
}

}  // namespace
}  // namespace tenure::net
