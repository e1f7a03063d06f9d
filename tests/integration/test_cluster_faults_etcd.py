"""Multi-process fault tests through etcd's API (docs/checkers.md).

The fault tier's workload with every client call made on etcd's JSON
gateway of a random member (tests/lib/etcd_workload.py): registers as Put,
linearizable Range and a Txn CAS on mod_revision; a lock as etcd's
leader-key recipe (a Txn creating the key with a lease), fenced writes as a
Txn comparing the lock key's create revision, leases kept alive. A seeded
nemesis kills the leader and a follower (restarted with their data),
SIGSTOPs the leader, isolates it (clients still reach it) and splits the
cluster 1 | 2. Checked as the Consul API's fault tests: linearizable
registers with no acknowledged write lost, mutually exclusive locks under
fencing, including a holder frozen past its lease that wakes and writes.
TENURE_FAULT_SEED replays a seed, TENURE_FAULT_SECONDS runs longer.
"""

import unittest

from cluster_workload import run_and_check


class EtcdFaultsTest(unittest.TestCase):
    def test_faults_keep_etcd_histories_linearizable_and_locks_exclusive(self):
        run_and_check(self, ["kill-leader", "kill-follower", "pause-leader", "isolate-leader",
                             "split"], api="etcd")


if __name__ == "__main__":
    unittest.main()
