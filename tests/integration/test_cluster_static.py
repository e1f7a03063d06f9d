"""A 3-server cluster bootstrapped from a static peer list (-bootstrap-peers):
members agree on a leader, writes replicate, kill -9 of the leader loses no
acknowledged write, session or lock, a majority is needed to write, and a
killed member rejoins with its data. Client request forwarding is
test_cluster_forwarding.py's: here every write goes to the leader."""

import subprocess
import time
import unittest

from tenure_testlib import Cluster, DevServer, free_port, poll_until, tenure_bin


def put(member, key, value):
    resp = member.request("PUT", f"/v1/kv/{key}", value)
    return resp.status == 200 and resp.json() is True


class StaticClusterTest(unittest.TestCase):
    def test_members_agree_and_replicate(self):
        with Cluster(3) as cluster:
            leader = cluster.leader()
            peers = sorted(leader.get_json("/v1/status/peers"))
            self.assertEqual(peers, sorted(m.raft_addr for m in cluster.members))
            for i in range(30):
                self.assertTrue(put(leader, f"rep/{i}", f"v{i}"))
            for member in cluster.members:
                poll_until(lambda: len(member.get_json("/v1/kv/rep/?recurse&stale")) == 30,
                           timeout=10, message=f"{member.http_addr} never caught up")
                self.assertEqual(member.get_json("/v1/kv/rep/7?stale")[0]["Value"], "djc=")
            follower = next(m for m in cluster.members if m is not leader)
            resp = follower.request("GET", "/v1/kv/rep/1?stale")
            self.assertEqual(resp.header("X-Consul-KnownLeader"), "true")
            # The raft configuration, from any member, and `tenure members`.
            for member in cluster.members:
                conf = member.get_json("/v1/operator/raft/configuration")
                self.assertGreater(conf["Index"], 0)
                servers = sorted(conf["Servers"], key=lambda x: x["ID"])
                self.assertEqual([(x["ID"], x["Address"], x["Voter"], x["Leader"]) for x in servers],
                                 [(str(i + 1), m.raft_addr, True, m is leader)
                                  for i, m in enumerate(cluster.members)])
                own = next(x for x in servers if x["Address"] == member.raft_addr)
                self.assertEqual(own["Node"], f"node{cluster.members.index(member) + 1}")
            out = follower.cli("members")
            self.assertEqual(out.returncode, 0, out.stderr)
            lines = out.stdout.splitlines()
            self.assertEqual(lines[0].split(), ["Node", "ID", "Address", "State", "Voter"])
            self.assertEqual(len(lines), 4)
            states = {line.split()[-3]: line.split()[-2] for line in lines[1:]}
            self.assertEqual(states[leader.raft_addr], "leader")
            self.assertEqual(sorted(states.values()), ["follower", "follower", "leader"])

    def test_kill_9_of_the_leader_keeps_writes_sessions_and_locks(self):
        with Cluster(3) as cluster:
            old = cluster.leader()
            session = old.request("PUT", "/v1/session/create", '{"TTL": "10s", "LockDelay": "1s"}').json()["ID"]
            self.assertTrue(old.request("PUT", f"/v1/kv/svc/leader?acquire={session}", "x").json())
            fence = old.get_json("/v1/kv/svc/leader")[0]["Fence"]
            for i in range(20):
                self.assertTrue(put(old, f"acked/{i}", str(i)))
            old.kill()
            killed_at = time.monotonic()
            new = cluster.wait_leader(exclude=old)
            poll_until(lambda: put(new, "after/0", "1"), timeout=15,
                       message="the new leader never accepted a write")
            print(f"first write accepted {time.monotonic() - killed_at:.2f}s after kill -9 "
                  f"of the leader", flush=True)
            self.assertEqual(len(new.get_json("/v1/kv/acked/?recurse")), 20)
            entry = new.get_json("/v1/kv/svc/leader")[0]
            self.assertEqual((entry["Session"], entry["Fence"]), (session, fence))
            # The new leader re-armed the session at a full TTL: it renews.
            self.assertEqual(new.request("PUT", f"/v1/session/renew/{session}").status, 200)
            # The killed member comes back with its data and catches up.
            old.start()
            poll_until(lambda: len(old.get_json("/v1/kv/after/?recurse&stale")) == 1,
                       timeout=20, message="the restarted member never caught up")
            self.assertEqual(len(old.get_json("/v1/kv/acked/?recurse&stale")), 20)

    def test_writes_need_a_majority(self):
        with Cluster(3) as cluster:
            leader = cluster.leader()
            followers = [m for m in cluster.members if m is not leader]
            self.assertTrue(put(leader, "q/before", "1"))
            followers[0].kill()
            followers[1].kill()
            # Alone, the old leader must not acknowledge a write.
            resp = leader.request("PUT", "/v1/kv/q/alone", "1", timeout=30)
            self.assertNotEqual((resp.status, resp.body), (200, b"true"), resp)
            print(f"alone: {resp.status} {resp.text.strip()!r}", flush=True)
            followers[0].start()
            poll_until(lambda: put(cluster.leader(), "q/after", "1"), timeout=30,
                       message="no write accepted after the majority came back")
            keys = sorted(e["Key"] for e in cluster.leader().get_json("/v1/kv/q/?recurse"))
            # q/alone may have committed after the majority returned (it was
            # never acknowledged); q/before and q/after must be there.
            self.assertIn("q/before", keys)
            self.assertIn("q/after", keys)

    def test_transfer_leader(self):
        with Cluster(3) as cluster:
            leader = cluster.leader()
            ids = {m.raft_addr: i + 1 for i, m in enumerate(cluster.members)}
            target = next(m for m in cluster.members if m is not leader)
            started = time.monotonic()
            op = cluster.operator_headers()
            path = f"/v1/operator/raft/transfer-leader?id={ids[target.raft_addr]}"
            # Without the operator token, or with a wrong one: refused, nothing moves.
            for headers, text in [(None, "Permission denied: anonymous token lacks permission "
                                         "'operator:write'"),
                                  ({"X-Consul-Token": "not-the-token"}, "ACL not found")]:
                resp = leader.request("POST", path, headers=headers)
                self.assertEqual(resp.status, 403, resp)
                self.assertIn(text, resp.text)
            self.assertIs(cluster.leader(), leader)
            resp = leader.request("POST", path, headers=op)
            self.assertEqual((resp.status, resp.json()), (200, {"Success": True}), resp)
            self.assertIs(cluster.wait_leader(timeout=10), target)
            print(f"transfer to node {ids[target.raft_addr]} answered in "
                  f"{time.monotonic() - started:.3f}s", flush=True)
            self.assertTrue(put(target, "moved", "1"))
            # Without an id: any other voter.
            resp = target.request("POST", "/v1/operator/raft/transfer-leader", headers=op)
            self.assertEqual(resp.status, 200, resp)
            self.assertIsNot(cluster.wait_leader(timeout=10), target)
            # Refusals change nothing.
            now = cluster.leader()
            follower = next(m for m in cluster.members if m is not now)
            for query, status, text in [("?id=x", 400, "invalid id"),
                                        ("?id=0", 400, "invalid id"),
                                        (f"?id={ids[now.raft_addr]}", 400, "no other voter"),
                                        ("?id=99", 400, "no other voter")]:
                resp = now.request("POST", "/v1/operator/raft/transfer-leader" + query, headers=op)
                self.assertEqual(resp.status, status, (query, resp))
                self.assertIn(text, resp.text)
            # A forwarded request reaching a non-leader is not forwarded again.
            resp = follower.request("POST", "/v1/operator/raft/transfer-leader",
                                    headers={"X-Tenure-Forwarded-By": "9", **op})
            self.assertEqual((resp.status, resp.text), (500, "No cluster leader"))
            resp = now.request("GET", "/v1/operator/raft/transfer-leader")
            self.assertEqual((resp.status, resp.header("Allow")), (405, "OPTIONS,POST"))
            self.assertIs(cluster.leader(), now)
            # The CLI, on the leader and on a follower.
            back = ids[leader.raft_addr] if leader is not now else ids[target.raft_addr]
            out = now.cli("operator", "raft", "transfer-leader", "-id", str(back))
            self.assertEqual(out.returncode, 1, out)
            self.assertIn("Permission denied", out.stderr)
            out = now.cli("operator", "raft", "transfer-leader", "-id", str(back),
                          "-token", cluster.operator_token)
            self.assertEqual((out.returncode, out.stdout),
                             (0, f"Leadership transferred to server {back}\n"), out.stderr)
            moved = cluster.wait_leader(timeout=10)
            self.assertEqual(ids[moved.raft_addr], back)
            # From a follower: forwarded to the leader (decision 0008).
            follower = next(m for m in cluster.members if m is not moved)
            out = follower.cli("operator", "raft", "transfer-leader",
                               env={"CONSUL_HTTP_TOKEN": cluster.operator_token})
            self.assertEqual(out.returncode, 0, out.stderr)
            self.assertIsNot(cluster.wait_leader(exclude=moved, timeout=10), moved)
            self.assertEqual(now.cli("operator", "raft", "bogus").returncode, 1)

    def test_join_and_remove_a_voter(self):
        with Cluster(3) as cluster:
            leader = cluster.leader()
            self.assertTrue(put(leader, "j/before", "1"))
            joiner = DevServer(extra_args=(
                "-node-id", "4", "-node", "node4", "-session-ttl-multiplier", "1",
                "-join", ",".join(m.raft_addr for m in cluster.members), *cluster.secret_args()))
            self.addCleanup(joiner.close)
            started = time.monotonic()
            joiner.start()

            def voters(member):
                conf = member.get_json("/v1/operator/raft/configuration")
                return sorted(int(x["ID"]) for x in conf["Servers"] if x["Voter"])
            poll_until(lambda: voters(leader) == [1, 2, 3, 4], timeout=20,
                       message="the joiner never became a voter")
            print(f"joined as a voter {time.monotonic() - started:.2f}s after start", flush=True)
            self.assertTrue(put(leader, "j/after", "1"))
            poll_until(lambda: len(joiner.get_json("/v1/kv/j/?recurse&stale")) == 2, timeout=10,
                       message="the joiner never caught up")
            self.assertEqual(voters(joiner), [1, 2, 3, 4])
            self.assertIn("joined the cluster as server 4", joiner.log())

            # Bad requests change nothing. Peers are added only by joining over
            # the raft port (with the cluster key); HTTP can only remove them.
            op = cluster.operator_headers()
            resp = leader.request("PUT", f"/v1/operator/raft/peer?id=5&address=127.0.0.1:1",
                                  headers=op)
            self.assertEqual(resp.status, 405, resp)
            for query, text in [("", "Must specify"),
                                ("?id=9", "not a member"),
                                ("?address=127.0.0.1:1", "was not found")]:
                resp = leader.request("DELETE", "/v1/operator/raft/peer" + query, headers=op)
                self.assertEqual(resp.status, 400, (query, resp))
                self.assertIn(text, resp.text)
            for headers in (None, {"X-Consul-Token": "wrong-token-wrong-token"}):
                resp = leader.request("DELETE", "/v1/operator/raft/peer?id=4", headers=headers)
                self.assertEqual(resp.status, 403, resp)
            self.assertEqual(voters(leader), [1, 2, 3, 4])

            # Once a voter, the joiner registers its name (decision 0008).
            def names(member):
                conf = member.get_json("/v1/operator/raft/configuration")
                return {x["ID"]: x["Node"] for x in conf["Servers"]}
            poll_until(lambda: names(leader).get("4") == "node4", timeout=10,
                       message="the joiner's member record was never written")

            # Removal from the command line, through a follower (forwarded).
            follower = next(m for m in cluster.members if m is not leader)
            for args in [(), ("-id", "0"), ("-id", "4", "-address", "x:1"), ("extra",)]:
                out = follower.cli("operator", "raft", "remove-peer", *args)
                # Bad usage exits 1, as `consul operator raft remove-peer` (docs/cli.md).
                self.assertEqual(out.returncode, 1, (args, out))
                self.assertIn("tenure operator raft remove-peer: ", out.stderr)
                self.assertEqual(voters(leader), [1, 2, 3, 4])
            out = follower.cli("operator", "raft", "remove-peer", "-id", "4")
            self.assertEqual(out.returncode, 1, out)
            self.assertIn("Permission denied", out.stderr)
            self.assertEqual(voters(leader), [1, 2, 3, 4])
            out = follower.cli("operator", "raft", "remove-peer", "-id", "4",
                               "-token", cluster.operator_token)
            self.assertEqual((out.returncode, out.stdout), (0, 'Removed peer with id "4"\n'),
                             out.stderr)
            poll_until(lambda: voters(leader) == [1, 2, 3], timeout=10,
                       message="server 4 was never removed")
            self.assertTrue(put(leader, "j/removed", "1"))
            joiner.close()

    def test_a_keyless_server_takes_no_joins_unless_it_says_so(self):
        # A server started alone without a key, mutual TLS or
        # -raft-insecure-keyless starts as ever, but does not become a keyless
        # cluster behind its operator's back: it refuses a server that asks
        # to join (docs/security.md). Restarted with the flag, it takes it.
        alone = DevServer(dev=False)
        self.addCleanup(alone.close)
        alone.start()
        joiner = DevServer(dev=False, extra_args=(
            "-node-id", "2", "-node", "node2", "-join", alone.raft_addr,
            "-raft-insecure-keyless"))
        self.addCleanup(joiner.close)
        joiner.http_addr = f"127.0.0.1:{free_port()}"
        joiner.raft_addr = f"127.0.0.1:{free_port()}"
        joiner._spawn()  # it has no leader until it joins: start() would wait for one
        poll_until(lambda: "takes no servers without one unless started with "
                   "-raft-insecure-keyless" in joiner.log(), timeout=15,
                   message="the joiner was not told why it was refused")

        def voters():
            conf = alone.get_json("/v1/operator/raft/configuration")
            return sorted(int(x["ID"]) for x in conf["Servers"] if x["Voter"])
        self.assertEqual(voters(), [1])
        self.assertTrue(put(alone, "k/alone", "1"))
        alone.stop()
        alone.extra_args.append("-raft-insecure-keyless")
        alone.start()
        poll_until(lambda: voters() == [1, 2], timeout=30,
                   message="the joiner never joined the server that says it may")
        # The leader's configuration can show the joiner before the joiner
        # has read the leader's answer and logged it.
        poll_until(lambda: "joined the cluster as server 2" in joiner.log(), timeout=15,
                   message="the joiner never said it joined")

    def test_bad_settings_exit_1_as_consul_agent_does(self):
        cases = [
            (["-join", "127.0.0.1:1", "-bootstrap-peers", "1@127.0.0.1:8300"], "exclude each other"),
            (["-node-id", "1", "-raft-addr", "127.0.0.1:1", "-bootstrap-peers", "x"], "expected ID@HOST:PORT"),
            (["-node-id", "1", "-raft-addr", "127.0.0.1:1", "-bootstrap-peers", "2@127.0.0.1:2"],
             "must include this server"),
            (["-node-id", "1", "-raft-addr", "127.0.0.1:1",
              "-bootstrap-peers", "1@127.0.0.1:9,2@127.0.0.1:2"], "-raft-addr is 127.0.0.1:1"),
            (["-node-id", "1", "-raft-addr", "127.0.0.1:1",
              "-bootstrap-peers", "1@127.0.0.1:1,1@127.0.0.1:2"], "appears twice"),
            (["-raft-election-timeout", "50ms"], "from 100ms to 60s"),
            (["-raft-election-timeout", "soon"], "from 100ms to 60s"),
            (["-raft-election-timeout", "500ms", "-raft-heartbeat", "500ms"],
             "below -raft-election-timeout"),
            (["-raft-heartbeat", "5ms"], "at least 10ms"),
        ]
        for args, text in cases:
            out = subprocess.run([tenure_bin(), "server", "-dev", *args], capture_output=True,
                                 text=True, timeout=30)
            self.assertEqual(out.returncode, 1, out.stderr)  # docs/cli.md
            self.assertIn(text, out.stderr)


if __name__ == "__main__":
    unittest.main()
