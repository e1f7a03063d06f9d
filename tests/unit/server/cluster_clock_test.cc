// ClusterClock: the replicated clock's stamps (decision 0037), with time as
// an input. No wall clock is an input at all: that is the point.
#include "server/cluster_clock.h"

#include <gtest/gtest.h>

#include "unit/common/type_printers.h"

namespace tenure::server {
namespace {

constexpr std::uint64_t kTerm = 7;

TEST(ClusterClockTest, ALeaderContinuesFromTheStoresClockByItsMonotonicTime) {
  ClusterClock clock;
  EXPECT_EQ(clock.Stamp(ClusterMs(5'000), MonoMs(1'000'000), kTerm), ClusterMs(5'000));
  EXPECT_EQ(clock.Stamp(ClusterMs(5'000), MonoMs(1'000'250), kTerm), ClusterMs(5'250));
  // Its own stamps applied: the Store's clock follows, nothing is counted twice.
  EXPECT_EQ(clock.Stamp(ClusterMs(5'250), MonoMs(1'001'250), kTerm), ClusterMs(6'250));
}

TEST(ClusterClockTest, NeverBelowTheStoresClockNorAnEarlierStamp) {
  ClusterClock clock;
  (void)clock.Stamp(ClusterMs(1'000), MonoMs(0), kTerm);
  // A restore moved the Store's clock ahead: the stamps go on from there.
  EXPECT_EQ(clock.Stamp(ClusterMs(90'000), MonoMs(10), kTerm), ClusterMs(90'000));
  EXPECT_EQ(clock.Stamp(ClusterMs(90'000), MonoMs(110), kTerm), ClusterMs(90'100));
  // A monotonic clock that seemed to go back counts nothing.
  EXPECT_EQ(clock.Stamp(ClusterMs(90'000), MonoMs(50), kTerm), ClusterMs(90'100));
}

// Time in another term is never counted: a follower's stamps (its proposals
// are refused) or a leadership lost and won again between two looks restart
// from the Store's clock, which the other leader's stamps moved.
TEST(ClusterClockTest, ANewTermStartsAgainFromTheStoresClock) {
  ClusterClock clock;
  (void)clock.Stamp(ClusterMs(1'000), MonoMs(0), kTerm);
  EXPECT_EQ(clock.Stamp(ClusterMs(1'400), MonoMs(4'000), kTerm + 1), ClusterMs(1'400))
      << "4 s of another term must not be counted again";
  EXPECT_EQ(clock.Stamp(ClusterMs(1'400), MonoMs(4'100), kTerm + 1), ClusterMs(1'500));
}

TEST(ClusterClockTest, ResetStartsAgainFromTheStoresClock) {
  ClusterClock clock;
  (void)clock.Stamp(ClusterMs(1'000), MonoMs(0), kTerm);
  clock.Reset();
  EXPECT_EQ(clock.Stamp(ClusterMs(1'000), MonoMs(60'000), kTerm), ClusterMs(1'000));
}

}  // namespace
}  // namespace tenure::server
