// Scenario tests for the sessions table: create, list, node filter, destroy
// (idempotent), the sessions index. docs/consul-api.md section 1.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "unit/state/store_fixture.h"

namespace tenure::state {
namespace {

using ::testing::IsEmpty;
using testutil::MakeSession;
using testutil::StoreDriver;
using testutil::TestSessionId;

std::vector<SessionId> Ids(const std::vector<const Session*>& sessions) {
  std::vector<SessionId> ids;
  for (const Session* s : sessions) ids.push_back(s->id);
  return ids;
}

TEST(StoreSessionTest, CreateStoresEveryFieldAndStampsIndexes) {
  StoreDriver d;
  d.Set("k", "v");  // 1
  Session s = MakeSession(TestSessionId(7), "node-a", 15 * kNsPerSecond, Behavior::kDelete);
  s.name = std::string("name\0with nul", 13);
  s.ttl = "15.0s";
  s.ttl_ns = 15 * kNsPerSecond;
  s.checks.set_node({"serfHealth", "disk"});
  s.checks.set_service({{"web", ""}, {"db", "ns1"}});
  s.checks.set_legacy({"legacy"});
  s.create_index = LogIndex(99);              // ignored: set on apply
  ApplyResult r = d.Apply(SessionCreate{s});  // 2
  EXPECT_TRUE(r.status.ok());
  const Session* got = d.store().FindSession(TestSessionId(7));
  ASSERT_NE(got, nullptr);
  Session want = s;
  want.create_index = LogIndex(2);
  EXPECT_EQ(got->modify_index(), LogIndex(2));
  EXPECT_EQ(*got, want);
}

TEST(StoreSessionTest, CreateMovesSessionsIndexButNotKvIndex) {
  StoreDriver d;
  d.Set("k", "v");  // 1
  d.NewSession();   // 2
  EXPECT_EQ(d.store().sessions_index(), LogIndex(2));
  EXPECT_EQ(d.store().kv_index(), LogIndex(1));
  EXPECT_EQ(d.store().session_count(), 1u);
  Changes changes = d.store().TakeChanges();
  EXPECT_TRUE(changes.sessions);
}

TEST(StoreSessionTest, KvWritesDoNotMoveSessionsIndex) {
  StoreDriver d;
  SessionId a = d.NewSession();  // 1
  d.Acquire("k", a);             // 2
  d.Set("j", "x");               // 3
  EXPECT_EQ(d.store().sessions_index(), LogIndex(1));
  (void)d.store().TakeChanges();
  d.Release("k", a);
  EXPECT_FALSE(d.store().TakeChanges().sessions);
}

TEST(StoreSessionTest, ListSessionsIsSortedById) {
  StoreDriver d;
  d.CreateSession(MakeSession(TestSessionId(3)));
  d.CreateSession(MakeSession(TestSessionId(1)));
  d.CreateSession(MakeSession(TestSessionId(2)));
  EXPECT_EQ(Ids(d.store().ListSessions()),
            (std::vector<SessionId>{TestSessionId(1), TestSessionId(2), TestSessionId(3)}));
}

// Ids of any length: the leader's UUIDs live inside SessionId, a client's
// longer ids on the heap (decision 0033). Listing, lookup, locks and a
// snapshot's round trip keep the string order across both.
TEST(StoreSessionTest, IdsOfAnyLengthListInStringOrderAndRoundTrip) {
  StoreDriver d;
  std::vector<std::string> texts = {"b",
                                    std::string(39, 'a'),
                                    std::string(40, 'a'),
                                    std::string(39, 'a') + "b",
                                    std::string(200, 'c'),
                                    TestSessionId(5).str(),
                                    std::string(41, '\xff')};
  for (const std::string& text : texts) d.CreateSession(MakeSession(SessionId(text)));
  d.Acquire("k", SessionId(std::string(200, 'c')));
  std::vector<std::string> sorted = texts;
  std::sort(sorted.begin(), sorted.end());
  std::vector<SessionId> want;
  for (const std::string& text : sorted) want.push_back(SessionId(text));
  EXPECT_EQ(Ids(d.store().ListSessions()), want);
  for (const std::string& text : texts) {
    const Session* s = d.store().FindSession(SessionId(text));
    ASSERT_NE(s, nullptr) << text;
    EXPECT_EQ(s->id.view(), text);
    EXPECT_EQ(s->checks.node(), std::vector<std::string>{"serfHealth"});
  }
  EXPECT_EQ(d.store().FindSession(SessionId(std::string(199, 'c'))), nullptr);
  EXPECT_EQ(d.store().FindKv("k")->session, SessionId(std::string(200, 'c')));

  std::string bytes;
  d.store().EncodeSnapshot(&bytes);
  Result<Store> restored = Store::DecodeSnapshot(bytes);
  ASSERT_TRUE(restored.ok()) << restored.status().ToString();
  EXPECT_EQ(Ids(restored->ListSessions()), want);
  EXPECT_EQ(restored->Digest(), d.store().Digest());
  std::string again;
  restored->EncodeSnapshot(&again);
  EXPECT_EQ(again, bytes);
}

TEST(StoreSessionTest, NodeSessionsFiltersByNode) {
  StoreDriver d;
  d.CreateSession(MakeSession(TestSessionId(4), "n2"));
  d.CreateSession(MakeSession(TestSessionId(1), "n1"));
  d.CreateSession(MakeSession(TestSessionId(3), "n1"));
  d.CreateSession(MakeSession(TestSessionId(2), "n2"));
  EXPECT_EQ(Ids(d.store().NodeSessions("n1")),
            (std::vector<SessionId>{TestSessionId(1), TestSessionId(3)}));
  EXPECT_EQ(Ids(d.store().NodeSessions("n2")),
            (std::vector<SessionId>{TestSessionId(2), TestSessionId(4)}));
  EXPECT_THAT(d.store().NodeSessions("n3"), IsEmpty());
  EXPECT_THAT(d.store().NodeSessions(""), IsEmpty());
}

TEST(StoreSessionTest, DestroyRemovesSessionAndMovesSessionsIndex) {
  StoreDriver d;
  SessionId a = d.NewSession();  // 1
  SessionId b = d.NewSession();  // 2
  (void)d.store().TakeChanges();
  ApplyResult r = d.Destroy(a);  // 3
  EXPECT_TRUE(r.status.ok());
  EXPECT_EQ(d.store().FindSession(a), nullptr);
  EXPECT_NE(d.store().FindSession(b), nullptr);
  EXPECT_EQ(d.store().sessions_index(), LogIndex(3));
  EXPECT_EQ(d.store().session_count(), 1u);
  EXPECT_EQ(Ids(d.store().ListSessions()), std::vector<SessionId>{b});
  EXPECT_EQ(d.store().NodeSessions("node1").size(), 1u);
  Changes changes = d.store().TakeChanges();
  EXPECT_TRUE(changes.sessions);
  EXPECT_THAT(changes.keys, IsEmpty()) << "the session held no keys";
}

// consul-api.md 1.2: destroying an unknown or already expired id is fine.
TEST(StoreSessionTest, DestroyOfUnknownIdIsFineAndChangesNothing) {
  StoreDriver d;
  SessionId a = d.NewSession();  // 1
  d.Set("k", "v");               // 2
  (void)d.store().TakeChanges();
  ApplyResult r = d.Destroy(TestSessionId(12345));
  EXPECT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_EQ(d.store().sessions_index(), LogIndex(1));
  EXPECT_EQ(d.store().kv_index(), LogIndex(2));
  EXPECT_EQ(d.store().session_count(), 1u);
  Changes changes = d.store().TakeChanges();
  EXPECT_FALSE(changes.sessions);
  EXPECT_THAT(changes.keys, IsEmpty());
  (void)a;
}

TEST(StoreSessionTest, DestroyTwiceIsIdempotent) {
  StoreDriver d;
  SessionId a = d.NewSession();
  d.Acquire("k", a);
  d.Destroy(a);  // 3
  const LogIndex sessions_index = d.store().sessions_index();
  ApplyResult r = d.Destroy(a, DestroyReason::kExpired);
  EXPECT_TRUE(r.status.ok());
  EXPECT_EQ(d.store().sessions_index(), sessions_index);
  EXPECT_EQ(d.Get("k")->modify_index, LogIndex(3));
  EXPECT_EQ(d.store().kv_index(), LogIndex(3));
  EXPECT_EQ(d.store().session_count(), 0u);
}

TEST(StoreSessionTest, SessionsIndexIsLastSessionsTableChange) {
  StoreDriver d;
  SessionId a = d.NewSession();  // 1
  d.Set("k", "v");               // 2
  SessionId b = d.NewSession();  // 3
  d.Set("k", "w");               // 4
  EXPECT_EQ(d.store().sessions_index(), LogIndex(3));
  d.Destroy(a);  // 5
  EXPECT_EQ(d.store().sessions_index(), LogIndex(5));
  d.Destroy(a);  // 6, unknown now
  EXPECT_EQ(d.store().sessions_index(), LogIndex(5));
  (void)b;
}

TEST(StoreSessionTest, SessionsAreImmutableCreateEqualsModify) {
  StoreDriver d;
  SessionId a = d.NewSession();  // 1
  d.Acquire("k", a);
  d.Release("k", a);
  const Session* s = d.store().FindSession(a);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->create_index, LogIndex(1));
  EXPECT_EQ(s->modify_index(), LogIndex(1));
}

TEST(StoreSessionTest, DestroyingOneSessionLeavesOthersLocksAlone) {
  StoreDriver d;
  SessionId a = d.NewSession(10 * kNsPerSecond, Behavior::kDelete);
  SessionId b = d.NewSession(10 * kNsPerSecond, Behavior::kDelete);
  d.Acquire("a", a);
  d.Acquire("b", b);
  d.Destroy(a);
  EXPECT_EQ(d.store().FindKv("a"), nullptr);
  ASSERT_NE(d.store().FindKv("b"), nullptr);
  EXPECT_EQ(d.Get("b")->session, b);
  EXPECT_EQ(d.store().LockDelayUntil("b"), ClusterMs(0));
}

}  // namespace
}  // namespace tenure::state
