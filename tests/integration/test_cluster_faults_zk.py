"""Multi-process fault tests through ZooKeeper's client protocol
(docs/checkers.md).

The fault tier's workload with every client call made frame by frame on the
ZooKeeper port of whichever member serves it (tests/lib/zk_workload.py):
sessions that move between members with their id and password, registers as
setData, sync then getData (a linearizable read) and setData with the
version read (a CAS); a lock as kazoo's and Curator's recipe takes it (an
ephemeral sequential node, the lowest holds, the others watch their
predecessor), fenced writes as a multi checking the holder's node, sessions
kept alive by pings. A seeded nemesis kills the leader and a follower
(restarted with their data), SIGSTOPs the leader, isolates it (clients
still reach it) and splits the cluster 1 | 2. Checked as the other APIs'
fault tests: linearizable registers with no acknowledged write lost,
mutually exclusive locks under fencing, including a holder frozen past its
session timeout that wakes and writes; and the recipe's order: the lock
passes to nodes of strictly increasing sequence numbers. TENURE_FAULT_SEED
replays a seed, TENURE_FAULT_SECONDS runs longer.
"""

import os
import tempfile
import unittest

from cluster_workload import run_and_check
from zk_workload import check_succession


class ZooKeeperFaultsTest(unittest.TestCase):
    def test_faults_keep_zookeeper_histories_linearizable_and_locks_exclusive(self):
        run_and_check(self, ["kill-leader", "kill-follower", "pause-leader", "isolate-leader",
                             "split"], api="zk")
        run = self.zk_run
        history = run.rec.history()
        problems = check_succession(history, run.lock_key)
        grants = sum(1 for op in history if op.type == "acquire" and op.outcome == "ok")
        print(f"succession: {grants} grants, "
              f"{'in sequence order' if not problems else f'{len(problems)} OUT OF ORDER'}",
              flush=True)
        if problems:
            path = os.path.join(tempfile.gettempdir(), f"tenure-faults-zk-{run.seed}.jsonl")
            run.rec.dump(path)
            print(f"history saved to {path}", flush=True)
        self.assertEqual(problems, [], "the lock did not pass in its queue's order (the "
                         "sequence of the nodes it was granted to went back):\n"
                         + "\n".join(problems))


if __name__ == "__main__":
    unittest.main()
