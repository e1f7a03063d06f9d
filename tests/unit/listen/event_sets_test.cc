// DeadlineSet and ReadinessSet, the two sets every connection of a listener
// shares (listen/deadline_set.h, listen/readiness_set.h), on a real io_context
// with real timers and sockets.
#include <gtest/gtest.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <map>
#include <vector>

#include "listen/deadline_set.h"
#include "listen/readiness_set.h"
#include "listen/wire.h"

namespace tenure::listen {
namespace {

using std::chrono::seconds;

// The callbacks are plain function pointers: what they saw goes here.
std::vector<int> fired;
DeadlineSet* rearm_set = nullptr;
std::map<int, int> ready_counts;
std::size_t largest_batch = 0;

void RecordDue(void* owner) { fired.push_back(*static_cast<int*>(owner)); }

void RecordReady(std::span<const ReadinessSet::Ready> batch) {
  largest_batch = std::max(largest_batch, batch.size());
  for (const auto& ready : batch) {
    EXPECT_NE(ready.events & EPOLLIN, 0u);
    ++ready_counts[*static_cast<int*>(ready.owner)];
  }
}

TEST(DeadlineSetTest, EntriesFireInTimeOrderOnlyOnceDueAndRemovedOnesNever) {
  fired.clear();
  boost::asio::io_context io;
  DeadlineSet set(io, &RecordDue);
  int a = 1, b = 2, c = 3, d = 4;
  const MonoMs now = wire::NowMonoMs();
  set.Add(now + 60, &c);
  set.Add(now + 20, &a);
  set.Add(now + 40, &b);
  set.Add(now + 50, &d);
  set.Remove(now + 50, &d);
  EXPECT_EQ(set.size(), 3u);
  // With nothing else to do, run() returns once the last entry fired: no
  // wait is left behind.
  io.run_for(seconds(10));
  EXPECT_TRUE(io.stopped());
  EXPECT_EQ(fired, (std::vector<int>{1, 2, 3}));
  EXPECT_GE(wire::NowMonoMs(), now + 60);
  EXPECT_EQ(set.size(), 0u);
}

TEST(DeadlineSetTest, RemovingTheLastEntryLeavesNoWaitBehind) {
  fired.clear();
  boost::asio::io_context io;
  DeadlineSet set(io, &RecordDue);
  int a = 1;
  const MonoMs far = wire::NowMonoMs() + 3'600'000;
  set.Add(far, &a);
  set.Remove(far, &a);
  const auto started = std::chrono::steady_clock::now();
  io.run_for(seconds(10));
  EXPECT_TRUE(io.stopped());
  EXPECT_LT(std::chrono::steady_clock::now() - started, seconds(5));
  EXPECT_TRUE(fired.empty());
}

void RearmOnce(void* owner) {
  int* count = static_cast<int*>(owner);
  fired.push_back(++*count);
  if (*count < 3) rearm_set->Add(wire::NowMonoMs() + 5, owner);
}

TEST(DeadlineSetTest, AnOwnerMayAddALaterEntryFromItsCallback) {
  fired.clear();
  boost::asio::io_context io;
  DeadlineSet set(io, &RearmOnce);
  rearm_set = &set;
  int count = 0;
  set.Add(wire::NowMonoMs(), &count);
  io.run_for(seconds(10));
  rearm_set = nullptr;
  EXPECT_EQ(fired, (std::vector<int>{1, 2, 3}));
}

TEST(ReadinessSetTest, EverySocketThatBecameReadableIsReportedAlsoPastOneBatch) {
  ready_counts.clear();
  largest_batch = 0;
  boost::asio::io_context io;
  ReadinessSet set(io, &RecordReady);
  // More sockets than one drain takes: the set drains again at once.
  constexpr int kSockets = ReadinessSet::kBatch + 44;
  std::vector<int> ids(kSockets);
  std::vector<int> ends;
  for (int i = 0; i < kSockets; ++i) {
    int pair[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, pair), 0);
    ends.push_back(pair[0]);
    ends.push_back(pair[1]);
    ids[i] = i;
    ASSERT_TRUE(set.Add(pair[0], &ids[i]));
    ASSERT_EQ(::write(pair[1], "x", 1), 1);
  }
  for (int turn = 0; turn < 1000 && ready_counts.size() < std::size_t(kSockets); ++turn) {
    io.run_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(ready_counts.size(), std::size_t(kSockets));
  EXPECT_EQ(largest_batch, std::size_t(ReadinessSet::kBatch));
  // Edge-triggered: nothing new happened, so nothing is reported again.
  ready_counts.clear();
  io.restart();
  io.run_for(std::chrono::milliseconds(50));
  EXPECT_TRUE(ready_counts.empty());
  // A socket that left the set is not reported.
  set.Remove(ends[0]);
  ASSERT_EQ(::write(ends[1], "y", 1), 1);
  ASSERT_EQ(::write(ends[3], "y", 1), 1);
  for (int turn = 0; turn < 1000 && ready_counts.empty(); ++turn) {
    io.restart();
    io.run_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(ready_counts, (std::map<int, int>{{1, 1}}));
  // Stopped: the pending wait ends, so run() returns, and Add fails.
  set.Stop();
  io.restart();
  io.run_for(seconds(10));
  EXPECT_TRUE(io.stopped());
  EXPECT_FALSE(set.Add(ends[2], &ids[1]));
  for (const int fd : ends) ::close(fd);
}

}  // namespace
}  // namespace tenure::listen
