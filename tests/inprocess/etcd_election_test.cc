// etcd's Election and Lock services (etcd/election_service.h) on a real
// Server over raft_fixture, in this process: turns by create revision, a
// resumed key, Proclaim and Resign guarded by the holder's revision, a wait
// that ends with an error when its own key goes, a wait whose client went
// away giving its key back, Observe, lease 0 refused. Go's clients run the
// same services over gRPC in tests/compat/test_go_clientv3.py.
#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <memory>
#include <optional>

#include "etcd/election_service.h"
#include "etcd/kv_service.h"
#include "etcd/lease_service.h"
#include "inprocess/etcd_fixture.h"
#include "server/server.h"

namespace tenure::etcd {
namespace {

class EtcdElectionTest : public inprocess::EtcdFixture {
 protected:
  void SetUp() override {
    StartServer();
    kv_ = std::make_unique<KvService>(*server_);
    leases_ = std::make_unique<LeaseService>(*server_);
    elections_ = std::make_unique<ElectionService>(*server_, *kv_);
  }
  void TearDown() override {
    elections_.reset();
    leases_.reset();
    kv_.reset();
    StopServer();
  }

  std::int64_t Grant() {
    std::optional<Answer<LeaseGrantResponse>> got;
    leases_->Grant(client_, {60, 0}, [&got](Answer<LeaseGrantResponse> a) { got = std::move(a); });
    EXPECT_TRUE(RunUntil([&got] { return got.has_value(); }));
    EXPECT_TRUE(got->error.ok()) << got->error.message;
    return got->response.body.id;
  }
  void Revoke(std::int64_t lease) {
    std::optional<Answer<LeaseRevokeResponse>> got;
    leases_->Revoke(client_, {lease},
                    [&got](Answer<LeaseRevokeResponse> a) { got = std::move(a); });
    ASSERT_TRUE(RunUntil([&got] { return got.has_value(); }));
    ASSERT_TRUE(got->error.ok()) << got->error.message;
  }
  const state::KvEntry* Find(const std::string& key) const { return server_->store().FindKv(key); }

  std::unique_ptr<KvService> kv_;
  std::unique_ptr<LeaseService> leases_;
  std::unique_ptr<ElectionService> elections_;
};

TEST_F(EtcdElectionTest, TurnsGoByCreateRevisionAndTheHoldersKeyIsItsToken) {
  const std::int64_t a = Grant();
  const std::int64_t b = Grant();
  std::optional<Answer<CampaignResponse>> first;
  std::optional<Answer<CampaignResponse>> second;
  elections_->Campaign(client_, {"svc", a, "A"},
                       [&](Answer<CampaignResponse> r) { first = std::move(r); });
  ASSERT_TRUE(RunUntil([&] { return first.has_value(); }));
  ASSERT_TRUE(first->error.ok()) << first->error.message;
  const LeaderKey& leader = first->response.body.leader;
  EXPECT_EQ(leader.key, RecipeKey("svc", a));
  EXPECT_EQ(leader.rev, first->response.header.revision);
  ASSERT_NE(Find(leader.key), nullptr);
  EXPECT_EQ(static_cast<std::int64_t>(Find(leader.key)->create_index.value()), leader.rev);

  elections_->Campaign(client_, {"svc", b, "B"},
                       [&](Answer<CampaignResponse> r) { second = std::move(r); });
  ASSERT_TRUE(RunUntil([&] { return elections_->waits() == 1 && Find(RecipeKey("svc", b)); }));
  Settle();
  EXPECT_FALSE(second.has_value());  // its turn has not come

  std::optional<Answer<ResignResponse>> resigned;
  elections_->Resign(client_, {true, leader},
                     [&](Answer<ResignResponse> r) { resigned = std::move(r); });
  ASSERT_TRUE(RunUntil([&] { return second.has_value(); }));
  ASSERT_TRUE(second->error.ok()) << second->error.message;
  EXPECT_GT(second->response.body.leader.rev, leader.rev);
  EXPECT_EQ(Find(leader.key), nullptr);
}

TEST_F(EtcdElectionTest, ACampaignWithTheSameLeaseResumesItsKeyAndProclaimsItsValue) {
  const std::int64_t a = Grant();
  std::optional<Answer<CampaignResponse>> first;
  std::optional<Answer<CampaignResponse>> again;
  elections_->Campaign(client_, {"svc", a, "one"},
                       [&](Answer<CampaignResponse> r) { first = std::move(r); });
  ASSERT_TRUE(RunUntil([&] { return first.has_value(); }));
  elections_->Campaign(client_, {"svc", a, "two"},
                       [&](Answer<CampaignResponse> r) { again = std::move(r); });
  ASSERT_TRUE(RunUntil([&] { return again.has_value(); }));
  ASSERT_TRUE(again->error.ok()) << again->error.message;
  EXPECT_EQ(again->response.body.leader.rev, first->response.body.leader.rev);
  EXPECT_EQ(Find(RecipeKey("svc", a))->value, "two");
}

TEST_F(EtcdElectionTest, ProclaimAndResignNeedTheHoldersRevision) {
  const std::int64_t a = Grant();
  std::optional<Answer<CampaignResponse>> won;
  elections_->Campaign(client_, {"svc", a, "v"},
                       [&](Answer<CampaignResponse> r) { won = std::move(r); });
  ASSERT_TRUE(RunUntil([&] { return won.has_value(); }));
  LeaderKey stale = won->response.body.leader;
  stale.rev += 1000;
  std::optional<Answer<ProclaimResponse>> said;
  elections_->Proclaim(client_, {true, stale, "x"},
                       [&](Answer<ProclaimResponse> r) { said = std::move(r); });
  ASSERT_TRUE(RunUntil([&] { return said.has_value(); }));
  EXPECT_EQ(said->error.message, "election: not leader");
  EXPECT_EQ(Find(RecipeKey("svc", a))->value, "v");
  said.reset();
  elections_->Proclaim(client_, {false, {}, "x"},
                       [&](Answer<ProclaimResponse> r) { said = std::move(r); });
  ASSERT_TRUE(said.has_value());
  EXPECT_EQ(said->error.message, "\"leader\" field must be provided");
  std::optional<Answer<ResignResponse>> resigned;
  elections_->Resign(client_, {true, stale},
                     [&](Answer<ResignResponse> r) { resigned = std::move(r); });
  ASSERT_TRUE(RunUntil([&] { return resigned.has_value(); }));
  EXPECT_TRUE(resigned->error.ok());
  EXPECT_NE(Find(RecipeKey("svc", a)), nullptr);  // a stale resign deletes nothing
}

TEST_F(EtcdElectionTest, AWaitEndsWithAnErrorWhenItsLeaseEnds) {
  const std::int64_t holder = Grant();
  const std::int64_t waiter = Grant();
  std::optional<Answer<LockResponse>> held;
  std::optional<Answer<LockResponse>> waited;
  elections_->Lock(client_, {"lk", holder}, [&](Answer<LockResponse> r) { held = std::move(r); });
  ASSERT_TRUE(RunUntil([&] { return held.has_value(); }));
  elections_->Lock(client_, {"lk", waiter}, [&](Answer<LockResponse> r) { waited = std::move(r); });
  ASSERT_TRUE(RunUntil([&] { return Find(RecipeKey("lk", waiter)) != nullptr; }));
  Revoke(waiter);
  ASSERT_TRUE(RunUntil([&] { return waited.has_value(); }));
  EXPECT_EQ(waited->error.message, "etcdserver: requested lease not found");
  EXPECT_EQ(elections_->waits(), 0u);
}

TEST_F(EtcdElectionTest, AWaitWhoseClientWentAwayGivesItsKeyBack) {
  const std::int64_t holder = Grant();
  const std::int64_t waiter = Grant();
  std::optional<Answer<LockResponse>> held;
  bool answered = false;
  elections_->Lock(client_, {"lk", holder}, [&](Answer<LockResponse> r) { held = std::move(r); });
  ASSERT_TRUE(RunUntil([&] { return held.has_value(); }));
  const std::uint64_t wait =
      elections_->Lock(client_, {"lk", waiter}, [&](Answer<LockResponse>) { answered = true; });
  ASSERT_TRUE(RunUntil([&] { return Find(RecipeKey("lk", waiter)) != nullptr; }));
  elections_->Abandon(wait);
  ASSERT_TRUE(RunUntil([&] { return Find(RecipeKey("lk", waiter)) == nullptr; }));
  EXPECT_FALSE(answered);
  EXPECT_NE(Find(RecipeKey("lk", holder)), nullptr);
}

TEST_F(EtcdElectionTest, LeaseZeroIsRefusedAndLeaderAnswersNoLeader) {
  std::optional<Answer<LockResponse>> refused;
  EXPECT_EQ(
      elections_->Lock(client_, {"lk", 0}, [&](Answer<LockResponse> r) { refused = std::move(r); }),
      0u);
  ASSERT_TRUE(refused.has_value());
  EXPECT_EQ(refused->error.code, etcd_texts::GrpcCode::kInvalidArgument);
  std::optional<Answer<LeaderResponse>> none;
  elections_->Leader(client_, {"nobody"}, [&](Answer<LeaderResponse> r) { none = std::move(r); });
  ASSERT_TRUE(RunUntil([&] { return none.has_value(); }));
  EXPECT_EQ(none->error.message, "election: no leader");
}

TEST_F(EtcdElectionTest, ObserveTellsEachNewLeaderAndValue) {
  std::vector<std::string> seen;
  etcd_texts::EtcdError refused;
  const std::uint64_t id = elections_->Observe(
      client_, {"obs"}, [&seen](const LeaderResponse& r) { seen.push_back(r.body.kv.value); },
      &refused);
  ASSERT_TRUE(refused.ok());
  const std::int64_t a = Grant();
  std::optional<Answer<CampaignResponse>> won;
  elections_->Campaign(client_, {"obs", a, "first"},
                       [&](Answer<CampaignResponse> r) { won = std::move(r); });
  ASSERT_TRUE(RunUntil([&] { return won.has_value() && seen.size() == 1; }));
  std::optional<Answer<ProclaimResponse>> said;
  elections_->Proclaim(client_, {true, won->response.body.leader, "second"},
                       [&](Answer<ProclaimResponse> r) { said = std::move(r); });
  ASSERT_TRUE(RunUntil([&] { return seen.size() == 2; }));
  EXPECT_EQ(seen, (std::vector<std::string>{"first", "second"}));
  elections_->StopObserving(id);
  Revoke(a);
  Settle();
  EXPECT_EQ(seen.size(), 2u);
}

}  // namespace
}  // namespace tenure::etcd
