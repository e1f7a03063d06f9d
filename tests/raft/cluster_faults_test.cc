// Partitions, restarts and disk errors on raft_fixture with our Store,
// FsmBridge and LeaderDuties on every server. The simulation's checkers
// compare every replica's Store at every index (digests, holders, tokens).
#include <gtest/gtest.h>

#include "raft/cluster_fixture.h"

namespace tenure::sim {
namespace {

using state::SessionId;
using testing::ClusterTest;
using testing::kElectMaxMs;
using testing::TtlSession;

constexpr DurationMs kTtlMs = 10'000;

ClusterOptions Plain(unsigned servers = 3) {
  ClusterOptions options;
  options.servers = servers;
  return options;
}

// Small snapshots so that logs are compacted while the test runs.
ClusterOptions Snapshotting() {
  ClusterOptions options = Plain();
  options.snapshot_threshold = 32;
  options.snapshot_trailing = 8;
  return options;
}

state::CommandBody Set(int k) {
  return state::KvSet{"kv/" + std::to_string(k % 7), "value-" + std::to_string(k), 0};
}

using ClusterFaultsTest = ClusterTest;

TEST_F(ClusterFaultsTest, PartitionedLeaderCannotCommitAndRejoinsWithoutItsWrite) {
  unsigned old_leader = StartCluster(Plain());
  MustWrite(old_leader, state::KvSet{"kv/x", "before", 0});
  cluster().Isolate(old_leader, true);
  // It still believes it leads, and accepts a proposal it cannot commit.
  std::shared_ptr<Outcome> stale = cluster().Propose(old_leader, state::KvSet{"kv/x", "stale", 0});
  std::optional<unsigned> leader;
  ASSERT_TRUE(cluster().StepUntil(
      [&] {
        leader = cluster().ReadyLeader();
        return leader && *leader != old_leader;
      },
      kElectMaxMs));
  MustWrite(*leader, state::KvSet{"kv/x", "majority", 0});
  EXPECT_FALSE(stale->done && stale->result.ok()) << "a minority committed a write";
  // Without a majority it steps down by itself, and its duties stop.
  EXPECT_TRUE(cluster().StepUntil([&] { return !server(old_leader).duties().leading(); }, 5'000));

  cluster().Isolate(old_leader, false);
  ASSERT_TRUE(cluster().Await(stale, 10'000));
  EXPECT_FALSE(stale->result.ok()) << "outcome must be reported unknown, not success";
  ExpectConverged(*leader);
  for (unsigned i = 0; i < cluster().size(); ++i) {
    EXPECT_EQ(server(i).store().FindKv("kv/x")->value, "majority") << "server " << i;
  }
}

TEST_F(ClusterFaultsTest, OneWayLossFromTheLeaderElectsAnotherAndConverges) {
  unsigned old_leader = StartCluster(Plain());
  for (unsigned j = 0; j < cluster().size(); ++j) {
    if (j != old_leader) cluster().Cut(old_leader, j, true);  // followers hear nothing
  }
  std::optional<unsigned> leader;
  ASSERT_TRUE(cluster().StepUntil(
      [&] {
        leader = cluster().ReadyLeader();
        return leader && *leader != old_leader;
      },
      kElectMaxMs));
  for (int k = 0; k < 20; ++k) MustWrite(*leader, Set(k));
  cluster().HealNetwork();
  ExpectConverged(*leader);
}

TEST_F(ClusterFaultsTest, PausedLeaderRevivesAsFollowerAndCatchesUp) {
  unsigned old_leader = StartCluster(Plain());
  CreateSession(old_leader, TtlSession(SessionId("s"), kTtlMs));
  cluster().Kill(old_leader);
  std::optional<unsigned> leader = cluster().StepUntilReadyLeader(kElectMaxMs);
  ASSERT_TRUE(leader.has_value());
  for (int k = 0; k < 50; ++k) MustWrite(*leader, Set(k));
  cluster().Revive(old_leader);
  EXPECT_TRUE(cluster().StepUntil([&] { return !server(old_leader).IsRaftLeader(); }, 5'000));
  EXPECT_FALSE(server(old_leader).duties().leading());
  ExpectConverged(*leader);
}

TEST_F(ClusterFaultsTest, RestartedFollowerReplaysItsLogToTheSameDigest) {
  unsigned leader = StartCluster(Plain());
  unsigned follower = (leader + 1) % cluster().size();
  for (int k = 0; k < 40; ++k) MustWrite(leader, Set(k));
  ASSERT_TRUE(cluster().StepUntil(
      [&] {
        return server(follower).store().applied_index() == server(leader).store().applied_index();
      },
      5'000));
  cluster().Kill(follower);
  cluster().Advance(Cluster::kDrainMs);
  ASSERT_TRUE(cluster().Restart(follower));
  EXPECT_EQ(server(follower).store().applied_index(), LogIndex())
      << "a restart starts from the disk";
  cluster().Revive(follower);
  for (int k = 40; k < 60; ++k) MustWrite(leader, Set(k));
  ExpectConverged(leader);
}

TEST_F(ClusterFaultsTest, RestartedLeaderRecoversFromItsOwnSnapshotAndRejoins) {
  unsigned old_leader = StartCluster(Snapshotting());
  CreateSession(old_leader, TtlSession(SessionId("s"), 60'000));
  for (int k = 0; k < 100; ++k) MustWrite(old_leader, Set(k));
  ASSERT_TRUE(cluster().StepUntil(
      [&] { return cluster().raft(old_leader)->log.snapshot.last_index > 0; }, 5'000));
  cluster().Kill(old_leader);
  cluster().Advance(Cluster::kDrainMs);
  ASSERT_TRUE(cluster().Restart(old_leader));
  EXPECT_GT(server(old_leader).store().applied_index(), LogIndex()) << "restored its snapshot";
  EXPECT_NE(server(old_leader).store().FindSession(SessionId("s")), nullptr);
  std::optional<unsigned> leader = cluster().StepUntilReadyLeader(kElectMaxMs);
  ASSERT_TRUE(leader.has_value());
  for (int k = 100; k < 150; ++k) MustWrite(*leader, Set(k));
  cluster().Revive(old_leader);
  ExpectConverged(*leader);
}

TEST_F(ClusterFaultsTest, LaggingRestartedFollowerCatchesUpThroughInstallSnapshot) {
  unsigned leader = StartCluster(Snapshotting());
  unsigned follower = (leader + 1) % cluster().size();
  for (int k = 0; k < 10; ++k) MustWrite(leader, Set(k));
  cluster().Kill(follower);
  for (int k = 10; k < 300; ++k) MustWrite(leader, Set(k));
  ASSERT_TRUE(cluster().Restart(follower));
  cluster().Revive(follower);
  ExpectConverged(leader);
  EXPECT_GE(server(follower).restores(), 1u) << "caught up by InstallSnapshot";
}

TEST_F(ClusterFaultsTest, DiskErrorOnAnExpiryIsRetriedAndTheExpiringSessionGetsNoLock) {
  unsigned leader = StartCluster(Plain());
  CreateSession(leader, TtlSession(SessionId("s"), kTtlMs));
  server(leader).FailNextAppends(1);  // the SessionDestroy{expired}
  ASSERT_TRUE(cluster().StepUntil(
      [&] { return server(leader).duties().IsExpiring(SessionId("s")); }, 3 * kTtlMs));
  cluster().Advance(50);
  ASSERT_NE(server(leader).store().FindSession(SessionId("s")), nullptr)
      << "the destroy should have failed";
  EXPECT_EQ(Renew(leader, SessionId("s")).code(), Code::kNotFound);
  Result<state::ApplyResult> acquire =
      Write(leader, state::KvAcquire{"lock/a", "v", 0, SessionId("s")});
  ASSERT_TRUE(acquire.ok());
  EXPECT_FALSE(acquire->ok);
  EXPECT_EQ(acquire->status.message(), "invalid session \"s\"");
  state::Txn txn;
  txn.ops.push_back({state::TxnVerb::kLock, "lock/b", "v", 0, LogIndex(), SessionId("s")});
  Result<state::ApplyResult> locked = Write(leader, txn);
  ASSERT_TRUE(locked.ok());
  ASSERT_EQ(locked->txn.errors.size(), 1u);
  EXPECT_EQ(locked->txn.errors[0].what, "invalid session \"s\"");
  // Retried a second later, and committed.
  RealMs failed_at = cluster().now();
  ASSERT_TRUE(cluster().StepUntil(
      [&] { return server(leader).store().FindSession(SessionId("s")) == nullptr; }, 5'000));
  EXPECT_GE(cluster().now() - failed_at, 900);
  EXPECT_FALSE(server(leader).duties().IsExpiring(SessionId("s")));
  EXPECT_EQ(server(leader).store().FindKv("lock/a"), nullptr);
  ExpectConverged(leader);
}

TEST_F(ClusterFaultsTest, FollowerWhoseDiskFailsStopsUntilRestarted) {
  unsigned leader = StartCluster(Plain());
  unsigned follower = (leader + 1) % cluster().size();
  cluster().disk(follower).Fail(kDiskAll, 0, -1);
  for (int k = 0; k < 20; ++k) MustWrite(leader, Set(k));
  EXPECT_TRUE(cluster().StepUntil(
      [&] { return cluster().raft(follower)->state == RAFT_UNAVAILABLE; }, 5'000))
      << "libraft stops an instance whose disk write failed";
  // The other two carry on; the failed one comes back only as a new process.
  for (int k = 20; k < 40; ++k) MustWrite(leader, Set(k));
  cluster().Kill(follower);
  cluster().Advance(Cluster::kDrainMs);
  ASSERT_TRUE(cluster().Restart(follower));
  cluster().Revive(follower);
  ExpectConverged(leader);
}

TEST_F(ClusterFaultsTest, VoteThatCannotBePersistedIsNotGiven) {
  unsigned old_leader = StartCluster(Plain());
  unsigned voter = (old_leader + 1) % cluster().size();
  unsigned other = (old_leader + 2) % cluster().size();
  cluster().disk(voter).Fail(kDiskTermAndVote, 0, -1);
  cluster().Kill(old_leader);
  // `other` needs `voter`'s vote, which cannot be persisted: no leader.
  EXPECT_FALSE(cluster().StepUntilReadyLeader(8'000).has_value());
  EXPECT_EQ(cluster().raft(voter)->voted_for == cluster().raft(other)->id &&
                cluster().raft(voter)->current_term == cluster().raft(other)->current_term,
            false);
  cluster().Revive(old_leader);
  std::optional<unsigned> leader = cluster().StepUntilReadyLeader(kElectMaxMs);
  ASSERT_TRUE(leader.has_value());
  MustWrite(*leader, state::KvSet{"kv/x", "after", 0});
  cluster().disk(voter).Clear();
  cluster().Kill(voter);
  cluster().Advance(Cluster::kDrainMs);
  ASSERT_TRUE(cluster().Restart(voter));
  cluster().Revive(voter);
  ExpectConverged(*leader);
}

}  // namespace
}  // namespace tenure::sim
