"""Any server serves any client (docs/cluster.md; decision 0008).

A 3-server cluster on loopback. Through a follower: writes, default and
?consistent reads, sessions, locks with their fencing token, txn, and
blocking queries are answered by the leader, relayed with its headers;
?stale reads and ?stale blocking queries are answered by the follower
itself with real X-Consul-KnownLeader and X-Consul-LastContact. Member
records give every server its name in the raft configuration. After the
leader is killed, the followers forward to the new one.
"""

import json
import socket
import threading
import time
import unittest

from tenure_testlib import Cluster, http_request, poll_until


def member_names(member):
    resp = member.request("GET", "/v1/operator/raft/configuration")
    if resp.status != 200:
        return None
    return {s["ID"]: (s["Node"], s["HTTPAddress"]) for s in resp.json()["Servers"]}


def wait_forwarding(follower, timeout=15.0):
    """Until the follower has heard from the leader, a forwarded request
    answers 500; clients retry those."""
    def ready():
        resp = follower.request("PUT", "/v1/kv/fwd/probe", b"x")
        return resp.status == 200
    poll_until(ready, timeout=timeout, message="the follower never forwarded a write")


class FirstElectionTest(unittest.TestCase):
    def test_a_follower_that_names_the_leader_forwards_at_once(self):
        # Right after a first election the leader's member record is not yet
        # written; the follower forwards with what the leader said in its raft
        # handshake instead of answering "No cluster leader" (decision 0012).
        with Cluster(3) as cluster:
            def follower_naming_the_leader():
                for member in cluster.members:
                    resp = member.request("GET", "/v1/status/leader", timeout=2.0)
                    named = resp.json() if resp.status == 200 else ""
                    if named and named != member.raft_addr:
                        return member
                return None
            follower = poll_until(follower_naming_the_leader, timeout=30, interval=0.005,
                                  message="no follower ever named a leader")
            resp = follower.request("PUT", "/v1/kv/first/write", b"1")
            self.assertEqual((resp.status, resp.body), (200, b"true"), resp.body)


class ForwardingTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.cluster = Cluster(3)
        cls.cluster.__enter__()
        cls.leader = cls.cluster.leader()
        cls.followers = [m for m in cls.cluster.members if m is not cls.leader]
        for follower in cls.followers:
            wait_forwarding(follower)

    @classmethod
    def tearDownClass(cls):
        cls.cluster.close()

    def test_1_every_member_is_named_in_the_configuration(self):
        expected = {str(i + 1): (f"node{i + 1}", m.http_addr)
                    for i, m in enumerate(self.cluster.members)}
        for member in self.cluster.members:
            poll_until(lambda: member_names(member) == expected, timeout=10,
                       message=f"{member.http_addr} never listed every member's name")
        out = self.followers[0].cli("members")
        self.assertEqual(out.returncode, 0, out.stderr)
        for name in ("node1", "node2", "node3"):
            self.assertIn(name, out.stdout)
        print(out.stdout, end="", flush=True)

    def test_2_writes_and_reads_through_a_follower(self):
        f = self.followers[0]
        resp = f.request("PUT", "/v1/kv/fwd/a", b"one")
        self.assertEqual((resp.status, resp.json()), (200, True), resp)
        # Default mode is answered by the leader: a read right after the
        # write sees it, on either follower.
        for follower in self.followers:
            resp = follower.request("GET", "/v1/kv/fwd/a")
            self.assertEqual(resp.status, 200, resp)
            self.assertEqual(resp.json()[0]["Value"], "b25l")
            self.assertEqual(resp.header("X-Consul-KnownLeader"), "true")
            # Relayed from the leader, which has contact with itself.
            self.assertEqual(resp.header("X-Consul-LastContact"), "0")
            index = int(resp.header("X-Consul-Index"))
            resp = follower.request("GET", "/v1/kv/fwd/a?consistent")
            self.assertEqual((resp.status, int(resp.header("X-Consul-Index"))), (200, index))
        # CAS, delete and txn go through too, with the leader's answers.
        resp = f.request("PUT", f"/v1/kv/fwd/a?cas={index}", b"two")
        self.assertEqual(resp.json(), True)
        resp = f.request("PUT", f"/v1/kv/fwd/a?cas={index}", b"three")
        self.assertEqual(resp.json(), False)
        txn = [{"KV": {"Verb": "set", "Key": "fwd/t", "Value": "eA=="}},
               {"KV": {"Verb": "get", "Key": "fwd/a"}}]
        resp = f.request("PUT", "/v1/txn", json.dumps(txn).encode())
        self.assertEqual(resp.status, 200, resp)
        self.assertEqual(resp.json()["Results"][1]["KV"]["Value"], "dHdv")
        resp = f.request("DELETE", "/v1/kv/fwd/t")
        self.assertEqual(resp.json(), True)
        # Errors are relayed as the leader gave them.
        resp = f.request("PUT", "/v1/kv/fwd/a?cas=x", b"")
        self.assertEqual((resp.status, resp.text),
                         (500, 'strconv.ParseUint: parsing "x": invalid syntax'))
        resp = f.request("PUT", "/v1/kv/fwd/a?flags=1&acquire=nosuch", b"")
        self.assertEqual(resp.status, 500, resp)
        self.assertIn("invalid session", resp.text)
        resp = f.request("GET", "/v1/kv/fwd/missing")
        self.assertEqual(resp.status, 404, resp)

    def test_3_stale_reads_are_local_with_real_last_contact(self):
        f = self.followers[1]
        self.assertTrue(f.request("PUT", "/v1/kv/fwd/s", b"v").json())
        poll_until(lambda: f.request("GET", "/v1/kv/fwd/s?stale").status == 200, timeout=5)
        resp = f.request("GET", "/v1/kv/fwd/s?stale")
        self.assertEqual(resp.header("X-Consul-KnownLeader"), "true")
        contact = int(resp.header("X-Consul-LastContact"))
        # Heartbeats every 100 ms: a healthy follower heard from the leader recently.
        self.assertLess(contact, 1000, resp.headers)

    def test_4_sessions_locks_and_fences_through_a_follower(self):
        f = self.followers[0]
        resp = f.request("PUT", "/v1/session/create", json.dumps({"TTL": "15s"}).encode())
        self.assertEqual(resp.status, 200, resp)
        sid = resp.json()["ID"]
        resp = f.request("PUT", f"/v1/session/renew/{sid}")
        self.assertEqual(resp.status, 200, resp)
        self.assertEqual(resp.json()[0]["ID"], sid)
        resp = f.request("PUT", f"/v1/kv/fwd/lock?acquire={sid}", b"me")
        self.assertEqual((resp.status, resp.json()), (200, True), resp)
        fence = resp.header("X-Tenure-Fence")
        self.assertTrue(fence and int(fence) > 0, resp.headers)
        resp = self.followers[1].request("GET", "/v1/kv/fwd/lock")
        self.assertEqual(resp.json()[0]["Session"], sid)
        self.assertEqual(str(resp.json()[0]["Fence"]), fence)
        resp = f.request("GET", f"/v1/session/info/{sid}")
        self.assertEqual(resp.json()[0]["ID"], sid)
        resp = f.request("PUT", f"/v1/session/destroy/{sid}")
        self.assertEqual(resp.json(), True)
        resp = f.request("PUT", f"/v1/session/renew/{sid}")
        self.assertEqual(resp.status, 404, resp)

    def blocking_get(self, member, path, results):
        started = time.monotonic()
        resp = member.request("GET", path, timeout=30)
        results.append((resp, time.monotonic() - started))

    def test_5_blocking_queries_on_followers(self):
        f, other = self.followers
        self.assertTrue(f.request("PUT", "/v1/kv/fwd/b", b"0").json())
        index = int(f.request("GET", "/v1/kv/fwd/b").header("X-Consul-Index"))
        results = []
        threads = [threading.Thread(target=self.blocking_get,
                                    args=(f, f"/v1/kv/fwd/b?index={index}&wait=20s", results)),
                   threading.Thread(target=self.blocking_get,
                                    args=(other, f"/v1/kv/fwd/b?index={index}&wait=20s&stale",
                                          results))]
        for t in threads:
            t.start()
        # Both parked: the forwarded one on the leader, the stale one here.
        poll_until(lambda: self.blocking_count(self.leader) >= 1 and
                   self.blocking_count(other) >= 1, timeout=5,
                   message="the blocking queries never parked")
        self.assertTrue(other.request("PUT", "/v1/kv/fwd/b", b"1").json())
        for t in threads:
            t.join(timeout=25)
        self.assertEqual(len(results), 2)
        for resp, took in results:
            self.assertEqual(resp.status, 200)
            self.assertEqual(resp.json()[0]["Value"], "MQ==")
            self.assertGreater(int(resp.header("X-Consul-Index")), index)
            self.assertLess(took, 10.0)
        print(f"blocking queries woke after {[round(t, 3) for _, t in results]}s", flush=True)

    def blocking_count(self, member):
        stats = member.get_json("/v1/agent/self")["Stats"]["tenure"]
        return int(stats["blocking_queries"])

    def test_6_a_client_that_hangs_up_frees_the_leaders_slot(self):
        f = self.followers[0]
        index = int(f.request("GET", "/v1/kv/fwd/a").header("X-Consul-Index"))
        before = self.blocking_count(self.leader)
        try:
            http_request(f.http_addr, "GET", f"/v1/kv/fwd/a?index={index}&wait=60s", timeout=1.0)
            self.fail("a 60 s blocking query answered within 1 s")
        except OSError:
            pass  # our side timed out and closed the connection
        poll_until(lambda: self.blocking_count(self.leader) <= before, timeout=5,
                   message="the leader kept the forwarded blocking query after its client left")

    def test_7_member_records_cannot_be_rewritten_over_http(self):
        """The old PUT /v1/operator/raft/member let any client point the
        leader's HTTP address at its own listener (decision 0012). Member records
        now come only from authenticated raft handshakes."""
        trap = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.addCleanup(trap.close)
        trap.bind(("127.0.0.1", 0))
        trap.listen(16)
        trap.settimeout(0.5)
        trap_addr = "127.0.0.1:%d" % trap.getsockname()[1]
        f = self.followers[0]
        leader_id = next(s["ID"] for s in f.get_json("/v1/operator/raft/configuration")["Servers"]
                         if s["Leader"])
        before = member_names(self.leader)
        hijack = json.dumps({"ID": int(leader_id), "Name": "evil", "Address": "127.0.0.1:1",
                             "HTTPAddress": trap_addr}).encode()
        for member in (f, self.leader):
            for method in ("PUT", "POST"):
                resp = member.request(method, "/v1/operator/raft/member", hijack)
                self.assertIn(resp.status, (404, 405), resp)
        self.assertEqual(member_names(self.leader), before)
        self.assertEqual(member_names(f), before)
        # Requests through the follower still reach the real leader, not the trap.
        self.assertEqual(f.request("PUT", "/v1/kv/fwd/after-hijack", b"1").status, 200)
        self.assertEqual(self.leader.request("GET", "/v1/kv/fwd/after-hijack?raw").body, b"1")
        try:
            conn, _ = trap.accept()
            conn.close()
            self.fail("a follower forwarded a request to the hijacker's listener")
        except socket.timeout:
            pass


class ForwardingFailoverTest(unittest.TestCase):
    def test_followers_forward_to_the_new_leader_after_kill_9(self):
        with Cluster(3) as cluster:
            leader = cluster.leader()
            followers = [m for m in cluster.members if m is not leader]
            wait_forwarding(followers[0])
            self.assertTrue(followers[0].request("PUT", "/v1/kv/f/before", b"1").json())
            leader.kill()
            killed = time.monotonic()
            new_leader = cluster.wait_leader(exclude=leader, timeout=20)
            survivor = next(m for m in followers if m is not new_leader)
            # Through the remaining follower, which forwards to the new leader.
            poll_until(lambda: survivor.request("PUT", "/v1/kv/f/after", b"2").status == 200,
                       timeout=15, message="the survivor never forwarded to the new leader")
            print(f"write through the surviving follower accepted "
                  f"{time.monotonic() - killed:.2f}s after kill -9 of the leader", flush=True)
            resp = survivor.request("GET", "/v1/kv/f/?recurse")
            self.assertEqual(sorted(e["Key"] for e in resp.json()), ["f/after", "f/before"])
            # The old leader rejoins and forwards too.
            leader.start()
            poll_until(lambda: leader.request("PUT", "/v1/kv/f/back", b"3").status == 200,
                       timeout=20, message="the restarted member never forwarded a write")


if __name__ == "__main__":
    unittest.main()
