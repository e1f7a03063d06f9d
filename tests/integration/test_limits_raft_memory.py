"""Raft entries held in memory are bounded by bytes, not only by count
(docs/limits.md; before this bound, overwriting one key with 512 KiB values
grew RSS 0.5 MiB per write, 3 GiB at 6,000 writes, because libraft keeps every entry until a
snapshot it takes every 16,384 entries).

The server runs with its log budget shrunk to 16 MiB
(TENURE_TEST_RAFT_LOG_BYTES_MAX; the default is 256 MiB, docs/limits.md)
so that a few hundred writes show the bound: 300 writes of 500 KiB (146 MiB)
must grow RSS by well under what they would hold without it."""

import os
import unittest

from tenure_testlib import DevServer

VALUE = b"v" * (500 * 1024)
WRITES = 300
BUDGET = 16 * 1024 * 1024


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS")


class RaftMemoryTest(unittest.TestCase):
    def test_same_key_large_overwrites_keep_rss_bounded(self):
        env = {"TENURE_TEST_RAFT_LOG_BYTES_MAX": str(BUDGET)}
        with DevServer(env=env) as server:
            pid = server.process.pid
            self.assertEqual(server.request("PUT", "/v1/kv/big", b"warm").status, 200)
            before = rss_kib(pid)
            peak = before
            for i in range(WRITES):
                resp = server.request("PUT", "/v1/kv/big", VALUE, timeout=30)
                self.assertEqual(resp.status, 200, (i, resp))
                if i % 10 == 0:
                    peak = max(peak, rss_kib(pid))
            peak = max(peak, rss_kib(pid))
            written_mib = WRITES * len(VALUE) / 2**20
            growth_mib = (peak - before) / 1024
            print(f"{WRITES} writes of {len(VALUE) // 1024} KiB ({written_mib:.0f} MiB) to one "
                  f"key: RSS {before / 1024:.0f} MiB -> peak {peak / 1024:.0f} MiB "
                  f"(+{growth_mib:.0f} MiB) with a {BUDGET >> 20} MiB log budget", flush=True)
            # Without the bound every entry stays: growth ~ written_mib. With
            # it: the budget, a quarter of it kept after each snapshot, the
            # snapshot's own copy and allocator slack.
            self.assertLess(growth_mib, written_mib / 2,
                            "raft entries were not released by early snapshots")
            self.assertEqual(server.request("GET", "/v1/kv/big?raw").body, VALUE)


if __name__ == "__main__":
    unittest.main()
