"""Multi-process fault tests, crashes and pauses (docs/checkers.md).

Three servers, register and lock clients on every member, and a seeded
nemesis: kill -9 of the leader and of a follower (each restarted with its
data), and SIGSTOP of the leader for longer than the election timeout
(a new leader is elected; the old one wakes and must acknowledge nothing
stale), and a stranger sending forged raft traffic to every member
(writes of a value no client wrote, type-0 entries, vote floods, huge
sizes, garbage; without the cluster key). The history is checked for linearizability (KV registers, with the
final read-back: no acknowledged write lost) and for mutual exclusion under
fencing (locks). tests/lib/cluster_workload.py has the clients and nemesis;
TENURE_FAULT_SEED replays a seed, TENURE_FAULT_SECONDS runs longer.
"""

import unittest

from cluster_workload import run_and_check


class CrashFaultsTest(unittest.TestCase):
    def test_kills_and_pauses_keep_histories_linearizable_and_locks_exclusive(self):
        run_and_check(self, ["kill-leader", "kill-follower", "pause-leader", "stranger"])


if __name__ == "__main__":
    unittest.main()
