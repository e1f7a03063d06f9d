"""Read-your-writes under concurrency: ?consistent reads share raft barriers,
and every write acknowledged before a read started is visible to it, in all
three consistency modes (a single server serves them all from the leader)."""

import base64
import threading
import unittest

from tenure_testlib import SharedServerTestCase


class ConsistencyTest(SharedServerTestCase):
    server_args = ()

    def writer_reader(self, worker, mode, rounds, failures):
        key = f"consistency/{mode}/{worker}"
        for i in range(rounds):
            r = self.server.request("PUT", f"/v1/kv/{key}", str(i).encode())
            if r.status != 200:
                failures.append(f"{key}: PUT {i} -> {r.status} {r.body!r}")
                return
            suffix = "" if mode == "default" else f"?{mode}"
            r = self.server.request("GET", f"/v1/kv/{key}{suffix}")
            if r.status != 200:
                failures.append(f"{key}: GET after PUT {i} -> {r.status} {r.body!r}")
                return
            got = r.json()[0]["Value"]
            if base64.b64decode(got).decode() != str(i):
                failures.append(f"{key}: read {base64.b64decode(got)!r} after acknowledged {i}")
                return

    def test_acknowledged_writes_are_visible_to_later_reads(self):
        failures = []
        threads = [threading.Thread(target=self.writer_reader, args=(w, mode, 40, failures))
                   for w in range(8) for mode in ("default", "consistent", "stale")]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
            self.assertFalse(t.is_alive(), "a reader/writer thread hung")
        self.assertEqual(failures, [])

    def test_many_concurrent_consistent_reads_all_answer(self):
        self.server.request("PUT", "/v1/kv/consistency/shared", b"v")
        results = []

        def read():
            r = self.server.request("GET", "/v1/kv/consistency/shared?consistent")
            results.append(r.status)

        threads = [threading.Thread(target=read) for _ in range(64)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=30)
        self.assertEqual(results, [200] * 64)


if __name__ == "__main__":
    unittest.main()
