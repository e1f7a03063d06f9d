"""A deposed leader never acknowledges a renewal (decision 0011), on real
processes.

The leader is cut off from both followers by the raft proxy (decision 0009)
while a client still reaches it over HTTP. Until libraft notices (about an
election timeout) it still believes it leads; it used to answer renewals from
memory meanwhile, which the new leader never sees. Now the answer waits for a
barrier that cannot commit, so every renewal sent to it fails, while the
majority side elects a leader that renews the session.
"""

import time
import unittest

from raft_proxy import PartitionProxy
from tenure_testlib import Cluster, poll_until


class DeposedLeaderRenewalTest(unittest.TestCase):
    def test_isolated_leader_acknowledges_no_renewal(self):
        with Cluster(3, proxy=PartitionProxy()) as cluster:
            leader = cluster.leader()
            session = leader.put_json("/v1/session/create", {"TTL": "10s"})["ID"]
            renew = f"/v1/session/renew/{session}"
            self.assertEqual(leader.request("PUT", renew).status, 200)

            cluster.proxy.isolate(cluster.id_of(leader), range(1, len(cluster.members) + 1))
            cut_at = time.monotonic()
            answers = []
            def keep_going():  # 2 s of renewals, longer (at most 15 s) until one 500
                elapsed = time.monotonic() - cut_at
                seen_500 = any(status == 500 for _, status in answers)
                return elapsed < 2.0 or (not seen_500 and elapsed < 15.0)

            while keep_going():
                sent = time.monotonic() - cut_at
                try:
                    status = leader.request("PUT", renew, timeout=5.0).status
                except OSError as e:  # a timeout: no acknowledgement either
                    status = type(e).__name__
                answers.append((round(sent, 3), status))
                time.sleep(0.02)
            print(f"{len(answers)} renewals sent to the isolated leader; first answers: "
                  f"{answers[:3]}; statuses: {sorted({str(s) for _, s in answers})}", flush=True)
            self.assertNotIn(200, [status for _, status in answers],
                             "the isolated leader acknowledged a renewal")
            self.assertIn(500, [status for _, status in answers],
                          "the isolated leader never said it lost leadership")

            others = [m for m in cluster.members if m is not leader]

            def renewed_by_majority():
                for member in others:
                    try:
                        if member.request("PUT", renew, timeout=2.0).status == 200:
                            return True
                    except OSError:
                        pass
                return None

            poll_until(renewed_by_majority, timeout=15.0, interval=0.1,
                       message="the majority side never renewed the session")
            cluster.proxy.heal()


if __name__ == "__main__":
    unittest.main()
