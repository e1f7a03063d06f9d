"""Strangers on the raft port (docs/security.md, decisions 0012 and 0040): real 3-server clusters, attacked
over TCP with tests/lib/raft_wire.py, keep one leader, their data, their
write rate and their memory.

Against the old server (libraft's own transport) three 104-byte messages
crashed every member, a forged AppendEntries committed a KV write, a
RequestVote flood cut writes to 1-4% with most failing, and two declared
255 MiB messages pinned 516 MiB. Now every connection starts with tenure's
handshake (src/raft/wire/handshake.h) and every libraft message passes the
MessageGate (src/raft/wire/message_gate.h) first.

- Keyed cluster (the production setup): a stranger without the key, or with
  a wrong one, is refused at the handshake for raft and join, and nothing it
  sends after it (pipelined, as an attacker would) or instead of it reaches
  libraft: no restart, no forged key, the same leader, writes go on.
- Keyless cluster: the transport trusts the network. The handshake only
  checks that the dialer names a server of the configuration at its
  configured address, which anyone on loopback can claim; so a stranger who
  does is treated as that member and what is guaranteed is only what the
  gate enforces: malformed, oversized and undecodable messages cut the
  connection before libraft sees them, votes are rate limited, and an id
  that is not in the configuration is refused.
- A thousand idle or half-hello connections from one host hold at most
  kRaftHandshakesPerHostMax (16) descriptors for at most
  kRaftHandshakeTimeoutMs (5 s).
- A server started with -join and a different key never joins.
"""

import os
import resource
import socket
import threading
import time
import unittest

from raft_wire import (APPEND_ENTRIES, ENTRY_COMMAND, PURPOSE_JOIN, PURPOSE_RAFT, REQUEST_VOTE,
                       RaftWire, append_entries, configuration, frame_entry, hello_bytes, impersonate,
                       install_snapshot_header, kv_set_entry, load_key, message, request_vote)
from tenure_testlib import (Cluster, DevServer, free_port, generate_cluster_key, poll_until,
                            rss_mib, write_secret)

MiB = 1024 * 1024
RSS_LIMIT = 200 * MiB
HANDSHAKES_MAX = 64          # limits::kRaftHandshakesMax
HANDSHAKES_PER_HOST_MAX = 16  # limits::kRaftHandshakesPerHostMax (all of ours come from 127.0.0.1)
HANDSHAKE_TIMEOUT_S = 5.0    # limits::kRaftHandshakeTimeoutMs
REFUSALS_LOGGED_PER_MINUTE = 20  # Transport::Impl::refusal_log
FORGED_KEY = "stranger/x"


def rss(member):
    """The member's VmRSS in bytes (exact: /proc counts KiB)."""
    return int(rss_mib(member.process.pid) * 1024) * 1024


def open_fds(member):
    return len(os.listdir(f"/proc/{member.process.pid}/fd"))


def raft_stats(member):
    return member.get_json("/v1/agent/self")["Stats"]["raft"]


def counter(member, name):
    return int(raft_stats(member)[name])


def refusal_lines(member):
    return [line for line in member.log().splitlines() if "refused a raft connection" in line]


class Writer:
    """PUTs to the leader in a loop on its own thread; counts what succeeded."""

    def __init__(self, leader):
        self.leader = leader
        self.ok = self.failed = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        i = 0
        while not self.stop.is_set():
            i += 1
            try:
                resp = self.leader.request("PUT", f"/v1/kv/writer/{i % 50}", str(i), timeout=5)
                good = resp.status == 200 and resp.json() is True
            except OSError:
                good = False
            if good:
                self.ok += 1
            else:
                self.failed += 1

    def __enter__(self):
        self.started = time.monotonic()
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join()
        self.elapsed = time.monotonic() - self.started
        return False

    def check(self, test, what):
        total = self.ok + self.failed
        rate = self.ok / self.elapsed
        print(f"{what}: {self.ok}/{total} writes succeeded, {rate:.0f}/s", flush=True)
        test.assertGreaterEqual(self.ok, 0.9 * total, f"{what}: writes failed")
        test.assertGreater(rate, 20, f"{what}: writes crawled")


class StrangerChecks:
    """What every attack must leave as it was."""

    def assert_cluster_unharmed(self, cluster, leader):
        for member in cluster.members:
            self.assertIsNone(member.process.poll(), f"{member.http_addr} died:\n{member.log()}")
            stats = raft_stats(member)
            self.assertEqual((stats["restarts"], stats["last_failure"]), ("0", ""),
                             f"{member.http_addr}'s raft restarted:\n{member.log()}")
            self.assertLess(rss(member), RSS_LIMIT, f"{member.http_addr}'s RSS")
            resp = member.request("GET", f"/v1/kv/{FORGED_KEY}?stale")
            self.assertEqual(resp.status, 404, f"{member.http_addr} holds the forged key: {resp}")
        print("RSS: " + ", ".join(f"{rss(m) / MiB:.0f} MiB" for m in cluster.members), flush=True)
        self.assertIs(cluster.wait_leader(timeout=5), leader, "the leader changed")
        resp = leader.request("PUT", "/v1/kv/after-attack", "1")
        self.assertEqual((resp.status, resp.json()), (200, True))


def forged_write(applied_index):
    """The best forgery a stranger can build from what the HTTP API says
    (sent claiming the leader's id): AppendEntries carrying a well-formed KvSet for
    FORGED_KEY after the latest index, for a few likely terms. Had it reached
    libraft (as on the old server), a member would append it, or restart raft
    on the conflict (tried with the real key: it restarts)."""
    messages = b""
    for term in range(1, 5):
        for prev in range(applied_index, applied_index + 3):
            messages += append_entries(term=term, prev_index=prev, prev_term=term,
                                       commit=prev + 1,
                                       entries=[(ENTRY_COMMAND, kv_set_entry(FORGED_KEY, "pwned"))])
    return messages


# The entry that crashed a cluster before decision 0012: one entry of type 0.
TYPE_ZERO_ENTRY = append_entries(term=1 << 20, entries=[(0, bytes(8))])
GARBAGE = os.urandom(4096)


def huge_snapshot(cluster):
    conf = configuration([(i + 1, m.raft_addr, 1) for i, m in enumerate(cluster.members)])
    return install_snapshot_header(255 * MiB, conf, term=1 << 20)


class KeyedStrangersTest(unittest.TestCase, StrangerChecks):
    @classmethod
    def setUpClass(cls):
        cls.cluster = Cluster(3).__enter__()
        cls.key = load_key(cls.cluster.key_file)
        cls.wrong_key = load_key(generate_cluster_key())

    @classmethod
    def tearDownClass(cls):
        cls.cluster.__exit__(None, None, None)

    def setUp(self):
        self.leader = self.cluster.leader()
        self.leader_id = self.cluster.id_of(self.leader)

    def member_id(self, member):
        return self.cluster.id_of(member)

    def claim(self, member):
        """An id and address a stranger claims when dialling `member`: the
        leader's, or a follower's when dialling the leader."""
        other = self.leader if member is not self.leader else \
            next(m for m in self.cluster.members if m is not member)
        return self.cluster.id_of(other), other.raft_addr

    def test_handshake_without_the_key_is_refused(self):
        before = {m.http_addr: counter(m, "transport_handshakes_refused")
                  for m in self.cluster.members}
        for member in self.cluster.members:
            node_id, address = self.claim(member)
            for purpose in (PURPOSE_RAFT, PURPOSE_JOIN):
                for key, stage, reason in [(None, "challenge", "requires a cluster key"),
                                           (self.wrong_key, "verdict", "bad cluster key")]:
                    with RaftWire.dial(member.raft_addr) as wire:
                        verdict = wire.handshake(key=key, node_id=node_id, raft_address=address,
                                                 purpose=purpose, pipelined=TYPE_ZERO_ENTRY)
                        what = (member.http_addr, purpose, key is not None)
                        self.assertFalse(verdict.accepted, what)
                        self.assertEqual(verdict.stage, stage, what)
                        self.assertIn(reason, verdict.reason, what)
                        self.assertTrue(wire.closed_by_peer(5), f"{what}: not closed")
            # The right key is accepted: the refusals above are the key's doing.
            with RaftWire.dial(member.raft_addr) as wire:
                verdict = wire.handshake(key=self.key, node_id=node_id, raft_address=address)
                self.assertTrue(verdict.accepted, verdict)
        for member in self.cluster.members:
            self.assertGreaterEqual(counter(member, "transport_handshakes_refused"),
                                    before[member.http_addr] + 4)
            self.assertTrue(any("bad cluster key" in line for line in refusal_lines(member)))
        self.assert_cluster_unharmed(self.cluster, self.leader)

    def test_attacks_without_the_key_reach_nothing(self):
        applied = int(self.leader.request("GET", "/v1/kv/?keys").header("X-Consul-Index"))
        payloads = [TYPE_ZERO_ENTRY, forged_write(applied),
                    huge_snapshot(self.cluster), GARBAGE]
        before = {m.http_addr: counter(m, "transport_handshakes_refused")
                  for m in self.cluster.members}
        lines_before = {m.http_addr: len(refusal_lines(m)) for m in self.cluster.members}
        votes_sent = 0
        with Writer(self.leader) as writer:
            for member in self.cluster.members:
                node_id, address = self.claim(member)
                for payload in payloads:
                    # Pipelined after a keyless hello, after a wrong key's proof, and raw.
                    for key in (None, self.wrong_key):
                        with RaftWire.dial(member.raft_addr) as wire:
                            verdict = wire.handshake(key=key, node_id=node_id,
                                                     raft_address=address, pipelined=payload)
                            self.assertFalse(verdict.accepted)
                            self.assertTrue(wire.closed_by_peer(5))
                    with RaftWire.dial(member.raft_addr) as wire:
                        wire.send(payload)
                        self.assertTrue(wire.closed_by_peer(5))
            # A disrupt-leader vote flood: 60 a second to every member for 3 s,
            # each on a fresh connection with a wrong key (a refused
            # connection carries nothing further).
            start = time.monotonic()
            while time.monotonic() - start < 3.0:
                tick = time.monotonic()
                for member in self.cluster.members:
                    node_id, address = self.claim(member)
                    vote = request_vote(term=1 << 20, candidate=node_id, last_index=1 << 30,
                                        last_term=1 << 20, disrupt_leader=True)
                    with RaftWire.dial(member.raft_addr) as wire:
                        wire.handshake(key=self.wrong_key, node_id=node_id, raft_address=address,
                                       pipelined=vote * 4)
                    votes_sent += 1
                time.sleep(max(0.0, 1 / 60 - (time.monotonic() - tick)))
        writer.check(self, "writes during the attacks")
        self.assertGreater(votes_sent, 150)
        for member in self.cluster.members:
            refused = counter(member, "transport_handshakes_refused") - before[member.http_addr]
            logged = len(refusal_lines(member)) - lines_before[member.http_addr]
            print(f"{member.http_addr}: {refused} handshakes refused, {logged} lines logged",
                  flush=True)
            self.assertGreaterEqual(refused, 12 + votes_sent // 3 - 1)
            # One line per refusal, at most 20 a minute (the test's life spans
            # at most two windows).
            self.assertGreater(logged, 0)
            self.assertLessEqual(len(refusal_lines(member)), 2 * REFUSALS_LOGGED_PER_MINUTE)
        self.assert_cluster_unharmed(self.cluster, self.leader)

    def test_thousand_idle_connections_are_bounded_and_timed_out(self):
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if soft < 2048:
            resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 4096), hard))
        member = self.leader
        baseline = open_fds(member)
        refused_before = counter(member, "transport_handshakes_refused")
        partial = hello_bytes(2, "127.0.0.1:1")[:30]
        # Closed "at once" is proven only if every excess connection is seen
        # closed before the first one's handshake timeout could have closed
        # it. On a machine too loaded to open 1,000 connections and look in
        # time the run proves nothing either way: it is tried again (3 runs).
        for attempt in range(3):
            socks = []
            held_for = 0.0
            with Writer(self.leader) as writer:
                started = time.monotonic()
                try:
                    for i in range(1000):
                        sock = socket.create_connection(tuple(member.raft_addr.rsplit(":", 1)),
                                                        timeout=5)
                        if i % 10 == 0:
                            sock.sendall(partial)
                        socks.append(sock)
                    peak = open_fds(member)
                    # Beyond 16 handshakes in progress from one host, new ones are closed at once.
                    def still_open():
                        alive = []
                        for sock in socks:
                            sock.settimeout(0)
                            try:
                                if sock.recv(1) == b"":
                                    continue
                            except BlockingIOError:
                                alive.append(sock)
                            except ConnectionError:
                                continue
                        return alive
                    open_now = poll_until(lambda: (lambda a: a if len(a) <= HANDSHAKES_PER_HOST_MAX else None)(
                        still_open()), timeout=HANDSHAKE_TIMEOUT_S - 1.5,
                        message="excess connections were not closed at once")
                    held_for = time.monotonic() - started
                    if held_for >= HANDSHAKE_TIMEOUT_S and attempt < 2:
                        print(f"run {attempt + 1} too slow to tell ({held_for:.1f}s); again",
                              flush=True)
                        continue
                    self.assertLess(held_for, HANDSHAKE_TIMEOUT_S)
                    self.assertGreater(len(open_now), 0)
                    # ...and the ones in their handshake are closed at the timeout.
                    poll_until(lambda: not still_open(), timeout=HANDSHAKE_TIMEOUT_S + 3,
                               message="idle handshakes were not timed out")
                    closed_after = time.monotonic() - started
                finally:
                    for sock in socks:
                        sock.close()
                    if held_for >= HANDSHAKE_TIMEOUT_S and attempt < 2:
                        poll_until(lambda: open_fds(member) <= baseline + 2, timeout=10,
                                   message=f"fds did not return to {baseline}")
            break
        print(f"fds: baseline {baseline}, peak {peak}; {len(open_now)} held after "
              f"{held_for:.1f}s, all closed after {closed_after:.1f}s", flush=True)
        writer.check(self, "writes during the connection flood")
        self.assertGreaterEqual(closed_after, HANDSHAKE_TIMEOUT_S - 1)
        self.assertLessEqual(peak, baseline + HANDSHAKES_PER_HOST_MAX + 8)
        poll_until(lambda: open_fds(member) <= baseline + 2, timeout=5,
                   message=f"fds did not return to {baseline}")
        self.assertGreaterEqual(counter(member, "transport_handshakes_refused"),
                                refused_before + 1000 - HANDSHAKES_PER_HOST_MAX)
        self.assert_cluster_unharmed(self.cluster, self.leader)

class InsiderConflictTest(unittest.TestCase):
    """What the key cannot stop: a holder of the key who claims to be the
    leader and sends an AppendEntries that contradicts a committed entry.
    libraft 0.15 gives up on itself (the unavailable state: it drops every
    message and never leads or follows again); before decision 0012 the member
    went on answering "No cluster leader" and logged nothing. Now the server
    notices after the loop turn, logs it, shows it in /v1/agent/self and
    restarts raft from its data dir, and the member catches up with no write
    lost."""

    def test_a_member_whose_raft_gives_up_restarts_and_catches_up(self):
        cluster = Cluster(3).__enter__()
        self.addCleanup(cluster.close)
        key = load_key(cluster.key_file)
        leader = cluster.leader()
        follower = next(m for m in cluster.members if m is not leader)
        for i in range(20):
            resp = leader.request("PUT", f"/v1/kv/before/{i}", str(i))
            self.assertEqual((resp.status, resp.json()), (200, True))
        poll_until(lambda: follower.request("GET", "/v1/kv/before/19?stale").status == 200,
                   timeout=10, message="the follower caught up")
        stats = raft_stats(follower)
        self.assertEqual((stats["state"], stats["restarts"]), ("Follower", "0"))
        term = int(stats["term"])

        # Entry 1 is committed everywhere; claim it was written in another term.
        conflict = append_entries(term=term, prev_index=1, prev_term=term + 7, commit=1)
        with RaftWire.dial(follower.raft_addr) as wire:
            verdict = wire.handshake(key=key, node_id=cluster.id_of(leader),
                                     raft_address=leader.raft_addr)
            self.assertTrue(verdict.accepted, verdict)
            wire.send(conflict)
            poll_until(lambda: raft_stats(follower)["restarts"] != "0", timeout=15,
                       message="the follower's raft did not restart")

        stats = raft_stats(follower)
        self.assertEqual(stats["restarts"], "1", stats)
        self.assertIn("libraft stopped (unavailable state)", stats["last_failure"])
        log = follower.log()
        self.assertIn("FATAL: this raft instance cannot go on", log)
        self.assertIn("raft restarted (1 restart so far)", log)
        # It follows again: it reports a leader, holds every write from before
        # and receives new ones.
        poll_until(lambda: raft_stats(follower)["state"] == "Follower" and
                   follower.request("GET", "/v1/status/leader").json() != "",
                   timeout=15, message="the follower did not rejoin")
        new_leader = cluster.wait_leader(timeout=15)
        resp = new_leader.request("PUT", "/v1/kv/after", "1")
        self.assertEqual((resp.status, resp.json()), (200, True))
        poll_until(lambda: follower.request("GET", "/v1/kv/after?stale").status == 200,
                   timeout=15, message="the restarted follower did not catch up")
        keys = follower.request("GET", "/v1/kv/before/?keys&stale").json()
        self.assertEqual(sorted(keys), sorted(f"before/{i}" for i in range(20)))
        for member in cluster.members:
            self.assertIsNone(member.process.poll(), f"{member.http_addr} died")


class JoinWithAWrongKeyTest(unittest.TestCase, StrangerChecks):
    def test_join_with_a_wrong_key_is_refused(self):
        """A server started with -join and another cluster's key: each side
        says why, and it never becomes a member. (Its own cluster: the
        members' refusal log is rate limited, so other tests' refusals
        would hide its lines.)"""
        cluster = Cluster(3).__enter__()
        self.addCleanup(cluster.close)
        leader = cluster.leader()
        secrets = os.path.join(cluster.secrets_dir, "other")
        os.makedirs(secrets, exist_ok=True)
        other_key = write_secret(secrets, "raft.key", generate_cluster_key())
        joiner = DevServer(extra_args=(
            "-node-id", "4", "-node", "node4", "-join",
            ",".join(m.raft_addr for m in cluster.members),
            "-operator-token-file", cluster.token_file, "-raft-key-file", other_key))
        self.addCleanup(joiner.close)
        joiner.http_addr = f"127.0.0.1:{free_port()}"
        joiner.raft_addr = f"127.0.0.1:{free_port()}"
        joiner._spawn()  # it never has a leader: start() would wait for one
        poll_until(lambda: joiner.log().count("failed the cluster key check") >= 3, timeout=15,
                   message="the joiner never reported the key mismatch")
        # The joiner checks the member's proof first and hangs up: the
        # members log and count that (they did neither before).
        for member in cluster.members:
            poll_until(lambda: "(says it is server 4): it closed the connection before its proof"
                       in member.log(), timeout=10,
                       message=f"{member.http_addr} never logged the joiner")
            self.assertGreater(counter(member, "transport_handshakes_refused"), 0)
        self.assertIsNone(joiner.process.poll())
        self.assertNotIn("joined the cluster", joiner.log())
        for member in cluster.members:
            conf = member.get_json("/v1/operator/raft/configuration")
            self.assertEqual(sorted(int(s["ID"]) for s in conf["Servers"]), [1, 2, 3])
        self.assert_cluster_unharmed(cluster, leader)


class KeylessStrangersTest(unittest.TestCase, StrangerChecks):
    @classmethod
    def setUpClass(cls):
        cls.cluster = Cluster(3, keyed=False).__enter__()

    @classmethod
    def tearDownClass(cls):
        cls.cluster.__exit__(None, None, None)

    def setUp(self):
        self.leader = self.cluster.leader()

    def claimed(self, member):
        """Whom a stranger claims to be when dialling `member`: a follower
        other than `member` (a claimed id takes the place of that server's
        oldest connection, kRaftLinksPerPeerMax; a follower's matter least)."""
        return next(m for m in self.cluster.members if m is not member and m is not self.leader)

    def claimed_id(self, member):
        return self.cluster.id_of(self.claimed(member))

    def impersonate(self, member):
        """An accepted raft connection to `member` from a stranger claiming
        another member's id and address: keyless mode cannot tell them apart."""
        return impersonate(self, self.cluster, member, self.claimed(member))

    def test_ids_outside_the_configuration_are_refused(self):
        member = self.cluster.members[0]
        other = self.cluster.members[1]
        for node_id, address, reason in [
                (9, "127.0.0.1:1", "not in this cluster's configuration"),
                (2, "127.0.0.1:1", f"is at {other.raft_addr}"),
                (1, member.raft_addr, "own id")]:
            # (Purpose join is decided by the leader, which adds any server
            # that asks when there is no key: keyless mode trusts the network.)
            with RaftWire.dial(member.raft_addr) as wire:
                verdict = wire.handshake(node_id=node_id, raft_address=address,
                                         pipelined=TYPE_ZERO_ENTRY)
                self.assertFalse(verdict.accepted, (node_id, address))
                self.assertIn(reason, verdict.reason)
                self.assertTrue(wire.closed_by_peer(5))
        # A keyed dialer is refused by a keyless cluster.
        with RaftWire.dial(member.raft_addr) as wire:
            verdict = wire.handshake(key=os.urandom(32), node_id=2, raft_address=other.raft_addr)
            self.assertEqual((verdict.accepted, verdict.stage), (False, "challenge"))
        self.assert_cluster_unharmed(self.cluster, self.leader)

    def test_the_gate_cuts_what_libraft_cannot_take(self):
        conf = configuration([(i + 1, m.raft_addr, 1) for i, m in enumerate(self.cluster.members)])
        cases = {
            "type-0 entry": TYPE_ZERO_ENTRY,
            # frame_entry around an unknown command version
            "undecodable command": append_entries(
                entries=[(ENTRY_COMMAND, frame_entry(b"\x07\x01garbage"))]),
            "unknown message type": message(7, bytes(24)),
            "short RequestVote header": message(REQUEST_VOTE, bytes(32)),
            "header of 2^40 bytes": message(APPEND_ENTRIES, b"", declared_length=1 << 40),
            "entry of 255 MiB": append_entries(entries=[(ENTRY_COMMAND, 255 * MiB)]),
            "snapshot of 8 GiB": install_snapshot_header(8 << 30, conf),
            "entry count mismatch": append_entries(entries=[(ENTRY_COMMAND, bytes(8))], count=9),
            "vote for someone else": request_vote(term=1, candidate=9),
            "garbage": GARBAGE,
        }
        for target in self.cluster.members:
            cut_before = counter(target, "transport_connections_cut")
            for name, payload in cases.items():
                with self.impersonate(target) as wire:
                    wire.send(payload)
                    self.assertTrue(wire.closed_by_peer(5), f"{name} to {target.http_addr}: not cut")
            self.assertGreaterEqual(counter(target, "transport_connections_cut"),
                                    cut_before + len(cases))
        # A well-formed entry (stale: libraft ignores it) passes the gate:
        # the connection stays, so the cuts above are the gate's doing.
        with self.impersonate(self.cluster.members[0]) as wire:
            wire.send(append_entries(term=1, entries=[(ENTRY_COMMAND, kv_set_entry("stale/x", "1"))]))
            self.assertFalse(wire.closed_by_peer(1.0), "a well-formed entry was cut")
        self.assertEqual(self.leader.request("GET", "/v1/kv/stale/x?stale").status, 404)
        self.assert_cluster_unharmed(self.cluster, self.leader)

    def test_stale_votes_and_declared_sizes_do_not_unseat_or_bloat(self):
        """A keyless stranger that claims a member may send what that member
        may: votes within the rate (with a current term they would unseat the
        leader: keyless mode trusts the network) and snapshots up to
        kRaftSnapshotBytesMax. Here: a 255 MiB InstallSnapshot header to every
        member, nothing after it, and 60 stale disrupt-leader votes a second
        for 3 s; the excess votes are dropped."""
        before = {m.http_addr: counter(m, "transport_votes_dropped") for m in self.cluster.members}
        conns = []
        try:
            with Writer(self.leader) as writer:
                for member in self.cluster.members:
                    conns.append(self.impersonate(member))
                    conns[-1].send(huge_snapshot(self.cluster))
                voters = []
                for member in self.cluster.members:
                    conns.append(self.impersonate(member))
                    voters.append((conns[-1], self.claimed_id(member)))
                start = time.monotonic()
                while time.monotonic() - start < 3.0:
                    tick = time.monotonic()
                    for wire, claimed in voters:
                        self.assertTrue(wire.send(request_vote(term=1, candidate=claimed,
                                                               disrupt_leader=True)))
                    time.sleep(max(0.0, 1 / 60 - (time.monotonic() - tick)))
        finally:
            for wire in conns:
                wire.close()
        writer.check(self, "writes during the keyless vote flood")
        for member in self.cluster.members:
            dropped = counter(member, "transport_votes_dropped") - before[member.http_addr]
            print(f"{member.http_addr}: {dropped} votes dropped", flush=True)
            self.assertGreater(dropped, 100)
        self.assert_cluster_unharmed(self.cluster, self.leader)


if __name__ == "__main__":
    unittest.main()
