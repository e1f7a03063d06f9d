// libtenure's public classes (tenure::Client, Session, Election) against a
// real `tenure server -dev`: blocking and callback campaigns, the fencing
// token the server reports, resign, observe, loss by someone else's delete or
// the session's loss, the threading rules (blocking calls refused on the
// client's thread, objects destroyed in their own callbacks, Cancel from
// another thread) and the lifetime rules (objects outliving their Client).
// tests/sdk/test_install.py proves the same classes from an installed tree.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "net/blocking_http_client.h"
#include "tenure/tenure.h"
#include "unit/client/server_process.h"

namespace tenure {
namespace {

using namespace std::chrono_literals;

// A value set on the client's thread, awaited on the test's.
template <typename T>
class Latch {
 public:
  void Set(T value) {
    std::lock_guard<std::mutex> lock(mu_);
    values_.push_back(std::move(value));
    cv_.notify_all();
  }
  // The n-th value (0-based), or nullopt after the timeout.
  std::optional<T> Wait(std::size_t n = 0, std::chrono::milliseconds timeout = 10s) {
    std::unique_lock<std::mutex> lock(mu_);
    if (!cv_.wait_for(lock, timeout, [&] { return values_.size() > n; })) return std::nullopt;
    return values_[n];
  }
  std::size_t count() {
    std::lock_guard<std::mutex> lock(mu_);
    return values_.size();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<T> values_;
};

class SdkTest : public test_support::RealServerSuite {
 protected:
  void SetUp() override {
    RealServerSuite::SetUp();
    if (HasFatalFailure()) return;
    name_ = std::string(::testing::UnitTest::GetInstance()->current_test_info()->name());
    client_ = std::make_unique<Client>(Options());
  }

  ClientOptions Options() const {
    ClientOptions options;
    options.addresses = {server_->http()};
    options.connect_timeout_ms = 2'000;
    return options;
  }
  // TTL 10 s, lock-delay 1 s, a renewal every second (a loss is seen within ~1 s).
  static SessionOptions FastSession() {
    SessionOptions options;
    options.name = "sdk-test";
    options.ttl_ms = 10'000;
    options.lock_delay_ms = 1'000;
    options.renew_interval_ms = 1'000;
    return options;
  }
  std::unique_ptr<Session> NewSession() {
    auto session = std::make_unique<Session>(*client_, FastSession());
    Status created = session->Create();
    EXPECT_TRUE(created.ok()) << created.ToString();
    return session;
  }
  ElectionOptions Named(const std::string& candidate) const {
    ElectionOptions options;
    options.name = name_;
    options.candidate = candidate;
    return options;
  }
  net::ClientResponse Sync(const std::string& method, const std::string& target) {
    net::BlockingHttpClient http(server_->http(), "", 5'000);
    auto r = http.Request(method, target);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? r.value() : net::ClientResponse{};
  }
  std::string LeaderKey() const { return "/v1/kv/service/" + name_ + "/leader"; }

  std::string name_;
  std::unique_ptr<Client> client_;
};

TEST_F(SdkTest, ABlockingCampaignLeadsWithTheServersFencingToken) {
  auto session = NewSession();
  EXPECT_TRUE(session->alive());
  EXPECT_EQ(session->id().size(), 36u);
  Election election(*session, Named("a"));
  EXPECT_FALSE(election.IsLeader());
  EXPECT_EQ(election.FencingToken(), 0u);

  ASSERT_TRUE(election.Campaign("desc-a").ok());
  EXPECT_TRUE(election.IsLeader());
  EXPECT_TRUE(election.IsLeader(1'000));
  const std::uint64_t token = election.FencingToken();
  EXPECT_GT(token, 0u);
  EXPECT_NE(Sync("GET", LeaderKey()).body.find("\"Fence\":" + std::to_string(token)),
            std::string::npos);
  const LeaderInfo leader = election.Leader();
  EXPECT_EQ(leader.session, session->id());
  EXPECT_EQ(leader.value, "desc-a");
  EXPECT_EQ(leader.fence, token);
  EXPECT_EQ(election.LeaderKey(), "service/" + name_ + "/leader");

  ASSERT_TRUE(election.Resign().ok());
  EXPECT_FALSE(election.IsLeader(0));
  EXPECT_EQ(election.FencingToken(), 0u);
  EXPECT_EQ(Sync("GET", LeaderKey()).body.find("\"Session\""), std::string::npos);
  EXPECT_EQ(election.Resign().code(), Code::kFailedPrecondition);
  ASSERT_TRUE(session->Destroy().ok());
  EXPECT_FALSE(session->alive());
}

TEST_F(SdkTest, ACallbackCampaignWaitsForTheLeaderToResign) {
  auto first = NewSession();
  auto second = NewSession();
  Election a(*first, Named("a"));
  Election b(*second, Named("b"));
  ASSERT_TRUE(a.Campaign("a").ok());
  const std::uint64_t token_a = a.FencingToken();

  Latch<Status> done;
  Latch<std::thread::id> where;
  b.Campaign("b", [&](Status status) {
    where.Set(std::this_thread::get_id());
    done.Set(std::move(status));
  });
  EXPECT_FALSE(done.Wait(0, 700ms).has_value());
  EXPECT_FALSE(b.IsLeader(0));
  // A second campaign while one is in progress is refused, not fatal.
  EXPECT_EQ(b.Campaign("b").code(), Code::kFailedPrecondition);

  ASSERT_TRUE(a.Resign().ok());
  auto status = done.Wait();
  ASSERT_TRUE(status.has_value());
  ASSERT_TRUE(status->ok()) << status->ToString();
  EXPECT_NE(where.Wait(), std::this_thread::get_id());  // on the client's thread
  EXPECT_TRUE(b.IsLeader());
  EXPECT_GT(b.FencingToken(), token_a);
  EXPECT_FALSE(a.TryOnce("a").value());
}

TEST_F(SdkTest, ObserveAndOnLostReportSomeoneElsesDelete) {
  auto session = NewSession();
  Election election(*session, Named("a"));
  Latch<Status> lost;
  Latch<LeaderInfo> seen;
  election.OnLost([&](const Status& why) { lost.Set(why); });
  ASSERT_TRUE(election.Campaign("v").ok());
  election.Observe([&](const LeaderInfo& info) { seen.Set(info); });
  auto first = seen.Wait(0);
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->session, session->id());

  EXPECT_EQ(Sync("DELETE", LeaderKey()).status, 200);
  auto why = lost.Wait();
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->message().find("deleted"), std::string::npos) << why->ToString();
  EXPECT_FALSE(election.IsLeader(0));
  auto gone = seen.Wait(1);
  ASSERT_TRUE(gone.has_value());
  EXPECT_FALSE(gone->exists);
}

TEST_F(SdkTest, ALostSessionEndsLeadershipAndRunsTheListeners) {
  auto session = NewSession();
  Election election(*session, Named("a"));
  Latch<Status> session_lost, election_lost;
  session->OnLost([&](const Status& why) { session_lost.Set(why); });
  election.OnLost([&](const Status& why) { election_lost.Set(why); });
  ASSERT_TRUE(election.Campaign("v").ok());
  // Someone destroys the session on the server: the next renewal gets a 404.
  EXPECT_EQ(Sync("PUT", "/v1/session/destroy/" + session->id()).status, 200);
  ASSERT_TRUE(session_lost.Wait(0, 5s).has_value());
  ASSERT_TRUE(election_lost.Wait(0, 5s).has_value());
  EXPECT_FALSE(session->alive());
  EXPECT_FALSE(election.IsLeader(0));
  EXPECT_EQ(election.Campaign("v").code(), Code::kFailedPrecondition);
}

TEST_F(SdkTest, BlockingCallsAreRefusedOnTheClientsThread) {
  auto session = NewSession();
  Election election(*session, Named("a"));
  Latch<Status> inside;
  Latch<std::uint64_t> token;
  election.Campaign("v", [&](Status) {
    // Non-blocking calls work here; blocking ones would wait for this thread.
    token.Set(election.FencingToken());
    inside.Set(election.Resign());
  });
  auto status = inside.Wait();
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(status->code(), Code::kFailedPrecondition);
  EXPECT_NE(status->message().find("callback"), std::string::npos) << status->ToString();
  EXPECT_GT(*token.Wait(), 0u);
  EXPECT_TRUE(election.IsLeader());
}

TEST_F(SdkTest, CancelEndsABlockingCampaignFromAnotherThread) {
  auto first = NewSession();
  auto second = NewSession();
  Election a(*first, Named("a"));
  Election b(*second, Named("b"));
  ASSERT_TRUE(a.Campaign("a").ok());
  auto campaign = std::async(std::launch::async, [&] { return b.Campaign("b"); });
  EXPECT_EQ(campaign.wait_for(500ms), std::future_status::timeout);
  b.Cancel();
  ASSERT_EQ(campaign.wait_for(5s), std::future_status::ready);
  EXPECT_FALSE(campaign.get().ok());
  EXPECT_TRUE(a.IsLeader());
}

TEST_F(SdkTest, AnElectionMayBeDestroyedInItsOwnCallback) {
  auto session = NewSession();
  auto election = std::make_unique<Election>(*session, Named("a"));
  Latch<bool> destroyed;
  election->Campaign("v", [&](Status) {
    election.reset();
    destroyed.Set(true);
  });
  ASSERT_TRUE(destroyed.Wait().has_value());
  // The key stays ours on the server (nothing released): the session still holds it.
  EXPECT_NE(Sync("GET", LeaderKey()).body.find(session->id()), std::string::npos);
  ASSERT_TRUE(session->Destroy().ok());
}

TEST_F(SdkTest, NoCallbackRunsAfterItsElectionWasDestroyedInOne) {
  auto session = NewSession();
  auto election = std::make_unique<Election>(*session, Named("a"));
  ASSERT_TRUE(election->Campaign("v").ok());
  std::atomic<bool> destroyed{false};
  std::atomic<int> late{0};
  Latch<LeaderInfo> seen;
  // The watch that sees the delete runs OnLost, then the observer, in one go.
  election->Observe([&](const LeaderInfo& info) {
    if (destroyed) ++late;
    seen.Set(info);
  });
  ASSERT_TRUE(seen.Wait(0).has_value());
  election->OnLost([&](const Status&) {
    election.reset();
    destroyed = true;
  });
  EXPECT_EQ(Sync("DELETE", LeaderKey()).status, 200);
  for (int i = 0; i < 500 && !destroyed; ++i) std::this_thread::sleep_for(10ms);
  ASSERT_TRUE(destroyed);
  std::this_thread::sleep_for(300ms);
  EXPECT_EQ(late, 0);
  EXPECT_EQ(seen.count(), 1u);
}

TEST_F(SdkTest, OptionsThatCannotKeepTheirPromiseAreRefused) {
  SessionOptions options = FastSession();
  options.guarantee_ms = 9'000;  // one renewal proves ~9.8 s: less than R + G
  Session session(*client_, options);
  EXPECT_EQ(session.Create().code(), Code::kInvalidArgument);
  auto good = NewSession();
  EXPECT_EQ(good->Create().code(), Code::kFailedPrecondition);  // once only
}

TEST_F(SdkTest, ObjectsOutliveTheirClientAndThenFail) {
  auto session = NewSession();
  auto election = std::make_unique<Election>(*session, Named("a"));
  ASSERT_TRUE(election->Campaign("v").ok());
  const std::string id = session->id();
  client_.reset();
  EXPECT_EQ(election->Campaign("v").code(), Code::kUnavailable);
  EXPECT_FALSE(election->IsLeader(0));
  EXPECT_EQ(session->id(), "");
  Latch<Status> late;
  session->Destroy([&](Status status) { late.Set(std::move(status)); });
  ASSERT_TRUE(late.Wait(0, 1s).has_value());  // at once, on this thread
  EXPECT_EQ(late.Wait()->code(), Code::kUnavailable);
  election.reset();
  session.reset();
  // Nothing was released on the server: the key is held until the TTL.
  EXPECT_NE(Sync("GET", LeaderKey()).body.find(id), std::string::npos);
  EXPECT_EQ(Sync("PUT", "/v1/session/destroy/" + id).status, 200);
}

TEST_F(SdkTest, TheClientResolvesAddressesAsTheCli) {
  ClientOptions options;
  options.addresses = {"127.0.0.1:1,127.0.0.1:2", "127.0.0.1:3"};
  Client client(options);
  EXPECT_EQ(client.addresses(),
            (std::vector<std::string>{"127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3"}));
  EXPECT_NE(std::string(Version()).find('.'), std::string::npos) << Version();
}

TEST_F(SdkTest, ATokenFileThatCannotBeReadFailsEveryCallNamingIt) {
  // The test runs in a process of its own (gtest_discover_tests): its
  // environment is its own.
  ::unsetenv("TENURE_HTTP_TOKEN");
  ::unsetenv("TENURE_HTTP_TOKEN_FILE");
  ::unsetenv("CONSUL_HTTP_TOKEN");
  ::setenv("CONSUL_HTTP_TOKEN_FILE", "/nonexistent/tenure-token", 1);
  Client client(Options());
  Session session(client, FastSession());
  Status created = session.Create();
  EXPECT_FALSE(created.ok());
  EXPECT_NE(created.message().find("/nonexistent/tenure-token (from $CONSUL_HTTP_TOKEN_FILE)"),
            std::string::npos)
      << created.ToString();
  ::unsetenv("CONSUL_HTTP_TOKEN_FILE");
}

}  // namespace
}  // namespace tenure
