// Checkpoint commands: replicas compared at run time. Every replica records
// its digest at each checkpoint; the next checkpoint carries the leader's
// record and a replica whose own record differs reports the divergence.
#include <gtest/gtest.h>

#include <string>

#include "state/store.h"

namespace tenure::state {
namespace {

// Applies the leader's next checkpoint to every store in `replicas`, built
// from `leader`'s record as Server::ProposeCheckpoint does.
void CheckpointAll(Store& leader, std::initializer_list<Store*> replicas, std::uint64_t index) {
  const Store::CheckpointRecord record = leader.checkpoint();
  for (Store* s : replicas) {
    (void)s->Apply({ClusterMs(static_cast<std::int64_t>(index)),
                    state::Checkpoint{record.index, record.digest}},
                   LogIndex(index));
  }
}

TEST(StoreCheckpointTest, EqualReplicasNeverReportAndRecordTheirDigest) {
  Store a, b;
  for (Store* s : {&a, &b}) {
    (void)s->Apply({ClusterMs(1), KvSet{"k", "v", 0}}, LogIndex(1));
  }
  CheckpointAll(a, {&a, &b}, 2);
  EXPECT_EQ(a.checkpoint().index, LogIndex(2));
  EXPECT_EQ(a.checkpoint().digest, b.checkpoint().digest);
  EXPECT_NE(a.checkpoint().digest, 0u);
  for (Store* s : {&a, &b}) (void)s->Apply({ClusterMs(3), KvSet{"k", "w", 0}}, LogIndex(3));
  CheckpointAll(a, {&a, &b}, 4);
  EXPECT_EQ(a.divergence(), "");
  EXPECT_EQ(b.divergence(), "");
  // A checkpoint changes no state a client sees, and leaves equal digests.
  EXPECT_EQ(a.Digest(), b.Digest());
  EXPECT_EQ(a.FindKv("k")->modify_index, LogIndex(3));
  a.CheckInvariants();
}

TEST(StoreCheckpointTest, AReplicaWhoseStateDifferedReportsItAtTheNextCheckpoint) {
  Store leader, follower;
  (void)leader.Apply({ClusterMs(1), KvSet{"k", "v", 0}}, LogIndex(1));
  (void)follower.Apply({ClusterMs(1), KvSet{"k", "x", 0}},
                       LogIndex(1));               // the same entry applied differently
  CheckpointAll(leader, {&leader, &follower}, 2);  // records, nothing to compare yet
  EXPECT_EQ(follower.divergence(), "");
  CheckpointAll(leader, {&leader, &follower}, 3);
  EXPECT_EQ(leader.divergence(), "");
  ASSERT_NE(follower.divergence(), "");
  EXPECT_NE(follower.divergence().find("at the checkpoint of entry 2 this replica's state has "
                                       "digest "),
            std::string::npos)
      << follower.divergence();
  // Sticky: later checkpoints do not clear it.
  const std::string first = follower.divergence();
  CheckpointAll(leader, {&leader, &follower}, 4);
  EXPECT_EQ(follower.divergence(), first);
}

// A write followed by silence is still compared: the checkpoint after it
// records an unchecked state, so one more is due; after that, none.
TEST(StoreCheckpointTest, TheLastWriteBeforeSilenceIsStillCompared) {
  Store leader, follower;
  EXPECT_FALSE(leader.CheckpointDue());
  (void)leader.Apply({ClusterMs(1), KvSet{"k", "v", 0}}, LogIndex(1));
  (void)follower.Apply({ClusterMs(1), KvSet{"k", "x", 0}}, LogIndex(1));
  EXPECT_TRUE(leader.CheckpointDue());
  CheckpointAll(leader, {&leader, &follower}, 2);
  EXPECT_EQ(leader.applied_index(), leader.checkpoint().index);
  ASSERT_TRUE(leader.CheckpointDue());  // the state at 2 is not compared yet
  EXPECT_EQ(follower.divergence(), "");
  CheckpointAll(leader, {&leader, &follower}, 3);
  EXPECT_NE(follower.divergence(), "");
  EXPECT_FALSE(leader.CheckpointDue());  // idle: nothing new to compare
}

TEST(StoreCheckpointTest, NothingIsComparedWithoutARecordOfThatIndex) {
  Store leader;
  (void)leader.Apply({ClusterMs(1), KvSet{"k", "v", 0}}, LogIndex(1));
  CheckpointAll(leader, {&leader}, 2);
  // A replica restored from a snapshot taken after the checkpoint never
  // recorded it: it compares nothing until it has a record of its own.
  std::string bytes;
  leader.EncodeSnapshot(&bytes);
  Result<Store> restored = Store::DecodeSnapshot(bytes);
  ASSERT_TRUE(restored.ok());
  EXPECT_EQ(restored->checkpoint().index, LogIndex());
  EXPECT_EQ(restored->Digest(), leader.Digest());  // the record is not state
  (void)restored->Apply({ClusterMs(3), state::Checkpoint{LogIndex(2), 12345}}, LogIndex(3));
  EXPECT_EQ(restored->divergence(), "");
  // Nor is a checkpoint that names another index than the replica's last
  // record (here 3).
  (void)restored->Apply({ClusterMs(4), state::Checkpoint{LogIndex(2), 999}}, LogIndex(4));
  EXPECT_EQ(restored->divergence(), "");
}

}  // namespace
}  // namespace tenure::state
