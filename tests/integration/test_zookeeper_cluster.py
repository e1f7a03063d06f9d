"""ZooKeeper's port on a 3-server cluster (decision 0056): the leader
serves ZooKeeper's clients and a follower closes a new connection
unanswered, as a ZooKeeper server that is not serving does, so a client
given every server finds the one that serves. A kazoo session and its
ephemeral survive the kill -9 of the server it was connected to: the
session is replicated, the client reconnects to the new leader with its
id and password, and the new leader ends the session only once its
timeout passed with no renewal (decision 0011), never early."""

import unittest

from kazoo.client import KazooClient
from kazoo.protocol.states import KazooState

import zk_wire
from tenure_testlib import Cluster, free_port, poll_until


def zk_cluster():
    """A 3-server Cluster whose members serve ZooKeeper, each member's
    address in `zk_addr`."""
    cluster = Cluster(3, extra_args=("-session-ttl-multiplier", "1", "-zk-addr", "x"))
    for member in cluster.members:
        member.zk_addr = f"127.0.0.1:{free_port()}"
        at = member.extra_args.index("-zk-addr")
        member.extra_args[at + 1] = member.zk_addr
    return cluster


class ZooKeeperClusterTest(unittest.TestCase):
    def test_a_session_survives_the_kill_of_its_server(self):
        with zk_cluster() as cluster:
            leader = cluster.leader()
            followers = [m for m in cluster.members if m is not leader]
            # A follower does not serve: the connection ends unanswered.
            refused = zk_wire.Session(followers[0].zk_addr)
            self.addCleanup(refused.close)
            self.assertIsNone(refused.connect_answer)

            hosts = ",".join(m.zk_addr for m in cluster.members)
            client = KazooClient(hosts=hosts, timeout=10)
            states = []
            client.add_listener(states.append)
            client.start(timeout=30)
            self.addCleanup(client.close)
            self.addCleanup(client.stop)
            session = client.client_id
            client.ensure_path("/cluster")
            client.create("/cluster/held", b"x", ephemeral=True)

            leader.kill()
            new_leader = cluster.wait_leader(exclude=leader)
            poll_until(lambda: client.state == KazooState.CONNECTED
                       and KazooState.SUSPENDED in states, timeout=30,
                       message=f"kazoo reconnected ({states})")
            self.assertEqual(client.client_id, session, "the same session")
            self.assertNotIn(KazooState.LOST, states)
            data, stat = client.get("/cluster/held")
            self.assertEqual(stat.ephemeralOwner, session[0])
            # Served by the new leader: another client sees the same node.
            other = KazooClient(hosts=new_leader.zk_addr, timeout=10)
            other.start(timeout=30)
            self.addCleanup(other.close)
            self.addCleanup(other.stop)
            self.assertIsNotNone(other.exists("/cluster/held"))
            client.stop()
            poll_until(lambda: other.exists("/cluster/held") is None, timeout=15,
                       message="the ephemeral gone with its closed session")


if __name__ == "__main__":
    unittest.main()
