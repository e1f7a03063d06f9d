// The comparison's quick tier (docs/algorithms.md): one seed of the two
// scripted faults the plots show, with what each approach must show, and a
// check that a run is a function of its seed. The full table:
// bench/algorithms.py.
#include "algorithms/algos.h"

#include <gtest/gtest.h>

namespace tenure::algos {
namespace {

constexpr std::uint64_t kSeed = 1;

TEST(Algorithms, SameSeedSameRun) {
  for (Approach a : {Approach::kBully, Approach::kRedis, Approach::kTenure}) {
    RunResult first = algos::Run(a, Schedule::kRandom, 7, true);
    RunResult second = algos::Run(a, Schedule::kRandom, 7, true);
    EXPECT_EQ(first.metrics.two_leaders_ms, second.metrics.two_leaders_ms) << Name(a);
    EXPECT_EQ(first.metrics.no_leader_ms, second.metrics.no_leader_ms) << Name(a);
    EXPECT_EQ(first.metrics.messages, second.metrics.messages) << Name(a);
    EXPECT_EQ(first.timeline.size(), second.timeline.size()) << Name(a);
    EXPECT_EQ(first.plan, second.plan);
  }
}

// Bully: each side of the partition elects its own leader, and the old one
// keeps writing with an epoch that is no longer the newest.
TEST(Algorithms, BullySplitsUnderPartition) {
  Metrics m = algos::Run(Approach::kBully, Schedule::kPartition, kSeed, false).metrics;
  EXPECT_GT(m.two_leaders_ms, 20'000);
  EXPECT_GT(m.stale_writes, 10);
}

// The survey's GC pause (docs/algorithms.md): the paused leader's write lands after another leader
// was granted the lease. Without fencing the store takes it; with the
// survey's FencedStorage it refuses it.
TEST(Algorithms, PausedLeaderStaleWriteOnlyFencingRefuses) {
  Metrics lease = algos::Run(Approach::kLease, Schedule::kPause, kSeed, false).metrics;
  EXPECT_GE(lease.stale_writes, 1);
  EXPECT_EQ(lease.writes_refused, 0);
  Metrics fenced = algos::Run(Approach::kFencedLease, Schedule::kPause, kSeed, false).metrics;
  EXPECT_EQ(fenced.stale_writes, 0);
  EXPECT_GE(fenced.writes_refused, 1);
}

// Redis-style: the lock expires on the store's wall clock, so a clock step
// hands it to a second replica while the first still believes it holds it.
// The lease in a store that times leases on its monotonic clock does not.
TEST(Algorithms, ClockStepSplitsOnlyTheWallClockLock) {
  Metrics redis = algos::Run(Approach::kRedis, Schedule::kClock, 4, false).metrics;
  EXPECT_GT(redis.two_leaders_ms, 0);
  EXPECT_GE(redis.stale_writes, 1);
  Metrics lease = algos::Run(Approach::kLease, Schedule::kClock, 4, false).metrics;
  EXPECT_EQ(lease.two_leaders_ms, 0);
  EXPECT_EQ(lease.stale_writes, 0);
}

// tenure: on the real Store and LeaderDuties, neither fault yields two
// acting leaders or a stale write; the paused leader's write is refused by
// its fencing token.
TEST(Algorithms, TenureFencesThePauseAndNeverSplits) {
  RunResult paused = algos::Run(Approach::kTenure, Schedule::kPause, kSeed, false);
  EXPECT_EQ(paused.failure, "");
  const Metrics& pause = paused.metrics;
  EXPECT_EQ(pause.stale_writes, 0);
  EXPECT_GE(pause.writes_refused, 1);
  EXPECT_EQ(pause.two_leaders_ms, 0);
  EXPECT_GE(pause.elections, 2);  // someone else took over meanwhile
  RunResult split = algos::Run(Approach::kTenure, Schedule::kPartition, kSeed, false);
  EXPECT_EQ(split.failure, "");
  const Metrics& partition = split.metrics;
  EXPECT_EQ(partition.stale_writes, 0);
  EXPECT_EQ(partition.two_leaders_ms, 0);
  EXPECT_GT(partition.writes_accepted, 100);
}

TEST(Algorithms, EveryApproachElectsSomebody) {
  for (Approach a : AllApproaches()) {
    Metrics m = algos::Run(a, Schedule::kLoss, kSeed, false).metrics;
    EXPECT_GE(m.elections, 1) << Name(a);
    EXPECT_GT(m.writes_accepted, 100) << Name(a);
    EXPECT_LT(m.no_leader_ms, 150'000) << Name(a);
  }
}

}  // namespace
}  // namespace tenure::algos
