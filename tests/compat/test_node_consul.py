"""Real-client compatibility: npm's consul 2.0.1 (the Node.js Consul client,
pinned by node/package-lock.json, installed by scripts/setup), unmodified,
against a `tenure server -dev`, on the same keys as tenure's fair acquire.

The client runs in node/rpc.js, one Node.js process per test class, driven
line by line (JSON) from here; its answers are what the client returned.
Fair waiters are parked with plain HTTP (PUT ?acquire=<session>&queue), as
libtenure, `tenure elect`, `tenure run` and `tenure lock` send it
(docs/leadership.md, "The queue").

Every wait is a poll with a deadline or a join with a timeout.

Run (from tests/compat, after scripts/setup):
  TENURE_BIN=<path>/tenure PYTHONPATH=<repo>/tests/lib /usr/bin/python3 -m unittest -v test_node_consul
"""

import itertools
import json
import os
import shutil
import subprocess
import threading
import unittest

from tenure_testlib import DevServer, FairWaiter, poll_until, queue_of

HERE = os.path.dirname(os.path.abspath(__file__))
NODE_DIR = os.path.join(HERE, "node")
ANSWER_S = 30.0  # how long a call to the client may take (far longer than any should)
EXITED = "exited"  # the answers' key once the client's output ended (request ids are ints)


class NodeConsul:
    """node/rpc.js: npm's consul client in a Node.js process of its own."""

    def __init__(self, http_addr):
        node = shutil.which("node")
        if node is None:
            raise AssertionError("node is not installed: run scripts/setup")
        if not os.path.isdir(os.path.join(NODE_DIR, "node_modules", "consul")):
            raise AssertionError(f"npm's consul is not installed in {NODE_DIR}: run scripts/setup")
        host, port = http_addr.rsplit(":", 1)
        env = {k: v for k, v in os.environ.items() if not k.startswith("CONSUL_")}
        self.proc = subprocess.Popen([node, os.path.join(NODE_DIR, "rpc.js"), host, port],
                                     cwd=NODE_DIR, env=env, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, bufsize=1)
        self.ids = itertools.count(1)
        self.answers = {}
        self.changed = threading.Condition()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        try:
            for line in self.proc.stdout:
                answer = json.loads(line)
                with self.changed:
                    self.answers[answer["id"]] = answer
                    self.changed.notify_all()
            ended = f"node exited ({self.proc.wait()})"
        except Exception as error:  # noqa: BLE001 -- reported to every waiting call
            ended = f"unreadable answer from node: {error!r}"
        with self.changed:
            self.answers[EXITED] = {"error": ended}
            self.changed.notify_all()

    def send(self, request):
        """Starts a request; returns its id for result()."""
        request["id"] = next(self.ids)
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        return request["id"]

    def done(self, request_id):
        with self.changed:
            return request_id in self.answers

    def result(self, request_id, timeout=ANSWER_S):
        with self.changed:
            if not self.changed.wait_for(
                    lambda: request_id in self.answers or EXITED in self.answers, timeout):
                raise AssertionError(f"the node client gave no answer to {request_id} in {timeout}s")
            answer = self.answers.get(request_id) or self.answers[EXITED]
        if "error" in answer:
            raise NodeError(answer["error"], answer.get("statusCode"))
        return answer["ok"]

    def call(self, method, *args):
        return self.result(self.send({"call": method, "args": list(args)}))

    def close(self):
        self.proc.stdin.close()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


class NodeError(Exception):
    def __init__(self, message, status):
        super().__init__(f"{message} (HTTP {status})")
        self.status = status


class NodeConsulTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = DevServer(extra_args=("-session-ttl-multiplier", "1")).__enter__()
        try:
            cls.node = NodeConsul(cls.server.http_addr)
        except BaseException:
            cls.server.__exit__(None, None, None)
            raise

    @classmethod
    def tearDownClass(cls):
        try:
            cls.node.close()
        finally:
            cls.server.__exit__(None, None, None)

    def node_session(self, name):
        created = self.node.call("session.create", {"name": name, "lockdelay": "0s", "ttl": "30s"})
        return created["ID"]

    def tenure_session(self, name):
        return self.server.create_session({"Name": name, "LockDelay": "0s"})

    def queue(self, key):
        return queue_of(self.server, key)

    def blocking_parked(self):
        """The server's count of blocking queries waiting."""
        return self.server.metric("tenure_blocking_queries_parked")

    def park(self, key, session):
        waiter = FairWaiter(self.server.http_addr, key, session)
        poll_until(lambda: session in self.queue(key) or waiter.answered(),
                   message=f"{session} in the queue of {key}")
        self.assertFalse(waiter.answered(), waiter.response)
        return waiter

    def test_sessions_kv_and_txn(self):
        s = self.node_session("node-basic")
        info = self.node.call("session.info", {"id": s})
        self.assertEqual((info["ID"], info["Name"], info["TTL"], info["LockDelay"]),
                         (s, "node-basic", "30s", 0))
        self.assertIn(s, [x["ID"] for x in self.node.call("session.list")])
        self.assertTrue(self.node.call("kv.set", {"key": "node/basic/a", "value": "one"}))
        entry = self.node.call("kv.get", {"key": "node/basic/a"})
        self.assertEqual((entry["Key"], entry["Value"]), ("node/basic/a", "one"))
        # check-and-set: the stale index loses, the current one wins
        self.assertFalse(self.node.call("kv.set", {"key": "node/basic/a", "value": "two",
                                                   "cas": entry["ModifyIndex"] - 1}))
        self.assertTrue(self.node.call("kv.set", {"key": "node/basic/a", "value": "two",
                                                  "cas": entry["ModifyIndex"]}))
        self.assertTrue(self.node.call("kv.set", {"key": "node/basic/b", "value": "x",
                                                  "flags": 42}))
        self.assertEqual(self.node.call("kv.keys", {"key": "node/basic/"}),
                         ["node/basic/a", "node/basic/b"])
        results = self.node.call("transaction.create", [
            {"KV": {"Verb": "set", "Key": "node/basic/c", "Value": "MTIz"}},
            {"KV": {"Verb": "get", "Key": "node/basic/a"}},
        ])
        self.assertEqual([r["KV"]["Key"] for r in results["Results"]],
                         ["node/basic/c", "node/basic/a"])
        self.assertIsNone(results["Errors"])
        self.assertTrue(self.node.call("kv.del", {"key": "node/basic/", "recurse": True}))
        self.assertIsNone(self.node.call("kv.get", {"key": "node/basic/a"}))
        self.assertIsNone(self.node.call("session.destroy", {"id": s}))
        self.assertEqual(self.node.call("session.info", {"id": s}), None)

    def test_a_release_hands_the_key_to_the_fair_waiters_in_order(self):
        key = "node/fair/handoff"
        holder = self.node_session("node-holder")
        self.assertTrue(self.node.call("kv.set", {"key": key, "value": "h", "acquire": holder}))
        w1 = self.park(key, self.tenure_session("w1"))
        w2 = self.park(key, self.tenure_session("w2"))
        self.assertEqual(self.queue(key), [w1.session, w2.session])
        # The client's own watch sees the key go from its session straight to
        # the head's, in one change (the grant is in the releasing entry).
        parked = self.blocking_parked()
        watch = self.node.send({"watch": "kv.get", "options": {"key": key}, "changes": 2})
        # Its first read answered, its second (a blocking query) waits.
        poll_until(lambda: self.blocking_parked() == parked + 1 or self.node.done(watch),
                   message="the watch's blocking read")
        self.assertFalse(self.node.done(watch), self.node.answers.get(watch))
        self.assertTrue(self.node.call("kv.set", {"key": key, "value": "", "release": holder}))
        seen = self.node.result(watch)
        self.assertEqual([c["Session"] for c in seen], [holder, w1.session])
        answer = w1.answer()
        self.assertEqual((answer.status, answer.json()), (200, True), answer)
        self.assertEqual(self.queue(key), [w2.session])
        # The Consul way does not jump the queue: w2 is next.
        plain = self.node_session("node-plain")
        self.assertFalse(self.node.call("kv.set", {"key": key, "value": "p", "acquire": plain}))
        # Any client may release with the holder's session: w2 is granted.
        self.assertTrue(self.node.call("kv.set", {"key": key, "value": "", "release": w1.session}))
        self.assertEqual(w2.answer().json(), True)
        self.assertEqual(self.node.call("kv.get", {"key": key})["Session"], w2.session)
        self.assertTrue(self.node.call("kv.set", {"key": key, "value": "", "release": w2.session}))
        # Nobody waits: Consul's way again.
        self.assertTrue(self.node.call("kv.set", {"key": key, "value": "p", "acquire": plain}))
        entry = self.node.call("kv.get", {"key": key})
        self.assertEqual((entry["Session"], entry["Value"]), (plain, "p"))

    def test_destroying_the_holders_session_grants_the_head(self):
        key = "node/fair/destroy"
        holder = self.node_session("node-destroyed")
        self.assertTrue(self.node.call("kv.set", {"key": key, "value": "h", "acquire": holder}))
        w1 = self.park(key, self.tenure_session("w-destroy"))
        self.assertIsNone(self.node.call("session.destroy", {"id": holder}))
        self.assertEqual(w1.answer().json(), True)
        entry = self.node.call("kv.get", {"key": key})
        self.assertEqual(entry["Session"], w1.session)
        self.assertEqual(self.queue(key), [])

    def test_a_node_blocking_read_waits_for_a_fair_grant(self):
        key = "node/fair/blocking"
        holder = self.tenure_session("t-holder")
        resp = self.server.request("PUT", f"/v1/kv/{key}?acquire={holder}", b"t")
        self.assertEqual(resp.json(), True, resp)
        entry = self.node.call("kv.get", {"key": key})
        w1 = self.park(key, self.tenure_session("t-w1"))
        # The client's blocking read at the key's index: it returns only when
        # the key changes, and then names the new holder.
        parked = self.blocking_parked()
        read = self.node.send({"call": "kv.get",
                               "args": [{"key": key, "index": entry["ModifyIndex"], "wait": "30s"}]})
        poll_until(lambda: self.blocking_parked() == parked + 1 or self.node.done(read),
                   message="the client's blocking read parked")
        self.assertFalse(self.node.done(read), "the blocking read returned before any change")
        resp = self.server.request("PUT", f"/v1/kv/{key}?release={holder}", b"")
        self.assertEqual(resp.json(), True, resp)
        self.assertEqual(self.node.result(read)["Session"], w1.session)
        self.assertEqual(w1.answer().json(), True)

    def test_bad_input_gets_consuls_errors(self):
        with self.assertRaises(NodeError) as caught:
            self.node.call("kv.set", {"key": "node/bad", "value": "v", "acquire": "not-a-uuid"})
        self.assertEqual(caught.exception.status, 500)
        self.assertIn('invalid session "not-a-uuid"', str(caught.exception))
        with self.assertRaises(NodeError) as caught:
            self.node.call("session.info", {"id": "not-a-uuid"})
        self.assertEqual(caught.exception.status, 500)
        self.assertIn("UUID must be 36 characters", str(caught.exception))
        self.assertIsNone(self.node.call("kv.get", {"key": "node/bad"}))


if __name__ == "__main__":
    unittest.main()
