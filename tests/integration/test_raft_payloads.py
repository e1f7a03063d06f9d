"""What a process posing as a member can send a member: real 3-server keyless
clusters (-dev, where keyless needs no -raft-insecure-keyless), attacked over
TCP with tests/lib/raft_wire.py. A keyless cluster trusts the network, so the
stranger is admitted as the member it names; what protects the members is
the message gate (src/raft/wire/message_gate.h), which runs the same with a
key or mutual TLS, against members too.

Before the gate checked these, each one below hurt a member:
- an InstallSnapshot whose data is 64 bytes of garbage segfaulted every
  follower in libraft, and on restart each refused its data dir ("the newest
  snapshot's data is damaged"): now its data must decode as a valid tenure
  snapshot before libraft gets a byte of the message;
- a message trickled a byte at a time held what libraft had buffered for it
  as long as the stranger liked (each byte reset a 30 s stall timer): now a
  message must be whole by a deadline from its first byte;
- every connection could hold a message in progress of up to 1 GiB: now all
  connections together hold at most the inbound budget;
- RequestVotes were counted per connection, so a new connection per vote
  passed them all: now they are counted per member.

The members run with the deadline and the budget shrunk
(TENURE_TEST_RAFT_MESSAGE_TIME_MS, TENURE_TEST_RAFT_INBOUND_BYTES_MAX;
docs/limits.md has the real values) so that each case takes seconds.
"""

import time
import unittest

from raft_wire import (ENTRY_COMMAND, append_entries, configuration, impersonate,
                       install_snapshot_header, kv_set_entry, request_vote, tenure_snapshot)
from tenure_testlib import Cluster, poll_until, rss_mib

MiB = 1024 * 1024
MESSAGE_TIME_MS = 2000
INBOUND_BYTES_MAX = 64 * MiB
MESSAGE_BYTES_PER_S_MIN = 4 * MiB  # limits::kRaftMessageBytesPerSecondMin
VOTES_PER_WINDOW = 4  # limits::kRaftVotesPerElectionTimeoutMax, per 500 ms election timeout


def raft_stats(member):
    return member.get_json("/v1/agent/self")["Stats"]["raft"]


def counter(member, name):
    return int(raft_stats(member)[name])


def rss(member):
    """The member's VmRSS in bytes (exact: /proc counts KiB)."""
    return int(rss_mib(member.process.pid) * 1024) * 1024


def entries_of(count, value_bytes):
    """count KvSet entries of value_bytes each: well-formed commands, which
    the gate passes on one by one."""
    return [(ENTRY_COMMAND, kv_set_entry(f"payload/{i}", b"v" * value_bytes)) for i in range(count)]


class RaftPayloadsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.cluster = Cluster(3, keyed=False)
        for member in cls.cluster.members:
            member.env.update({"TENURE_TEST_RAFT_MESSAGE_TIME_MS": str(MESSAGE_TIME_MS),
                               "TENURE_TEST_RAFT_INBOUND_BYTES_MAX": str(INBOUND_BYTES_MAX)})
        cls.cluster.__enter__()

    @classmethod
    def tearDownClass(cls):
        cls.cluster.__exit__(None, None, None)

    def setUp(self):
        self.leader = self.cluster.leader()
        self.followers = [m for m in self.cluster.members if m is not self.leader]

    def impersonate(self, target, claimed):
        """An accepted raft connection to `target` claiming to be `claimed`."""
        return impersonate(self, self.cluster, target, claimed)

    def assert_unharmed(self):
        for member in self.cluster.members:
            self.assertIsNone(member.process.poll(), f"{member.http_addr} died:\n{member.log()}")
            stats = raft_stats(member)
            self.assertEqual((stats["restarts"], stats["last_failure"]), ("0", ""),
                             f"{member.http_addr}'s raft restarted:\n{member.log_tail()}")
        leader = self.cluster.wait_leader(timeout=10)
        resp = leader.request("PUT", "/v1/kv/after-attack", str(time.time()))
        self.assertEqual((resp.status, resp.json()), (200, True))

    def test_a_snapshot_that_is_not_a_tenure_snapshot_never_reaches_libraft(self):
        """The crash: 64 bytes of garbage as the data of an InstallSnapshot of
        the current term, from the leader's id, to each follower. Then a
        restart of each follower, which refused its data dir after the crash."""
        term = int(raft_stats(self.leader)["term"])
        applied = int(raft_stats(self.leader)["applied_index"])
        conf = configuration([(self.cluster.id_of(m), m.raft_addr, 1)
                              for m in self.cluster.members])
        garbage = install_snapshot_header(64, conf, term=term, last_index=applied + 1000,
                                          last_term=term, conf_index=1) + b"\x5a" * 64
        # A valid snapshot whose header the gate refuses (its configuration
        # after its last index): the data alone decides nothing.
        data = tenure_snapshot(applied_index=applied + 1000)
        bad_header = install_snapshot_header(len(data), conf, term=term,
                                             last_index=applied + 1000, last_term=term,
                                             conf_index=applied + 1001) + data
        for follower in self.followers:
            cut_before = counter(follower, "transport_connections_cut")
            for payload in (garbage, bad_header):
                with self.impersonate(follower, self.leader) as wire:
                    wire.send(payload)
                    self.assertTrue(wire.closed_by_peer(5), f"{follower.http_addr}: not cut")
            self.assertGreaterEqual(counter(follower, "transport_connections_cut"),
                                    cut_before + 2)
            self.assertIn("is not a valid tenure snapshot: snapshot: bad magic", follower.log())
        self.assert_unharmed()
        # Nothing reached their data dirs: each restarts as it was.
        for follower in self.followers:
            follower.stop()
            follower.start()
            self.assertNotIn("damaged", follower.log())
            poll_until(lambda: follower.request("GET", "/v1/kv/after-attack?stale").status == 200,
                       timeout=10, message=f"{follower.http_addr} did not catch up")
        self.assert_unharmed()

    def test_a_message_trickled_a_byte_at_a_time_is_cut_at_its_deadline(self):
        """An AppendEntries that declares a 1 MiB entry, then one byte every
        half second: never a pause of more than half a second, so a per-byte
        stall timer never fired. Its deadline is the message time plus its
        size at the minimum rate."""
        target, claimed = self.leader, self.followers[0]
        header = append_entries(term=1, entries=[(ENTRY_COMMAND, MiB)])
        deadline_s = (MESSAGE_TIME_MS / 1000 + (len(header) + MiB) / MESSAGE_BYTES_PER_S_MIN)
        cut_before = counter(target, "transport_connections_cut")
        with self.impersonate(target, claimed) as wire:
            started = time.monotonic()
            self.assertTrue(wire.send(header))
            cut_after = None
            while time.monotonic() - started < deadline_s + 6:
                if wire.closed_by_peer(0.5):
                    cut_after = time.monotonic() - started
                    break
                wire.send(b"x")
        self.assertIsNotNone(cut_after, f"a trickle held its message for {deadline_s + 6:.1f} s")
        print(f"trickled message cut after {cut_after:.1f} s (deadline {deadline_s:.2f} s)",
              flush=True)
        self.assertGreaterEqual(cut_after, deadline_s - 0.1)
        self.assertGreater(counter(target, "transport_connections_cut"), cut_before)
        self.assertIn("was not whole", target.log())
        self.assert_unharmed()

    def test_messages_in_progress_are_bounded_on_all_connections_together(self):
        """Two connections posing as the two other members each send 48 MiB
        of a 48.5 MiB AppendEntries (entries of 512 KiB values) and keep it
        open: the second passes the 64 MiB budget and is cut; what libraft
        buffered stays within it."""
        target = self.followers[0]
        others = [m for m in self.cluster.members if m is not target]
        entries = entries_of(97, 512 * 1024 - 64)
        messages = [append_entries(term=1, entries=entries) for _ in others]
        sent_bytes = len(messages[0]) - len(entries[-1][1])  # all but the last entry
        before = rss(target)
        cut_before = counter(target, "transport_connections_cut")
        wires = [self.impersonate(target, other) for other in others]
        try:
            self.assertTrue(wires[0].send(messages[0][:sent_bytes]))
            self.assertFalse(wires[0].closed_by_peer(0.5), "the first message was cut")
            wires[1].send(messages[1][:sent_bytes])
            self.assertTrue(wires[1].closed_by_peer(5),
                            "the second connection passed the budget and was not cut")
            self.assertFalse(wires[0].closed_by_peer(0.2), "the first message was cut")
            grown = rss(target) - before
            print(f"RSS grew {grown / MiB:.0f} MiB with {2 * sent_bytes / MiB:.0f} MiB sent "
                  f"(budget {INBOUND_BYTES_MAX // MiB} MiB)", flush=True)
            self.assertLess(grown, INBOUND_BYTES_MAX + 16 * MiB)
        finally:
            for wire in wires:
                wire.close()
        self.assertGreater(counter(target, "transport_connections_cut"), cut_before)
        self.assertIn("raft messages in progress that all connections together may hold",
                      target.log())
        self.assert_unharmed()

    def test_votes_on_a_new_connection_each_are_counted_per_member(self):
        """Stale RequestVotes (libraft refuses them), four on each of 40 new
        connections to each member, all claiming one follower: at most
        VOTES_PER_WINDOW per election timeout pass, whatever the number of
        connections."""
        for target in self.cluster.members:
            claimed = next(m for m in self.followers if m is not target)
            vote = request_vote(term=1, candidate=self.cluster.id_of(claimed))
            dropped_before = counter(target, "transport_votes_dropped")
            started = time.monotonic()
            for _ in range(40):
                with self.impersonate(target, claimed) as wire:
                    wire.send(vote * 4)
                    wire.closed_by_peer(0.01)
            elapsed = time.monotonic() - started
            # What may pass: VOTES_PER_WINDOW in each 500 ms window begun.
            allowed = VOTES_PER_WINDOW * (int(elapsed / 0.5) + 2)
            poll_until(lambda: counter(target, "transport_votes_dropped") - dropped_before
                       >= 160 - allowed, timeout=5,
                       message=f"{target.http_addr}: fewer votes dropped than 160 - {allowed}")
            print(f"{target.http_addr}: "
                  f"{counter(target, 'transport_votes_dropped') - dropped_before} of 160 votes "
                  f"dropped in {elapsed:.1f} s", flush=True)
        self.assert_unharmed()


if __name__ == "__main__":
    unittest.main()
