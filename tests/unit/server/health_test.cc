// Autopilot's verdicts and readiness's reasons from raft's view alone.
#include "server/health.h"

#include <gtest/gtest.h>

namespace tenure::server {
namespace {

std::vector<raft::ServerInfo> ThreeVoters() {
  return {{1, "a:1", true, true}, {2, "b:1", true, false}, {3, "c:1", true, false}};
}

TEST(EvaluateClusterTest, AllHeardRecentlyAndCaughtUpIsHealthy) {
  ClusterHealth health =
      EvaluateCluster(ThreeVoters(), {{1, 100, 0}, {2, 100, 20}, {3, 90, 200}}, 1, 100);
  EXPECT_TRUE(health.healthy);
  EXPECT_EQ(health.failure_tolerance, 1);
  ASSERT_EQ(health.servers.size(), 3U);
  EXPECT_TRUE(health.servers[0].leader);
  EXPECT_EQ(health.servers[0].last_contact_ms, 0);
  EXPECT_EQ(health.servers[2].last_index, 90U);
}

TEST(EvaluateClusterTest, SilentServerIsUnhealthyAndCostsTolerance) {
  ClusterHealth health =
      EvaluateCluster(ThreeVoters(), {{1, 100, 0}, {2, 100, 20}, {3, 100, 201}}, 1, 100);
  EXPECT_FALSE(health.healthy);
  EXPECT_FALSE(health.servers[2].healthy);
  EXPECT_TRUE(health.servers[1].healthy);
  EXPECT_EQ(health.failure_tolerance, 0);
}

TEST(EvaluateClusterTest, NeverHeardIsUnhealthy) {
  ClusterHealth health = EvaluateCluster(ThreeVoters(), {{1, 100, 0}, {2, 100, 0}}, 1, 100);
  EXPECT_FALSE(health.servers[2].healthy);
  EXPECT_EQ(health.servers[2].last_contact_ms, -1);
  health = EvaluateCluster(ThreeVoters(), {{1, 100, 0}, {2, 100, 0}, {3, 0, -1}}, 1, 100);
  EXPECT_FALSE(health.servers[2].healthy);
}

TEST(EvaluateClusterTest, TrailingMoreThanMaxTrailingLogsIsUnhealthy) {
  ClusterHealth health =
      EvaluateCluster(ThreeVoters(), {{1, 1000, 0}, {2, 750, 10}, {3, 749, 10}}, 1, 1000);
  EXPECT_TRUE(health.servers[1].healthy);   // 250 behind
  EXPECT_FALSE(health.servers[2].healthy);  // 251 behind
}

TEST(EvaluateClusterTest, NonVotersDoNotCountTowardsTolerance) {
  std::vector<raft::ServerInfo> configuration = ThreeVoters();
  configuration.push_back({4, "d:1", false, false});
  ClusterHealth health =
      EvaluateCluster(configuration, {{1, 100, 0}, {2, 100, 0}, {3, 100, 0}, {4, 100, 0}}, 1, 100);
  EXPECT_TRUE(health.healthy);
  EXPECT_EQ(health.failure_tolerance, 1);
  EXPECT_FALSE(health.servers[3].voter);
}

TEST(NotReadyReasonTest, SaysWhy) {
  Readiness ready{"Follower", "", "", true, 500, 450};
  EXPECT_EQ(NotReadyReason(ready), "");
  Readiness no_leader = ready;
  no_leader.known_leader = false;
  EXPECT_EQ(NotReadyReason(no_leader), "no leader");
  Readiness behind = ready;
  behind.applied_index = 249;
  EXPECT_EQ(NotReadyReason(behind), "behind the leader by 251 entries");
  Readiness broken = ready;
  broken.raft_state = "Restarting";
  broken.last_failure = "writing the raft log: No space left on device";
  EXPECT_EQ(NotReadyReason(broken),
            "raft unavailable (Restarting): writing the raft log: No space left on device");
  Readiness candidate{"Candidate", "", "", false, 10, 10};
  Readiness disk = ready;
  disk.disk_failure = "raft: append failed: no space left on device (data dir /d)";
  EXPECT_EQ(NotReadyReason(disk),
            "disk error: raft: append failed: no space left on device (data dir /d)");
  EXPECT_EQ(NotReadyReason(candidate), "no leader");
}

TEST(HealthHistoryTest, StableSinceMovesOnlyOnChangeOrNewTerm) {
  HealthHistory history;
  EXPECT_EQ(history.Note(2, 1, true, UnixMs(1000)), UnixMs(1000));
  EXPECT_EQ(history.Note(2, 1, true, UnixMs(2000)), UnixMs(1000));
  EXPECT_EQ(history.Note(2, 1, false, UnixMs(3000)), UnixMs(3000));
  EXPECT_EQ(history.Note(2, 1, false, UnixMs(4000)), UnixMs(3000));
  EXPECT_EQ(history.Note(3, 1, false, UnixMs(5000)), UnixMs(5000));
}

}  // namespace
}  // namespace tenure::server
