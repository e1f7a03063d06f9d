"""etcd's API on a 3-server cluster (decision 0048): every member serves
watches from its own state, so an etcdctl watch held on a follower's etcd
port goes on through the kill -9 of the raft leader and sees the writes the
new leader commits; a follower answers serializable reads itself and, until
forwarding lands, a write with etcd's "not leader" (docs/etcd-compat.md).
"""

import json
import os
import subprocess
import threading
import unittest

from tenure_testlib import Cluster, free_port, poll_until

ETCDCTL = "/usr/bin/etcdctl"


class EtcdClusterTest(unittest.TestCase):
    def etcdctl(self, endpoint, *args, check=True):
        done = subprocess.run([ETCDCTL, "--endpoints", endpoint, "--dial-timeout", "5s",
                               "--command-timeout", "10s", *args], capture_output=True,
                              text=True, timeout=60, env=dict(os.environ, ETCDCTL_API="3"))
        if check:
            self.assertEqual(done.returncode, 0, f"etcdctl {' '.join(args)}: {done.stderr}")
        return done

    def test_a_watch_on_a_follower_outlives_the_leader(self):
        cluster = Cluster(3, extra_args=("-session-ttl-multiplier", "1", "-grpc-addr", "x"))
        for member in cluster.members:
            member.etcd_addr = f"127.0.0.1:{free_port()}"
            at = member.extra_args.index("-grpc-addr")
            member.extra_args[at + 1] = member.etcd_addr
        with cluster:
            leader = cluster.leader()
            follower = next(m for m in cluster.members if m is not leader)
            # A follower's serializable read names the revision to watch from.
            got = json.loads(self.etcdctl(follower.etcd_addr, "get", "ha/none", "-w", "json",
                                          "--consistency=s").stdout)
            start = int(got["header"].get("revision", 0)) + 1  # 0 is left out
            watch = subprocess.Popen(
                [ETCDCTL, "--endpoints", follower.etcd_addr, "watch", "--prefix", "ha/",
                 "--rev", str(start)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                text=True, env=dict(os.environ, ETCDCTL_API="3"))
            lines = []
            reader = threading.Thread(target=lambda: lines.extend(
                line.rstrip("\n") for line in watch.stdout), daemon=True)
            reader.start()
            try:
                self.assertEqual(leader.request("PUT", "/v1/kv/ha/a", b"1").status, 200)
                poll_until(lambda: lines[:3] == ["PUT", "ha/a", "1"], timeout=20,
                           message="the first write seen on the follower")

                refused = self.etcdctl(follower.etcd_addr, "put", "ha/direct", "x", check=False)
                self.assertNotEqual(refused.returncode, 0)
                self.assertIn("etcdserver: not leader", refused.stderr)

                leader.kill()
                new_leader = cluster.wait_leader(exclude=leader)
                self.assertEqual(new_leader.request("PUT", "/v1/kv/ha/b", b"2").status, 200)
                poll_until(lambda: lines[3:6] == ["PUT", "ha/b", "2"], timeout=30,
                           message="the new leader's write seen by the same watch")
                self.assertIsNone(watch.poll(), "the watch ended with the leader")
            finally:
                watch.kill()
                watch.wait(timeout=10)
                reader.join(timeout=10)
                watch.stdout.close()


if __name__ == "__main__":
    unittest.main()
