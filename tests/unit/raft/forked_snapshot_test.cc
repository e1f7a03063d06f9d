// ForkedSnapshot (raft/forked_snapshot.h, decision 0049): a raft snapshot
// encoded by a child process. Its bytes come back whole and show the state
// as it was at the fork; a child that dies or is abandoned fails the
// snapshot instead of hanging it; and the child keeps none of the parent's
// descriptors, so a socket the parent closes is closed at once.
#include "raft/forked_snapshot.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

namespace tenure::raft {
namespace {

// Starts a child that would take `seconds` before writing "late".
void StartSlowChild(ForkedSnapshot* forked, int seconds) {
  ASSERT_TRUE(forked
                  ->Start([seconds](std::string* out) {
                    std::this_thread::sleep_for(std::chrono::seconds(seconds));
                    *out = "late";
                  })
                  .ok());
}

TEST(ForkedSnapshotTest, TheChildsBytesComeBackWhole) {
  std::string expected;
  for (int i = 0; i < 300'000; ++i) expected += std::to_string(i % 10);
  expected += std::string(3u << 20, 'x');
  ForkedSnapshot forked;
  ASSERT_TRUE(forked.Start([&expected](std::string* out) { *out = expected; }).ok());
  EXPECT_TRUE(forked.started());
  Result<std::string_view> bytes = forked.Wait();
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  EXPECT_EQ(bytes->size(), expected.size());
  EXPECT_TRUE(*bytes == expected);
  forked.Finish();
  EXPECT_FALSE(forked.started());
}

TEST(ForkedSnapshotTest, TheChildSeesTheStateAsItWasAtTheFork) {
  std::string state = "before";
  ForkedSnapshot forked;
  ASSERT_TRUE(forked
                  .Start([&state](std::string* out) {
                    std::this_thread::sleep_for(std::chrono::milliseconds(200));
                    *out = state;
                  })
                  .ok());
  state = "after";  // the parent goes on applying
  Result<std::string_view> bytes = forked.Wait();
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  EXPECT_EQ(*bytes, "before");
}

TEST(ForkedSnapshotTest, AChildThatDiesFailsTheSnapshot) {
  ForkedSnapshot forked;
  ASSERT_TRUE(forked.Start([](std::string*) { std::abort(); }).ok());
  Result<std::string_view> bytes = forked.Wait();
  ASSERT_FALSE(bytes.ok());
  EXPECT_NE(bytes.status().ToString().find("killed by signal"), std::string::npos)
      << bytes.status().ToString();
}

TEST(ForkedSnapshotTest, AChildThatWritesNothingFailsTheSnapshot) {
  ForkedSnapshot forked;
  ASSERT_TRUE(forked.Start([](std::string* out) { out->clear(); }).ok());
  Result<std::string_view> bytes = forked.Wait();
  ASSERT_FALSE(bytes.ok());
  EXPECT_NE(bytes.status().ToString().find("wrote nothing"), std::string::npos);
}

TEST(ForkedSnapshotTest, AnAbandonedChildIsKilledAndWaitReturnsAtOnce) {
  ForkedSnapshot forked;
  StartSlowChild(&forked, 30);
  const auto start = std::chrono::steady_clock::now();
  forked.Abandon();
  Result<std::string_view> bytes = forked.Wait();
  EXPECT_FALSE(bytes.ok());
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
}

TEST(ForkedSnapshotTest, TheChildHoldsNoneOfTheParentsDescriptors) {
  int pair[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, pair), 0);
  ForkedSnapshot forked;
  ASSERT_TRUE(forked
                  .Start([](std::string* out) {
                    std::this_thread::sleep_for(std::chrono::seconds(3));
                    *out = "done";
                  })
                  .ok());
  // The parent closes its end while the child still encodes: the peer sees
  // the end of the stream now, not when the child exits.
  ::close(pair[0]);
  struct pollfd p {
    pair[1], POLLIN, 0
  };
  ASSERT_EQ(::poll(&p, 1, 2000), 1);
  char byte;
  EXPECT_EQ(::read(pair[1], &byte, 1), 0);
  ::close(pair[1]);
  Result<std::string_view> bytes = forked.Wait();
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  EXPECT_EQ(*bytes, "done");
}

TEST(ForkedSnapshotTest, FinishWithoutWaitEndsTheChild) {
  ForkedSnapshot forked;
  StartSlowChild(&forked, 30);
  const auto start = std::chrono::steady_clock::now();
  forked.Finish();  // as the destructor does
  EXPECT_FALSE(forked.started());
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
}

}  // namespace
}  // namespace tenure::raft
