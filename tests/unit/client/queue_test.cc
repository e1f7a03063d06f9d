// The client's side of the fair acquire's queue (client/queue.h): the
// answer of GET /v1/tenure/queue/<key> and the line of succession that
// `tenure leader NAME` prints.
#include "client/queue.h"

#include <gtest/gtest.h>

namespace tenure::client {
namespace {

KvPair Registration(std::string key, std::string session) {
  KvPair pair;
  pair.key = std::move(key);
  pair.session = std::move(session);
  return pair;
}

TEST(QueueTest, ParsesTheServersRowsHeadFirst) {
  auto queue = ParseQueue(
      R"([{"Session":"s2","SessionName":"b","Node":"n1","Since":"2026-11-27T04:00:00.000Z",)"
      R"("EnqueueIndex":12},{"Session":"s1","SessionName":"","Node":"n2",)"
      R"("Since":"2026-11-27T04:00:01.000Z","EnqueueIndex":15}])");
  ASSERT_TRUE(queue.ok()) << queue.status().ToString();
  ASSERT_EQ(queue->size(), 2u);
  EXPECT_EQ((*queue)[0].session, "s2");
  EXPECT_EQ((*queue)[0].session_name, "b");
  EXPECT_EQ((*queue)[0].node, "n1");
  EXPECT_EQ((*queue)[0].since, "2026-11-27T04:00:00.000Z");
  EXPECT_EQ((*queue)[0].enqueue_index, 12u);
  EXPECT_EQ((*queue)[1].session, "s1");
  EXPECT_TRUE(InQueue(*queue, "s1"));
  EXPECT_FALSE(InQueue(*queue, "s3"));
  EXPECT_FALSE(InQueue(*queue, ""));
}

TEST(QueueTest, AnEmptyQueueIsAnEmptyArray) {
  auto queue = ParseQueue("[]");
  ASSERT_TRUE(queue.ok());
  EXPECT_TRUE(queue->empty());
}

TEST(QueueTest, RefusesWhatIsNotTheServersShape) {
  for (const char* body : {"", "{}", "null", "[1]", R"([{"SessionName":"x"}])",
                           R"([{"Session":""}])", R"([{"Session":7}])", "[{"}) {
    auto queue = ParseQueue(body);
    EXPECT_FALSE(queue.ok()) << body;
    EXPECT_EQ(queue.status().code(), Code::kCorruption) << body;
  }
}

TEST(QueueTest, LineOfSuccessionNamesEachWaiterByItsRegistrationInQueueOrder) {
  const std::string prefix = "service/job/candidates/";
  std::vector<QueueWaiter> queue(3);
  queue[0].session = "s3";
  queue[0].since = "t3";
  queue[1].session = "s1";
  queue[2].session = "s9";  // registered nowhere: shown by its session
  const std::vector<KvPair> candidates = {
      Registration(prefix + "alpha", "s1"),
      Registration(prefix + "gamma", "s3"),
      Registration(prefix + "stale", ""),               // unlocked: nobody's
      Registration("service/jobs/candidates/x", "s9"),  // another election
      Registration(prefix + "nested/deeper", "s9"),     // not a registration
  };
  const std::vector<Successor> line = LineOfSuccession(queue, candidates, prefix);
  ASSERT_EQ(line.size(), 3u);
  EXPECT_EQ(line[0].position, 1);
  EXPECT_EQ(line[0].session, "s3");
  EXPECT_EQ(line[0].candidate, "gamma");
  EXPECT_EQ(line[0].since, "t3");
  EXPECT_EQ(line[1].position, 2);
  EXPECT_EQ(line[1].candidate, "alpha");
  EXPECT_EQ(line[2].position, 3);
  EXPECT_EQ(line[2].session, "s9");
  EXPECT_EQ(line[2].candidate, "");
}

TEST(QueueTest, ASessionWithSeveralRegistrationsGetsTheFirstInKeyOrder) {
  const std::string prefix = "service/job/candidates/";
  std::vector<QueueWaiter> queue(1);
  queue[0].session = "s1";
  const std::vector<KvPair> candidates = {Registration(prefix + "zulu", "s1"),
                                          Registration(prefix + "bravo", "s1")};
  const std::vector<Successor> line = LineOfSuccession(queue, candidates, prefix);
  ASSERT_EQ(line.size(), 1u);
  EXPECT_EQ(line[0].candidate, "bravo");
}

TEST(QueueTest, NoWaitersNoLine) {
  EXPECT_TRUE(LineOfSuccession({}, {Registration("service/job/candidates/a", "s1")},
                               "service/job/candidates/")
                  .empty());
}

}  // namespace
}  // namespace tenure::client
