// client::Election against a real `tenure server -dev` (no mocks): campaign,
// resign, fencing tokens, observe, loss by someone else's release/delete, a
// campaign that aborts with its session, resign-to, leader settings.
// The loop runs on the test thread; every wait polls with a deadline.
#include "client/election.h"

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
#include <vector>

#include "client/queue.h"
#include "client/session.h"
#include "net/blocking_http_client.h"
#include "net/url.h"
#include "unit/client/server_process.h"

namespace tenure::client {
namespace {

using test_support::RunFor;
using test_support::RunUntil;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

class ElectionTest : public test_support::RealServerSuite {
 protected:
  void SetUp() override {
    RealServerSuite::SetUp();
    if (HasFatalFailure()) return;
    http_ = std::make_unique<net::HttpClient>(
        io_, net::HttpClientOptions{{server_->http()}, "", 2'000, 30'000, 4});
    name_ = std::string(::testing::UnitTest::GetInstance()->current_test_info()->name());
  }
  void TearDown() override {
    elections_.clear();
    sessions_.clear();
  }

  // A created session (TTL 10 s, lock-delay 1 s, renewals every 1 s so loss
  // is seen within ~1 s).
  Session& NewSession() {
    sessions_.push_back(std::make_unique<Session>(io_, *http_));
    Session& session = *sessions_.back();
    SessionOptions options;
    options.name = "election-test";
    options.ttl_ms = 10'000;
    options.lock_delay_ms = 1'000;
    options.lease = client::LeaseOptions::ForTtl(10'000);
    options.lease.renew_interval_ms = 1'000;
    std::optional<Result<std::string>> created;
    session.Create(options, [&](Result<std::string> r) { created = std::move(r); });
    EXPECT_TRUE(RunUntil(io_, [&] { return created.has_value(); }));
    EXPECT_TRUE(created && created->ok());
    return session;
  }
  Election& NewElection(const std::string& candidate, Session* session = nullptr,
                        bool fair = true) {
    if (session == nullptr) session = &NewSession();
    ElectionOptions options;
    options.name = name_;
    options.candidate = candidate;
    options.fair_queue = fair;
    elections_.push_back(std::make_unique<Election>(*session, options));
    return *elections_.back();
  }

  // Campaigns and waits for the outcome.
  Status CampaignNow(Election& e, const std::string& value) {
    std::optional<Status> done;
    e.Campaign(value, [&](Status s) { done = std::move(s); });
    EXPECT_TRUE(RunUntil(io_, [&] { return done.has_value(); }));
    return done ? *done : Status::Timeout("campaign did not finish");
  }
  Status Wait(const std::function<void(std::function<void(Status)>)>& start) {
    std::optional<Status> done;
    start([&](Status s) { done = std::move(s); });
    EXPECT_TRUE(RunUntil(io_, [&] { return done.has_value(); }));
    return done ? *done : Status::Timeout("no answer");
  }

  net::ClientResponse Sync(const std::string& method, const std::string& target,
                           const std::string& body = "") {
    net::BlockingHttpClient http(server_->http(), "", 5'000);
    auto r = http.Request(method, target, body);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? r.value() : net::ClientResponse{};
  }
  std::string Key(const std::string& suffix) { return "/v1/kv/service/" + name_ + "/" + suffix; }
  // The sessions in the leader key's fair queue, head first.
  std::vector<std::string> Queue() {
    auto rows = ParseQueue(Sync("GET", "/v1/tenure/queue/service/" + name_ + "/leader").body);
    EXPECT_TRUE(rows.ok()) << rows.status().ToString();
    std::vector<std::string> out;
    if (rows.ok()) {
      for (const QueueWaiter& row : *rows) out.push_back(row.session);
    }
    return out;
  }
  // Runs the loop until the queue is `want` (bounded).
  bool QueueBecomes(const std::vector<std::string>& want) {
    const auto deadline = Clock::now() + 5s;
    while (Clock::now() < deadline) {
      if (Queue() == want) return true;
      RunFor(io_, 50ms);
    }
    return false;
  }

  boost::asio::io_context io_;
  std::unique_ptr<net::HttpClient> http_;
  std::string name_;
  std::vector<std::unique_ptr<Session>> sessions_;
  std::vector<std::unique_ptr<Election>> elections_;
};

TEST_F(ElectionTest, OneLeadsTheOtherWinsRightAfterResign) {
  Election& a = NewElection("a");
  Election& b = NewElection("b");
  ASSERT_TRUE(CampaignNow(a, "desc-a").ok());
  EXPECT_TRUE(a.holding());
  EXPECT_TRUE(a.IsLeader(3'000));
  const std::uint64_t fence_a = a.FencingToken();
  EXPECT_GT(fence_a, 0u);

  std::optional<Status> b_done;
  b.Campaign("desc-b", [&](Status s) { b_done = std::move(s); });
  RunFor(io_, 700ms);
  EXPECT_FALSE(b_done.has_value());
  EXPECT_FALSE(b.IsLeader(0));
  EXPECT_TRUE(a.IsLeader(3'000));
  // The key holds A's description; both candidates are registered.
  EXPECT_EQ(Sync("GET", Key("leader") + "?raw").body, "desc-a");
  EXPECT_EQ(Sync("GET", Key("candidates/b") + "?raw").body, "desc-b");

  std::optional<Status> resigned;
  a.Resign([&](Status s) { resigned = std::move(s); });
  EXPECT_FALSE(a.IsLeader(0));  // at once
  EXPECT_EQ(a.FencingToken(), 0u);
  const auto t0 = Clock::now();
  ASSERT_TRUE(RunUntil(
      io_, [&] { return b_done.has_value() && resigned.has_value(); }, 2s));
  EXPECT_LE(Clock::now() - t0, 1s);
  EXPECT_TRUE(resigned->ok()) << resigned->ToString();
  ASSERT_TRUE(b_done->ok()) << b_done->ToString();
  EXPECT_TRUE(b.IsLeader(3'000));
  const std::uint64_t fence_b = b.FencingToken();
  EXPECT_GT(fence_b, fence_a);

  // And back: every grant's token is larger.
  ASSERT_TRUE(Wait([&](auto done) { b.Resign(done); }).ok());
  ASSERT_TRUE(CampaignNow(a, "desc-a").ok());
  EXPECT_GT(a.FencingToken(), fence_b);
  // The token the holder got equals the server's Fence field.
  EXPECT_NE(Sync("GET", Key("leader")).body.find("\"Fence\":" + std::to_string(a.FencingToken())),
            std::string::npos);
}

TEST_F(ElectionTest, TryOnceDoesNotWait) {
  Election& a = NewElection("a");
  Election& b = NewElection("b");
  std::optional<Result<bool>> first, second;
  a.TryOnce("x", [&](Result<bool> r) { first = std::move(r); });
  ASSERT_TRUE(RunUntil(io_, [&] { return first.has_value(); }));
  ASSERT_TRUE(first->ok());
  EXPECT_TRUE(first->value());
  EXPECT_TRUE(a.IsLeader(1'000));
  b.TryOnce("y", [&](Result<bool> r) { second = std::move(r); });
  ASSERT_TRUE(RunUntil(io_, [&] { return second.has_value(); }));
  ASSERT_TRUE(second->ok());
  EXPECT_FALSE(second->value());
  EXPECT_FALSE(b.IsLeader(0));
}

TEST_F(ElectionTest, ReleaseBySomeoneElseEndsLeadershipAtOnce) {
  Session& session = NewSession();
  Election& a = NewElection("a", &session);
  int lost = 0;
  Status why;
  a.OnLost([&](const Status& s) {
    ++lost;
    why = s;
  });
  ASSERT_TRUE(CampaignNow(a, "v").ok());
  ASSERT_TRUE(a.IsLeader(3'000));
  // An operator releases the key with the leader's own session id.
  EXPECT_EQ(Sync("PUT", Key("leader") + "?release=" + session.id()).body, "true");
  const auto t0 = Clock::now();
  ASSERT_TRUE(RunUntil(
      io_, [&] { return !a.IsLeader(0); }, 2s));
  EXPECT_LE(Clock::now() - t0, 500ms);
  EXPECT_EQ(lost, 1);
  EXPECT_NE(why.message().find("released"), std::string::npos) << why.ToString();
  EXPECT_EQ(a.FencingToken(), 0u);

  // Again, then the key is deleted.
  ASSERT_TRUE(CampaignNow(a, "v").ok());
  ASSERT_TRUE(a.IsLeader(3'000));
  EXPECT_EQ(Sync("DELETE", Key("leader")).status, 200);
  ASSERT_TRUE(RunUntil(
      io_, [&] { return lost == 2; }, 2s));
  EXPECT_FALSE(a.IsLeader(0));
  EXPECT_NE(why.message().find("deleted"), std::string::npos) << why.ToString();
  RunFor(io_, 300ms);
  EXPECT_EQ(lost, 2);
}

TEST_F(ElectionTest, SessionLossEndsLeadershipAndAbortsTheCampaign) {
  Session& sa = NewSession();
  Session& sb = NewSession();
  Election& a = NewElection("a", &sa);
  Election& b = NewElection("b", &sb);
  int a_lost = 0;
  a.OnLost([&](const Status&) { ++a_lost; });
  ASSERT_TRUE(CampaignNow(a, "a").ok());
  std::optional<Status> b_done;
  b.Campaign("b", [&](Status s) { b_done = std::move(s); });
  RunFor(io_, 300ms);
  ASSERT_FALSE(b_done.has_value());

  // B's session is destroyed behind its back: its campaign must not outlive it.
  EXPECT_EQ(Sync("PUT", "/v1/session/destroy/" + sb.id()).status, 200);
  ASSERT_TRUE(RunUntil(
      io_, [&] { return b_done.has_value(); }, 3s));
  EXPECT_FALSE(b_done->ok());
  EXPECT_NE(b_done->message().find("session"), std::string::npos) << b_done->ToString();
  EXPECT_FALSE(b.IsLeader(0));

  // A's session destroyed: leadership ends (the watch sees the release, or
  // the renewal's 404), once.
  EXPECT_EQ(Sync("PUT", "/v1/session/destroy/" + sa.id()).status, 200);
  ASSERT_TRUE(RunUntil(
      io_, [&] { return a_lost == 1 && sa.lost(); }, 3s));
  EXPECT_FALSE(a.IsLeader(0));
  RunFor(io_, 200ms);
  EXPECT_EQ(a_lost, 1);

  // A campaign on a dead session fails at once.
  Status dead = CampaignNow(a, "a");
  EXPECT_FALSE(dead.ok());
}

TEST_F(ElectionTest, ObserveSeesHoldersReleaseDeletionAndNoLeader) {
  Election& a = NewElection("a");
  Election& b = NewElection("b");
  Election& watcher = NewElection("w");
  std::vector<LeaderInfo> seen;
  watcher.Observe([&](const LeaderInfo& info) { seen.push_back(info); });
  ASSERT_TRUE(RunUntil(io_, [&] { return seen.size() == 1; }));
  EXPECT_FALSE(seen[0].exists);  // nothing yet

  ASSERT_TRUE(CampaignNow(a, "desc-a").ok());
  ASSERT_TRUE(RunUntil(io_, [&] { return seen.size() == 2; }));
  EXPECT_TRUE(seen[1].exists);
  EXPECT_EQ(seen[1].session, sessions_[0]->id());
  EXPECT_EQ(seen[1].value, "desc-a");
  EXPECT_EQ(seen[1].fence, a.FencingToken());

  std::optional<Status> b_done;
  b.Campaign("desc-b", [&](Status s) { b_done = std::move(s); });
  RunFor(io_, 200ms);
  ASSERT_TRUE(Wait([&](auto done) { a.Resign(done); }).ok());
  ASSERT_TRUE(RunUntil(io_, [&] { return b_done.has_value() && seen.back().value == "desc-b"; }));
  // Either the "no leader" moment was observed or it went straight to B.
  const LeaderInfo& now = seen.back();
  EXPECT_EQ(now.session, sessions_[1]->id());
  EXPECT_EQ(now.fence, b.FencingToken());

  ASSERT_TRUE(Wait([&](auto done) { b.Resign(done); }).ok());
  ASSERT_TRUE(RunUntil(io_, [&] { return !seen.back().has_leader(); }));
  EXPECT_TRUE(seen.back().exists);  // "no leader": key present, unlocked
  EXPECT_EQ(seen.back().fence, 0u);

  EXPECT_EQ(Sync("DELETE", Key("leader")).status, 200);
  ASSERT_TRUE(RunUntil(io_, [&] { return !seen.back().exists; }));
  const std::size_t count = seen.size();
  RunFor(io_, 300ms);
  EXPECT_EQ(seen.size(), count);  // no duplicate reports
  for (std::size_t i = 1; i < seen.size(); ++i) EXPECT_FALSE(seen[i] == seen[i - 1]);
}

// Without the fair queue (with it, see
// ResignToWithTheQueueNamesAnyCandidateInTheLine).
TEST_F(ElectionTest, ResignToPicksTheNamedCandidate) {
  Election& a = NewElection("a", nullptr, false);
  Election& b = NewElection("b", nullptr, false);
  Election& c = NewElection("c", nullptr, false);
  ASSERT_TRUE(CampaignNow(a, "desc-a").ok());
  const std::uint64_t fence_a = a.FencingToken();
  std::optional<Status> b_done, c_done;
  b.Campaign("desc-b", [&](Status s) { b_done = std::move(s); });
  c.Campaign("desc-c", [&](Status s) { c_done = std::move(s); });
  ASSERT_TRUE(RunUntil(io_, [&] {
    return Sync("GET", Key("candidates/c")).status == 200 &&
           Sync("GET", Key("candidates/b")).status == 200;
  }));
  RunFor(io_, 200ms);

  Status nobody = Wait([&](auto done) { a.ResignTo("nobody", done); });
  EXPECT_EQ(nobody.code(), Code::kFailedPrecondition);
  EXPECT_NE(nobody.message().find("not registered"), std::string::npos) << nobody.ToString();
  EXPECT_TRUE(a.IsLeader(1'000));

  const auto t0 = Clock::now();
  ASSERT_TRUE(Wait([&](auto done) { a.ResignTo("c", done); }).ok());
  EXPECT_FALSE(a.IsLeader(0));
  ASSERT_TRUE(RunUntil(
      io_, [&] { return c_done.has_value(); }, 2s));
  EXPECT_LE(Clock::now() - t0, 1s);
  ASSERT_TRUE(c_done->ok()) << c_done->ToString();
  EXPECT_TRUE(c.IsLeader(3'000));
  EXPECT_GT(c.FencingToken(), fence_a);
  EXPECT_EQ(Sync("GET", Key("leader") + "?raw").body, "desc-c");
  RunFor(io_, 300ms);
  EXPECT_FALSE(b_done.has_value());
  EXPECT_FALSE(b.IsLeader(0));
}

TEST_F(ElectionTest, SettingsOnlyFromTheLeaderAtomicAndWatched) {
  Election& a = NewElection("a");
  Election& b = NewElection("b");
  ASSERT_TRUE(CampaignNow(a, "a").ok());
  std::vector<Settings> changes;
  b.WatchSettings([&](const Settings& s) { changes.push_back(s); });
  ASSERT_TRUE(RunUntil(io_, [&] { return changes.size() == 1; }));
  EXPECT_TRUE(changes[0].empty());

  ASSERT_TRUE(Wait([&](auto done) { a.SetSettings({{"x", "1"}, {"y", "2"}}, done); }).ok());
  ASSERT_TRUE(RunUntil(io_, [&] { return changes.size() == 2; }));
  EXPECT_EQ(changes[1], (Settings{{"x", "1"}, {"y", "2"}}));  // both at once

  // A follower is refused and nothing changes.
  Status refused = Wait([&](auto done) { b.SetSettings({{"x", "evil"}}, done); });
  EXPECT_EQ(refused.code(), Code::kFailedPrecondition);
  EXPECT_NE(refused.message().find("not the leader"), std::string::npos) << refused.ToString();

  // A stale token is refused by the server itself (check-fence): the key was
  // released behind A's back and A has not noticed yet.
  EXPECT_EQ(Sync("PUT", Key("leader") + "?release=" + sessions_[0]->id()).body, "true");
  std::optional<Status> stale;
  a.SetSettings({{"x", "late"}}, [&](Status s) { stale = std::move(s); });
  ASSERT_TRUE(RunUntil(io_, [&] { return stale.has_value(); }));
  EXPECT_FALSE(stale->ok());
  EXPECT_NE(stale->message().find("not the leader"), std::string::npos) << stale->ToString();
  EXPECT_NE(stale->message().find("failed fence check"), std::string::npos) << stale->ToString();

  std::optional<Result<Settings>> got;
  b.GetSettings([&](Result<Settings> r) { got = std::move(r); });
  ASSERT_TRUE(RunUntil(io_, [&] { return got.has_value(); }));
  ASSERT_TRUE(got->ok());
  EXPECT_EQ(got->value(), (Settings{{"x", "1"}, {"y", "2"}}));

  // The leader again; an empty value deletes; one change, one notification.
  ASSERT_TRUE(CampaignNow(a, "a").ok());
  ASSERT_TRUE(Wait([&](auto done) { a.SetSettings({{"x", ""}, {"z", "3"}}, done); }).ok());
  ASSERT_TRUE(RunUntil(io_, [&] { return changes.size() == 3; }));
  EXPECT_EQ(changes[2], (Settings{{"y", "2"}, {"z", "3"}}));
  RunFor(io_, 300ms);
  EXPECT_EQ(changes.size(), 3u);
}

// The fair queue (docs/leadership.md, "The queue"): campaigns wait in the
// leader key's queue and lead in arrival order, each release handing the key
// to the next in line.
TEST_F(ElectionTest, FairCampaignsLeadInArrivalOrder) {
  Session& sa = NewSession();
  Election& a = NewElection("a", &sa);
  ASSERT_TRUE(CampaignNow(a, "a").ok());
  std::vector<Session*> sessions;
  std::vector<Election*> waiting;
  std::vector<std::optional<Status>> done(3);
  std::vector<std::string> queued;
  for (int i = 0; i < 3; ++i) {
    Session& s = NewSession();
    Election& e = NewElection("w" + std::to_string(i), &s);
    e.Campaign("w" + std::to_string(i), [&done, i](Status st) { done[i] = std::move(st); });
    queued.push_back(s.id());
    ASSERT_TRUE(QueueBecomes(queued)) << "w" << i << " never joined the queue";
    sessions.push_back(&s);
    waiting.push_back(&e);
  }
  ASSERT_TRUE(Wait([&](auto cb) { a.Resign(cb); }).ok());
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(RunUntil(
        io_, [&] { return done[i].has_value(); }, 5s))
        << "w" << i << " was not granted";
    ASSERT_TRUE(done[i]->ok()) << done[i]->ToString();
    EXPECT_TRUE(waiting[i]->IsLeader(1'000));
    for (int j = i + 1; j < 3; ++j) EXPECT_FALSE(done[j].has_value()) << "w" << j << " jumped";
    queued.erase(queued.begin());
    EXPECT_EQ(Queue(), queued);
    ASSERT_TRUE(Wait([&](auto cb) { waiting[i]->Resign(cb); }).ok());
  }
}

// A campaign stopped while it waits in the queue leaves it: the release that
// follows frees the key for nobody, and a later campaign gets it.
TEST_F(ElectionTest, AQueuedCampaignStoppedLeavesTheQueue) {
  Election& a = NewElection("a");
  ASSERT_TRUE(CampaignNow(a, "a").ok());
  Session& sb = NewSession();
  Election& b = NewElection("b", &sb);
  std::optional<Status> b_done;
  b.Campaign("b", [&](Status s) { b_done = std::move(s); });
  ASSERT_TRUE(QueueBecomes({sb.id()}));
  b.StopCampaign();
  ASSERT_TRUE(b_done.has_value());
  EXPECT_FALSE(b_done->ok());
  ASSERT_TRUE(QueueBecomes({})) << "the stopped campaign is still queued";
  ASSERT_TRUE(Wait([&](auto cb) { a.Resign(cb); }).ok());
  RunFor(io_, 300ms);
  EXPECT_EQ(Sync("GET", Key("leader")).body.find(sb.id()), std::string::npos)
      << "the key went to a campaign that had stopped";
  EXPECT_FALSE(b.holding());
  // Campaigning again works (after its leave's last release).
  ASSERT_TRUE(CampaignNow(b, "b").ok());
  EXPECT_TRUE(b.IsLeader(1'000));
}

// A grant that commits while the campaign is being stopped is released:
// nobody keeps a lock nobody wants.
TEST_F(ElectionTest, AGrantRacingTheStopIsReleased) {
  Session& sa = NewSession();
  Election& a = NewElection("a", &sa);
  ASSERT_TRUE(CampaignNow(a, "a").ok());
  Session& sb = NewSession();
  Election& b = NewElection("b", &sb);
  b.Campaign("b", [](Status) {});
  ASSERT_TRUE(QueueBecomes({sb.id()}));
  // The key is handed to B while B's loop does not run: B's parked answer
  // (`true`) is never read, because the campaign stops first.
  EXPECT_EQ(Sync("PUT", Key("leader") + "?release=" + sa.id()).body, "true");
  EXPECT_NE(Sync("GET", Key("leader")).body.find(sb.id()), std::string::npos);
  b.StopCampaign();
  const auto deadline = Clock::now() + 5s;
  bool free = false;
  while (Clock::now() < deadline && !free) {
    free = Sync("GET", Key("leader")).body.find(sb.id()) == std::string::npos;
    if (!free) RunFor(io_, 50ms);
  }
  EXPECT_TRUE(free) << "the grant nobody wanted was kept: " << Sync("GET", Key("leader")).body;
  EXPECT_FALSE(b.holding());
  EXPECT_TRUE(Queue().empty());
}

// Without the queue (ElectionOptions::fair_queue = false) the campaign is
// Consul's: nobody waits in the queue, and a release still hands over.
TEST_F(ElectionTest, WithoutTheFairQueueTheCampaignUsesBlockingReads) {
  Election& a = NewElection("a", nullptr, false);
  ASSERT_TRUE(CampaignNow(a, "a").ok());
  Election& b = NewElection("b", nullptr, false);
  std::optional<Status> b_done;
  b.Campaign("b", [&](Status s) { b_done = std::move(s); });
  RunFor(io_, 500ms);
  EXPECT_FALSE(b_done.has_value());
  EXPECT_TRUE(Queue().empty());
  ASSERT_TRUE(Wait([&](auto cb) { a.Resign(cb); }).ok());
  ASSERT_TRUE(RunUntil(
      io_, [&] { return b_done.has_value(); }, 3s));
  ASSERT_TRUE(b_done->ok()) << b_done->ToString();
  EXPECT_TRUE(b.IsLeader(1'000));
}

// With the fair queue the leader may still choose its successor among the
// waiters (decision 0027's second addendum): -to names a candidate further
// back in the line, which leads; the others keep their order. A name that is
// not registered is refused and nothing changes.
TEST_F(ElectionTest, ResignToWithTheQueueNamesAnyCandidateInTheLine) {
  Election& a = NewElection("a");
  ASSERT_TRUE(CampaignNow(a, "desc-a").ok());
  Session& sb = NewSession();
  Session& sc = NewSession();
  Session& sd = NewSession();
  Election& b = NewElection("b", &sb);
  Election& c = NewElection("c", &sc);
  Election& d = NewElection("d", &sd);
  std::optional<Status> b_done, c_done, d_done;
  b.Campaign("desc-b", [&](Status s) { b_done = std::move(s); });
  ASSERT_TRUE(QueueBecomes({sb.id()}));
  c.Campaign("desc-c", [&](Status s) { c_done = std::move(s); });
  ASSERT_TRUE(QueueBecomes({sb.id(), sc.id()}));
  d.Campaign("desc-d", [&](Status s) { d_done = std::move(s); });
  ASSERT_TRUE(QueueBecomes({sb.id(), sc.id(), sd.id()}));

  Status unknown = Wait([&](auto done) { a.ResignTo("nobody", done); });
  EXPECT_EQ(unknown.code(), Code::kFailedPrecondition) << unknown.ToString();
  EXPECT_NE(unknown.message().find("is not registered"), std::string::npos) << unknown.ToString();
  EXPECT_TRUE(a.IsLeader(1'000));
  EXPECT_EQ(Queue(), (std::vector<std::string>{sb.id(), sc.id(), sd.id()}));

  ASSERT_TRUE(Wait([&](auto done) { a.ResignTo("c", done); }).ok());
  EXPECT_FALSE(a.IsLeader(0));
  ASSERT_TRUE(RunUntil(
      io_, [&] { return c_done.has_value(); }, 2s));
  ASSERT_TRUE(c_done->ok()) << c_done->ToString();
  EXPECT_TRUE(c.IsLeader(1'000));
  EXPECT_EQ(Sync("GET", Key("leader") + "?raw").body, "desc-c");
  EXPECT_FALSE(b_done.has_value());
  EXPECT_FALSE(d_done.has_value());
  EXPECT_EQ(Queue(), (std::vector<std::string>{sb.id(), sd.id()}));

  // The rest of the line still goes in order: c's resign hands to b.
  ASSERT_TRUE(Wait([&](auto done) { c.Resign(done); }).ok());
  ASSERT_TRUE(RunUntil(
      io_, [&] { return b_done.has_value(); }, 2s));
  ASSERT_TRUE(b_done->ok()) << b_done->ToString();
  EXPECT_FALSE(d_done.has_value());
  EXPECT_EQ(Queue(), std::vector<std::string>{sd.id()});
}

}  // namespace
}  // namespace tenure::client
