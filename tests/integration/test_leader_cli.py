"""`tenure leader` and `tenure leader-get` against a real server: leader
discovery from service/NAME/leader (text, json, -watch through holder
changes, release and deletion) and leader settings read in one request."""

import base64
import json
import os
import queue
import signal
import threading
import unittest

from tenure_testlib import SharedServerTestCase, poll_until


class LeaderCliTest(SharedServerTestCase):
    server_args = ()

    def session(self):
        return self.server.put_json("/v1/session/create", {"Name": "cli-test"})["ID"]

    def acquire(self, name, session, value):
        r = self.server.request("PUT", f"/v1/kv/service/{name}/leader?acquire={session}",
                                value.encode())
        self.assertEqual(r.json(), True)
        return int(r.header("X-Tenure-Fence"))

    def test_no_leader_then_leader_in_text_and_json(self):
        out = self.server.cli("leader", "alpha")
        self.assertEqual((out.returncode, out.stdout), (0, "no leader\n"), out.stderr)
        sid = self.session()
        fence = self.acquire("alpha", sid, '{"Node":"a"}')
        out = self.server.cli("leader", "alpha")
        self.assertEqual(out.stdout, f'{{"Node":"a"}}\t(session {sid}, fencing token {fence})\n')
        out = self.server.cli("leader", "-format=json", "alpha")
        self.assertEqual(json.loads(out.stdout),
                         {"Leader": True, "Value": '{"Node":"a"}', "Session": sid, "Fence": fence,
                          "Queue": []})

    def test_watch_reports_new_leader_release_and_deletion(self):
        proc = self.server.popen_cli("leader", "-watch", "bravo")
        lines = queue.Queue()
        threading.Thread(target=lambda: [lines.put(l) for l in proc.stdout], daemon=True).start()
        try:
            self.assertEqual(lines.get(timeout=10), "no leader\n")
            a, b = self.session(), self.session()
            self.acquire("bravo", a, "first")
            self.assertTrue(lines.get(timeout=10).startswith("first\t(session " + a))
            self.server.request("PUT", f"/v1/kv/service/bravo/leader?release={a}", b"first")
            self.assertEqual(lines.get(timeout=10), "no leader\n")
            self.acquire("bravo", b, "second")
            self.assertTrue(lines.get(timeout=10).startswith("second\t(session " + b))
            self.server.request("DELETE", "/v1/kv/service/bravo/leader")
            self.assertEqual(lines.get(timeout=10), "no leader\n")
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=10)

    def test_watch_reports_candidates_joining_and_leaving_the_line(self):
        # The leader stays the same throughout: only the queue changes.
        a, b = self.session(), self.session()
        self.acquire("delta", a, "first")
        proc = self.server.popen_cli("leader", "-watch", "delta")
        lines = queue.Queue()
        threading.Thread(target=lambda: [lines.put(l) for l in proc.stdout], daemon=True).start()
        try:
            self.assertTrue(lines.get(timeout=10).startswith("first\t(session " + a))
            # A wait that runs out keeps b's place in the line.
            r = self.server.request(
                "PUT", f"/v1/kv/service/delta/leader?acquire={b}&queue&wait=1s", b"second")
            self.assertEqual((r.json(), r.header("X-Tenure-Queue-Position")), (False, "1"))
            self.assertTrue(lines.get(timeout=10).startswith("first\t(session " + a))
            self.assertEqual(lines.get(timeout=10), f"  next 1: session {b}\n")
            # b leaves the line by releasing; a still leads.
            r = self.server.request("PUT", f"/v1/kv/service/delta/leader?release={b}", b"")
            self.assertEqual(r.json(), True)
            self.assertTrue(lines.get(timeout=10).startswith("first\t(session " + a))
            # The view printed after b left had no line: the next thing printed
            # is the release of a, not a "next" line.
            self.server.request("PUT", f"/v1/kv/service/delta/leader?release={a}", b"")
            self.assertEqual(lines.get(timeout=10), "no leader\n")
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=10)

    def test_leader_get_reads_the_settings_group(self):
        b64 = lambda s: base64.b64encode(s.encode()).decode()
        ops = [{"KV": {"Verb": "set", "Key": f"service/charlie/settings/{k}", "Value": b64(v)}}
               for k, v in [("db", "pg-1:5432"), ("mode", "primary"), ("quote", 'a"b')]]
        self.assertEqual(self.server.request("PUT", "/v1/txn", json.dumps(ops).encode()).status,
                         200)
        out = self.server.cli("leader-get", "charlie")
        self.assertEqual(out.stdout, 'db=pg-1:5432\nmode=primary\nquote=a"b\n')
        out = self.server.cli("leader-get", "-format=json", "charlie")
        self.assertEqual(json.loads(out.stdout),
                         {"db": "pg-1:5432", "mode": "primary", "quote": 'a"b'})
        out = self.server.cli("leader-get", "-format=yaml", "charlie")
        self.assertEqual(out.stdout, '"db": "pg-1:5432"\n"mode": "primary"\n"quote": "a\\"b"\n')
        self.assertEqual(self.server.cli("leader-get", "charlie", "mode").stdout, "primary\n")
        self.assertEqual(self.server.cli("leader-get", "charlie", "missing").stdout, "\n")
        self.assertEqual(self.server.cli("leader-get", "-format=json", "nobody").stdout, "{}\n")

    def test_bad_usage(self):
        for args in [("leader",), ("leader", "a/b"), ("leader", "-format=xml", "a"),
                     ("leader-get",), ("leader-get", "a", "b", "c"),
                     ("leader-get", "-format=toml", "a")]:
            out = self.server.cli(*args)
            self.assertEqual(out.returncode, 2, (args, out.stdout, out.stderr))
            self.assertTrue(out.stderr.strip(), args)

    def test_unreachable_server_is_an_error(self):
        out = self.server.cli("leader", "alpha", env={"TENURE_HTTP_ADDR": "127.0.0.1:1"})
        self.assertEqual(out.returncode, 1)
        self.assertIn("Error querying the leader", out.stderr)


if __name__ == "__main__":
    unittest.main()
