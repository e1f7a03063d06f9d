"""Replicas compared at run time (state/store.h, Checkpoint): a member whose state
differs from the leader's stops itself, loudly, and the others go on.

Three real servers; the leader writes a checkpoint every 200 ms
(TENURE_TEST_CHECKPOINT_PERIOD_MS). Member 3 is told by a test hook
(TENURE_TEST_DIVERGE_KEY) to corrupt, in its own memory only, the value of one key
after it applies a write of it: the state then differs from the others' although
its log is the same, which is what a bad disk or a bug would do silently. The next
checkpoint but one finds it: member 3 logs "FATAL: this server's state diverged"
and exits non-zero; members 1 and 2 keep serving, and never see the corrupted value.

Run (from tests/integration):
  TENURE_BIN=<path>/tenure PYTHONPATH=<repo>/tests/lib /usr/bin/python3 -m unittest -v test_divergence
"""

import unittest

from tenure_testlib import Cluster, poll_until

KEY = "diverge/me"


class DivergenceTest(unittest.TestCase):
    def test_a_diverged_member_stops_and_the_others_go_on(self):
        cluster = Cluster(3)
        for member in cluster.members:
            member.env["TENURE_TEST_CHECKPOINT_PERIOD_MS"] = "200"
        diverging = cluster.members[2]
        diverging.env["TENURE_TEST_DIVERGE_KEY"] = KEY
        with cluster:
            leader = cluster.leader()
            if leader is diverging:  # a diverged leader would stop its followers instead
                resp = leader.request("POST", "/v1/operator/raft/transfer-leader?id=1",
                                      headers=cluster.operator_headers())
                self.assertEqual(resp.status, 200, resp.body)
                leader = cluster.wait_leader(exclude=diverging)
            # Writes of other keys: every checkpoint agrees, nobody stops.
            for i in range(5):
                self.assertEqual(leader.request("PUT", f"/v1/kv/ok/{i}", b"v").json(), True)
            self.assertIsNone(diverging.process.poll(), diverging.log())

            self.assertEqual(leader.request("PUT", "/v1/kv/" + KEY, b"truth").json(), True)
            code = poll_until(lambda: diverging.process.poll(), timeout=15,
                              message="the diverged member kept running")
            self.assertNotEqual(code, 0)
            log = diverging.log()
            self.assertIn("FATAL: this server's state diverged from the leader's", log)
            self.assertIn("docs/recovery.md", log)
            self.assertIn("tenure server: corruption:", log)
            self.assertIn("WARNING: test hook TENURE_TEST_DIVERGE_KEY is set", log)

            # The others go on, with the true value.
            for member in cluster.members[:2]:
                self.assertIsNone(member.process.poll(), member.log())
                resp = member.request("GET", "/v1/kv/" + KEY + "?raw&stale")
                self.assertEqual((resp.status, resp.body), (200, b"truth"))
                self.assertNotIn("diverged", member.log())
            self.assertEqual(leader.request("PUT", "/v1/kv/after", b"1").json(), True)


if __name__ == "__main__":
    unittest.main()
