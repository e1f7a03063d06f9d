// client::Candidate against a real `tenure server -dev` (no mocks): Juju's
// event contract (elected/deposed alternate, settings-changed on followers
// only), resign and handoff, the health check, a lapsed guarantee while the
// server is paused (SIGSTOP) and recovery, a lost session, Stop.
#include "client/candidate.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <boost/asio/io_context.hpp>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "net/blocking_http_client.h"
#include "net/url.h"
#include "unit/client/server_process.h"

namespace tenure::client {
namespace {

using test_support::RunFor;
using test_support::RunUntil;
using namespace std::chrono_literals;

struct Recorder {
  std::vector<std::string> events;  // "elected 12", "deposed <why>", "settings k=v,..."
  int Count(const std::string& prefix) const {
    int n = 0;
    for (const auto& e : events) n += e.rfind(prefix, 0) == 0 ? 1 : 0;
    return n;
  }
  std::string Last() const { return events.empty() ? "" : events.back(); }
};

std::string Render(const Settings& settings) {
  std::string out;
  for (const auto& [k, v] : settings) out += (out.empty() ? "" : ",") + k + "=" + v;
  return out;
}

class CandidateTest : public test_support::RealServerSuite {
 protected:
  void SetUp() override {
    RealServerSuite::SetUp();
    name_ = std::string(::testing::UnitTest::GetInstance()->current_test_info()->name());
  }
  void TearDown() override { candidates_.clear(); }

  // TTL 10 s (G = 3.33 s), lock-delay 1 s, renewals every second.
  CandidateOptions Options(const std::string& who) {
    CandidateOptions options;
    options.http.addresses = {server_->http()};
    options.http.connect_timeout_ms = 1'000;
    options.session.name = "candidate-test";
    options.session.ttl_ms = 10'000;
    options.session.lock_delay_ms = 1'000;
    options.session.lease = client::LeaseOptions::ForTtl(10'000);
    options.session.lease.renew_interval_ms = 1'000;
    options.session.renew_timeout_ms = 1'000;
    options.election.name = name_;
    options.election.candidate = who;
    options.value = "{\"Candidate\":\"" + who + "\"}";
    options.resign_backoff_ms = 2'000;
    return options;
  }

  Candidate& Add(const std::string& who, std::optional<CandidateOptions> options = std::nullopt) {
    recorders_.push_back(std::make_unique<Recorder>());
    Recorder* rec = recorders_.back().get();
    CandidateEvents events;
    events.elected = [rec](std::uint64_t token) {
      rec->events.push_back("elected " + std::to_string(token));
    };
    events.deposed = [rec](const std::string& why) { rec->events.push_back("deposed " + why); };
    events.settings_changed = [rec](const Settings& s) {
      rec->events.push_back("settings " + Render(s));
    };
    candidates_.push_back(
        std::make_unique<Candidate>(io_, options ? *options : Options(who), events));
    candidates_.back()->Start();
    return *candidates_.back();
  }
  Recorder& Events(int i) { return *recorders_[static_cast<std::size_t>(i)]; }

  Status Wait(const std::function<void(std::function<void(Status)>)>& start) {
    std::optional<Status> done;
    start([&](Status s) { done = std::move(s); });
    EXPECT_TRUE(RunUntil(
        io_, [&] { return done.has_value(); }, 10s));
    return done ? *done : Status::Timeout("no answer");
  }
  net::ClientResponse Sync(const std::string& method, const std::string& target) {
    net::BlockingHttpClient http(server_->http(), "", 5'000);
    auto r = http.Request(method, target, "");
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? r.value() : net::ClientResponse{};
  }

  bool Registered(const std::string& who) {
    auto got = Sync("GET", "/v1/kv/service/" + name_ + "/candidates/" + who);
    return got.status == 200 && got.body.find("\"Session\"") != std::string::npos;
  }

  boost::asio::io_context io_;
  std::string name_;
  std::vector<std::unique_ptr<Recorder>> recorders_;
  std::vector<std::unique_ptr<Candidate>> candidates_;
};

TEST_F(CandidateTest, JujuEventsElectedDeposedAndSettingsOnFollowersOnly) {
  Candidate& a = Add("a");
  ASSERT_TRUE(RunUntil(
      io_, [&] { return a.IsLeader(); }, 10s));
  Candidate& b = Add("b");
  ASSERT_TRUE(RunUntil(
      io_, [&] { return Events(1).Count("settings") == 1; }, 10s));
  EXPECT_EQ(Events(1).events, std::vector<std::string>{"settings "})
      << "a follower starts with one settings-changed";
  EXPECT_EQ(Events(0).events,
            std::vector<std::string>{"elected " + std::to_string(a.FencingToken())});
  EXPECT_FALSE(b.IsLeader());

  EXPECT_TRUE(Wait([&](auto done) { a.SetSettings({{"x", "1"}, {"y", "2"}}, done); }).ok());
  ASSERT_TRUE(RunUntil(
      io_, [&] { return Events(1).Count("settings") == 2; }, 10s));
  EXPECT_EQ(Events(1).Last(), "settings x=1,y=2");
  Status refused = Wait([&](auto done) { b.SetSettings({{"x", "9"}}, done); });
  EXPECT_EQ(refused.code(), Code::kFailedPrecondition);
  EXPECT_NE(refused.message().find("not the leader"), std::string::npos);
  EXPECT_TRUE(Wait([&](auto done) {
                a.SetSettings({{"x", ""}}, done);
              }).ok())
      << "empty value deletes";
  ASSERT_TRUE(RunUntil(
      io_, [&] { return Events(1).Count("settings") == 3; }, 10s));
  EXPECT_EQ(Events(1).Last(), "settings y=2");
  RunFor(io_, 300ms);
  EXPECT_EQ(Events(0).Count("settings"), 0) << "the leader is not told of its own writes";

  EXPECT_TRUE(Wait([&](auto done) { a.Resign(std::nullopt, done); }).ok());
  ASSERT_TRUE(RunUntil(
      io_, [&] { return b.IsLeader(); }, 5s));
  EXPECT_EQ(Events(0).events[1], "deposed resigned");
  EXPECT_EQ(Events(0).events[2], "settings y=2") << "deposed is followed by one settings-changed";
  EXPECT_EQ(Events(1).Last(), "elected " + std::to_string(b.FencingToken()));
  EXPECT_GT(b.FencingToken(), 0u);
}

// Without the fair queue: with it, any candidate waiting in the line may be
// named (ElectionTest.ResignToWithTheQueueNamesAnyCandidateInTheLine), but a
// resting candidate is outside the line, and naming it would jump the queue.
TEST_F(CandidateTest, ResignToPicksTheNamedCandidateEvenWhileItRests) {
  auto unfair = [this](const std::string& who) {
    CandidateOptions options = Options(who);
    options.election.fair_queue = false;
    return options;
  };
  Candidate& a = Add("a", unfair("a"));
  ASSERT_TRUE(RunUntil(
      io_, [&] { return a.IsLeader(); }, 10s));
  Candidate& b = Add("b", unfair("b"));
  Candidate& c = Add("c", unfair("c"));
  // Handoff needs the successor's registration (candidates/<name>, locked by its session).
  ASSERT_TRUE(RunUntil(
      io_, [&] { return Registered("b") && Registered("c"); }, 10s));
  EXPECT_TRUE(Wait([&](auto done) { a.Resign(std::string("c"), done); }).ok());
  ASSERT_TRUE(RunUntil(
      io_, [&] { return c.IsLeader(); }, 5s));
  EXPECT_FALSE(b.IsLeader());
  EXPECT_EQ(Events(0).events.at(1), "deposed handed over to c");
  // a rests after handing over; c hands straight back: a takes it up at once.
  EXPECT_TRUE(a.resting());
  EXPECT_TRUE(Wait([&](auto done) { c.Resign(std::string("a"), done); }).ok());
  ASSERT_TRUE(RunUntil(
      io_, [&] { return a.IsLeader(); }, 1500ms))
      << "not picked up before the back-off";
  EXPECT_FALSE(b.IsLeader());
  Status self = Wait([&](auto done) { a.Resign(std::string("a"), done); });
  EXPECT_EQ(self.code(), Code::kFailedPrecondition);
  Status unknown = Wait([&](auto done) { a.Resign(std::string("nobody"), done); });
  EXPECT_EQ(unknown.code(), Code::kFailedPrecondition);
  EXPECT_TRUE(a.IsLeader()) << "a refused handoff keeps leadership";
  Status follower = Wait([&](auto done) { b.Resign(std::nullopt, done); });
  EXPECT_EQ(follower.code(), Code::kFailedPrecondition);
}

TEST_F(CandidateTest, FailingHealthCheckStepsDownAndKeepsOutOfTheCampaign) {
  bool a_healthy = true;
  CandidateOptions options = Options("a");
  options.health_interval_ms = 100;
  options.health_check = [&a_healthy](CandidateOptions::HealthReply reply) {
    reply(a_healthy, a_healthy ? "" : "disk full");
  };
  Candidate& a = Add("a", options);
  ASSERT_TRUE(RunUntil(
      io_, [&] { return a.IsLeader(); }, 10s));
  Candidate& b = Add("b");
  ASSERT_TRUE(RunUntil(
      io_, [&] { return Events(1).Count("settings") == 1; }, 10s));
  a_healthy = false;
  ASSERT_TRUE(RunUntil(
      io_, [&] { return b.IsLeader(); }, 5s));
  EXPECT_FALSE(a.healthy());
  EXPECT_EQ(Events(0).events.at(1), "deposed health check failed: disk full");
  // b resigns; unhealthy a must not take the key: b takes it back after its rest.
  EXPECT_TRUE(Wait([&](auto done) { b.Resign(std::nullopt, done); }).ok());
  ASSERT_TRUE(RunUntil(
      io_, [&] { return b.IsLeader(); }, 5s));
  EXPECT_EQ(Events(0).Count("elected"), 1);
  // Handed the key while unhealthy: a gives it back at once (b takes it again after its rest).
  ASSERT_TRUE(RunUntil(
      io_, [&] { return Registered("a"); }, 5s));
  EXPECT_TRUE(Wait([&](auto done) { b.Resign(std::string("a"), done); }).ok());
  ASSERT_TRUE(RunUntil(
      io_,
      [&] {
        auto got = Sync("GET", "/v1/kv/service/" + name_ + "/leader");
        return got.status == 200 && got.body.find("\"Session\"") == std::string::npos;
      },
      1500ms))
      << "an unhealthy candidate kept a handed key";
  ASSERT_TRUE(RunUntil(
      io_, [&] { return b.IsLeader(); }, 5s));
  EXPECT_EQ(Events(0).Count("elected"), 1);
  a_healthy = true;
  ASSERT_TRUE(RunUntil(
      io_, [&] { return a.healthy(); }, 5s));
  EXPECT_TRUE(Wait([&](auto done) { b.Resign(std::nullopt, done); }).ok());
  ASSERT_TRUE(RunUntil(
      io_, [&] { return a.IsLeader(); }, 5s))
      << "healthy again: campaigns";
}

TEST_F(CandidateTest, PausedServerLapsesTheGuaranteeThenRenewalRestoresIt) {
  Candidate& a = Add("a");
  ASSERT_TRUE(RunUntil(
      io_, [&] { return a.IsLeader(); }, 10s));
  const std::uint64_t token = a.FencingToken();
  ASSERT_EQ(::kill(server_->pid(), SIGSTOP), 0);
  // No renewal gets through: deposed once the lease is proven for less than G
  // (9.8 s - 3.33 s after the last acknowledged renewal was sent).
  const bool deposed = RunUntil(
      io_, [&] { return Events(0).Count("deposed") == 1; }, 9s);
  ::kill(server_->pid(), SIGCONT);
  ASSERT_TRUE(deposed);
  EXPECT_EQ(Events(0).events.at(1),
            "deposed leadership can no longer be proven: no renewal acknowledged in time");
  // The server kept the session (its timers were paused too): the next
  // renewal proves the lease again and leadership resumes with the same token.
  ASSERT_TRUE(RunUntil(
      io_, [&] { return Events(0).Count("elected") == 2; }, 10s));
  EXPECT_TRUE(a.IsLeader());
  EXPECT_EQ(a.FencingToken(), token);
  EXPECT_EQ(Events(0).Last(), "elected " + std::to_string(token));
}

TEST_F(CandidateTest, LostSessionIsReplacedAndTheCandidateCampaignsAgain) {
  Candidate& a = Add("a");
  ASSERT_TRUE(RunUntil(
      io_, [&] { return a.IsLeader(); }, 10s));
  const std::string first = a.session_id();
  Sync("PUT", "/v1/session/destroy/" + first);
  ASSERT_TRUE(RunUntil(
      io_, [&] { return Events(0).Count("deposed") == 1; }, 5s));
  // A new session; lock-delay (1 s) passes; leads again with a larger token.
  ASSERT_TRUE(RunUntil(
      io_, [&] { return a.IsLeader(); }, 15s));
  EXPECT_NE(a.session_id(), first);
  EXPECT_EQ(Events(0).Count("elected"), 2);
}

TEST_F(CandidateTest, StopResignsAndDestroysTheSession) {
  Candidate& a = Add("a");
  ASSERT_TRUE(RunUntil(
      io_, [&] { return a.IsLeader(); }, 10s));
  const std::string session = a.session_id();
  bool stopped = false;
  a.Stop([&] { stopped = true; });
  ASSERT_TRUE(RunUntil(
      io_, [&] { return stopped; }, 10s));
  EXPECT_EQ(Events(0).Last(), "deposed stopping");
  EXPECT_EQ(Sync("GET", "/v1/session/info/" + session).body, "[]");
  EXPECT_EQ(Sync("GET", "/v1/kv/service/" + name_ + "/leader?raw").status, 200);
}

}  // namespace
}  // namespace tenure::client
