"""A follower forgets a leader whose raft connections closed (decision 0031).

Three `tenure server` processes on loopback. When every raft connection
between a follower and its leader closes under it (a leader killed with -9:
its kernel closes its sockets at once), the follower forgets that leader
(log line "node F forgot leader L of term T: ...") so that it grants a
survivor's pre-vote and vote at once, and brings its election timer forward.
These tests check that the mechanism fires and what it must not break; how
much faster a failover gets is bench/vs_leader_failover.py's to measure, so
nothing here asserts a duration (every wait is a poll with a deadline).

  - kill -9 of the leader: both survivors log that they forgot it, and one
    of them becomes leader (after its own "forgot" line);
  - the connections between a live leader and one follower closed (the test
    proxy closes both directions): the follower forgets the leader, learns
    it again from its next message, and the leader does not change;
  - every connection of a live leader closed (both followers forget it):
    the leader changes at most once, and then stays.
"""

import re
import time
import unittest

from raft_proxy import PartitionProxy
from tenure_testlib import Cluster, poll_until

# How long a settled cluster is watched for a further leader change: six
# maximal randomized election timeouts (2 x 500 ms), enough for a storm to
# show, bounded so the test ends.
STABLE_WATCH_S = 6.0


def forgotten_metric(member):
    """tenure_raft_leaders_forgotten_total from the member's /metrics."""
    return member.metric("tenure_raft_leaders_forgotten_total")


def forgot_lines(member, leader_id):
    pattern = re.compile(rf"node \d+ forgot leader {leader_id} of term (\d+): (.*); election timer")
    return [m for m in (pattern.search(line) for line in member.log().splitlines()) if m]


def leader_lines(member):
    """(line number, term) of each "is leader of term" line in member's log."""
    out = []
    for number, line in enumerate(member.log().splitlines()):
        m = re.search(r"node \d+ is leader of term (\d+)", line)
        if m:
            out.append((number, int(m.group(1))))
    return out


def log_length(member):
    return len(member.log().splitlines())


def new_leader_lines(members, marks):
    """"is leader of term" lines logged since `marks` (log lengths), all members."""
    return [(member, term) for member, mark in zip(members, marks)
            for number, term in leader_lines(member) if number >= mark]


def names(member):
    resp = member.request("GET", "/v1/status/leader", timeout=2.0)
    return resp.json() if resp.status == 200 else ""


def write_through(member, key):
    resp = member.request("PUT", f"/v1/kv/{key}", b"v", timeout=5.0)
    return resp.status == 200 and resp.text.strip() == "true"


def assert_leader_stays(test, cluster, leader):
    """All running members keep naming `leader` for STABLE_WATCH_S."""
    deadline = time.monotonic() + STABLE_WATCH_S
    polls = 0
    while time.monotonic() < deadline:
        for member in cluster.running():
            test.assertEqual(names(member), leader.raft_addr,
                             f"member {cluster.id_of(member)} stopped naming the leader\n"
                             + member.log_tail())
        polls += 1
        time.sleep(0.1)
    test.assertGreater(polls, 0)


class LeaderGoneTest(unittest.TestCase):
    def test_survivors_forget_a_killed_leader_and_elect_another(self):
        with Cluster(3) as cluster:
            leader = cluster.leader()
            old_id = cluster.id_of(leader)
            self.assertTrue(write_through(leader, "before"))
            survivors = [m for m in cluster.members if m is not leader]
            marks = [log_length(m) for m in survivors]
            leader.kill()
            new_leader = cluster.wait_leader(exclude=leader, timeout=30.0)
            self.assertIn(new_leader, survivors)
            for member, mark in zip(survivors, marks):
                poll_until(lambda m=member: forgot_lines(m, old_id), timeout=10.0,
                           message=f"member {cluster.id_of(member)} never forgot the killed "
                                   f"leader {old_id}:\n{member.log_tail()}")
                lines = member.log().splitlines()
                first_forgot = next(i for i, line in enumerate(lines)
                                    if i >= mark and f"forgot leader {old_id} of term" in line)
                reason = forgot_lines(member, old_id)[0].group(2)
                # The reason is a closed connection or a refused redial.
                self.assertRegex(reason, r"ended|connecting to it failed", reason)
                if member is new_leader:
                    became = [n for n, _ in leader_lines(member) if n >= mark]
                    self.assertTrue(became, member.log_tail())
                    self.assertLess(first_forgot, became[0],
                                    "the new leader won before it forgot the old one")
            self.assertTrue(poll_until(lambda: write_through(new_leader, "after"), timeout=10.0,
                                       message="no write through the new leader"))
            # The metric counts what the log says (docs/metrics.md).
            for member in survivors:
                self.assertGreaterEqual(forgotten_metric(member), 1, member.log_tail())

    def test_closing_one_followers_links_keeps_the_leader(self):
        proxy = PartitionProxy()
        with Cluster(3, proxy=proxy) as cluster:
            leader = cluster.leader()
            leader_id = cluster.id_of(leader)
            follower = next(m for m in cluster.members if m is not leader)
            follower_id = cluster.id_of(follower)
            self.assertTrue(write_through(follower, "before"))
            marks = [log_length(m) for m in cluster.members]
            forgot_before = len(forgot_lines(follower, leader_id))
            self.assertGreater(proxy.reset(leader_id, follower_id), 0)
            poll_until(lambda: len(forgot_lines(follower, leader_id)) > forgot_before,
                       timeout=10.0,
                       message="the follower never forgot the leader whose links closed:\n"
                               + follower.log_tail())
            # It learns the live leader again from its next message.
            poll_until(lambda: names(follower) == leader.raft_addr, timeout=10.0,
                       message="the follower never named the leader again")
            self.assertTrue(poll_until(lambda: write_through(follower, "after"), timeout=10.0,
                                       message="no write through the follower"))
            assert_leader_stays(self, cluster, leader)
            # The other follower kept the leader, so no pre-vote could win:
            # nobody became leader since, in any term.
            self.assertEqual(new_leader_lines(cluster.members, marks), [],
                             "\n".join(m.log_tail(20) for m in cluster.members))

    def test_closing_all_of_a_live_leaders_links_changes_the_leader_at_most_once(self):
        proxy = PartitionProxy()
        with Cluster(3, proxy=proxy) as cluster:
            leader = cluster.leader()
            leader_id = cluster.id_of(leader)
            followers = [m for m in cluster.members if m is not leader]
            self.assertTrue(write_through(leader, "before"))
            marks = [log_length(m) for m in cluster.members]
            counts = [len(forgot_lines(m, leader_id)) for m in followers]
            closed = sum(proxy.reset(leader_id, cluster.id_of(m)) for m in followers)
            self.assertGreater(closed, 0)
            for member, count in zip(followers, counts):
                poll_until(lambda m=member, c=count: len(forgot_lines(m, leader_id)) > c,
                           timeout=10.0,
                           message=f"member {cluster.id_of(member)} never forgot the leader:\n"
                                   + member.log_tail())
            settled = cluster.wait_leader(timeout=30.0)
            self.assertTrue(poll_until(lambda: write_through(settled, "after"), timeout=10.0,
                                       message="no write after the links closed"))
            assert_leader_stays(self, cluster, settled)
            changes = new_leader_lines(cluster.members, marks)
            self.assertLessEqual(len(changes), 1,
                                 "\n".join(m.log_tail(20) for m in cluster.members))
            if settled is leader:
                self.assertEqual(changes, [])
            else:
                self.assertEqual([m for m, _ in changes], [settled])


if __name__ == "__main__":
    unittest.main()
