"""Multi-process fault tests, network partitions (docs/checkers.md).

Three servers whose raft links go through tests/lib/raft_proxy.py
(decision 0009), register and lock clients on every member (clients still
reach every server), and a seeded nemesis: the leader isolated from both
followers (a minority leader that clients can reach), a 1 | 2 split, and a
one-way cut from the leader to one follower. Checked as the crash tests are:
linearizable registers with no acknowledged write lost, mutually exclusive
locks under fencing. TENURE_FAULT_SEED replays a seed, TENURE_FAULT_SECONDS
runs longer.
"""

import unittest

from cluster_workload import run_and_check


class PartitionFaultsTest(unittest.TestCase):
    def test_partitions_keep_histories_linearizable_and_locks_exclusive(self):
        run_and_check(self, ["isolate-leader", "split", "one-way", "stranger"])


if __name__ == "__main__":
    unittest.main()
