// QueueParking: parked fair acquires answered from the Store after applies.
#include "server/queue_parking.h"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <deque>
#include <optional>
#include <vector>

#include "unit/common/type_printers.h"

namespace tenure::server {
namespace {

using Outcome = QueueParking::Outcome;
using state::SessionId;

class QueueParkingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* id : {"h", "w1", "w2"}) {
      state::Session session;
      session.id = SessionId(id);
      Apply(state::SessionCreate{session});
    }
    Apply(state::KvAcquire{"k", "v", 0, SessionId("h")});
    for (const char* id : {"w1", "w2"}) {
      EXPECT_TRUE(Apply(state::KvEnqueue{"k", id, 0, SessionId(id)}).queued);
    }
  }
  state::ApplyResult Apply(state::CommandBody body) {
    ++index_;
    return store_.Apply({ClusterMs(1'000), std::move(body)}, LogIndex(index_));
  }
  // Applies and tells the parking what changed, as Server::OnApplied does.
  void ApplyAndNotify(state::CommandBody body) {
    Apply(std::move(body));
    parking_.Notify(store_, store_.TakeChanges());
  }
  std::uint64_t Park(const char* session, DurationMs wait_ms = 60'000) {
    return parking_.Park("k", SessionId(session), wait_ms, [this, session](QueueParking::Answer a) {
      answers_.push_back({session, a.outcome, a.fence, a.position});
    });
  }

  struct Seen {
    std::string session;
    Outcome outcome;
    LogIndex fence;
    std::size_t position = 0;
  };
  // Runs the loop until `n` answers came or 5 s passed.
  void RunUntilAnswers(std::size_t n) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (answers_.size() < n && std::chrono::steady_clock::now() < deadline) {
      io_.run_for(std::chrono::milliseconds(5));
      io_.restart();
    }
  }
  // Runs the loop for `ms` milliseconds.
  void RunFor(DurationMs ms) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
    while (std::chrono::steady_clock::now() < until) {
      io_.run_for(std::chrono::milliseconds(5));
      io_.restart();
    }
  }
  // Runs the loop until `left_` holds `n` waiters or 5 s passed.
  void RunUntilLeft(std::size_t n) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (left_.size() < n && std::chrono::steady_clock::now() < deadline) {
      io_.run_for(std::chrono::milliseconds(5));
      io_.restart();
    }
  }
  static constexpr DurationMs kGraceMs = 200;
  std::uint64_t index_ = 0;
  state::Store store_;
  boost::asio::io_context io_;
  // The waiters whose grace passed, as the Server would dequeue them.
  std::vector<std::string> left_;
  QueueParking parking_{io_, store_,
                        [this](const std::string& key, const SessionId& session) {
                          left_.push_back(key + "/" + std::string(session.view()));
                        },
                        kGraceMs};
  std::vector<Seen> answers_;
};

TEST_F(QueueParkingTest, CheckSaysWaitingGrantedOrLeft) {
  EXPECT_FALSE(QueueParking::Check(store_, "k", SessionId("w1")).has_value());
  std::optional<QueueParking::Answer> held = QueueParking::Check(store_, "k", SessionId("h"));
  ASSERT_TRUE(held);
  EXPECT_EQ(held->outcome, Outcome::kGranted);
  EXPECT_EQ(held->fence, store_.FindKv("k")->fence);
  std::optional<QueueParking::Answer> stranger =
      QueueParking::Check(store_, "k", SessionId("nobody"));
  ASSERT_TRUE(stranger);
  EXPECT_EQ(stranger->outcome, Outcome::kLeft);
}

TEST_F(QueueParkingTest, ReleaseAnswersTheHeadAloneWithItsToken) {
  store_.TakeChanges();
  Park("w1");
  Park("w2");
  ApplyAndNotify(state::KvRelease{"k", "", 0, SessionId("h")});
  ASSERT_EQ(answers_.size(), 1u);
  EXPECT_EQ(answers_[0].session, "w1");
  EXPECT_EQ(answers_[0].outcome, Outcome::kGranted);
  EXPECT_EQ(answers_[0].fence, LogIndex(index_));  // the releasing entry's index
  EXPECT_EQ(parking_.size(), 1u);

  // w2's session is destroyed: it left the queue without the key.
  ApplyAndNotify(state::SessionDestroy{SessionId("w2")});
  ASSERT_EQ(answers_.size(), 2u);
  EXPECT_EQ(answers_[1].outcome, Outcome::kLeft);
  EXPECT_EQ(parking_.size(), 0u);
}

TEST_F(QueueParkingTest, DeletingTheKeyAnswersEveryWaiterFalse) {
  store_.TakeChanges();
  Park("w1");
  Park("w2");
  ApplyAndNotify(state::KvDelete{"k", false, LogIndex()});
  ASSERT_EQ(answers_.size(), 2u);
  EXPECT_EQ(answers_[0].outcome, Outcome::kLeft);
  EXPECT_EQ(answers_[1].outcome, Outcome::kLeft);
}

TEST_F(QueueParkingTest, TimeoutFlushAndCancel) {
  Park("w1", 10);
  const std::uint64_t cancelled = Park("w2", 10);
  EXPECT_TRUE(parking_.Cancel(cancelled));
  EXPECT_FALSE(parking_.Cancel(cancelled));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (answers_.empty() && std::chrono::steady_clock::now() < deadline) {
    io_.run_for(std::chrono::milliseconds(5));
    io_.restart();
  }
  ASSERT_EQ(answers_.size(), 1u);  // the cancelled one is never answered
  EXPECT_EQ(answers_[0].outcome, Outcome::kTimedOut);
  EXPECT_EQ(answers_[0].position, 1u);

  Park("w2");
  parking_.Flush();
  ASSERT_EQ(answers_.size(), 2u);
  EXPECT_EQ(answers_[1].outcome, Outcome::kFlushed);
  EXPECT_EQ(answers_[1].position, 2u);  // a leader change keeps the place too
  EXPECT_EQ(parking_.size(), 0u);
}

// Decision 0027's addendum: a wait that runs out is not a state change. The
// request is answered with the session's place, the queue stays as it was,
// and the next release still hands the key to the head.
TEST_F(QueueParkingTest, TimeoutKeepsThePlaceAndAnswersItsPosition) {
  store_.TakeChanges();
  const auto* before = store_.FindQueue("k");
  ASSERT_NE(before, nullptr);
  const std::deque<state::QueueWaiter> waiters = *before;
  const LogIndex queues_index = store_.queues_index();
  Park("w2", 10);
  Park("w1", 20);
  RunUntilAnswers(2);
  ASSERT_EQ(answers_.size(), 2u);
  EXPECT_EQ(answers_[0].session, "w2");
  EXPECT_EQ(answers_[0].outcome, Outcome::kTimedOut);
  EXPECT_EQ(answers_[0].position, 2u);
  EXPECT_EQ(answers_[1].session, "w1");
  EXPECT_EQ(answers_[1].outcome, Outcome::kTimedOut);
  EXPECT_EQ(answers_[1].position, 1u);
  ASSERT_NE(store_.FindQueue("k"), nullptr);
  EXPECT_EQ(*store_.FindQueue("k"), waiters);
  EXPECT_EQ(store_.queues_index(), queues_index);
  EXPECT_TRUE(store_.TakeChanges().queues.empty());

  // The head re-sends and is granted by the holder's release.
  Park("w1");
  ApplyAndNotify(state::KvRelease{"k", "", 0, SessionId("h")});
  ASSERT_EQ(answers_.size(), 3u);
  EXPECT_EQ(answers_[2].session, "w1");
  EXPECT_EQ(answers_[2].outcome, Outcome::kGranted);
}

// Two requests of one session parked for one key (a client that re-sent
// before its first request's answer): the hang-up of one must not take the
// other's place. CountParked is what the HTTP layer asks after Cancel.
TEST_F(QueueParkingTest, CountParkedSeesAnotherRequestOfTheSameSession) {
  const std::uint64_t first = Park("w1");
  const std::uint64_t second = Park("w1");
  Park("w2");
  EXPECT_EQ(parking_.CountParked("k", SessionId("w1")), 2u);
  EXPECT_EQ(parking_.CountParked("k", SessionId("w2")), 1u);
  EXPECT_EQ(parking_.CountParked("other", SessionId("w1")), 0u);
  ASSERT_TRUE(parking_.Cancel(first));
  EXPECT_EQ(parking_.CountParked("k", SessionId("w1")), 1u);  // still parked: no dequeue
  ASSERT_TRUE(parking_.Cancel(second));
  EXPECT_EQ(parking_.CountParked("k", SessionId("w1")), 0u);  // the last one: dequeue
  EXPECT_TRUE(answers_.empty());
}

// A waiter that releases (decision 0027's addendum) leaves the queue in that
// entry: its parked request is answered kLeft (false, no position).
TEST_F(QueueParkingTest, ReleaseByAWaiterAnswersItsParkedRequestLeft) {
  store_.TakeChanges();
  Park("w1");
  Park("w2");
  ApplyAndNotify(state::KvRelease{"k", "", 0, SessionId("w1")});
  ASSERT_EQ(answers_.size(), 1u);
  EXPECT_EQ(answers_[0].session, "w1");
  EXPECT_EQ(answers_[0].outcome, Outcome::kLeft);
  EXPECT_EQ(answers_[0].position, 0u);
  EXPECT_EQ(store_.QueuePosition("k", SessionId("w2")), 1u);
  EXPECT_EQ(store_.FindKv("k")->session, SessionId("h"));
}

// Decision 0027's third addendum: a waiter whose wait ran out keeps its
// place for the grace, and no longer unless its client asks again.
TEST_F(QueueParkingTest, AWaitThatRunsOutKeepsThePlaceForTheGraceOnly) {
  Park("w1", 10);
  RunUntilAnswers(1);
  ASSERT_EQ(answers_.size(), 1u);
  EXPECT_EQ(answers_[0].outcome, Outcome::kTimedOut);
  EXPECT_EQ(parking_.unattended(), 1u);
  RunFor(kGraceMs / 2);
  EXPECT_TRUE(left_.empty()) << "left before the grace passed";
  RunUntilLeft(1);
  ASSERT_EQ(left_.size(), 1u);
  EXPECT_EQ(left_[0], "k/w1");
  EXPECT_EQ(parking_.unattended(), 0u);
}

TEST_F(QueueParkingTest, ARequestWithinTheGraceKeepsThePlace) {
  Park("w1", 10);
  RunUntilAnswers(1);
  EXPECT_EQ(parking_.unattended(), 1u);
  Park("w1");  // the client asks again at once
  EXPECT_EQ(parking_.unattended(), 0u);
  RunFor(kGraceMs * 2);
  EXPECT_TRUE(left_.empty());
  EXPECT_EQ(store_.QueuePosition("k", SessionId("w1")), 1u);
}

// The grace ends without a leave when the waiter left or was granted meanwhile.
TEST_F(QueueParkingTest, AWaiterGrantedDuringItsGraceDoesNotLeave) {
  Park("w1", 10);
  RunUntilAnswers(1);
  ApplyAndNotify(state::KvRelease{"k", "", 0, SessionId("h")});
  EXPECT_EQ(store_.FindKv("k")->session, SessionId("w1"));
  RunFor(kGraceMs * 2);
  EXPECT_TRUE(left_.empty());
}

// A new leader: every waiter's requests were on the old one. Each starts its
// grace; a hang-up (Cancel) never starts one (the handler dequeues at once).
TEST_F(QueueParkingTest, ANewLeaderStartsTheGraceForEveryWaiter) {
  const std::uint64_t id = Park("w2");
  parking_.StartGraceForAll(store_);
  EXPECT_EQ(parking_.unattended(), 1u) << "w2 is attended by its parked request";
  ASSERT_TRUE(parking_.Cancel(id));
  EXPECT_EQ(parking_.unattended(), 1u);
  RunUntilLeft(1);
  ASSERT_EQ(left_.size(), 1u);
  EXPECT_EQ(left_[0], "k/w1");
  parking_.StartGraceForAll(store_);
  parking_.Flush();  // leadership lost again: the next leader counts
  EXPECT_EQ(parking_.unattended(), 0u);
  RunFor(kGraceMs * 2);
  EXPECT_EQ(left_.size(), 1u);
}

}  // namespace
}  // namespace tenure::server
