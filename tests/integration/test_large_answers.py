"""Large answers are built off the loop thread (decision 0046): a GET ?recurse
or ?keys whose JSON passes 256 KiB is copied out of the Store a slice per loop
turn (decision 0051) and encoded on a builder thread. What the client reads is
what the same entries read one by one say, with ?pretty too, and one
consistent view even while the prefix is written between the slices; and the
loop-stall metric decision 0046 adds is served (docs/metrics.md)."""

import base64
import json
import threading
import time
import unittest

from tenure_testlib import DevServer

VALUE_BYTES = 512 * 1024  # Consul's largest value


class LargeAnswerTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = DevServer().__enter__()
        # 6 values of 512 KiB (a 4 MiB JSON answer) and a flag on one.
        for i in range(6):
            resp = cls.server.request("PUT", f"/v1/kv/big/{i}" + ("?flags=42" if i == 3 else ""),
                                      bytes([65 + i]) * VALUE_BYTES)
            assert resp.status == 200, resp
        # 3,000 keys of about 100 bytes: a ?keys answer of about 300 KiB.
        body = []
        for i in range(3000):
            body.append({"KV": {"Verb": "set", "Key": f"many/{i:05d}-" + "k" * 90,
                                "Value": base64.b64encode(b"v").decode()}})
            if len(body) == 64:
                resp = cls.server.request("PUT", "/v1/txn", json.dumps(body))
                assert resp.status == 200, resp
                body = []
        if body:
            resp = cls.server.request("PUT", "/v1/txn", json.dumps(body))
            assert resp.status == 200, resp

    @classmethod
    def tearDownClass(cls):
        cls.server.__exit__(None, None, None)

    def one_by_one(self):
        entries = []
        for i in range(6):
            resp = self.server.request("GET", f"/v1/kv/big/{i}")
            self.assertEqual(resp.status, 200, resp)
            entries.extend(resp.json())
        return entries

    def test_a_large_recurse_reads_what_each_key_reads(self):
        resp = self.server.request("GET", "/v1/kv/big/?recurse", timeout=60.0)
        self.assertEqual(resp.status, 200, resp)
        self.assertGreater(len(resp.body), 4 * VALUE_BYTES)
        self.assertEqual(resp.header("Content-Type"), "application/json")
        self.assertIsNotNone(resp.header("X-Consul-Index"))
        entries = resp.json()
        self.assertEqual(entries, self.one_by_one())
        self.assertEqual(base64.b64decode(entries[2]["Value"]), b"C" * VALUE_BYTES)
        self.assertEqual(entries[3]["Flags"], 42)

    def test_a_large_pretty_recurse_is_the_same_entries_indented(self):
        resp = self.server.request("GET", "/v1/kv/big/?recurse&pretty", timeout=60.0)
        self.assertEqual(resp.status, 200, resp)
        self.assertTrue(resp.body.startswith(b'[\n    {\n        "LockIndex"'), resp.body[:40])
        self.assertEqual(resp.json(), self.one_by_one())

    def test_a_large_key_list_is_every_key_in_order(self):
        resp = self.server.request("GET", "/v1/kv/many/?keys", timeout=60.0)
        self.assertEqual(resp.status, 200, resp)
        self.assertGreater(len(resp.body), 256 * 1024)
        keys = resp.json()
        self.assertEqual(len(keys), 3000)
        self.assertEqual(keys, sorted(keys))
        self.assertEqual(keys[17], "many/00017-" + "k" * 90)

    def test_a_recurse_copied_in_slices_is_one_view_while_the_prefix_is_written(self):
        # pair/a and pair/z are written together by every txn below; 3 MiB of
        # values between them put them in different slices of the copy.
        for i in range(6):
            resp = self.server.request("PUT", f"/v1/kv/pair/m{i}", b"m" * VALUE_BYTES)
            self.assertEqual(resp.status, 200, resp)

        def write_pair(n):
            value = base64.b64encode(str(n).encode()).decode()
            body = json.dumps([{"KV": {"Verb": "set", "Key": key, "Value": value}}
                               for key in ("pair/a", "pair/z")])
            return self.server.request("PUT", "/v1/txn", body)

        self.assertEqual(write_pair(0).status, 200)
        stop = threading.Event()
        written = []

        def writer():
            n = 0
            while not stop.is_set() and n < 5000:
                n += 1
                resp = write_pair(n)
                if resp.status != 200:
                    written.append(resp)
                    return
                written.append(n)

        thread = threading.Thread(target=writer)
        thread.start()
        seen = set()
        try:
            deadline = time.monotonic() + 60
            reads = 0
            while reads < 30 and time.monotonic() < deadline:
                resp = self.server.request("GET", "/v1/kv/pair/?recurse", timeout=60.0)
                self.assertEqual(resp.status, 200, resp)
                entries = {e["Key"]: e for e in resp.json()}
                self.assertEqual(len(entries), 8)
                a, z = entries["pair/a"], entries["pair/z"]
                self.assertEqual(a["Value"], z["Value"], "a torn copy")
                self.assertEqual(a["ModifyIndex"], z["ModifyIndex"])
                self.assertEqual(int(resp.header("X-Consul-Index")), a["ModifyIndex"])
                seen.add(a["ModifyIndex"])
                reads += 1
        finally:
            stop.set()
            thread.join()
        self.assertTrue(all(isinstance(n, int) for n in written), written[-1:])
        self.assertGreater(len(written), 0)
        self.assertEqual(reads, 30)
        # The reads saw the pair move: they ran while it was being written.
        self.assertGreater(len(seen), 1)

    def test_the_loop_stall_metric_is_served(self):
        resp = self.server.request("GET", "/metrics")
        self.assertEqual(resp.status, 200, resp)
        text = resp.text
        self.assertIn('tenure_loop_stall_seconds_bucket{le="0.5"}', text)
        count = [line for line in text.splitlines()
                 if line.startswith("tenure_loop_stall_seconds_count ")]
        self.assertEqual(len(count), 1, text)
        self.assertGreater(float(count[0].split()[1]), 0)  # the 10 ms timer ran
        self.assertIn("\ntenure_loop_stall_max_seconds ", text)


if __name__ == "__main__":
    unittest.main()
