// Leader duties across a change of leader, on raft_fixture with our Store,
// FsmBridge and LeaderDuties on every server, in simulated time with skewed,
// drifting clocks. The simulation's checkers watch every apply.
#include <gtest/gtest.h>

#include "raft/cluster_fixture.h"
#include "unit/common/type_printers.h"

namespace tenure::sim {
namespace {

using state::SessionId;
using testing::ClusterTest;
using testing::kElectMaxMs;
using testing::TtlSession;

constexpr DurationMs kTtlMs = 10'000;
constexpr int kMultiplier = 2;
constexpr std::int64_t kDriftBoundPpm = 50'000;  // 5%: far worse than any crystal

// Clocks that disagree: wall offsets of hundreds of ms, monotonic clocks
// with unrelated origins running up to 5% fast or slow.
ClusterOptions SkewedCluster(unsigned servers = 3) {
  ClusterOptions options;
  options.servers = servers;
  options.ttl_multiplier = kMultiplier;
  options.drift_ppm_max = kDriftBoundPpm;
  options.clocks = {SimClock(0, 50'000, 1'000), SimClock(350, -50'000, 9'000'000),
                    SimClock(-250, 30'000, 77), SimClock(120, -10'000, 5),
                    SimClock(-40, 0, 123'456)};
  options.clocks.resize(servers);
  return options;
}

class ClusterFailoverTest : public ClusterTest {
 protected:
  // Steps until `session` is gone from `server`'s Store; renews `keep` on
  // `leader` every few seconds meanwhile. Returns false on timeout.
  bool StepUntilExpired(unsigned leader, const SessionId& session, const SessionId& keep,
                        RealMs max_ms) {
    RealMs until = cluster().now() + max_ms;
    while (cluster().now() < until) {
      if (cluster().StepUntil(
              [&] { return server(leader).store().FindSession(session) == nullptr; }, 3'000)) {
        return true;
      }
      if (!keep.empty()) {
        EXPECT_TRUE(Renew(leader, keep).ok());
      }
    }
    return false;
  }
};

TEST_F(ClusterFailoverTest, NewLeaderReArmsSessionsAtAFullTtlAndExpiresOnlyAfterIt) {
  unsigned old_leader = StartCluster(SkewedCluster());
  CreateSession(old_leader, TtlSession(SessionId("unrenewed"), kTtlMs));
  CreateSession(old_leader, TtlSession(SessionId("renewed"), kTtlMs));
  cluster().Advance(15'000);
  ASSERT_TRUE(Renew(old_leader, SessionId("unrenewed")).ok());
  ASSERT_TRUE(Renew(old_leader, SessionId("renewed")).ok());
  RealMs last_renewal = cluster().now();

  cluster().Kill(old_leader);
  std::optional<unsigned> leader = cluster().StepUntilReadyLeader(kElectMaxMs);
  ASSERT_TRUE(leader.has_value());
  ASSERT_NE(*leader, old_leader);
  SimServer& next = server(*leader);
  MonoMs led_mono = next.NowMono();
  RealMs led_at = cluster().now();
  // A full TTL x multiplier from now on the new leader's clock, whatever
  // was left of it on the old leader's.
  EXPECT_EQ(next.duties().timers().RemainingMs(SessionId("unrenewed"), led_mono),
            kTtlMs * kMultiplier);

  ASSERT_TRUE(StepUntilExpired(*leader, SessionId("unrenewed"), SessionId("renewed"), 60'000));
  EXPECT_GE(next.NowMono() - led_mono, kTtlMs * kMultiplier) << "early on the leader's clock";
  EXPECT_GE(cluster().now() - last_renewal, kTtlMs) << "early in real time";
  // Late by no more than the clock's drift and a little timer slack.
  EXPECT_LE(cluster().now() - led_at, kTtlMs * kMultiplier * 21 / 20 + 500);
  EXPECT_NE(next.store().FindSession(SessionId("renewed")), nullptr);
  ExpectConverged(*leader);
}

TEST_F(ClusterFailoverTest, UnrenewedSessionsExpireOnTheLeadersClockNotTheirs) {
  // Server 0 runs 5% fast: expiries on it come 5% sooner in real time, but
  // never before TTL x m on its own clock, and so never before TTL for the
  // client whatever the drift up to (m-1) x 100%.
  ClusterOptions options = SkewedCluster();
  unsigned leader = StartCluster(options);
  CreateSession(leader, TtlSession(SessionId("s"), kTtlMs));
  MonoMs created_mono = server(leader).NowMono();
  RealMs created_at = cluster().now();
  ASSERT_TRUE(StepUntilExpired(leader, SessionId("s"), SessionId(), 60'000));
  EXPECT_GE(server(leader).NowMono() - created_mono, kTtlMs * kMultiplier);
  EXPECT_GE(cluster().now() - created_at, kTtlMs * kMultiplier * 1'000'000 / 1'050'000);
  ExpectConverged(leader);
}

TEST_F(ClusterFailoverTest, LockDelayOfAnInvalidatedHolderBlocksAcquiresOnTheNewLeader) {
  constexpr DurationMs kLockDelayMs = 8'000;
  unsigned old_leader = StartCluster(SkewedCluster());
  CreateSession(old_leader, TtlSession(SessionId("holder"), kTtlMs, kLockDelayMs));
  CreateSession(old_leader, TtlSession(SessionId("next"), 60'000));
  state::ApplyResult first = Acquire(old_leader, "lock/a", SessionId("holder"));
  ASSERT_TRUE(first.ok);
  MustWrite(old_leader, state::SessionDestroy{SessionId("holder")});
  RealMs destroyed_at = cluster().now();

  cluster().Kill(old_leader);
  std::optional<unsigned> leader = cluster().StepUntilReadyLeader(kElectMaxMs);
  ASSERT_TRUE(leader.has_value());
  state::ApplyResult refused = Acquire(*leader, "lock/a", SessionId("next"));
  EXPECT_FALSE(refused.ok);
  EXPECT_TRUE(refused.lock_delayed) << "lock-delay must survive the change of leader";

  RealMs granted_at = 0;
  for (int attempt = 0; attempt < 30 && granted_at == 0; ++attempt) {
    cluster().Advance(500);
    RealMs proposed_at = cluster().now();
    state::ApplyResult result = Acquire(*leader, "lock/a", SessionId("next"));
    if (result.ok) {
      granted_at = proposed_at;
      EXPECT_GT(result.fence, first.fence);
    } else {
      EXPECT_TRUE(result.lock_delayed);
    }
  }
  ASSERT_NE(granted_at, 0);
  // The window is measured on the leaders' wall clocks (decision 0001): it
  // can end early by at most the spread of their offsets (600 ms here).
  EXPECT_GE(granted_at - destroyed_at, kLockDelayMs - 600);
  ExpectConverged(*leader);
}

// Decision 0010: the Store measures lock-delay on the stamping leaders' wall
// clocks, so a successor whose wall clock runs 5 s ahead would see an 8 s
// window over 3 s after the invalidation. The new leader's LockDelayGuard
// counts what remained on its own monotonic clock instead. Exact monotonic
// rates here, so the bound is exact too.
TEST_F(ClusterFailoverTest, LockDelaySurvivesASuccessorWhoseWallClockRunsAhead) {
  constexpr DurationMs kLockDelayMs = 8'000;
  constexpr DurationMs kAheadMs = 5'000;
  ClusterOptions options;
  options.clocks = {SimClock(0, 0, 10), SimClock(0, 0, 20), SimClock(0, 0, 30)};
  unsigned old_leader = StartCluster(std::move(options));
  for (unsigned i = 0; i < cluster().size(); ++i) {
    if (i != old_leader) server(i).clock().SetWallOffset(kAheadMs);
  }
  CreateSession(old_leader, TtlSession(SessionId("holder"), kTtlMs, kLockDelayMs));
  CreateSession(old_leader, TtlSession(SessionId("next"), 60'000));
  ASSERT_TRUE(Acquire(old_leader, "lock/a", SessionId("holder")).ok);
  MustWrite(old_leader, state::SessionDestroy{SessionId("holder")});
  RealMs destroyed_at = cluster().now();

  cluster().Kill(old_leader);
  std::optional<unsigned> leader = cluster().StepUntilReadyLeader(kElectMaxMs);
  ASSERT_TRUE(leader.has_value());
  EXPECT_EQ(server(*leader).duties().lock_delays().size(), 1u);
  RealMs granted_at = 0;
  for (int attempt = 0; attempt < 40 && granted_at == 0; ++attempt) {
    RealMs proposed_at = cluster().now();
    state::ApplyResult result = Acquire(*leader, "lock/a", SessionId("next"));
    if (result.ok) {
      granted_at = proposed_at;
    } else {
      EXPECT_TRUE(result.lock_delayed);
      cluster().Advance(250);
    }
  }
  ASSERT_NE(granted_at, 0);
  EXPECT_GE(granted_at - destroyed_at, kLockDelayMs)
      << "the successor's fast wall clock shortened the window";
  ExpectConverged(*leader);
}

TEST_F(ClusterFailoverTest, ExpiredHoldersLockIsReleasedWithItsLockDelayAfterFailover) {
  constexpr DurationMs kLockDelayMs = 5'000;
  unsigned old_leader = StartCluster(SkewedCluster(5));
  CreateSession(old_leader, TtlSession(SessionId("holder"), kTtlMs, kLockDelayMs));
  ASSERT_TRUE(Acquire(old_leader, "lock/b", SessionId("holder")).ok);
  cluster().Advance(5'000);
  cluster().Kill(old_leader);
  std::optional<unsigned> leader = cluster().StepUntilReadyLeader(kElectMaxMs);
  ASSERT_TRUE(leader.has_value());
  ASSERT_TRUE(StepUntilExpired(*leader, SessionId("holder"), SessionId(), 60'000));
  const state::KvEntry* entry = server(*leader).store().FindKv("lock/b");
  ASSERT_NE(entry, nullptr);
  EXPECT_TRUE(entry->session.empty());
  EXPECT_GT(server(*leader).store().LockDelayUntil("lock/b"), ClusterMs(0));
  ExpectConverged(*leader);
}

TEST_F(ClusterFailoverTest, FiveServersKeepTheirSessionsThroughTwoLeaderKills) {
  unsigned first = StartCluster(SkewedCluster(5));
  CreateSession(first, TtlSession(SessionId("s"), kTtlMs));
  cluster().Kill(first);
  std::optional<unsigned> second = cluster().StepUntilReadyLeader(kElectMaxMs);
  ASSERT_TRUE(second.has_value());
  ASSERT_TRUE(Renew(*second, SessionId("s")).ok());
  cluster().Kill(*second);
  std::optional<unsigned> third = cluster().StepUntilReadyLeader(kElectMaxMs);
  ASSERT_TRUE(third.has_value());
  ASSERT_TRUE(Renew(*third, SessionId("s")).ok());
  // A third kill leaves two of five: no majority, no commit.
  cluster().Kill(*third);
  EXPECT_FALSE(cluster().StepUntilReadyLeader(10'000).has_value());
  cluster().Revive(first);
  std::optional<unsigned> fourth = cluster().StepUntilReadyLeader(kElectMaxMs);
  ASSERT_TRUE(fourth.has_value());
  EXPECT_NE(server(*fourth).store().FindSession(SessionId("s")), nullptr);
  MustWrite(*fourth, state::KvSet{"kv/x", "after", 0});
  cluster().Revive(*second);
  cluster().Revive(*third);
  ExpectConverged(*fourth);
}

// A paused leader (SIGSTOP, a long GC or VM freeze) that resumes still
// believes it leads until it hears of its successor, and moves a renewed
// session's deadline in its memory. Before decision 0011 it also answered
// the renewal, which its successor never saw: with multiplier 1 the session
// was expired less than TTL after a renewal a leader had acknowledged
// (tenure_sim --seed 174 --multiplier 1). Now the answer waits for a barrier
// that a deposed leader cannot commit, so no client counts on that renewal.
TEST_F(ClusterFailoverTest, ResumedDeposedLeaderNeverAcknowledgesARenewal) {
  ClusterOptions options = SkewedCluster();
  options.ttl_multiplier = 1;
  unsigned old_leader = StartCluster(options);
  CreateSession(old_leader, TtlSession(SessionId("s"), kTtlMs));
  cluster().Kill(old_leader);
  std::optional<unsigned> leader = cluster().StepUntilReadyLeader(kElectMaxMs);
  ASSERT_TRUE(leader.has_value());
  cluster().Advance(6'000);
  cluster().Revive(old_leader);
  ASSERT_TRUE(server(old_leader).IsRaftLeader()) << "the scenario needs a deposed leader unaware";
  Status stale = Renew(old_leader, SessionId("s"));
  EXPECT_FALSE(stale.ok()) << "a deposed leader acknowledged a renewal";
  ASSERT_TRUE(StepUntilExpired(*leader, SessionId("s"), SessionId(), 60'000));
  ExpectConverged(*leader);
}

// The same with the default multiplier, renewing on the real leader too:
// the session lives on, and every renewal the old leader got is refused.
TEST_F(ClusterFailoverTest, RenewalsReachingTheRealLeaderKeepTheSession) {
  unsigned old_leader = StartCluster(SkewedCluster());
  CreateSession(old_leader, TtlSession(SessionId("s"), kTtlMs));
  cluster().Kill(old_leader);
  std::optional<unsigned> leader = cluster().StepUntilReadyLeader(kElectMaxMs);
  ASSERT_TRUE(leader.has_value());
  cluster().Revive(old_leader);
  EXPECT_FALSE(Renew(old_leader, SessionId("s")).ok());
  for (int round = 0; round < 10; ++round) {
    ASSERT_TRUE(Renew(*leader, SessionId("s")).ok());
    cluster().Advance(kTtlMs / 2);
  }
  EXPECT_NE(server(*leader).store().FindSession(SessionId("s")), nullptr);
  ExpectConverged(*leader);
}

}  // namespace
}  // namespace tenure::sim
