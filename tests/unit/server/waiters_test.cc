#include "server/waiters.h"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <map>

namespace tenure::server {
namespace {

class WaitersTest : public ::testing::Test {
 protected:
  // The index each watch reports; tests move it and then Notify.
  std::map<std::string, std::uint64_t> index_;
  boost::asio::io_context io_;
  RealClock clock_;
  Waiters waiters_{io_, clock_, [this](const Watch& w) {
                     return LogIndex(index_[(w.kind == WatchKind::kSessions ? "#" : "") + w.key]);
                   }};
  int answered_ = 0;

  std::uint64_t Park(WatchKind kind, std::string key, std::uint64_t min_index,
                     DurationMs wait_ms = 60'000) {
    return waiters_.Park({kind, std::move(key)}, LogIndex(min_index), wait_ms,
                         [this] { ++answered_; });
  }
  void Run(int ms) {
    io_.run_for(std::chrono::milliseconds(ms));
    io_.restart();
  }
};

TEST_F(WaitersTest, WakesOnlyWaitersOfTheChangedKeyWhoseIndexPassed) {
  index_["a"] = 5;
  index_["b"] = 5;
  Park(WatchKind::kKey, "a", 5);
  Park(WatchKind::kKey, "b", 5);
  index_["a"] = 6;
  waiters_.Notify({{"a"}, false});
  EXPECT_EQ(answered_, 1);
  EXPECT_EQ(waiters_.size(), 1u);
}

TEST_F(WaitersTest, ChangeThatDoesNotPassTheIndexKeepsWaiting) {
  index_["a"] = 5;
  Park(WatchKind::kKey, "a", 7);  // client holds a newer index than the server
  index_["a"] = 6;
  waiters_.Notify({{"a"}, false});
  EXPECT_EQ(answered_, 0);
}

TEST_F(WaitersTest, PrefixWaiterWakesForKeysUnderItsPrefixOnly) {
  index_["svc/"] = 3;
  Park(WatchKind::kPrefix, "svc/", 3);
  index_["svc/"] = 4;
  waiters_.Notify({{"other/x"}, false});
  EXPECT_EQ(answered_, 0);
  waiters_.Notify({{"svc/x"}, false});
  EXPECT_EQ(answered_, 1);
}

TEST_F(WaitersTest, SessionWaitersWakeOnSessionChanges) {
  index_["#"] = 2;
  Park(WatchKind::kSessions, "", 2);
  index_["#"] = 3;
  waiters_.Notify({{}, false});
  EXPECT_EQ(answered_, 0);
  waiters_.Notify({{}, true});
  EXPECT_EQ(answered_, 1);
}

TEST_F(WaitersTest, TimeoutAnswersAndCancelDoesNot) {
  index_["a"] = 1;
  Park(WatchKind::kKey, "a", 1, 20);
  std::uint64_t cancelled = Park(WatchKind::kKey, "a", 1, 20);
  waiters_.Cancel(cancelled);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (answered_ == 0 && std::chrono::steady_clock::now() < deadline) Run(5);
  Run(40);
  EXPECT_EQ(answered_, 1);
  EXPECT_EQ(waiters_.size(), 0u);
}

TEST_F(WaitersTest, ThousandWaitersOnOneKeyAllWake) {
  index_["hot"] = 10;
  for (int i = 0; i < 1000; ++i) Park(WatchKind::kKey, "hot", 10);
  index_["hot"] = 11;
  waiters_.Notify({{"hot"}, false});
  EXPECT_EQ(answered_, 1000);
  EXPECT_EQ(waiters_.size(), 0u);
}

TEST_F(WaitersTest, RepeatedTimeoutsDoNotAccumulate) {
  index_["quiet"] = 1;
  for (int round = 0; round < 50; ++round) Park(WatchKind::kKey, "quiet", 1, 1);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (answered_ < 50 && std::chrono::steady_clock::now() < deadline) Run(5);
  EXPECT_EQ(answered_, 50);
  EXPECT_EQ(waiters_.size(), 0u);
}

TEST_F(WaitersTest, FlushAnswersEveryone) {
  index_["a"] = 1;
  Park(WatchKind::kKey, "a", 1);
  Park(WatchKind::kPrefix, "", 1);
  waiters_.Flush();
  EXPECT_EQ(answered_, 2);
}

}  // namespace
}  // namespace tenure::server

namespace tenure::server {
namespace {

TEST_F(WaitersTest, SnapshotRestoreRechecksEveryWaiter) {
  index_["a"] = 1;
  index_["p/"] = 1;
  index_["#"] = 1;
  Park(WatchKind::kKey, "a", 1);
  Park(WatchKind::kPrefix, "p/", 1);
  Park(WatchKind::kSessions, "", 1);
  Park(WatchKind::kKey, "unchanged", 5);
  index_["a"] = index_["p/"] = index_["#"] = 9;
  state::Changes restored;
  restored.everything = true;
  waiters_.Notify(restored);
  EXPECT_EQ(answered_, 3);
  EXPECT_EQ(waiters_.size(), 1u);
}

}  // namespace
}  // namespace tenure::server
