"""The election history (docs/history.md): GET /v1/tenure/history/<key>
(JSON shape, every cause, 404 for a key that never held a lock, bad input,
a blocking query woken by a transition), `tenure history` (table, -json,
-key, unknown election), the `lock` log lines, and on a 3-server cluster
the history surviving a change of server leader."""

import json
import re
import threading
import unittest

from tenure_testlib import Cluster, SharedServerTestCase, poll_until, quote_key

TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
FIELDS = ["Fence", "Session", "SessionName", "Node", "GrantedAt", "GrantIndex", "EndedAt",
          "EndIndex", "EndCause"]


def history(member, key, query=""):
    return member.request("GET", "/v1/tenure/history/" + quote_key(key) + query)


class HistoryTest(SharedServerTestCase):
    server_args = ()

    def session(self, name="hist", **extra):
        body = {"Name": name, "LockDelay": "0s"}
        body.update(extra)
        return self.server.put_json("/v1/session/create", body)["ID"]

    def acquire(self, key, sid):
        r = self.server.request("PUT", f"/v1/kv/{quote_key(key)}?acquire={sid}", b"v")
        self.assertEqual(r.json(), True, r.text)
        return int(r.header("X-Tenure-Fence"))

    def release(self, key, sid):
        r = self.server.request("PUT", f"/v1/kv/{quote_key(key)}?release={sid}", b"v")
        self.assertEqual(r.json(), True, r.text)

    def test_shape_and_causes(self):
        key = "service/causes/leader"
        a = self.session("cand-a")
        b = self.session("cand-b")
        f1 = self.acquire(key, a)
        r = history(self.server, key)
        self.assertEqual(r.status, 200, r.text)
        [held] = r.json()
        self.assertEqual(list(held), FIELDS)
        self.assertEqual((held["Fence"], held["GrantIndex"], held["Session"], held["SessionName"]),
                         (f1, f1, a, "cand-a"))
        self.assertTrue(TIME.match(held["GrantedAt"]), held)
        self.assertEqual((held["EndedAt"], held["EndIndex"], held["EndCause"]), (None, 0, ""))
        self.assertGreaterEqual(int(r.header("X-Consul-Index")), f1)
        self.release(key, a)
        # handoff: release and grant to another session in one txn
        f2 = self.acquire(key, a)
        txn = [{"KV": {"Verb": "unlock", "Key": key, "Session": a}},
               {"KV": {"Verb": "lock", "Key": key, "Session": b}}]
        r = self.server.request("PUT", "/v1/txn", json.dumps(txn).encode())
        self.assertEqual(r.status, 200, r.text)
        self.server.request("PUT", f"/v1/session/destroy/{b}")  # destroy
        c = self.session("cand-c")
        self.acquire(key, c)
        self.assertEqual(self.server.request("DELETE", "/v1/kv/" + key).status, 200)  # delete
        grants = history(self.server, key).json()
        self.assertEqual([g["EndCause"] for g in grants],
                         ["release", "handoff", "destroy", "delete"])
        self.assertEqual(grants[1]["Fence"], f2)
        fences = [g["Fence"] for g in grants]
        self.assertEqual(fences, sorted(set(fences)))
        for g in grants:
            self.assertTrue(TIME.match(g["EndedAt"]), g)
            self.assertGreaterEqual(g["EndIndex"], g["GrantIndex"])
        # The log has each transition once, with the cause.
        log = self.server.log()
        self.assertEqual(log.count(f"lock {key} granted"), 4, log[-3000:])
        self.assertEqual(log.count(f"lock {key} ended"), 4)
        self.assertIn(": handoff", log)

    def test_key_that_never_held_a_lock_is_404(self):
        self.server.request("PUT", "/v1/kv/plain-key", b"x")
        for key in ("plain-key", "never/written"):
            r = history(self.server, key)
            self.assertEqual((r.status, r.body), (404, b""))
            self.assertIsNotNone(r.header("X-Consul-Index"))

    def test_bad_input_gets_kv_get_errors(self):
        r = self.server.request("GET", "/v1/tenure/history/")
        self.assertEqual(r.status, 400)
        self.assertIn("Missing key name", r.text)
        long_key = "k" * 5000
        got = history(self.server, long_key)
        want = self.server.request("GET", "/v1/kv/" + long_key)
        self.assertEqual((got.status, got.text), (want.status, want.text))
        for query in ("?index=abc", "?wait=forever", "?index=-1"):
            got = history(self.server, "x", query)
            want = self.server.request("GET", "/v1/kv/x" + query)
            self.assertEqual((got.status, got.text), (want.status, want.text), query)
        r = self.server.request("PUT", "/v1/tenure/history/x", b"")
        self.assertEqual(r.status, 405)
        # Hostile characters are just key bytes: 404, the server stays up.
        r = history(self.server, "a b/\u00e9/%00/..")
        self.assertEqual(r.status, 404)
        self.server.check_healthy("after hostile keys")

    def test_blocking_query_wakes_on_a_transition(self):
        key = "service/blocking/leader"
        a = self.session()
        self.acquire(key, a)
        index = int(history(self.server, key).header("X-Consul-Index"))
        result = {}

        def park():
            result["r"] = history(self.server, key, f"?index={index}&wait=30s")

        t = threading.Thread(target=park)
        t.start()
        t.join(0.5)
        self.assertTrue(t.is_alive(), "the blocking query returned before any change")
        self.release(key, a)
        t.join(20)
        self.assertFalse(t.is_alive())
        r = result["r"]
        self.assertGreater(int(r.header("X-Consul-Index")), index)
        self.assertEqual(r.json()[-1]["EndCause"], "release")

    def test_cli_table_json_key_and_unknown_election(self):
        a = self.session("web-1")
        self.acquire("service/webcli/leader", a)
        self.release("service/webcli/leader", a)
        fence = self.acquire("service/webcli/leader", a)
        out = self.server.cli("history", "webcli")
        self.assertEqual(out.returncode, 0, out.stderr)
        lines = out.stdout.splitlines()
        self.assertTrue(lines[0].startswith("FENCE\tNODE\tSESSION NAME"), lines)
        self.assertEqual(len(lines), 3)
        self.assertIn("web-1", lines[1])
        self.assertTrue(lines[1].endswith("release"), lines[1])
        self.assertTrue(lines[2].startswith(f"{fence}\t"), lines[2])
        self.assertTrue(lines[2].endswith("(held)"), lines[2])
        out = self.server.cli("history", "-json", "webcli")
        self.assertEqual([g["Fence"] for g in json.loads(out.stdout)][-1], fence)
        out = self.server.cli("history", "-key", "service/webcli/leader")
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(len(out.stdout.splitlines()), 3)
        out = self.server.cli("history", "nosuch")
        self.assertEqual(out.returncode, 1)
        self.assertIn('no history for election "nosuch"', out.stderr)
        out = self.server.cli("history")
        self.assertEqual(out.returncode, 2)
        out = self.server.cli("history", "a/b")
        self.assertEqual(out.returncode, 2)


class HistoryFailoverTest(unittest.TestCase):
    def test_history_survives_a_server_leader_change(self):
        with Cluster(3) as cluster:
            leader = cluster.leader()
            key = "service/failover/leader"
            sid = leader.put_json("/v1/session/create", {"Name": "f", "LockDelay": "0s"})["ID"]
            fences = []
            for _ in range(3):
                r = leader.request("PUT", f"/v1/kv/{key}?acquire={sid}", b"")
                self.assertEqual(r.json(), True)
                fences.append(int(r.header("X-Tenure-Fence")))
                leader.request("PUT", f"/v1/kv/{key}?release={sid}", b"")
            before = history(leader, key).json()
            self.assertEqual([g["Fence"] for g in before], fences)
            leader.kill()
            new_leader = cluster.wait_leader(exclude=leader)
            self.assertIsNot(new_leader, leader)
            poll_until(lambda: history(new_leader, key).status == 200, timeout=20)
            self.assertEqual(history(new_leader, key).json(), before)
            # and it goes on: a new grant under the new leader has a larger fence
            sid2 = new_leader.put_json("/v1/session/create", {"Name": "g"})["ID"]
            r = new_leader.request("PUT", f"/v1/kv/{key}?acquire={sid2}", b"")
            self.assertEqual(r.json(), True)
            after = history(new_leader, key).json()
            self.assertEqual(after[:3], before)
            self.assertGreater(after[3]["Fence"], fences[-1])
            # a follower reading ?stale has the same history
            for m in cluster.running():
                poll_until(lambda m=m: len(history(m, key, "?stale").json() or []) == 4,
                           timeout=20)
                self.assertIn(f"lock {key} granted", m.log())


if __name__ == "__main__":
    unittest.main()
