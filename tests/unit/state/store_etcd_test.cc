// EtcdTxn in the Store (decision 0048 sections 1 and 2): etcd 3.4's txn
// semantics (compares decided on the state before the entry, nested ones
// too; ops in order, a Range seeing the writes before it; any failing op
// rolls the whole entry back) on the keys Consul's API shares, with one
// holder field: a Put with a lease is an acquire by the lease's numbered
// session, refused where a Consul acquire would be.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "state/etcd_range.h"
#include "state/numbered_session.h"
#include "state/store.h"
#include "unit/state/etcd_ops.h"
#include "unit/state/store_fixture.h"

namespace tenure::state {
namespace {

using etcd_texts::GrpcCode;
using testutil::Delete;
using testutil::Get;
using testutil::Nested;
using testutil::Put;
using testutil::StoreDriver;
using testutil::Waiting;

EtcdCompare CreateIs(std::string key, std::int64_t revision) {
  EtcdCompare c;
  c.target = EtcdCompareTarget::kCreate;
  c.range.key = std::move(key);
  c.number = revision;
  return c;
}
EtcdTxnRequest Txn(std::vector<EtcdCompare> compare, std::vector<EtcdRequestOp> success,
                   std::vector<EtcdRequestOp> failure = {}) {
  return EtcdTxnRequest{std::move(compare), std::move(success), std::move(failure)};
}

// A driver with the etcd calls the tests make.
class EtcdDriver : public StoreDriver {
 public:
  ApplyResult Etcd(EtcdTxnRequest txn) { return Apply(EtcdTxn{std::move(txn)}); }
  ApplyResult EtcdPut(std::string key, std::string value, std::int64_t lease = 0) {
    return Etcd(Txn({}, {Put(std::move(key), std::move(value), lease)}));
  }
  // A lease as Grant makes one: a numbered session whose keys go with it.
  std::int64_t Grant(std::int64_t id, DurationNs lock_delay_ns = 0) {
    CreateSession(testutil::MakeNumberedSession(id, lock_delay_ns));
    return id;
  }
};

TEST(StoreEtcdTest, EveryPutIsANewRevisionAndVersionEvenWithTheSameValue) {
  EtcdDriver d;
  ASSERT_TRUE(d.EtcdPut("k", "v").ok);
  ASSERT_TRUE(d.EtcdPut("k", "v").ok);
  const KvEntry k = *d.Get("k");
  EXPECT_EQ(k.create_index, LogIndex(1));
  EXPECT_EQ(k.modify_index, LogIndex(2));
  EXPECT_EQ(k.version, 2u);
  EXPECT_EQ(k.flags, 0u);
}

TEST(StoreEtcdTest, TheRecipesCreateIfAbsentAndReadTheHolderOtherwise) {
  EtcdDriver d;
  const std::int64_t a = d.Grant(0x1a);
  const std::int64_t b = d.Grant(0x1b);
  auto campaign = [&](std::int64_t lease, const std::string& key) {
    return d.Etcd(Txn({CreateIs(key, 0)}, {Put(key, "me", lease)}, {Get(key)}));
  };
  ApplyResult first = campaign(a, "e/1a");
  ASSERT_TRUE(first.ok) << first.etcd_error.message;
  EXPECT_TRUE(first.etcd.succeeded);
  ApplyResult again = campaign(a, "e/1a");  // a repeated call resumes its key
  ASSERT_TRUE(again.ok);
  EXPECT_FALSE(again.etcd.succeeded);
  ASSERT_EQ(again.etcd.responses.size(), 1u);
  ASSERT_EQ(again.etcd.responses[0].range.kvs.size(), 1u);
  EXPECT_EQ(again.etcd.responses[0].range.kvs[0].create_revision, 3);
  EXPECT_EQ(again.etcd.responses[0].range.kvs[0].lease, a);
  ASSERT_TRUE(campaign(b, "e/1b").etcd.succeeded);
  // The lease holds its key: a Consul reader sees it locked by the lease's
  // session, with a fencing token of its own raft index.
  const KvEntry held = *d.Get("e/1a");
  EXPECT_EQ(held.session, NumberedSessionId(a));
  EXPECT_EQ(held.fence, LogIndex(3));
  EXPECT_EQ(held.lock_index, 1u);
}

TEST(StoreEtcdTest, EveryCompareIsDecidedOnTheStateBeforeTheEntry) {
  EtcdDriver d;
  // The nested compare asks whether "k" is absent: it was, before this
  // entry's first op created it.
  ApplyResult r = d.Etcd(
      Txn({}, {Put("k", "1"), Nested(Txn({CreateIs("k", 0)}, {Put("n", "yes")}, {Put("n", "no")})),
               Get("k")}));
  ASSERT_TRUE(r.ok) << r.etcd_error.message;
  EXPECT_EQ(d.Get("n")->value, "yes");
  // A Range in the entry sees the writes before it.
  ASSERT_EQ(r.etcd.responses.size(), 3u);
  ASSERT_EQ(r.etcd.responses[2].range.kvs.size(), 1u);
  EXPECT_EQ(r.etcd.responses[2].range.kvs[0].value, "1");
  ASSERT_EQ(r.etcd.responses[1].txn.size(), 1u);
  EXPECT_TRUE(r.etcd.responses[1].txn[0].succeeded);
}

// etcd's applier gives each range, put and delete_range in a txn a header
// of its own: the txn's begin revision until an op changes a key, one more
// from then on. Ours: the index before the entry, then the entry's own.
TEST(StoreEtcdTest, EachOpsAnswerCarriesTheRevisionItSawOrMade) {
  EtcdDriver d;
  ASSERT_TRUE(d.EtcdPut("k", "v").ok);  // index 1
  ApplyResult r = d.Etcd(
      Txn({}, {Get("k"), Delete("absent"), Put("n"), Get("k"), Nested(Txn({}, {Get("n")}))}));
  ASSERT_TRUE(r.ok) << r.etcd_error.message;
  ASSERT_EQ(r.etcd.responses.size(), 5u);
  EXPECT_EQ(r.etcd.responses[0].revision, 1) << "a read before any change";
  EXPECT_EQ(r.etcd.responses[1].revision, 1) << "a delete of nothing changes nothing";
  EXPECT_EQ(r.etcd.responses[2].revision, 2);
  EXPECT_EQ(r.etcd.responses[3].revision, 2) << "a read after a change";
  EXPECT_EQ(r.etcd.responses[4].revision, 0) << "a nested txn's answer has no header";
  ASSERT_EQ(r.etcd.responses[4].txn.size(), 1u);
  EXPECT_EQ(r.etcd.responses[4].txn[0].responses[0].revision, 2);
  r = d.Etcd(Txn({}, {Delete("k")}));  // index 3: a delete that deletes is a change
  ASSERT_TRUE(r.ok) << r.etcd_error.message;
  EXPECT_EQ(r.etcd.responses[0].revision, 3);
}

TEST(StoreEtcdTest, AFailingOpRollsBackTheWholeEntry) {
  EtcdDriver d;
  d.EtcdPut("keep", "old");
  d.store().TakeChanges();
  const KvEntry before = *d.Get("keep");
  ApplyResult r = d.Etcd(Txn({}, {Put("keep", "new"), Delete("keep"), Put("x", "v", 77)}));
  // A put and a delete of one key are refused before anything runs...
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.status.code(), Code::kInvalidArgument) << r.status.ToString();
  EXPECT_EQ(*d.Get("keep"), before);
  EXPECT_EQ(d.store().kv_count(), 1u);
  // ...and a lease that does not exist fails the op and undoes the others.
  r = d.Etcd(Txn({}, {Put("keep", "new"), Delete("other"), Put("x", "v", 77)}));
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.etcd_error.code, GrpcCode::kNotFound);
  EXPECT_EQ(r.etcd_error.message, "etcdserver: requested lease not found");
  EXPECT_TRUE(r.etcd.responses.empty());
  EXPECT_EQ(*d.Get("keep"), before);
  EXPECT_FALSE(d.Get("x").has_value());
  EXPECT_FALSE(d.Get("other").has_value());
  EXPECT_TRUE(d.store().TakeChanges().keys.empty()) << "nobody is woken by an undone write";
}

TEST(StoreEtcdTest, IgnoreValueAndIgnoreLeaseNeedTheKeyAndKeepWhatTheyIgnore) {
  EtcdDriver d;
  const std::int64_t lease = d.Grant(5);
  EtcdRequestOp keep_value = Put("k", "");
  keep_value.put.ignore_value = true;
  ApplyResult missing = d.Etcd(Txn({}, {keep_value}));
  EXPECT_EQ(missing.etcd_error.message, "etcdserver: key not found");
  d.EtcdPut("k", "v", lease);
  keep_value.put.lease = lease;
  ASSERT_TRUE(d.Etcd(Txn({}, {keep_value})).ok);
  EXPECT_EQ(d.Get("k")->value, "v");
  EtcdRequestOp keep_lease = Put("k", "w");
  keep_lease.put.ignore_lease = true;
  ASSERT_TRUE(d.Etcd(Txn({}, {keep_lease})).ok);
  EXPECT_EQ(d.Get("k")->value, "w");
  EXPECT_EQ(d.Get("k")->session, NumberedSessionId(lease));
}

TEST(StoreEtcdTest, ALeaseNeverTakesAKeyAConsulSessionHolds) {
  EtcdDriver d;
  const SessionId consul = d.NewSession();
  ASSERT_TRUE(d.Acquire("svc/leader", consul, "a").ok);
  const std::int64_t lease = d.Grant(9);
  ApplyResult r = d.EtcdPut("svc/leader", "b", lease);
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.etcd_error.code, GrpcCode::kFailedPrecondition);
  EXPECT_EQ(r.etcd_error.message,
            "tenure: key \"svc/leader\" is held by Consul session " + std::string(consul.view()));
  EXPECT_EQ(d.Get("svc/leader")->value, "a");
  // A Put without a lease is a plain write: Consul's holder stays.
  ASSERT_TRUE(d.EtcdPut("svc/leader", "c").ok);
  EXPECT_EQ(d.Get("svc/leader")->session, consul);
  // And a Consul acquire of a leased key is refused as any held key's.
  ASSERT_TRUE(d.EtcdPut("etcd/leader", "x", lease).ok);
  EXPECT_FALSE(d.Acquire("etcd/leader", consul).ok);
}

TEST(StoreEtcdTest, APutWithoutALeaseLetsALeaseGoAndAnotherLeaseTakesItOver) {
  EtcdDriver d;
  const std::int64_t a = d.Grant(1);
  const std::int64_t b = d.Grant(2);
  ASSERT_TRUE(d.EtcdPut("k", "v", a).ok);  // index 3
  ASSERT_TRUE(d.EtcdPut("k", "v", b).ok);  // moved: a new grant
  EXPECT_EQ(d.Get("k")->session, NumberedSessionId(b));
  EXPECT_EQ(d.Get("k")->fence, LogIndex(4));
  EXPECT_EQ(d.Get("k")->lock_index, 2u);
  ASSERT_TRUE(d.EtcdPut("k", "v2", b).ok);  // the holder again: same grant
  EXPECT_EQ(d.Get("k")->fence, LogIndex(4));
  ASSERT_TRUE(d.EtcdPut("k", "v3").ok);
  EXPECT_TRUE(d.Get("k")->session.empty());
  EXPECT_TRUE(d.Get("k")->fence.is_none());
  // The lease's end deletes the keys it holds, as etcd's.
  ASSERT_TRUE(d.EtcdPut("j", "v", b).ok);
  d.Destroy(NumberedSessionId(b), DestroyReason::kExpired);
  EXPECT_FALSE(d.Get("j").has_value());
  EXPECT_TRUE(d.Get("k").has_value());
}

// Decision 0048 section 2: a key moving between leases is a release and a
// grant in one entry, history cause handoff (found by the model test).
TEST(StoreEtcdTest, AKeyMovingToAnotherLeaseEndsTheOldGrantAsAHandoff) {
  EtcdDriver d;
  const std::int64_t a = d.Grant(1);
  const std::int64_t b = d.Grant(2);
  ASSERT_TRUE(d.EtcdPut("k", "v", a).ok);  // index 3
  ApplyResult moved = d.EtcdPut("k", "w", b);
  ASSERT_TRUE(moved.ok);
  const LockHistory::KeyHistory* h = d.store().FindHistory("k");
  ASSERT_NE(h, nullptr);
  ASSERT_EQ(h->grants.size(), 2u);
  EXPECT_EQ(h->grants[0].session, NumberedSessionId(a));
  EXPECT_EQ(h->grants[0].end_cause, EndCause::kHandoff);
  EXPECT_EQ(h->grants[0].end_index, LogIndex(4));
  EXPECT_EQ(h->grants[1].session, NumberedSessionId(b));
  EXPECT_TRUE(h->grants[1].held());
  // One end and one grant for the server's log.
  ASSERT_EQ(moved.lock_events.size(), 2u);
  EXPECT_TRUE(moved.lock_events[0].ended);
  EXPECT_EQ(moved.lock_events[0].grant.end_cause, EndCause::kHandoff);
  EXPECT_EQ(moved.lock_events[1].grant.session, NumberedSessionId(b));
}

TEST(StoreEtcdTest, ALeaseWaitsOutLockDelay) {
  EtcdDriver d;
  const SessionId consul = d.NewSession(/*lock_delay_ns=*/5 * kNsPerSecond);
  ASSERT_TRUE(d.Acquire("k", consul).ok);
  d.Destroy(consul);  // k is in lock-delay for 5 s
  const std::int64_t lease = d.Grant(3);
  ApplyResult delayed = d.EtcdPut("k", "v", lease);
  EXPECT_EQ(delayed.etcd_error.code, GrpcCode::kFailedPrecondition);
  EXPECT_NE(delayed.etcd_error.message.find("lock-delay"), std::string::npos);
  d.AdvanceMs(5'001);
  ASSERT_TRUE(d.EtcdPut("k", "v", lease).ok) << "after the window";
}

// The fair queue (decision 0027) and an etcd lease on one key: a lease
// never jumps the queue, a key a lease lets go goes to the queue's head, a
// deleted key's queue goes, and none of it happens in a txn rolled back.

TEST(StoreEtcdTest, ALeaseDoesNotJumpTheQueue) {
  EtcdDriver d;
  const SessionId holder = d.NewSession(/*lock_delay_ns=*/kNsPerSecond);
  const SessionId waiter = d.NewSession();
  ASSERT_TRUE(d.Acquire("k", holder).ok);
  d.Apply(KvEnqueue{"k", "", 0, waiter});
  d.Destroy(holder);  // k is free, in lock-delay, and the waiter waits
  d.AdvanceMs(1'001);
  const std::int64_t lease = d.Grant(4);
  ApplyResult r = d.EtcdPut("k", "v", lease);
  EXPECT_EQ(r.etcd_error.code, GrpcCode::kFailedPrecondition);
  EXPECT_EQ(r.etcd_error.message,
            "tenure: key \"k\" has waiters in its fair-acquire queue; they are served first");
  EXPECT_EQ(Waiting(d, "k"), std::vector<SessionId>{waiter});
}

TEST(StoreEtcdTest, AKeyALeaseLetsGoGoesToTheQueuesHeadOnlyOnceTheEntryCommits) {
  EtcdDriver d;
  const std::int64_t lease = d.Grant(6);
  const SessionId waiter = d.NewSession();
  ASSERT_TRUE(d.EtcdPut("k", "v", lease).ok);
  d.Apply(KvEnqueue{"k", "w", 0, waiter});
  ASSERT_EQ(Waiting(d, "k"), std::vector<SessionId>{waiter});
  // Let go, then fail: nothing moves.
  ApplyResult failed = d.Etcd(Txn({}, {Put("k", "plain"), Put("x", "v", 404)}));
  EXPECT_FALSE(failed.ok);
  EXPECT_TRUE(failed.queue_events.empty());
  EXPECT_EQ(d.Get("k")->session, NumberedSessionId(lease));
  EXPECT_EQ(Waiting(d, "k"), std::vector<SessionId>{waiter});
  // Let go for real: the head takes it in the same entry.
  ApplyResult released = d.EtcdPut("k", "plain");
  ASSERT_TRUE(released.ok);
  ASSERT_EQ(released.queue_events.size(), 1u);
  EXPECT_EQ(released.queue_events[0].kind, QueueEvent::Kind::kGranted);
  EXPECT_EQ(d.Get("k")->session, waiter);
  EXPECT_TRUE(Waiting(d, "k").empty());
}

TEST(StoreEtcdTest, ADeletedKeysQueueGoesWithIt) {
  EtcdDriver d;
  const std::int64_t lease = d.Grant(7);
  const SessionId waiter = d.NewSession();
  ASSERT_TRUE(d.EtcdPut("k", "v", lease).ok);
  d.Apply(KvEnqueue{"k", "", 0, waiter});
  ApplyResult r = d.Etcd(Txn({}, {Delete("k")}));
  ASSERT_TRUE(r.ok);
  ASSERT_EQ(r.queue_events.size(), 1u);
  EXPECT_EQ(r.queue_events[0].kind, QueueEvent::Kind::kLeft);
  EXPECT_TRUE(Waiting(d, "k").empty());
}

TEST(StoreEtcdTest, ARolledBackGrantLeavesNoHolderHistoryOrEvent) {
  EtcdDriver d;
  d.store().RecordEvents(true);
  const std::int64_t lease = d.Grant(8);
  d.store().TakeChanges();
  ApplyResult r = d.Etcd(Txn({}, {Put("a", "v", lease), Put("b", "v", 404)}));
  EXPECT_FALSE(r.ok);
  EXPECT_FALSE(d.Get("a").has_value());
  EXPECT_EQ(d.store().HeldKeys(NumberedSessionId(lease)), nullptr);
  EXPECT_TRUE(r.lock_events.empty());
  Changes changes = d.store().TakeChanges();
  EXPECT_TRUE(changes.events.empty());
  EXPECT_TRUE(changes.keys.empty());
  d.store().CheckInvariants();
}

TEST(StoreEtcdTest, ADeleteRangeOfManyKeysIsOneEntryAndUndoesInOne) {
  EtcdDriver d;
  d.set_check_invariants(false);  // O(state) after each of 20,000 writes
  for (int i = 0; i < 20'000; ++i) d.Set("many/" + std::to_string(i), "v");
  d.set_check_invariants(true);
  ApplyResult failed = d.Etcd(Txn({}, {Delete("many/", "many0"), Put("x", "v", 404)}));
  EXPECT_FALSE(failed.ok);
  EXPECT_EQ(d.store().kv_count(), 20'000u);
  ApplyResult r = d.Etcd(Txn({}, {Delete("many/", "many0")}));
  ASSERT_TRUE(r.ok);
  EXPECT_EQ(r.etcd.responses[0].delete_range.deleted, 20'000);
  EXPECT_EQ(d.store().kv_count(), 0u);
}

TEST(StoreEtcdTest, DeleteRangeCountsAndReturnsWhatItDeleted) {
  EtcdDriver d;
  d.EtcdPut("a/1", "x");
  d.EtcdPut("a/2", "y");
  d.EtcdPut("b", "z");
  ApplyResult r = d.Etcd(Txn({}, {Delete("a/", "a0", /*prev_kv=*/true)}));
  ASSERT_TRUE(r.ok);
  const EtcdDeleteRangeResponse& deleted = r.etcd.responses[0].delete_range;
  EXPECT_EQ(deleted.deleted, 2);
  ASSERT_EQ(deleted.prev_kvs.size(), 2u);
  EXPECT_EQ(deleted.prev_kvs[1].value, "y");
  EXPECT_FALSE(d.Get("a/1").has_value());
  EXPECT_TRUE(d.Get("b").has_value());
  EXPECT_EQ(d.Etcd(Txn({}, {Delete("nothing")})).etcd.responses[0].delete_range.deleted, 0);
}

TEST(StoreEtcdTest, AnEntrysEventsShareItsRevisionInOpOrder) {
  EtcdDriver d;
  d.store().RecordEvents(true);
  d.EtcdPut("a", "1");
  d.store().TakeChanges();
  ASSERT_TRUE(d.Etcd(Txn({}, {Put("b", "2"), Delete("a"), Put("c", "3")})).ok);
  std::vector<KvEvent> events = d.store().TakeChanges().events;
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0].key(), "b");
  EXPECT_TRUE(events[1].is_delete());
  EXPECT_EQ(events[2].key(), "c");
  for (const KvEvent& e : events) EXPECT_EQ(e.revision, LogIndex(2));
}

}  // namespace
}  // namespace tenure::state
