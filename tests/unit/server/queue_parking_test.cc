// QueueParking: parked fair acquires answered from the Store after applies.
#include "server/queue_parking.h"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <chrono>
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
    return store_.Apply({UnixMs(1'000), std::move(body)}, LogIndex(index_));
  }
  // Applies and tells the parking what changed, as Server::OnApplied does.
  void ApplyAndNotify(state::CommandBody body) {
    Apply(std::move(body));
    parking_.Notify(store_, store_.TakeChanges());
  }
  std::uint64_t Park(const char* session, MonoMs wait_ms = 60'000) {
    return parking_.Park("k", SessionId(session), wait_ms, [this, session](QueueParking::Answer a) {
      answers_.push_back({session, a.outcome, a.fence});
    });
  }

  struct Seen {
    std::string session;
    Outcome outcome;
    LogIndex fence;
  };
  std::uint64_t index_ = 0;
  state::Store store_;
  boost::asio::io_context io_;
  QueueParking parking_{io_};
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

  Park("w2");
  parking_.Flush();
  ASSERT_EQ(answers_.size(), 2u);
  EXPECT_EQ(answers_[1].outcome, Outcome::kFlushed);
  EXPECT_EQ(parking_.size(), 0u);
}

}  // namespace
}  // namespace tenure::server
