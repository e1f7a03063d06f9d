// The fair acquire's queues in the Store (docs/leadership.md "The queue",
// decision 0027): FIFO grants in the entry that frees the key, lock-delay
// respected, waiters leaving, deletes, txn lock/unlock, bounds, snapshots.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/coding.h"
#include "common/crc32.h"
#include "unit/state/store_fixture.h"

namespace tenure::state {
namespace {

using testutil::StoreDriver;
using testutil::Waiting;

constexpr DurationNs kSecond = kNsPerSecond;

ApplyResult Enqueue(StoreDriver& d, const std::string& key, const SessionId& s,
                    std::string value = "") {
  return d.Apply(KvEnqueue{key, std::move(value), 0, s});
}

TEST(StoreQueueTest, EnqueueOnAFreeKeyIsAPlainAcquire) {
  StoreDriver d;
  SessionId a = d.NewSession();
  ApplyResult r = Enqueue(d, "k", a, "va");
  EXPECT_TRUE(r.status.ok());
  EXPECT_TRUE(r.ok);
  EXPECT_FALSE(r.queued);
  EXPECT_EQ(r.fence, d.last_index());
  EXPECT_EQ(d.Get("k")->session, a);
  EXPECT_EQ(d.Get("k")->value, "va");
  EXPECT_EQ(d.store().FindQueue("k"), nullptr);
  // The holder again: true with the same token (idempotent).
  ApplyResult again = Enqueue(d, "k", a, "va");
  EXPECT_TRUE(again.ok);
  EXPECT_EQ(again.fence, r.fence);
}

TEST(StoreQueueTest, ReleaseHandsTheKeyToTheHeadInTheSameEntryInFifoOrder) {
  StoreDriver d;
  SessionId a = d.NewSession(), b = d.NewSession(), c = d.NewSession();
  d.Acquire("k", a, "va");
  ApplyResult rb = Enqueue(d, "k", b, "vb");
  EXPECT_FALSE(rb.ok);
  EXPECT_TRUE(rb.queued);
  EXPECT_TRUE(rb.status.ok());
  EXPECT_TRUE(Enqueue(d, "k", c, "vc").queued);
  EXPECT_EQ(Waiting(d, "k"), (std::vector<SessionId>{b, c}));
  // Re-enqueueing keeps the place.
  EXPECT_TRUE(Enqueue(d, "k", b, "other").queued);
  EXPECT_EQ(Waiting(d, "k"), (std::vector<SessionId>{b, c}));

  ApplyResult rel = d.Release("k", a);
  EXPECT_TRUE(rel.ok);
  const LogIndex grant = d.last_index();
  ASSERT_EQ(rel.queue_events.size(), 1u);
  EXPECT_EQ(rel.queue_events[0].session, b);
  EXPECT_EQ(rel.queue_events[0].kind, QueueEvent::Kind::kGranted);
  EXPECT_EQ(rel.queue_events[0].fence, grant);
  auto e = d.Get("k");
  EXPECT_EQ(e->session, b);
  EXPECT_EQ(e->value, "vb");  // the waiter's first value
  EXPECT_EQ(e->fence, grant);
  EXPECT_EQ(Waiting(d, "k"), (std::vector<SessionId>{c}));
  // History: a's grant ended as a handoff, b's started at the same index.
  const auto* h = d.store().FindHistory("k");
  ASSERT_NE(h, nullptr);
  ASSERT_EQ(h->grants.size(), 2u);
  EXPECT_EQ(h->grants[0].end_cause, EndCause::kHandoff);
  EXPECT_EQ(h->grants[1].session, b);
  EXPECT_EQ(h->grants[1].fence, grant);

  ApplyResult rel2 = d.Release("k", b);
  ASSERT_EQ(rel2.queue_events.size(), 1u);
  EXPECT_EQ(rel2.queue_events[0].session, c);
  EXPECT_GT(d.Get("k")->fence, grant);  // tokens increase across handoffs
  EXPECT_EQ(d.store().FindQueue("k"), nullptr);
  EXPECT_EQ(d.store().queue_waiter_count(), 0u);
}

TEST(StoreQueueTest, PlainAcquireAndTxnLockDoNotJumpTheQueue) {
  StoreDriver d;
  SessionId a = d.NewSession(), b = d.NewSession(), x = d.NewSession();
  d.Acquire("k", a);
  Enqueue(d, "k", b);
  // While b waits, x's plain acquire is refused as held, even after a
  // releases (the key goes to b in the release's own entry).
  EXPECT_FALSE(d.Acquire("k", x).ok);
  ApplyResult t = d.RunTxn({testutil::LockOp("k", x)});
  ASSERT_EQ(t.txn.errors.size(), 1u);
  EXPECT_EQ(t.txn.errors[0].what, "failed to lock key \"k\", lock is already held");
  // The holder's own re-acquire still works.
  EXPECT_TRUE(d.Acquire("k", a).ok);
  // A txn unlock hands off like a release.
  ApplyResult u = d.RunTxn({testutil::UnlockOp("k", a)});
  EXPECT_TRUE(u.txn.ok());
  ASSERT_EQ(u.queue_events.size(), 1u);
  EXPECT_EQ(u.queue_events[0].session, b);
  EXPECT_EQ(d.Get("k")->session, b);
  // A txn that unlocks and then locks for another session in the same entry
  // is refused whole while waiters exist (queue unchanged, b keeps it).
  SessionId c = d.NewSession();
  Enqueue(d, "k", c);
  ApplyResult jump = d.RunTxn({testutil::UnlockOp("k", b), testutil::LockOp("k", x)});
  EXPECT_FALSE(jump.txn.ok());
  EXPECT_EQ(d.Get("k")->session, b);
  EXPECT_EQ(Waiting(d, "k"), (std::vector<SessionId>{c}));
  EXPECT_TRUE(jump.queue_events.empty());
}

TEST(StoreQueueTest, HolderMayHandTheKeyToAnyWaiterInOneTxn) {
  // Decision 0027's second addendum: [unlock by the holder, lock for a
  // waiter] picks the successor; the rest of the line keeps its order.
  StoreDriver d;
  SessionId a = d.NewSession(), b = d.NewSession(), c = d.NewSession(), e = d.NewSession();
  SessionId x = d.NewSession();
  d.Acquire("k", a, "va");
  const LogIndex first = d.Get("k")->fence;
  Enqueue(d, "k", b);
  Enqueue(d, "k", c);
  Enqueue(d, "k", e);
  const auto expect_unchanged = [&](const ApplyResult& r) {
    EXPECT_FALSE(r.txn.ok());
    EXPECT_TRUE(r.queue_events.empty());
    EXPECT_EQ(d.Get("k")->session, a);
    EXPECT_EQ(d.Get("k")->fence, first);
    EXPECT_EQ(Waiting(d, "k"), (std::vector<SessionId>{b, c, e}));
  };
  const std::string held = "failed to lock key \"k\", lock is already held";
  // Refused as before: a waiter's lock without the holder's unlock first,
  // the two in the wrong order, a non-waiter, two successors, and a waiter
  // that leaves in the same txn.
  ApplyResult alone = d.RunTxn({testutil::LockOp("k", c)});
  ASSERT_EQ(alone.txn.errors.size(), 1u);
  EXPECT_EQ(alone.txn.errors[0].what, held);
  expect_unchanged(alone);
  ApplyResult reversed = d.RunTxn({testutil::LockOp("k", c), testutil::UnlockOp("k", a)});
  ASSERT_EQ(reversed.txn.errors.size(), 1u);
  EXPECT_EQ(reversed.txn.errors[0].what, held);
  expect_unchanged(reversed);
  ApplyResult stranger = d.RunTxn({testutil::UnlockOp("k", a), testutil::LockOp("k", x)});
  ASSERT_EQ(stranger.txn.errors.size(), 1u);
  EXPECT_EQ(stranger.txn.errors[0].what, held);
  expect_unchanged(stranger);
  ApplyResult two =
      d.RunTxn({testutil::UnlockOp("k", a), testutil::LockOp("k", c), testutil::LockOp("k", e)});
  ASSERT_EQ(two.txn.errors.size(), 1u);
  EXPECT_EQ(two.txn.errors[0].op_index, 2u);
  expect_unchanged(two);
  ApplyResult left =
      d.RunTxn({testutil::UnlockOp("k", a), testutil::UnlockOp("k", c), testutil::LockOp("k", c)});
  ASSERT_EQ(left.txn.errors.size(), 1u);
  EXPECT_EQ(left.txn.errors[0].what, held);
  expect_unchanged(left);
  ApplyResult deleted =
      d.RunTxn({testutil::UnlockOp("k", a), testutil::DeleteOp("k"), testutil::LockOp("k", c)});
  EXPECT_FALSE(deleted.txn.ok());
  expect_unchanged(deleted);

  // The holder names c, second in line: c holds with a new token, b and e
  // keep their order, the history records a handoff.
  ApplyResult r = d.RunTxn({testutil::CheckSessionOp("k", a), testutil::UnlockOp("k", a),
                            testutil::LockOp("k", c, "vc")});
  ASSERT_TRUE(r.txn.ok());
  const LogIndex grant = d.last_index();
  EXPECT_EQ(d.Get("k")->session, c);
  EXPECT_EQ(d.Get("k")->value, "vc");
  EXPECT_EQ(d.Get("k")->fence, grant);
  EXPECT_GT(grant, first);
  EXPECT_EQ(Waiting(d, "k"), (std::vector<SessionId>{b, e}));
  ASSERT_EQ(r.queue_events.size(), 1u);
  EXPECT_EQ(r.queue_events[0].session, c);
  EXPECT_EQ(r.queue_events[0].kind, QueueEvent::Kind::kGranted);
  EXPECT_EQ(r.queue_events[0].fence, grant);
  EXPECT_EQ(d.store().queue_waiter_count(), 2u);
  const auto* h = d.store().FindHistory("k");
  ASSERT_NE(h, nullptr);
  ASSERT_EQ(h->grants.size(), 2u);
  EXPECT_EQ(h->grants[0].end_cause, EndCause::kHandoff);
  EXPECT_EQ(h->grants[1].session, c);
  EXPECT_EQ(h->grants[1].fence, grant);

  // A plain release by c still hands the key to the head (b), then e.
  ApplyResult rel = d.Release("k", c);
  ASSERT_EQ(rel.queue_events.size(), 1u);
  EXPECT_EQ(rel.queue_events[0].session, b);
  EXPECT_EQ(Waiting(d, "k"), (std::vector<SessionId>{e}));

  // Chosen and released again in the same txn: refused whole, since the
  // release would grant the head too (two new holders, one token).
  Enqueue(d, "k", c);
  const LogIndex b_fence = d.Get("k")->fence;
  ApplyResult back =
      d.RunTxn({testutil::UnlockOp("k", b), testutil::LockOp("k", c), testutil::UnlockOp("k", c)});
  ASSERT_EQ(back.txn.errors.size(), 1u);
  EXPECT_EQ(back.txn.errors[0].op_index, 2u);
  EXPECT_EQ(back.txn.errors[0].what,
            "failed to unlock key \"k\", it was handed to a waiter in this transaction");
  EXPECT_TRUE(back.queue_events.empty());
  EXPECT_EQ(d.Get("k")->session, b);
  EXPECT_EQ(d.Get("k")->fence, b_fence);
  EXPECT_EQ(Waiting(d, "k"), (std::vector<SessionId>{e, c}));
  // Chosen, then the key deleted in the same txn: every waiter is answered
  // left, the chosen one first, and nobody holds the key.
  ApplyResult gone =
      d.RunTxn({testutil::UnlockOp("k", b), testutil::LockOp("k", c), testutil::DeleteOp("k")});
  ASSERT_TRUE(gone.txn.ok());
  EXPECT_EQ(d.Get("k"), std::nullopt);
  EXPECT_EQ(d.store().FindQueue("k"), nullptr);
  ASSERT_EQ(gone.queue_events.size(), 2u);
  EXPECT_EQ(gone.queue_events[0].session, c);
  EXPECT_EQ(gone.queue_events[0].kind, QueueEvent::Kind::kLeft);
  EXPECT_EQ(gone.queue_events[1].session, e);
  EXPECT_EQ(gone.queue_events[1].kind, QueueEvent::Kind::kLeft);
}

TEST(StoreQueueTest, DestroyOrExpiryOfTheHolderGrantsTheHeadUnlessLockDelayHoldsIt) {
  StoreDriver d;
  SessionId a = d.NewSession();  // no lock-delay
  SessionId b = d.NewSession(), c = d.NewSession();
  d.Acquire("k", a);
  Enqueue(d, "k", b);
  ApplyResult r = d.Destroy(a, DestroyReason::kExpired);
  ASSERT_EQ(r.queue_events.size(), 1u);
  EXPECT_EQ(d.Get("k")->session, b);
  EXPECT_EQ(d.store().FindHistory("k")->grants[0].end_cause, EndCause::kTtlExpiry);

  // With lock-delay: the head waits for a later KvQueueGrant past the window.
  SessionId slow = d.NewSession(2 * kSecond);
  d.Acquire("j", slow);
  Enqueue(d, "j", c);
  ApplyResult r2 = d.Destroy(slow);
  EXPECT_TRUE(r2.queue_events.empty());
  EXPECT_TRUE(d.Get("j")->session.empty());
  EXPECT_EQ(Waiting(d, "j"), (std::vector<SessionId>{c}));
  d.AdvanceMs(1000);
  EXPECT_TRUE(d.Apply(KvQueueGrant{"j"}).queue_events.empty());  // still inside
  EXPECT_TRUE(d.Get("j")->session.empty());
  // A plain acquire during the window is lock-delayed; after it, refused as
  // held by the queue (the waiter is first).
  d.AdvanceMs(1000);
  ApplyResult g = d.Apply(KvQueueGrant{"j"});
  ASSERT_EQ(g.queue_events.size(), 1u);
  EXPECT_EQ(g.queue_events[0].session, c);
  EXPECT_EQ(d.Get("j")->session, c);
  EXPECT_EQ(d.Get("j")->fence, d.last_index());
  // A second grant command is a no-op.
  EXPECT_TRUE(d.Apply(KvQueueGrant{"j"}).queue_events.empty());
}

TEST(StoreQueueTest, EnqueueDuringLockDelayWaitsEvenWithAnEmptyQueue) {
  StoreDriver d;
  SessionId slow = d.NewSession(5 * kSecond);
  SessionId b = d.NewSession();
  d.Acquire("k", slow);
  d.Destroy(slow);
  ApplyResult r = Enqueue(d, "k", b);
  EXPECT_TRUE(r.queued);
  EXPECT_FALSE(r.lock_delayed);
  d.AdvanceMs(5000);
  // Any later command on the key settles it first: c's enqueue grants the
  // key to b (the window has passed), then c waits behind b's hold.
  SessionId c = d.NewSession();
  ApplyResult rc = Enqueue(d, "k", c);
  ASSERT_EQ(rc.queue_events.size(), 1u);
  EXPECT_EQ(rc.queue_events[0].session, b);
  EXPECT_TRUE(rc.queued);
  EXPECT_EQ(d.Get("k")->session, b);
}

// A new leader whose LockDelayGuard (decision 0010) still holds a window
// that the replicated clock says has passed stamps its enqueues and dequeues
// with `hold`: they grant nothing, neither the head of the queue nor a free
// key with an empty queue; its KvQueueGrant does, once its guard lets go.
TEST(StoreQueueTest, HeldEnqueueAndDequeueGrantNothingPastTheReplicatedWindow) {
  StoreDriver d;
  SessionId slow = d.NewSession(5 * kSecond);
  SessionId b = d.NewSession(), c = d.NewSession(), e = d.NewSession();
  d.Acquire("k", slow);
  d.Acquire("empty", slow);
  d.Destroy(slow);
  EXPECT_TRUE(Enqueue(d, "k", b).queued);
  d.AdvanceMs(5000);  // past both windows in replicated time

  ApplyResult rc = d.Apply(KvEnqueue{"k", "", 0, c, /*hold=*/true});
  EXPECT_TRUE(rc.status.ok());
  EXPECT_TRUE(rc.queued);
  EXPECT_TRUE(rc.queue_events.empty());
  EXPECT_TRUE(d.Get("k")->session.empty());
  EXPECT_EQ(Waiting(d, "k"), (std::vector<SessionId>{b, c}));

  // A held dequeue leaves the queue without granting the head first.
  ApplyResult dq = d.Apply(KvDequeue{"k", c, /*hold=*/true});
  EXPECT_FALSE(dq.ok);
  ASSERT_EQ(dq.queue_events.size(), 1u);
  EXPECT_EQ(dq.queue_events[0].kind, QueueEvent::Kind::kLeft);
  EXPECT_EQ(dq.queue_events[0].session, c);
  EXPECT_TRUE(d.Get("k")->session.empty());
  EXPECT_EQ(Waiting(d, "k"), (std::vector<SessionId>{b}));

  // A held enqueue on a free key with no queue waits instead of acquiring.
  ApplyResult re = d.Apply(KvEnqueue{"empty", "", 0, e, /*hold=*/true});
  EXPECT_FALSE(re.ok);
  EXPECT_TRUE(re.queued);
  EXPECT_TRUE(d.Get("empty")->session.empty());
  EXPECT_EQ(Waiting(d, "empty"), (std::vector<SessionId>{e}));
  // The holder's own held enqueue still answers true (nothing is granted).
  d.Apply(KvQueueGrant{"empty"});
  EXPECT_EQ(d.Get("empty")->session, e);
  EXPECT_TRUE(d.Apply(KvEnqueue{"empty", "", 0, e, /*hold=*/true}).ok);

  // The leader's grant, once its guard lets the key go.
  ApplyResult g = d.Apply(KvQueueGrant{"k"});
  ASSERT_EQ(g.queue_events.size(), 1u);
  EXPECT_EQ(g.queue_events[0].session, b);
  EXPECT_EQ(d.Get("k")->session, b);
}

TEST(StoreQueueTest, WaiterLeavesWhenItsSessionDiesOrItDequeues) {
  StoreDriver d;
  SessionId a = d.NewSession(), b = d.NewSession(), c = d.NewSession();
  d.Acquire("k", a);
  Enqueue(d, "k", b);
  Enqueue(d, "k", c);
  Enqueue(d, "other", b);  // free: b takes it at once
  ApplyResult r = d.Destroy(b);
  EXPECT_EQ(Waiting(d, "k"), (std::vector<SessionId>{c}));
  ASSERT_EQ(r.queue_events.size(), 1u);
  EXPECT_EQ(r.queue_events[0].kind, QueueEvent::Kind::kLeft);
  ApplyResult dq = d.Apply(KvDequeue{"k", c});
  EXPECT_FALSE(dq.ok);  // c does not hold it
  ASSERT_EQ(dq.queue_events.size(), 1u);
  EXPECT_EQ(d.store().FindQueue("k"), nullptr);
  // Releasing now grants nobody.
  EXPECT_TRUE(d.Release("k", a).queue_events.empty());
  EXPECT_TRUE(d.Get("k")->session.empty());
}

// Decision 0027's addendum: a waiter leaves on purpose with ?release. The
// release answers true, removes it in that one entry, and writes nothing
// else: the key, its holder and the other waiters are as they were.
TEST(StoreQueueTest, ReleaseByAWaiterLeavesTheQueueAndChangesNothingElse) {
  StoreDriver d;
  SessionId a = d.NewSession(), b = d.NewSession(), c = d.NewSession(), x = d.NewSession();
  d.Acquire("k", a, "va");
  Enqueue(d, "k", b, "vb");
  Enqueue(d, "k", c, "vc");
  EXPECT_EQ(d.store().QueuePosition("k", b), 1u);
  EXPECT_EQ(d.store().QueuePosition("k", c), 2u);
  EXPECT_EQ(d.store().QueuePosition("k", x), 0u);
  const KvEntry before = *d.Get("k");
  ApplyResult r = d.Release("k", b, "ignored");
  EXPECT_TRUE(r.status.ok());
  EXPECT_TRUE(r.ok);
  EXPECT_TRUE(r.fence.is_none());
  ASSERT_EQ(r.queue_events.size(), 1u);
  EXPECT_EQ(r.queue_events[0].kind, QueueEvent::Kind::kLeft);
  EXPECT_EQ(r.queue_events[0].session, b);
  EXPECT_EQ(*d.Get("k"), before);  // value, flags, holder, indexes untouched
  EXPECT_EQ(Waiting(d, "k"), (std::vector<SessionId>{c}));
  EXPECT_EQ(d.store().QueuePosition("k", c), 1u);
  EXPECT_EQ(d.store().queues_index(), d.last_index());
  // Again: b neither holds nor waits, Consul's false, nothing changes.
  const LogIndex queues_index = d.store().queues_index();
  ApplyResult again = d.Release("k", b);
  EXPECT_TRUE(again.status.ok());
  EXPECT_FALSE(again.ok);
  EXPECT_TRUE(again.queue_events.empty());
  EXPECT_EQ(d.store().queues_index(), queues_index);
  // A stranger's release: false too.
  EXPECT_FALSE(d.Release("k", x).ok);
  // The holder's release now hands the key to c, the only one left.
  ApplyResult handoff = d.Release("k", a);
  ASSERT_EQ(handoff.queue_events.size(), 1u);
  EXPECT_EQ(handoff.queue_events[0].session, c);
  EXPECT_EQ(d.Get("k")->session, c);
  EXPECT_EQ(d.Get("k")->value, "vc");
  EXPECT_EQ(d.store().FindQueue("k"), nullptr);
}

// The last waiter of a free key in lock-delay releases: the queue is gone,
// nobody is granted, and the window still holds the key for plain acquires.
TEST(StoreQueueTest, ReleaseByTheLastWaiterOfAKeyInLockDelayGrantsNothing) {
  StoreDriver d;
  SessionId a = d.NewSession(15 * kSecond), b = d.NewSession();
  d.Acquire("k", a);
  Enqueue(d, "k", b);
  d.Destroy(a);  // lock-delay: the key stays free with b waiting
  ASSERT_EQ(Waiting(d, "k"), (std::vector<SessionId>{b}));
  ApplyResult r = d.Release("k", b);
  EXPECT_TRUE(r.ok);
  ASSERT_EQ(r.queue_events.size(), 1u);
  EXPECT_EQ(r.queue_events[0].kind, QueueEvent::Kind::kLeft);
  EXPECT_EQ(d.store().FindQueue("k"), nullptr);
  EXPECT_TRUE(d.Get("k")->session.empty());
  ApplyResult plain = d.Acquire("k", b);
  EXPECT_FALSE(plain.ok);
  EXPECT_TRUE(plain.lock_delayed);
}

// A txn unlock by a waiter does what its release does: the op succeeds,
// reports the key as it stands, writes nothing, and the waiter leaves when
// the txn commits (before any hand-off in the same txn, so the holder's
// unlock in the same txn hands the key to the next waiter). A rolled-back
// txn leaves the queue as it was.
TEST(StoreQueueTest, TxnUnlockByAWaiterLeavesTheQueueAtCommit) {
  StoreDriver d;
  SessionId a = d.NewSession(), b = d.NewSession(), c = d.NewSession();
  d.Acquire("k", a, "va");
  Enqueue(d, "k", b);
  Enqueue(d, "k", c, "vc");
  const KvEntry before = *d.Get("k");

  ApplyResult failed =
      d.RunTxn({testutil::UnlockOp("k", b, "x"), testutil::CheckIndexOp("k", 999'999)});
  EXPECT_FALSE(failed.txn.ok());
  EXPECT_TRUE(failed.queue_events.empty());
  EXPECT_EQ(Waiting(d, "k"), (std::vector<SessionId>{b, c}));

  ApplyResult alone = d.RunTxn({testutil::UnlockOp("k", c, "x")});
  ASSERT_TRUE(alone.txn.ok());
  ASSERT_EQ(alone.txn.results.size(), 1u);
  EXPECT_EQ(alone.txn.results[0].entry, before);
  ASSERT_EQ(alone.queue_events.size(), 1u);
  EXPECT_EQ(alone.queue_events[0].kind, QueueEvent::Kind::kLeft);
  EXPECT_EQ(alone.queue_events[0].session, c);
  EXPECT_EQ(*d.Get("k"), before);
  EXPECT_EQ(Waiting(d, "k"), (std::vector<SessionId>{b}));

  // Holder and head unlock in one txn: b leaves first, so the holder's
  // unlock hands the key to nobody (c left above) and the key is free.
  Enqueue(d, "k", c, "vc");
  SessionId e = d.NewSession();
  Enqueue(d, "k", e, "ve");
  ApplyResult both = d.RunTxn({testutil::UnlockOp("k", a), testutil::UnlockOp("k", b)});
  ASSERT_TRUE(both.txn.ok());
  ASSERT_EQ(both.queue_events.size(), 2u);
  EXPECT_EQ(both.queue_events[0].kind, QueueEvent::Kind::kLeft);
  EXPECT_EQ(both.queue_events[0].session, b);
  EXPECT_EQ(both.queue_events[1].kind, QueueEvent::Kind::kGranted);
  EXPECT_EQ(both.queue_events[1].session, c);  // the next one after b
  EXPECT_EQ(d.Get("k")->session, c);
  EXPECT_EQ(Waiting(d, "k"), (std::vector<SessionId>{e}));

  // A session that neither holds nor waits: Consul's unlock error.
  ApplyResult stranger = d.RunTxn({testutil::UnlockOp("k", b)});
  ASSERT_EQ(stranger.txn.errors.size(), 1u);
  EXPECT_EQ(stranger.txn.errors[0].what,
            "failed to unlock key \"k\", lock isn't held, or is held by another session");
}

TEST(StoreQueueTest, DequeueAfterTheGrantAnswersTrueWithTheToken) {
  StoreDriver d;
  SessionId a = d.NewSession(), b = d.NewSession();
  d.Acquire("k", a);
  Enqueue(d, "k", b);
  d.Release("k", a);
  const LogIndex grant = d.last_index();
  // b's client hung up before its server saw the grant: the dequeue's apply
  // says b holds the key.
  ApplyResult dq = d.Apply(KvDequeue{"k", b});
  EXPECT_TRUE(dq.ok);
  EXPECT_EQ(dq.fence, grant);
  EXPECT_TRUE(dq.queue_events.empty());
  EXPECT_EQ(d.Get("k")->session, b);
}

TEST(StoreQueueTest, DeletesDropTheQueueAndAnswerItsWaiters) {
  StoreDriver d;
  SessionId a = d.NewSession(), b = d.NewSession(), c = d.NewSession();
  d.Acquire("p/k", a);
  Enqueue(d, "p/k", b);
  Enqueue(d, "p/k", c);
  ApplyResult r = d.Delete("p/k");
  ASSERT_EQ(r.queue_events.size(), 2u);
  EXPECT_EQ(r.queue_events[0].session, b);
  EXPECT_EQ(r.queue_events[1].kind, QueueEvent::Kind::kLeft);
  EXPECT_EQ(d.store().FindQueue("p/k"), nullptr);

  d.Acquire("p/j", a);
  Enqueue(d, "p/j", b);
  EXPECT_EQ(d.DeleteTree("p/").queue_events.size(), 1u);
  EXPECT_EQ(d.store().queue_waiter_count(), 0u);

  d.Acquire("t", a);
  Enqueue(d, "t", b);
  ApplyResult t = d.RunTxn({testutil::DeleteOp("t")});
  EXPECT_TRUE(t.txn.ok());
  EXPECT_EQ(t.queue_events.size(), 1u);
  EXPECT_EQ(d.store().queue_waiter_count(), 0u);
}

TEST(StoreQueueTest, BadInputsChangeNothing) {
  StoreDriver d;
  ApplyResult missing = d.Apply(KvEnqueue{"k", "", 0, SessionId()});
  EXPECT_EQ(missing.status.message(), "missing session");
  ApplyResult unknown = d.Apply(KvEnqueue{"k", "", 0, SessionId("nope")});
  EXPECT_EQ(unknown.status.message(), "invalid session \"nope\"");
  EXPECT_EQ(d.store().FindKv("k"), nullptr);
  EXPECT_EQ(d.store().queue_waiter_count(), 0u);
  EXPECT_TRUE(d.store().queues_index().is_none());
}

TEST(StoreQueueTest, AFullQueueRefusesWithAClearErrorAndChangesNothing) {
  StoreDriver d;
  d.set_check_invariants(false);  // 1,000+ applies: checked once at the end
  SessionId holder = d.NewSession();
  d.Acquire("k", holder);
  for (std::size_t i = 0; i < Store::kQueueWaitersPerKeyMax; ++i) {
    ASSERT_TRUE(Enqueue(d, "k", d.NewSession()).queued);
  }
  SessionId late = d.NewSession();
  const std::deque<QueueWaiter> before = *d.store().FindQueue("k");
  const LogIndex queues_index = d.store().queues_index();
  ApplyResult r = Enqueue(d, "k", late);
  EXPECT_EQ(r.status.message(), "too many waiters for key \"k\" (limit 1024)");
  EXPECT_FALSE(r.queued);
  EXPECT_EQ(*d.store().FindQueue("k"), before);
  EXPECT_EQ(d.store().queues_index(), queues_index);
  d.store().CheckInvariants();
}

// One client's sessions cannot fill the queues for everyone: a session waits
// for at most 16 keys at once (decision 0027's third addendum).
TEST(StoreQueueTest, ASessionWaitsInAtMostSixteenQueues) {
  StoreDriver d;
  SessionId holder = d.NewSession(), many = d.NewSession(), other = d.NewSession();
  for (std::size_t i = 0; i <= Store::kQueueKeysPerSessionMax; ++i) {
    d.Acquire("k" + std::to_string(i), holder);
  }
  for (std::size_t i = 0; i < Store::kQueueKeysPerSessionMax; ++i) {
    ASSERT_TRUE(Enqueue(d, "k" + std::to_string(i), many).queued) << i;
  }
  // Waiting again where it already waits is no new place: still fine.
  EXPECT_TRUE(Enqueue(d, "k0", many).queued);
  const LogIndex queues_index = d.store().queues_index();
  const std::string last = "k" + std::to_string(Store::kQueueKeysPerSessionMax);
  ApplyResult r = Enqueue(d, last, many);
  EXPECT_EQ(r.status.message(), "session \"" + std::string(many.view()) +
                                    "\" already waits in the queues of 16 keys (limit 16)");
  EXPECT_FALSE(r.queued);
  EXPECT_EQ(d.store().FindQueue(last), nullptr);
  EXPECT_EQ(d.store().queues_index(), queues_index);
  // Leaving one queue makes room; other sessions were never limited by it.
  EXPECT_TRUE(Enqueue(d, last, other).queued);
  d.Apply(KvDequeue{"k0", many});
  EXPECT_TRUE(Enqueue(d, last, many).queued);
}

// Decision 0038: a queued grant asks the waiter's token again.
class QueuedGrantAclTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(d_.Apply(AclSetup{}).status.ok());
    AclPolicy writer;
    writer.id = "p-write";
    writer.name = "writer";
    writer.rules = R"(key_prefix "svc/" { policy = "write" })";
    ASSERT_TRUE(d_.Apply(AclPolicySet{writer}).status.ok());
    AclPolicy reader = writer;
    reader.id = "p-read";
    reader.name = "reader";
    reader.rules = R"(key_prefix "svc/" { policy = "read" })";
    ASSERT_TRUE(d_.Apply(AclPolicySet{reader}).status.ok());
    for (const char* who : {"a", "b", "c"}) SetToken(who, {"p-write"});
    holder_ = d_.NewSession();
    a_ = d_.NewSession();
    b_ = d_.NewSession();
    c_ = d_.NewSession();
    ASSERT_TRUE(d_.Acquire("svc/leader", holder_).ok);
  }
  void SetToken(const std::string& who, std::vector<std::string> policies,
                UnixMs expires = UnixMs()) {
    AclToken t;
    t.accessor_id = "acc-" + who;
    t.secret_id = "sec-" + who;
    t.policy_ids = std::move(policies);
    t.create_time = testutil::kT0;
    t.expiration_time = expires;
    ASSERT_TRUE(d_.Apply(AclTokenSet{t}).status.ok());
  }
  ApplyResult EnqueueAs(const std::string& who, const SessionId& s) {
    KvEnqueue c{"svc/leader", "v-" + who, 0, s};
    c.authority = {true, "acc-" + who, false};
    return d_.Apply(c);
  }
  StoreDriver d_;
  SessionId holder_, a_, b_, c_;
};

TEST_F(QueuedGrantAclTest, ADeletedTokenIsNeverGrantedAndTheNextIsAsked) {
  ASSERT_TRUE(EnqueueAs("a", a_).queued);
  ASSERT_TRUE(EnqueueAs("b", b_).queued);
  ASSERT_TRUE(d_.Apply(AclTokenDelete{"acc-a"}).status.ok());
  ApplyResult r = d_.Release("svc/leader", holder_);
  EXPECT_EQ(d_.Get("svc/leader")->session, b_) << "a's token is gone: b is next";
  EXPECT_EQ(d_.Get("svc/leader")->value, "v-b");
  ASSERT_EQ(r.queue_events.size(), 2u);
  EXPECT_EQ(r.queue_events[0].session, a_);
  EXPECT_EQ(r.queue_events[0].kind, QueueEvent::Kind::kLeft);
  EXPECT_EQ(r.queue_events[1].session, b_);
  EXPECT_EQ(r.queue_events[1].kind, QueueEvent::Kind::kGranted);
  EXPECT_EQ(d_.store().FindQueue("svc/leader"), nullptr);
}

TEST_F(QueuedGrantAclTest, APolicyCutToReadOnlyIsNeverGranted) {
  ASSERT_TRUE(EnqueueAs("a", a_).queued);
  SetToken("a", {"p-read"});
  d_.Release("svc/leader", holder_);
  const KvEntry* entry = d_.store().FindKv("svc/leader");
  ASSERT_NE(entry, nullptr);
  EXPECT_TRUE(entry->session.empty()) << "nobody may write it: nobody holds it";
  EXPECT_NE(entry->value, "v-a") << "the revoked waiter's value is not written";
  EXPECT_EQ(d_.store().FindQueue("svc/leader"), nullptr);
}

TEST_F(QueuedGrantAclTest, AnExpiredTokenIsNeverGrantedByTheGrantingEntrysWallClock) {
  SetToken("a", {"p-write"}, testutil::kT0 + 60'000);
  ASSERT_TRUE(EnqueueAs("a", a_).queued);
  ASSERT_TRUE(EnqueueAs("c", c_).queued);
  d_.AdvanceMs(60'000);  // the token's expiry passes; nobody deleted it yet
  d_.Release("svc/leader", holder_);
  EXPECT_EQ(d_.Get("svc/leader")->session, c_);
}

TEST_F(QueuedGrantAclTest, AValidTokenIsGrantedAndACheckedWaiterSurvivesASnapshot) {
  ASSERT_TRUE(EnqueueAs("a", a_).queued);
  std::string bytes;
  d_.store().EncodeSnapshot(&bytes);
  EXPECT_EQ(static_cast<int>(bytes[7]), 7) << "a checked waiter makes the snapshot version 7";
  Result<Store> restored = Store::DecodeSnapshot(bytes);
  ASSERT_TRUE(restored.ok()) << restored.status().ToString();
  EXPECT_EQ(restored->FindWaiter("svc/leader", a_)->authority,
            (GrantAuthority{true, "acc-a", false}));
  EXPECT_EQ(restored->Digest(), d_.store().Digest());
  d_.Release("svc/leader", holder_);
  EXPECT_EQ(d_.Get("svc/leader")->session, a_);
  EXPECT_EQ(d_.Get("svc/leader")->value, "v-a");
}

TEST_F(QueuedGrantAclTest, AHolderCannotHandTheKeyToAWaiterWhoseTokenWasRevoked) {
  ASSERT_TRUE(EnqueueAs("a", a_).queued);
  ASSERT_TRUE(d_.Apply(AclTokenDelete{"acc-a"}).status.ok());
  TxnOp unlock;
  unlock.verb = TxnVerb::kUnlock;
  unlock.key = "svc/leader";
  unlock.session = holder_;
  TxnOp lock = unlock;
  lock.verb = TxnVerb::kLock;
  lock.session = a_;
  ApplyResult r = d_.RunTxn({unlock, lock});
  ASSERT_EQ(r.txn.errors.size(), 1u);
  EXPECT_EQ(r.txn.errors[0].what,
            "failed to lock key \"svc/leader\", the waiter's ACL token no longer allows it");
  EXPECT_EQ(d_.Get("svc/leader")->session, holder_) << "the txn rolled back";
}

TEST(StoreQueueTest, SnapshotCarriesTheQueueAndOlderVersionsStillRead) {
  StoreDriver d;
  SessionId a = d.NewSession(), b = d.NewSession(), c = d.NewSession();
  d.Acquire("k", a);
  Enqueue(d, "k", b, "vb");
  Enqueue(d, "k", c, "vc");
  std::string bytes;
  d.store().EncodeSnapshot(&bytes);
  EXPECT_EQ(Store::CheckSnapshotBytes(bytes).value(), 6);
  Result<Store> back = Store::DecodeSnapshot(bytes);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->Digest(), d.store().Digest());
  ASSERT_NE(back->FindQueue("k"), nullptr);
  EXPECT_EQ(*back->FindQueue("k"), *d.store().FindQueue("k"));
  EXPECT_EQ(back->queue_waiter_count(), 2u);
  EXPECT_EQ(back->queues_index(), d.store().queues_index());
  // The digest covers the queue: a different order is a different state.
  StoreDriver other;
  SessionId oa = other.NewSession(), ob = other.NewSession(), oc = other.NewSession();
  other.Acquire("k", oa);
  Enqueue(other, "k", oc, "vc");
  Enqueue(other, "k", ob, "vb");
  EXPECT_NE(other.store().Digest(), d.store().Digest());

  // A store that never queued writes version 5 as before.
  StoreDriver plain;
  SessionId p = plain.NewSession();
  plain.Acquire("k", p);
  std::string old;
  plain.store().EncodeSnapshot(&old);
  EXPECT_EQ(Store::CheckSnapshotBytes(old).value(), 5);
  EXPECT_TRUE(Store::DecodeSnapshot(old).ok());
}

TEST(StoreQueueTest, SnapshotWithAWaiterOfAnUnknownSessionIsRefused) {
  StoreDriver d;
  SessionId a = d.NewSession(), b = d.NewSession();
  d.Acquire("k", a);
  Enqueue(d, "k", b);
  std::string bytes;
  d.store().EncodeSnapshot(&bytes);
  // Replace b's id in the queue section (its last occurrence) by another id
  // of the same length and fix the checksum: Validate must refuse it.
  std::size_t at = bytes.rfind(b.str());
  ASSERT_NE(at, std::string::npos);
  bytes[at + b.str().size() - 1] = bytes[at + b.str().size() - 1] == 'f' ? 'e' : 'f';
  bytes.resize(bytes.size() - 4);
  std::string fixed = bytes;
  std::string crc;
  ByteWriter(&crc).PutFixed32(Crc32(fixed));
  fixed += crc;
  Result<Store> back = Store::DecodeSnapshot(fixed);
  EXPECT_FALSE(back.ok());
}

}  // namespace
}  // namespace tenure::state
