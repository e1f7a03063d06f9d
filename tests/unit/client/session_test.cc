// client::Session against a real `tenure server -dev` (no mocks): create,
// renewal cadence, lease arithmetic with injected times, loss on 404, destroy;
// and against a stub server that never answers chosen renewals.
// The loop runs on the test thread; every wait polls with a deadline.
#include "client/session.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

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

#include "net/blocking_http_client.h"
#include "net/url.h"
#include "unit/client/server_process.h"

namespace tenure::client {
namespace {

using test_support::RunFor;
using test_support::RunUntil;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

class SessionTest : public test_support::RealServerSuite {
 protected:
  void SetUp() override {
    RealServerSuite::SetUp();
    if (HasFatalFailure()) return;
    http_ = std::make_unique<net::HttpClient>(
        io_, net::HttpClientOptions{{server_->http()}, "", 2'000, 30'000, 2});
  }

  // Creates `session` and waits for the answer; returns the id.
  std::string CreateSession(Session& session, SessionOptions options) {
    std::optional<Result<std::string>> created;
    session.Create(std::move(options), [&](Result<std::string> r) { created = std::move(r); });
    EXPECT_TRUE(RunUntil(io_, [&] { return created.has_value(); }));
    if (!created || !created->ok()) {
      ADD_FAILURE() << "create failed: " << (created ? created->status().ToString() : "timeout");
      return "";
    }
    return created->value();
  }

  static SessionOptions TenSeconds() {
    SessionOptions options;
    options.name = "session-test";
    options.ttl_ms = 10'000;
    options.lock_delay_ms = 1'000;
    options.lease = client::LeaseOptions::ForTtl(10'000);
    return options;
  }

  // A synchronous client for the test's own out-of-band requests.
  net::ClientResponse Sync(const std::string& method, const std::string& target,
                           const std::string& body = "") {
    net::BlockingHttpClient http(server_->http(), "", 5'000);
    auto r = http.Request(method, target, body);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? r.value() : net::ClientResponse{};
  }

  boost::asio::io_context io_;
  std::unique_ptr<net::HttpClient> http_;
};

TEST_F(SessionTest, CreateProvesLeaseFromSendTime) {
  Session session(io_, *http_);
  const MonoMs before = SteadyNowMs();
  std::string id = CreateSession(session, TenSeconds());
  const MonoMs after = SteadyNowMs();
  ASSERT_EQ(id.size(), 36u);
  EXPECT_TRUE(session.alive());
  const auto& lease = session.lease();
  ASSERT_TRUE(lease.held());
  // The create counts as the first renewal, timed by its SEND time:
  // EndMs = sent + floor(10000 * 0.99 / 1.01) = sent + 9801.
  EXPECT_EQ(lease.ProvenMs(), 9801);
  EXPECT_GE(lease.EndMs(), before + 9801);
  EXPECT_LE(lease.EndMs(), after + 9801);
  // Injected times: G = T/3 = 3333 ms holds until EndMs - 3333, not one ms more.
  const MonoMs end = lease.EndMs();
  EXPECT_TRUE(session.Guaranteed(end - 3333, 3333));
  EXPECT_FALSE(session.Guaranteed(end - 3332, 3333));
  EXPECT_TRUE(session.Guaranteed(3333));  // now, with the real clock
  // The server knows it as a pure TTL session.
  auto info = Sync("GET", "/v1/session/info/" + id);
  EXPECT_NE(info.body.find("\"TTL\":\"10s\""), std::string::npos) << info.body;
  EXPECT_NE(info.body.find("\"Behavior\":\"release\""), std::string::npos) << info.body;
}

TEST_F(SessionTest, DefaultRenewalComesAtRJitteredEarly) {
  // R = T/3 = 3333 ms, jittered early by up to 10%: the first renewal comes
  // 3000..3333 ms after the create was sent.
  Session session(io_, *http_);
  const MonoMs start = SteadyNowMs();
  ASSERT_FALSE(CreateSession(session, TenSeconds()).empty());
  const MonoMs created_end = session.lease().EndMs();
  ASSERT_FALSE(RunUntil(
      io_, [&] { return session.renewals() > 0; }, 2'900ms));
  ASSERT_TRUE(RunUntil(
      io_, [&] { return session.renewals() > 0; }, 1'500ms));
  const DurationMs elapsed = SteadyNowMs() - start;
  EXPECT_GE(elapsed, 2'990);
  EXPECT_LE(elapsed, 3'333 + 300);
  // The lease moved forward by the time between the two sends.
  EXPECT_GE(session.lease().EndMs() - created_end, 2'990);
  EXPECT_TRUE(session.Guaranteed(3'333));
}

TEST_F(SessionTest, RenewCadenceKeepsTheLeaseAdvancing) {
  // A short renewal interval (1 s) to count several renewals quickly.
  SessionOptions options = TenSeconds();
  options.lease.renew_interval_ms = 1'000;
  Session session(io_, *http_);
  ASSERT_FALSE(CreateSession(session, options).empty());
  const MonoMs start = SteadyNowMs();
  MonoMs last_end = session.lease().EndMs();
  int advances = 0;
  bool always_guaranteed = true;
  RunUntil(
      io_,
      [&] {
        if (session.lease().EndMs() > last_end) {
          ++advances;
          last_end = session.lease().EndMs();
        }
        // Right after a renewal 9.8 s are proven; before the next at most 1 s less.
        always_guaranteed = always_guaranteed && session.Guaranteed(8'000);
        return SteadyNowMs() - start >= 3'500;
      },
      5s);
  EXPECT_TRUE(always_guaranteed);
  // Renewals at 0.9..1.0 s intervals: 3 in 3.5 s (4 at most with jitter).
  EXPECT_GE(session.renewals(), 3u);
  EXPECT_LE(session.renewals(), 4u);
  EXPECT_EQ(static_cast<std::uint64_t>(advances), session.renewals());
  EXPECT_FALSE(session.lost());
}

TEST_F(SessionTest, LossIsDetectedOnRenewAndReportedOnce) {
  SessionOptions options = TenSeconds();
  options.lease.renew_interval_ms = 1'000;
  Session session(io_, *http_);
  std::string id = CreateSession(session, options);
  ASSERT_FALSE(id.empty());
  int lost = 0, lost_late = 0;
  Status why;
  session.OnLost([&](const Status& s) {
    ++lost;
    why = s;
  });
  // Destroyed behind its back: the next renewal gets a 404.
  EXPECT_EQ(Sync("PUT", "/v1/session/destroy/" + id).status, 200);
  const auto destroyed_at = Clock::now();
  ASSERT_TRUE(RunUntil(
      io_, [&] { return lost > 0; }, 3s));
  EXPECT_LE(Clock::now() - destroyed_at, 1'500ms);  // within ~R
  EXPECT_EQ(why.code(), Code::kNotFound);
  EXPECT_TRUE(session.lost());
  EXPECT_FALSE(session.alive());
  EXPECT_FALSE(session.lease().held());
  EXPECT_FALSE(session.Guaranteed(0));
  // Exactly once, and no renewals afterwards; a late listener runs at once.
  const auto renewals = session.renewals();
  RunFor(io_, 1'500ms);
  EXPECT_EQ(lost, 1);
  EXPECT_EQ(session.renewals(), renewals);
  session.OnLost([&](const Status&) { ++lost_late; });
  EXPECT_EQ(lost_late, 1);
}

TEST_F(SessionTest, DestroyRemovesTheSessionWithoutLossCallback) {
  Session session(io_, net::HttpClientOptions{{server_->http()}, "", 2'000, 30'000, 2});
  std::string id = CreateSession(session, TenSeconds());
  ASSERT_FALSE(id.empty());
  int lost = 0;
  session.OnLost([&](const Status&) { ++lost; });
  std::optional<Status> destroyed;
  session.Destroy([&](Status s) { destroyed = std::move(s); });
  ASSERT_TRUE(RunUntil(io_, [&] { return destroyed.has_value(); }));
  EXPECT_TRUE(destroyed->ok()) << destroyed->ToString();
  EXPECT_FALSE(session.alive());
  EXPECT_FALSE(session.Guaranteed(0));
  EXPECT_EQ(Sync("GET", "/v1/session/info/" + id).body, "[]");
  EXPECT_EQ(lost, 0);
}

TEST_F(SessionTest, CreateFailsClearlyBelowTheServerMinimumTtl) {
  SessionOptions options = TenSeconds();
  options.ttl_ms = 3'000;
  options.lease = client::LeaseOptions::ForTtl(3'000);
  Session session(io_, *http_);
  std::optional<Result<std::string>> created;
  session.Create(options, [&](Result<std::string> r) { created = std::move(r); });
  ASSERT_TRUE(RunUntil(
      io_, [&] { return created.has_value(); }, 10s));
  ASSERT_FALSE(created->ok());
  EXPECT_NE(created->status().message().find("Invalid Session TTL"), std::string::npos)
      << created->status().ToString();
  EXPECT_FALSE(session.alive());
}

// ---- renew attempts that get no answer (stub server) ------------------------

// A stub that answers create with an ID and renewals with 200, except those
// `hang(n)` picks (n = 1 for the first renew): those are read and never
// answered; the stub waits until the client closes the connection.
struct RenewStub {
  explicit RenewStub(std::function<bool(int)> hang)
      : hang_(std::move(hang)), server([this](int fd) { Serve(fd); }) {}

  void Serve(int fd) {
    while (auto request = test_support::ReadRequest(fd)) {
      if (request->target.rfind("/v1/session/create", 0) == 0) {
        test_support::WriteResponse(fd, 200, R"({"ID":"stub-session"})");
        continue;
      }
      int n = 0;
      {
        std::lock_guard<std::mutex> lock(mu);
        renew_at.push_back(Clock::now());
        n = static_cast<int>(renew_at.size());
      }
      if (hang_(n)) {
        while (test_support::ReadRequest(fd)) {
        }
        std::lock_guard<std::mutex> lock(mu);
        given_up.push_back(n);
        return;
      }
      test_support::WriteResponse(fd, 200, "[]");
    }
  }
  std::size_t renews() {
    std::lock_guard<std::mutex> lock(mu);
    return renew_at.size();
  }

  std::function<bool(int)> hang_;
  std::mutex mu;
  std::vector<Clock::time_point> renew_at;  // arrival of each renew attempt
  std::vector<int> given_up;                // hung attempts the client closed
  test_support::StubServer server;          // last: stopped first
};

SessionOptions StubOptions() {
  SessionOptions options;
  options.name = "session-test";
  options.ttl_ms = 10'000;
  options.lease = client::LeaseOptions::ForTtl(10'000);
  options.lease.renew_interval_ms = 500;  // the first renewal 450..500 ms after the create
  return options;
}

TEST(SessionRenewTest, UnansweredRenewalIsRetriedAfterRNotAfterItsTimeout) {
  // The first renewal is swallowed (no answer, no error). The next attempt
  // must go r = 1 s after it, not when its 3 s timeout ends: with a 10 s TTL
  // that wait would eat 3 s of the 3.1 s slack (docs/leadership.md).
  RenewStub stub([](int n) { return n == 1; });
  boost::asio::io_context io;
  net::HttpClient http(io, net::HttpClientOptions{{stub.server.address()}, "", 2'000, 30'000, 2});
  Session session(io, http);
  std::optional<Result<std::string>> created;
  session.Create(StubOptions(), [&](Result<std::string> r) { created = std::move(r); });
  ASSERT_TRUE(test_support::RunUntil(io, [&] { return created.has_value(); }));
  ASSERT_TRUE(created->ok()) << created->status().ToString();
  const MonoMs created_end = session.lease().EndMs();
  ASSERT_EQ(session.options().renew_timeout_ms, 3'000);

  ASSERT_TRUE(test_support::RunUntil(
      io, [&] { return session.renewals() > 0; }, 5s));
  std::vector<Clock::time_point> at;
  {
    std::lock_guard<std::mutex> lock(stub.mu);
    at = stub.renew_at;
  }
  ASSERT_EQ(at.size(), 2u);
  const auto gap = std::chrono::duration_cast<std::chrono::milliseconds>(at[1] - at[0]);
  EXPECT_GE(gap.count(), 900);
  EXPECT_LE(gap.count(), 1'500);  // was 3'000: the attempt's timeout
  // The lease counts from the second attempt's send (~1.45..1.5 s after the create).
  EXPECT_GE(session.lease().EndMs() - created_end, 1'400);
  EXPECT_TRUE(session.alive());
  // The swallowed attempt was cancelled by the success, not left to time out.
  ASSERT_TRUE(test_support::RunUntil(
      io,
      [&] {
        std::lock_guard<std::mutex> lock(stub.mu);
        return !stub.given_up.empty();
      },
      1s));
  EXPECT_LT(Clock::now() - at[0], 2'900ms);
  EXPECT_EQ(http.in_flight(), 0u);
}

TEST(SessionRenewTest, UnansweredRenewalsOverlapAtMostThree) {
  // No renewal is ever answered and each may wait 10 s: a new attempt still
  // goes every r, and starting a fourth cancels the oldest.
  RenewStub stub([](int) { return true; });
  boost::asio::io_context io;
  net::HttpClient http(io, net::HttpClientOptions{{stub.server.address()}, "", 2'000, 30'000, 2});
  Session session(io, http);
  SessionOptions options = StubOptions();
  options.renew_timeout_ms = 10'000;
  std::optional<Result<std::string>> created;
  session.Create(options, [&](Result<std::string> r) { created = std::move(r); });
  ASSERT_TRUE(test_support::RunUntil(io, [&] { return created.has_value(); }));
  ASSERT_TRUE(created->ok()) << created->status().ToString();
  std::size_t most = 0;
  ASSERT_TRUE(test_support::RunUntil(
      io,
      [&] {
        most = std::max(most, http.in_flight());
        return stub.renews() >= 5;
      },
      8s));
  EXPECT_EQ(most, 3u);
  EXPECT_EQ(session.renewals(), 0u);
  EXPECT_TRUE(session.alive());
  // Stopping the session cancels every attempt.
  std::optional<Status> destroyed;
  session.Destroy([&](Status s) { destroyed = std::move(s); });
  EXPECT_LE(http.in_flight(), 1u);  // the destroy request only
}

}  // namespace
}  // namespace tenure::client
