// A follower holding entries of an older term beyond what a new leader sent
// it must not count towards that leader's quorum for those indexes
// (docs/simulation.md, "A stale follower's entries counted as matched").
//
// libraft 0.15 answers an AppendEntries it can accept without writing with
// its whole stored log's last index, not prevLogIndex + entries, and the
// leader takes that as the follower's match index (capped only by its own
// last index). A follower with stale entries at those indexes then completes
// a quorum for entries it does not hold: two replicas apply different
// commands at one index. raft::AppendResultGuard makes the follower report
// what Raft defines; the first test fails without it, the second shows it.
#include <fmt/core.h>
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "raft/cluster_fixture.h"

namespace tenure::sim {
namespace {

using testing::ClusterTest;
using testing::kElectMaxMs;

void Link(Cluster& cluster, unsigned i, unsigned j, bool up) {
  cluster.Cut(i, j, !up);
  cluster.Cut(j, i, !up);
}

class ClusterStaleFollowerTest : public ClusterTest {
 protected:
  // Leader a appends entries only it holds; b is elected without it, and
  // a's answer to b's first heartbeat is the only answer b gets before it
  // commits a write; then b vanishes and a leads. Returns the index of b's
  // write. Seed 877000544 of tenure_sim (--steps 6000 --pause-max-ms 60000)
  // is this sequence, reached through disk errors and restarts.
  LogIndex RunScenario(ClusterOptions options) {
    a_ = StartCluster(std::move(options));  // the leader that will hold stale entries
    b_ = (a_ + 1) % 3;                      // the next leader
    c_ = (a_ + 2) % 3;                      // lags, and elects whoever has more
    MustWrite(a_, state::KvSet{"kv/x", "committed-1", 0});

    // c falls behind; a and b commit more.
    cluster().Isolate(c_, true);
    MustWrite(a_, state::KvSet{"kv/x", "committed-2", 0});

    // a, cut off, appends entries nobody else has and it cannot commit.
    cluster().Isolate(a_, true);
    for (int k = 1; k <= 3; ++k) {
      cluster().Propose(a_, state::KvSet{"kv/x", "stale-" + std::to_string(k), 0});
    }
    cluster().Advance(100);  // written to a's disk

    // b and c elect b (its log is longer than c's; a does not vote).
    Link(cluster(), b_, c_, true);
    EXPECT_TRUE(
        cluster().StepUntil([&] { return cluster().raft(b_)->state == RAFT_LEADER; }, kElectMaxMs));
    // b has just sent its first heartbeats (no entries; prevLogIndex is the
    // last index a and b share) and appended its leadership barrier. Before
    // they are delivered: b proposes, c stops hearing from b (so only a can
    // complete b's quorum), and a hears from b.
    std::shared_ptr<Outcome> write = cluster().Propose(b_, state::KvSet{"kv/x", "from-b", 0});
    Link(cluster(), b_, c_, false);
    Link(cluster(), a_, b_, true);
    EXPECT_TRUE(cluster().Await(write, 10'000)) << cluster().history().Tail(20);
    EXPECT_TRUE(write->result.ok()) << write->result.status().ToString();
    LogIndex b_index = server(b_).store().applied_index();

    // b vanishes at once; a and c elect a, which commits whatever its log
    // holds at b's index.
    cluster().Isolate(b_, true);
    Link(cluster(), a_, c_, true);
    EXPECT_TRUE(cluster().StepUntil(
        [&] {
          return cluster().checkers().failed() ||
                 (cluster().ReadyLeader() == a_ && server(a_).store().applied_index() >= b_index);
        },
        kElectMaxMs))
        << cluster().history().Tail(20);
    return b_index;
  }

  unsigned a_ = 0;
  unsigned b_ = 0;
  unsigned c_ = 0;
};

TEST_F(ClusterStaleFollowerTest, NewLeaderNeverCountsAFollowersStaleEntriesAsMatched) {
  ClusterOptions options;
  options.servers = 3;
  RunScenario(options);
  ASSERT_FALSE(cluster().checkers().failed()) << cluster().checkers().failure();
  cluster().HealNetwork();
  ExpectConverged(a_);
  for (unsigned i = 0; i < cluster().size(); ++i) {
    EXPECT_EQ(server(i).store().FindKv("kv/x")->value, "from-b") << "server " << i;
  }
}

// The same through a write that completes late. f holds o's entries in
// memory while its disk stalls, learns of a new leader l from its first
// heartbeat (nothing to write, and nothing truncated), and only then does
// the write complete: libraft reports that write's success to l, the leader
// it knows now, with its last stored index. l counts f towards a quorum for
// l's own entries at those indexes; o or f leads next and applies o's.
TEST_F(ClusterStaleFollowerTest, LateWriteOfAnOldLeadersEntriesIsNotReportedToTheNewLeader) {
  ClusterOptions options;
  options.servers = 5;
  unsigned o = StartCluster(options);
  unsigned f = (o + 1) % 5;
  MustWrite(o, state::KvSet{"kv/x", "committed", 0});
  ExpectConverged(o);
  std::vector<unsigned> rest;
  for (unsigned i = 0; i < 5; ++i) {
    if (i != o && i != f) rest.push_back(i);
  }

  // o and f are cut off from the rest; f's disk stalls with o's entries.
  cluster().Partition({o, f});
  cluster().disk(f).HoldAppends();
  for (int k = 1; k <= 3; ++k) {
    cluster().Propose(o, state::KvSet{"kv/x", "stale-" + std::to_string(k), 0});
  }
  ASSERT_TRUE(cluster().StepUntil([&] { return cluster().disk(f).held_appends() > 0; }, 1'000));

  // The rest elect l. Its first heartbeats are on their way: d will get
  // nothing more from l, c everything, f only that heartbeat.
  std::optional<unsigned> elected;
  ASSERT_TRUE(cluster().StepUntil(
      [&] {
        for (unsigned i : rest) {
          if (cluster().raft(i)->state == RAFT_LEADER) elected = i;
        }
        return elected.has_value();
      },
      kElectMaxMs));
  unsigned l = *elected;
  unsigned d = rest[0] != l ? rest[0] : rest[1];
  std::uint64_t l_term = cluster().raft(l)->current_term;
  std::shared_ptr<Outcome> write = cluster().Propose(l, state::KvSet{"kv/x", "from-l", 0});
  cluster().Cut(l, d, true);
  Link(cluster(), l, f, true);
  ASSERT_TRUE(
      cluster().StepUntil([&] { return cluster().raft(f)->current_term == l_term; }, 1'000));
  cluster().Cut(l, f, true);
  // f's write of o's entries completes now, with l as its leader.
  cluster().disk(f).ReleaseAppends();
  cluster().Advance(200);

  // l and c vanish; o, f and d elect o or f, which holds o's entries.
  for (unsigned i : rest) {
    if (i != d) cluster().Isolate(i, true);
  }
  cluster().Cut(o, d, false);
  cluster().Cut(d, o, false);
  cluster().Cut(f, d, false);
  cluster().Cut(d, f, false);
  ASSERT_TRUE(cluster().StepUntil(
      [&] {
        std::optional<unsigned> leader = cluster().ReadyLeader();
        return cluster().checkers().failed() ||
               (leader && (*leader == o || *leader == f) &&
                server(*leader).store().FindKv("kv/x")->value == "stale-3");
      },
      kElectMaxMs))
      << cluster().history().Tail(20);
  ASSERT_FALSE(cluster().checkers().failed()) << cluster().checkers().failure();
  EXPECT_FALSE(write->done && write->result.ok()) << "l's write committed without a majority";

  cluster().HealNetwork();
  ExpectConverged(*cluster().ReadyLeader());
}

// What the guard prevents: libraft 0.15 alone commits b's write on a's word,
// and a then applies its own stale entry at the same index. If this starts
// failing, libraft no longer has the bug (append_result_guard.h).
TEST_F(ClusterStaleFollowerTest, LibraftAloneCommitsOnAStaleFollowersWord) {
  ClusterOptions options;
  options.servers = 3;
  options.TEST_without_append_result_guard = true;
  LogIndex b_index = RunScenario(options);
  violation_expected_ = true;
  ASSERT_TRUE(cluster().checkers().failed());
  EXPECT_NE(cluster().checkers().failure().find(fmt::format("at index {}", b_index.value())),
            std::string::npos)
      << cluster().checkers().failure();
}

}  // namespace
}  // namespace tenure::sim
