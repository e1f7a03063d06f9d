#include "server/session_timers.h"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <string>
#include <vector>

#include "common/clock.h"

namespace tenure::server {
namespace {

// Runs the io_context until `done` holds or the deadline passes.
template <typename Pred>
bool RunUntil(boost::asio::io_context& io, Pred done, int deadline_ms) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(deadline_ms);
  while (!done() && std::chrono::steady_clock::now() < deadline) {
    io.run_for(std::chrono::milliseconds(5));
    io.restart();
  }
  return done();
}

class SessionTimersTest : public ::testing::Test {
 protected:
  boost::asio::io_context io_;
  RealClock clock_;
  std::vector<std::pair<std::string, MonoMs>> expired_;
  MonoMs start_ms_ = clock_.NowMonoMs();
  SessionTimers timers_{io_, clock_, 2, [this](const std::string& id) {
                          expired_.push_back({id, clock_.NowMonoMs() - start_ms_});
                        }};
};

TEST_F(SessionTimersTest, ExpiresNoSoonerThanTtlTimesMultiplier) {
  timers_.Arm("a", 30 * kNsPerMs);  // 30 ms TTL, multiplier 2 => 60 ms
  ASSERT_TRUE(RunUntil(io_, [&] { return !expired_.empty(); }, 2000));
  EXPECT_EQ(expired_[0].first, "a");
  EXPECT_GE(expired_[0].second, 60);
  EXPECT_FALSE(timers_.armed("a"));
}

TEST_F(SessionTimersTest, RenewalPushesTheDeadline) {
  timers_.Arm("a", 40 * kNsPerMs);  // deadline 80 ms
  RunUntil(io_, [] { return false; }, 50);
  timers_.Arm("a", 40 * kNsPerMs);  // renewed at ~50 ms: deadline ~130 ms
  ASSERT_TRUE(RunUntil(io_, [&] { return !expired_.empty(); }, 2000));
  EXPECT_GE(expired_[0].second, 130);
}

TEST_F(SessionTimersTest, EarlierSessionExpiresFirstAndDisarmedNever) {
  timers_.Arm("late", 60 * kNsPerMs);
  timers_.Arm("soon", 10 * kNsPerMs);
  timers_.Arm("gone", 10 * kNsPerMs);
  timers_.Disarm("gone");
  ASSERT_TRUE(RunUntil(io_, [&] { return expired_.size() == 2; }, 2000));
  EXPECT_EQ(expired_[0].first, "soon");
  EXPECT_EQ(expired_[1].first, "late");
  RunUntil(io_, [] { return false; }, 50);
  EXPECT_EQ(expired_.size(), 2u);
}

TEST_F(SessionTimersTest, ClearForgetsEverything) {
  timers_.Arm("a", 10 * kNsPerMs);
  timers_.Clear();
  EXPECT_EQ(timers_.size(), 0u);
  RunUntil(io_, [] { return false; }, 60);
  EXPECT_TRUE(expired_.empty());
}

TEST_F(SessionTimersTest, ZeroTtlIsNeverArmed) {
  timers_.Arm("no-ttl", 0);
  EXPECT_FALSE(timers_.armed("no-ttl"));
}

}  // namespace
}  // namespace tenure::server
