// tenure::Session against a real `tenure server -dev` (no mocks): create,
// renewal cadence, lease arithmetic with injected times, loss on 404, destroy.
// The loop runs on the test thread; every wait polls with a deadline.
#include "tenure/session.h"

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
#include <optional>
#include <string>
#include <thread>

#include "client/http_client.h"
#include "unit/client/server_process.h"

namespace tenure {
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
    http_ = std::make_unique<client::AsyncHttpClient>(
        io_, client::AsyncHttpOptions{{server_->http()}, "", 2'000, 30'000, 2});
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
  client::ClientResponse Sync(const std::string& method, const std::string& target,
                              const std::string& body = "") {
    client::HttpClient http(server_->http(), "", 5'000);
    auto r = http.Request(method, target, body);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? r.value() : client::ClientResponse{};
  }

  boost::asio::io_context io_;
  std::unique_ptr<client::AsyncHttpClient> http_;
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
  ASSERT_FALSE(RunUntil(io_, [&] { return session.renewals() > 0; }, 2'900ms));
  ASSERT_TRUE(RunUntil(io_, [&] { return session.renewals() > 0; }, 1'500ms));
  const MonoMs elapsed = SteadyNowMs() - start;
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
  RunUntil(io_, [&] {
    if (session.lease().EndMs() > last_end) {
      ++advances;
      last_end = session.lease().EndMs();
    }
    // Right after a renewal 9.8 s are proven; before the next at most 1 s less.
    always_guaranteed = always_guaranteed && session.Guaranteed(8'000);
    return SteadyNowMs() - start >= 3'500;
  }, 5s);
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
  ASSERT_TRUE(RunUntil(io_, [&] { return lost > 0; }, 3s));
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
  Session session(io_, client::AsyncHttpOptions{{server_->http()}, "", 2'000, 30'000, 2});
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
  ASSERT_TRUE(RunUntil(io_, [&] { return created.has_value(); }, 10s));
  ASSERT_FALSE(created->ok());
  EXPECT_NE(created->status().message().find("Invalid Session TTL"), std::string::npos)
      << created->status().ToString();
  EXPECT_FALSE(session.alive());
}

}  // namespace
}  // namespace tenure
