// The ZooKeeper port's ready set (zk/ready_set.h, decision 0057) over real
// sockets: it tells each connection's number when its socket may read or
// write, again after every new edge, more events than one batch holds, and
// nothing for a socket taken out.
#include "zk/ready_set.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <utility>
#include <vector>

namespace tenure::zk {
namespace {

struct Seen {
  int readable = 0;
  int writable = 0;
  int ended = 0;
};

// A connected pair of non-blocking stream sockets: [0] goes in the set,
// [1] plays the client.
struct SocketPair {
  int fd[2] = {-1, -1};
  SocketPair() {
    EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fd), 0);
  }
  ~SocketPair() {
    for (int f : fd) {
      if (f >= 0) ::close(f);
    }
  }
  SocketPair(const SocketPair&) = delete;
  SocketPair& operator=(const SocketPair&) = delete;
};

class ReadySetTest : public ::testing::Test {
 protected:
  ReadySetTest()
      : set_(io_, [this](std::uint64_t number, bool readable, bool writable, bool peer_ended) {
          Seen& s = seen_[number];
          s.readable += readable ? 1 : 0;
          s.writable += writable ? 1 : 0;
          s.ended += peer_ended ? 1 : 0;
        }) {}

  // Runs the loop until `done` holds, for at most 5 s (bounded, no sleep).
  bool RunUntil(const std::function<bool()>& done) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (!done() && std::chrono::steady_clock::now() < deadline) {
      io_.restart();
      io_.run_one_for(std::chrono::milliseconds(50));
    }
    return done();
  }
  // Runs what is ready now and what it posts, without waiting.
  void RunReady() {
    for (int i = 0; i < 20; ++i) {
      io_.restart();
      if (io_.poll() == 0) break;
    }
  }

  boost::asio::io_context io_;
  std::map<std::uint64_t, Seen> seen_;
  ReadySet set_;
};

TEST_F(ReadySetTest, ASocketIsToldWhenItMayWriteAndAgainAtEachNewRead) {
  ASSERT_TRUE(set_.Open().ok());
  SocketPair pair;
  ASSERT_TRUE(set_.Add(pair.fd[0], 7));
  // Added, an empty socket may write: one edge.
  ASSERT_TRUE(RunUntil([&] { return seen_[7].writable >= 1; }));
  EXPECT_EQ(seen_[7].readable, 0);

  ASSERT_EQ(::write(pair.fd[1], "ab", 2), 2);
  ASSERT_TRUE(RunUntil([&] { return seen_[7].readable >= 1; }));
  // Edge-triggered: what was not read is not told again...
  RunReady();
  EXPECT_EQ(seen_[7].readable, 1);
  // ...until more arrives.
  ASSERT_EQ(::write(pair.fd[1], "c", 1), 1);
  ASSERT_TRUE(RunUntil([&] { return seen_[7].readable >= 2; }));
  char buffer[8];
  EXPECT_EQ(::read(pair.fd[0], buffer, sizeof buffer), 3);
}

TEST_F(ReadySetTest, AHangUpCountsAsReadable) {
  ASSERT_TRUE(set_.Open().ok());
  SocketPair pair;
  ASSERT_TRUE(set_.Add(pair.fd[0], 3));
  ASSERT_TRUE(RunUntil([&] { return seen_[3].writable >= 1; }));
  ::close(pair.fd[1]);
  pair.fd[1] = -1;
  ASSERT_TRUE(RunUntil([&] { return seen_[3].readable >= 1; }));
}

// A ZooKeeper connection stops reading after a read shorter than its buffer
// (zk/connection_io.cc) and trusts these two to bring the rest.
TEST_F(ReadySetTest, AnEndOfStreamThatCameWithTheDataIsToldWithIt) {
  ASSERT_TRUE(set_.Open().ok());
  SocketPair pair;
  ASSERT_TRUE(set_.Add(pair.fd[0], 4));
  ASSERT_TRUE(RunUntil([&] { return seen_[4].writable >= 1; }));
  EXPECT_EQ(seen_[4].ended, 0);
  ASSERT_EQ(::write(pair.fd[1], "ab", 2), 2);
  ASSERT_EQ(::shutdown(pair.fd[1], SHUT_WR), 0);
  ASSERT_TRUE(RunUntil([&] { return seen_[4].readable >= 1 && seen_[4].ended >= 1; }));
}

TEST_F(ReadySetTest, WhatArrivesAfterAShortReadIsToldAgain) {
  ASSERT_TRUE(set_.Open().ok());
  SocketPair pair;
  ASSERT_TRUE(set_.Add(pair.fd[0], 5));
  ASSERT_EQ(::write(pair.fd[1], "ab", 2), 2);
  ASSERT_TRUE(RunUntil([&] { return seen_[5].readable >= 1; }));
  EXPECT_EQ(seen_[5].ended, 0);
  char buffer[8];
  ASSERT_EQ(::read(pair.fd[0], buffer, sizeof buffer), 2);  // short: nothing more was there
  ASSERT_EQ(::write(pair.fd[1], "c", 1), 1);
  ASSERT_TRUE(RunUntil([&] { return seen_[5].readable >= 2; }));
  EXPECT_EQ(seen_[5].ended, 0);
  ASSERT_EQ(::read(pair.fd[0], buffer, sizeof buffer), 1);
  ASSERT_EQ(::shutdown(pair.fd[1], SHUT_WR), 0);
  ASSERT_TRUE(RunUntil([&] { return seen_[5].readable >= 3 && seen_[5].ended >= 1; }));
  EXPECT_EQ(::read(pair.fd[0], buffer, sizeof buffer), 0);
}

TEST_F(ReadySetTest, MoreEventsThanABatchAreAllTold) {
  ASSERT_TRUE(set_.Open().ok());
  constexpr int kSockets = ReadySet::kBatch + 44;
  std::vector<std::unique_ptr<SocketPair>> pairs;
  for (int i = 0; i < kSockets; ++i) {
    pairs.push_back(std::make_unique<SocketPair>());
    ASSERT_TRUE(set_.Add(pairs.back()->fd[0], static_cast<std::uint64_t>(100 + i)));
  }
  // Every one readable before the loop runs at all: 300 events, taken in
  // two batches (the second by the drain posted after a full batch; this
  // kernel also signals the set's descriptor again while events are left,
  // so the test shows they all arrive, not which of the two brought them).
  for (auto& pair : pairs) ASSERT_EQ(::write(pair->fd[1], "x", 1), 1);
  auto everyone_read = [&] {
    for (int i = 0; i < kSockets; ++i) {
      if (seen_[static_cast<std::uint64_t>(100 + i)].readable == 0) return false;
    }
    return true;
  };
  EXPECT_TRUE(RunUntil(everyone_read));
}

TEST_F(ReadySetTest, ASocketTakenOutIsNotToldAgain) {
  ASSERT_TRUE(set_.Open().ok());
  SocketPair out;
  SocketPair kept;
  ASSERT_TRUE(set_.Add(out.fd[0], 1));
  ASSERT_TRUE(set_.Add(kept.fd[0], 2));
  ASSERT_TRUE(RunUntil([&] { return seen_[1].writable >= 1 && seen_[2].writable >= 1; }));
  set_.Remove(out.fd[0]);
  ASSERT_EQ(::write(out.fd[1], "x", 1), 1);
  ASSERT_EQ(::write(kept.fd[1], "x", 1), 1);
  // The kept one's event comes; by then the other's would have too.
  ASSERT_TRUE(RunUntil([&] { return seen_[2].readable >= 1; }));
  RunReady();
  EXPECT_EQ(seen_[1].readable, 0);
}

TEST_F(ReadySetTest, AddingBeforeOpeningFails) {
  SocketPair pair;
  EXPECT_FALSE(set_.Add(pair.fd[0], 1));
}

}  // namespace
}  // namespace tenure::zk
