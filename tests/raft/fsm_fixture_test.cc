// FsmBridge on libraft's deterministic raft_fixture: three in-memory servers
// in simulated time, each applying to its own Store through our real FSM.
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "raft/entry_codec.h"
#include "raft/fsm.h"
#include "raft/raft_test_util.h"

extern "C" {
#include <raft/fixture.h>
}

namespace tenure::raft {
namespace {

using testing::KvSetCommand;
using testing::OddValueSize;
using testing::TestKey;

constexpr unsigned kServers = 3;
constexpr unsigned kStepMaxMs = 60'000;  // simulated time, not wall clock

struct Replica {
  state::Store store;
  std::unique_ptr<FsmBridge> fsm;
};

// One raft_apply and its outcome.
struct Apply {
  struct raft_apply req {};
  bool done = false;
  int status = -1;
  std::optional<state::ApplyResult> result;

  static void Done(struct raft_apply* req, int status, void* result) {
    auto* self = static_cast<Apply*>(req->data);
    self->done = true;
    self->status = status;
    if (status == 0) self->result = FsmBridge::TakeResult(result);
  }
};

// A raft_apply whose result is taken later, as Node's callback takes it
// after the turn's ApplyDeferred (decision 0062).
struct DeferredApply {
  struct raft_apply req {};
  raft_index index = 0;
  bool done = false;
  int status = -1;
  void* slot = nullptr;
  std::optional<state::ApplyResult> result;

  static void Done(struct raft_apply* req, int status, void* result) {
    auto* self = static_cast<DeferredApply*>(req->data);
    self->done = true;
    self->status = status;
    self->slot = result;
  }
};

class FsmFixtureTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(raft_fixture_initialize(&fixture_), 0);
    for (Replica& replica : replicas_) {
      replica.fsm = std::make_unique<FsmBridge>(&replica.store);
      ASSERT_EQ(raft_fixture_grow(&fixture_, replica.fsm->fsm()), 0);
    }
    for (unsigned i = 0; i < kServers; ++i) replicas_[i].fsm->set_raft(Raft(i));
  }

  // Requests stay alive until after raft_fixture_close, which fails the
  // pending ones through their callbacks.
  void TearDown() override { raft_fixture_close(&fixture_); }

  struct raft* Raft(unsigned i) {
    return raft_fixture_get(&fixture_, i);
  }

  void StartCluster(unsigned snapshot_threshold = 0, unsigned snapshot_trailing = 0) {
    for (unsigned i = 0; i < kServers; ++i) {
      if (snapshot_threshold != 0) raft_set_snapshot_threshold(Raft(i), snapshot_threshold);
      if (snapshot_trailing != 0) raft_set_snapshot_trailing(Raft(i), snapshot_trailing);
    }
    struct raft_configuration conf;
    ASSERT_EQ(raft_fixture_configuration(&fixture_, kServers, &conf), 0);
    ASSERT_EQ(raft_fixture_bootstrap(&fixture_, &conf), 0);
    raft_configuration_close(&conf);
    ASSERT_EQ(raft_fixture_start(&fixture_), 0);
    ASSERT_TRUE(raft_fixture_step_until_has_leader(&fixture_, kStepMaxMs));
    leader_ = raft_fixture_leader_index(&fixture_);
    ASSERT_LT(leader_, kServers);
  }

  // Proposes a framed KvSet on the leader; returns the entry's index.
  raft_index Propose(int k) {
    std::string framed;
    EncodeEntry(KvSetCommand(TestKey(k), OddValueSize(k), k), &framed);
    return ProposeRaw(framed);
  }

  raft_index ProposeRaw(const std::string& bytes) {
    struct raft_buffer buf;
    buf.len = bytes.size();
    buf.base = raft_malloc(buf.len);
    std::memcpy(buf.base, bytes.data(), bytes.size());
    applies_.push_back(std::make_unique<Apply>());
    Apply* apply = applies_.back().get();
    apply->req.data = apply;
    int rv = raft_apply(Raft(leader_), &apply->req, &buf, 1, &Apply::Done);
    EXPECT_EQ(rv, 0) << raft_strerror(rv);
    if (rv != 0) raft_free(buf.base);
    return raft_last_index(Raft(leader_));
  }

  bool StepUntilApplied(unsigned server, raft_index index) {
    return raft_fixture_step_until_applied(&fixture_, server, index, kStepMaxMs);
  }

  // With applies deferred (decision 0062): proposes `command` on the
  // leader, its result taken at a turn's end by EndTurn.
  void ProposeDeferred(const state::Command& command) {
    std::string framed;
    EncodeEntry(command, &framed);
    struct raft_buffer buf = CopyToRaftBuffer(framed);
    deferred_applies_.push_back(std::make_unique<DeferredApply>());
    DeferredApply* apply = deferred_applies_.back().get();
    apply->req.data = apply;
    ASSERT_EQ(raft_apply(Raft(leader_), &apply->req, &buf, 1, &DeferredApply::Done), 0);
    apply->index = raft_last_index(Raft(leader_));
  }

  // What Node's AfterTurn does after libraft ran: apply the queues, run the
  // raft_apply callbacks (here: take their results), forget the slots.
  void EndTurn() {
    for (Replica& replica : replicas_) replica.fsm->ApplyDeferred();
    for (auto& apply : deferred_applies_) {
      if (apply->done && apply->status == 0 && !apply->result) {
        apply->result = FsmBridge::TakeResult(apply->slot);
      }
    }
    for (Replica& replica : replicas_) replica.fsm->ForgetAppliedSlots();
  }

  void ExpectSameDigests(std::size_t kv_count) {
    for (unsigned i = 0; i < kServers; ++i) {
      EXPECT_EQ(replicas_[i].store.kv_count(), kv_count) << "server " << i;
      EXPECT_EQ(replicas_[i].store.Digest(), replicas_[0].store.Digest()) << "server " << i;
      replicas_[i].store.CheckInvariants();
    }
  }

  struct raft_fixture fixture_ {};
  Replica replicas_[kServers];
  std::vector<std::unique_ptr<Apply>> applies_;
  std::vector<std::unique_ptr<DeferredApply>> deferred_applies_;
  unsigned leader_ = kServers;
};

TEST_F(FsmFixtureTest, ThreeReplicasApplyTheSameLogToEqualDigests) {
  StartCluster();
  raft_index last = 0;
  for (int k = 0; k < 200; ++k) last = Propose(k);
  ASSERT_TRUE(StepUntilApplied(kServers, last));  // kServers = every server
  for (const auto& apply : applies_) {
    ASSERT_TRUE(apply->done);
    ASSERT_EQ(apply->status, 0);
    ASSERT_TRUE(apply->result.has_value());
    EXPECT_TRUE(apply->result->ok);
    EXPECT_TRUE(apply->result->status.ok());
  }
  ExpectSameDigests(200);
  // Entry indexes became ModifyIndexes identically everywhere.
  for (unsigned i = 0; i < kServers; ++i) {
    const state::KvEntry* last_key = replicas_[i].store.FindKv(TestKey(199));
    ASSERT_NE(last_key, nullptr);
    EXPECT_EQ(last_key->modify_index, LogIndex(last));
  }
}

TEST_F(FsmFixtureTest, LaggingFollowerCatchesUpThroughSnapshotRestore) {
  StartCluster(/*snapshot_threshold=*/32, /*snapshot_trailing=*/8);
  raft_index last = 0;
  for (int k = 0; k < 20; ++k) last = Propose(k);
  ASSERT_TRUE(StepUntilApplied(kServers, last));

  unsigned lagging = (leader_ + 1) % kServers;
  raft_fixture_kill(&fixture_, lagging);
  for (int k = 20; k < 300; ++k) last = Propose(k);
  ASSERT_TRUE(StepUntilApplied(leader_, last));
  // Snapshots complete asynchronously (simulated disk latency).
  ASSERT_TRUE(raft_fixture_step_until(
      &fixture_,
      [](struct raft_fixture* f, void* leader) {
        unsigned i = *static_cast<unsigned*>(leader);
        return raft_fixture_get(f, i)->log.snapshot.last_index > 20;
      },
      &leader_, kStepMaxMs))
      << "the leader took a snapshot past the lagging follower's log";

  replicas_[lagging].store.RecordEvents(true);  // as an etcd listener asks (decision 0048)
  raft_fixture_revive(&fixture_, lagging);
  ASSERT_TRUE(StepUntilApplied(lagging, last));
  EXPECT_GE(replicas_[lagging].fsm->restores(), 1u) << "caught up by InstallSnapshot";
  EXPECT_TRUE(replicas_[lagging].store.recording_events())
      << "the installed snapshot's Store records events as the one it replaced did";
  ASSERT_TRUE(StepUntilApplied(kServers, last));
  ExpectSameDigests(300);
}

// A restore in chunks (decision 0050): every replica stages the chunks, no
// raft snapshot is taken while they are staged (RAFT_BUSY; libraft tries
// again later), a member that was away catches up, and the swap gives every
// replica the restored state; snapshots resume after it.
TEST_F(FsmFixtureTest, NoSnapshotIsTakenWhileARestoreIsStagedAndItsSwapAppliesEverywhere) {
  StartCluster(/*snapshot_threshold=*/32, /*snapshot_trailing=*/8);
  raft_index last = 0;
  for (int k = 0; k < 40; ++k) last = Propose(k);
  ASSERT_TRUE(StepUntilApplied(kServers, last));

  state::Store source;
  for (int k = 0; k < 60; ++k) {
    ASSERT_TRUE(source
                    .Apply(KvSetCommand("restored/" + std::to_string(k), 50, k),
                           LogIndex(static_cast<std::uint64_t>(k) + 1))
                    .status.ok());
  }
  std::string bytes;
  source.EncodeSnapshot(&bytes);
  ASSERT_GT(bytes.size(), 2000u);
  auto propose = [this](state::CommandBody body) {
    state::Command command;
    command.now_ms = ClusterMs(1'700'000'100'000);
    command.body = std::move(body);
    std::string framed;
    EncodeEntry(command, &framed);
    return ProposeRaw(framed);
  };
  unsigned away = (leader_ + 1) % kServers;
  raft_fixture_kill(&fixture_, away);
  const raft_index first_chunk =
      propose(state::RestoreChunk{77, 0, bytes.size(), bytes.substr(0, 500)});
  for (std::size_t at = 500, k = 100; at < bytes.size(); at += 500, ++k) {
    // Other writes between the chunks, past the snapshot threshold.
    for (int j = 0; j < 20; ++j) last = Propose(static_cast<int>(k * 20) + j);
    last = propose(state::RestoreChunk{77, at, bytes.size(), bytes.substr(at, 500)});
  }
  ASSERT_TRUE(StepUntilApplied(leader_, last));
  raft_fixture_step_until_elapsed(&fixture_, 2'000);
  ASSERT_NE(replicas_[leader_].store.staging(), nullptr);
  EXPECT_LT(Raft(leader_)->log.snapshot.last_index, first_chunk)
      << "a snapshot was taken while chunks were staged";

  raft_fixture_revive(&fixture_, away);
  const raft_index swap = propose(state::RestoreStaged{77, bytes.size()});
  ASSERT_TRUE(StepUntilApplied(kServers, swap));
  for (unsigned i = 0; i < kServers; ++i) {
    EXPECT_EQ(replicas_[i].store.staging(), nullptr) << "server " << i;
    EXPECT_NE(replicas_[i].store.FindKv("restored/59"), nullptr) << "server " << i;
    EXPECT_EQ(replicas_[i].store.FindKv(TestKey(0)), nullptr) << "server " << i;
  }
  ASSERT_TRUE(applies_.back()->done);
  EXPECT_TRUE(applies_.back()->result->status.ok()) << applies_.back()->result->status.message();
  ExpectSameDigests(60);

  for (int k = 0; k < 80; ++k) last = Propose(1000 + k);
  struct After {
    unsigned server;
    raft_index index;
  } after{leader_, swap};
  ASSERT_TRUE(raft_fixture_step_until(
      &fixture_,
      [](struct raft_fixture* f, void* data) {
        const auto* a = static_cast<const After*>(data);
        return raft_fixture_get(f, a->server)->log.snapshot.last_index > a->index;
      },
      &after, kStepMaxMs))
      << "no snapshot after the swap";
  ASSERT_TRUE(StepUntilApplied(kServers, last));
  ExpectSameDigests(140);
}

TEST_F(FsmFixtureTest, UndecodableEntryHaltsApplyingLoudly) {
  StartCluster();
  raft_index good = Propose(1);
  ASSERT_TRUE(StepUntilApplied(kServers, good));
  raft_index bad = ProposeRaw(std::string(16, '\xff'));  // 8-aligned, but no valid frame
  raft_index after = Propose(2);
  raft_fixture_step_until_elapsed(&fixture_, 5'000);
  for (unsigned i = 0; i < kServers; ++i) {
    EXPECT_TRUE(replicas_[i].fsm->apply_halted()) << "server " << i;
    EXPECT_EQ(raft_last_applied(Raft(i)), bad - 1) << "server " << i;
    EXPECT_EQ(replicas_[i].store.FindKv(TestKey(2)), nullptr);
  }
  EXPECT_GT(after, bad);
}

// Decision 0062 on three replicas: libraft's apply only queues an entry, the
// Store changes when the turn ends (here: after every fixture step, as Node
// drains after every uv_run), snapshots and snapshot installs apply the queue
// first, and every replica ends with the same Store and the same indexes.
TEST_F(FsmFixtureTest, DeferredAppliesReachTheStoreAtTheTurnsEndInOrder) {
  for (Replica& replica : replicas_) replica.fsm->set_defer_applies(true);
  StartCluster(/*snapshot_threshold=*/32, /*snapshot_trailing=*/8);
  const auto& applies = deferred_applies_;
  auto propose = [&](int k) { ProposeDeferred(KvSetCommand(TestKey(k), OddValueSize(k), k)); };
  bool seen_queued = false;
  auto turn = [&] {
    raft_fixture_step(&fixture_);
    for (unsigned i = 0; i < kServers; ++i) {
      const Replica& replica = replicas_[i];
      if (replica.fsm->deferred_pending() > 0) {
        seen_queued = true;
        EXPECT_LT(replica.store.applied_index().value(), raft_last_applied(Raft(i)))
            << "a queued entry is not in the Store yet";
      }
    }
    EndTurn();
    for (const Replica& replica : replicas_) EXPECT_EQ(replica.fsm->deferred_pending(), 0u);
  };
  auto turn_until_applied = [&](unsigned server, raft_index index) {
    for (int steps = 0; steps < 200'000; ++steps) {
      bool all = true;
      for (unsigned i = 0; i < kServers; ++i) {
        if ((server == kServers || server == i) && raft_last_applied(Raft(i)) < index) all = false;
      }
      if (all) return true;
      turn();
    }
    return false;
  };

  for (int k = 0; k < 20; ++k) propose(k);
  ASSERT_TRUE(turn_until_applied(kServers, applies.back()->index));
  const unsigned lagging = (leader_ + 1) % kServers;
  raft_fixture_kill(&fixture_, lagging);
  for (int k = 20; k < 300; ++k) propose(k);
  ASSERT_TRUE(turn_until_applied(leader_, applies.back()->index));
  for (int steps = 0; steps < 200'000 && Raft(leader_)->log.snapshot.last_index <= 20; ++steps) {
    turn();
  }
  ASSERT_GT(Raft(leader_)->log.snapshot.last_index, 20u) << "a snapshot past the lagging log";
  raft_fixture_revive(&fixture_, lagging);
  ASSERT_TRUE(turn_until_applied(kServers, applies.back()->index));

  EXPECT_TRUE(seen_queued) << "applies were deferred at least once";
  EXPECT_GE(replicas_[lagging].fsm->restores(), 1u) << "caught up by InstallSnapshot";
  for (const auto& apply : applies) {
    ASSERT_TRUE(apply->done);
    ASSERT_EQ(apply->status, 0);
    ASSERT_TRUE(apply->result.has_value());
    EXPECT_TRUE(apply->result->status.ok());
    EXPECT_EQ(apply->result->index, LogIndex(apply->index)) << "each result is its own entry's";
  }
  ExpectSameDigests(300);
  for (unsigned i = 0; i < kServers; ++i) {
    EXPECT_EQ(replicas_[i].fsm->deferred_pending(), 0u);
    const state::KvEntry* last_key = replicas_[i].store.FindKv(TestKey(299));
    ASSERT_NE(last_key, nullptr);
    EXPECT_EQ(last_key->modify_index, LogIndex(applies.back()->index));
  }
}

// Two restores applied in one turn (their entries committed together): each
// raft_apply callback takes its own result at the turn's end, though both
// were applied inside fsm->apply (decision 0062).
TEST_F(FsmFixtureTest, DeferredAppliesGiveRestoresInOneTurnASlotEach) {
  for (Replica& replica : replicas_) replica.fsm->set_defer_applies(true);
  StartCluster();
  auto snapshot_with_keys = [](int n) {
    state::Store store;
    for (int k = 0; k < n; ++k) store.Apply(KvSetCommand(TestKey(k), 4, k), LogIndex(k + 1));
    std::string bytes;
    store.EncodeSnapshot(&bytes);
    return bytes;
  };
  std::vector<state::Command> commands(4);
  commands[0] = KvSetCommand(TestKey(100), 4, 100);
  commands[1].body = state::RestoreState{snapshot_with_keys(5)};
  commands[2].body = state::RestoreState{snapshot_with_keys(7)};
  commands[3] = KvSetCommand(TestKey(101), 4, 101);
  const auto& applies = deferred_applies_;
  for (const state::Command& command : commands) ProposeDeferred(command);  // one commit
  bool two_restores_in_one_turn = false;
  for (int steps = 0; steps < 200'000 && !applies.back()->done; ++steps) {
    raft_fixture_step(&fixture_);
    if (applies[1]->done && !applies[1]->result && applies[2]->done) {
      two_restores_in_one_turn = true;
    }
    EndTurn();
  }
  EXPECT_TRUE(two_restores_in_one_turn) << "the case this test is for";
  // A restore carries the Store's index past the log (decision 0024), so
  // the results' indexes are not the raft indexes; each is its own entry's
  // when they only grow.
  LogIndex previous;
  for (const auto& apply : applies) {
    ASSERT_TRUE(apply->done);
    ASSERT_EQ(apply->status, 0);
    ASSERT_TRUE(apply->result.has_value());
    EXPECT_TRUE(apply->result->status.ok()) << apply->result->status.ToString();
    EXPECT_GT(apply->result->index, previous) << "raft index " << apply->index;
    previous = apply->result->index;
  }
  EXPECT_EQ(replicas_[leader_].store.kv_count(), 8u) << "the second restore's 7 keys and one more";
}

}  // namespace
}  // namespace tenure::raft
