"""ZooKeeper's port on a 3-server cluster (decision 0056, "Followers"):
every server takes ZooKeeper's clients. The leader serves them; a follower
splices each connection to the leader's port, so the leader sees an
ordinary client and a client may be given any server. A kazoo session and
its ephemeral survive the kill -9 of the leader, whether the client was
connected to it or through a follower: the session is replicated, the
client reconnects with its id and password, and the new leader ends the
session only once its timeout passed with no renewal (decision 0011),
never early."""

import os
import signal
import subprocess
import threading
import unittest

from kazoo.client import KazooClient
from kazoo.protocol.states import KazooState

import zk_wire
from tenure_testlib import Cluster, free_port, poll_until

RELAY_MARK = b"tnrl"
ZKCLI = "/usr/share/zookeeper/bin/zkCli.sh"


def zk_cluster():
    """A 3-server Cluster whose members serve ZooKeeper, each member's
    address in `zk_addr`."""
    cluster = Cluster(3, extra_args=("-session-ttl-multiplier", "1", "-zk-addr", "x"))
    for member in cluster.members:
        member.zk_addr = f"127.0.0.1:{free_port()}"
        at = member.extra_args.index("-zk-addr")
        member.extra_args[at + 1] = member.zk_addr
    return cluster


def started(test, hosts):
    client = KazooClient(hosts=hosts, timeout=10)
    client.start(timeout=30)
    test.addCleanup(client.close)
    test.addCleanup(client.stop)
    return client


class ZooKeeperClusterTest(unittest.TestCase):
    def test_followers_serve_through_the_leader(self):
        with zk_cluster() as cluster:
            leader = cluster.leader()
            followers = [m for m in cluster.members if m is not leader]
            # A raw session through a follower: answered, as the leader would.
            def spliced_session():
                try:
                    session = zk_wire.Session(followers[0].zk_addr)
                except OSError:
                    return None
                self.addCleanup(session.close)
                return session if session.connect_answer is not None else None
            raw = poll_until(spliced_session, timeout=30,
                             message="a follower answers a ConnectRequest")
            self.assertGreater(raw.session_id, 0)
            self.assertEqual(raw.timeout_ms, 6000)
            # Large answers, pipelined past the 4 MiB a connection may hold
            # unsent, come back whole and in order through the splice.
            big = bytes(range(256)) * 2000  # 512,000 bytes
            self.assertEqual(raw.call("create", zk_wire.create_body("/big", big))[2], 0)
            xids = [raw.send("getData", zk_wire.path_watch("/big")) for _ in range(12)]
            raw.sock.settimeout(3)  # none may wait for a later byte of the leader's
            for xid in xids:
                reply = raw.reply()
                self.assertIsNotNone(reply, "the connection ended")
                self.assertEqual((reply[0], reply[2]), (xid, 0))
                self.assertEqual(zk_wire.read_ustring(reply[3])[0], big)
            # A client that sends closeSession and closes at once: what it
            # sent still reaches the leader, so its ephemeral goes now, not
            # when its 30 s timeout would pass.
            quitting = zk_wire.Session(followers[0].zk_addr, timeout_ms=30000)
            self.addCleanup(quitting.close)
            self.assertEqual(quitting.timeout_ms, 30000)
            flags_ephemeral = 1
            self.assertEqual(quitting.call("create", zk_wire.create_body(
                "/quitting", b"q", flags=flags_ephemeral))[2], 0)
            quitting.send("close")
            quitting.close()
            checker = zk_wire.Session(leader.zk_addr)
            self.addCleanup(checker.close)
            poll_until(lambda: checker.call("exists", zk_wire.path_watch("/quitting"))[2] == -101,
                       timeout=10, message="the ephemeral gone with the closed session")
            # srvr still tells the server's own mode.
            self.assertIn("Mode: follower", zk_wire.four_letter(followers[0].zk_addr, "srvr"))
            # A connection a follower spliced is never spliced again: one
            # marked so is closed unanswered by another follower, and
            # served by the leader.
            marked = zk_wire.Session(followers[1].zk_addr, prefix=RELAY_MARK)
            self.addCleanup(marked.close)
            self.assertIsNone(marked.connect_answer)
            direct = zk_wire.Session(leader.zk_addr, prefix=RELAY_MARK)
            self.addCleanup(direct.close)
            self.assertIsNotNone(direct.connect_answer)

            one = started(self, followers[0].zk_addr)
            two = started(self, followers[1].zk_addr)
            on_leader = started(self, leader.zk_addr)
            # A write through one follower fires a watch set through another.
            one.ensure_path("/spliced")
            seen = []
            fired = threading.Event()
            def on_change(event):
                seen.append(event)
                fired.set()
            self.assertIsNone(two.exists("/spliced/node", watch=on_change))
            one.create("/spliced/node", b"v1")
            self.assertTrue(fired.wait(15), "the exists watch fired")
            self.assertEqual(seen[0].type, "CREATED")
            data, stat = on_leader.get("/spliced/node")
            self.assertEqual(data, b"v1")
            # Read your writes through a follower.
            two.set("/spliced/node", b"v2")
            self.assertEqual(two.get("/spliced/node")[0], b"v2")

            # A lock across servers: the second contender waits for the first.
            first = one.Lock("/spliced/lock", "one")
            second = two.Lock("/spliced/lock", "two")
            self.assertTrue(first.acquire(timeout=15))
            self.assertFalse(second.acquire(blocking=False))
            got = []
            waiter = threading.Thread(target=lambda: got.append(second.acquire(timeout=30)))
            waiter.start()
            poll_until(lambda: len(on_leader.get_children("/spliced/lock")) == 2, timeout=15,
                       message="the second contender queued")
            first.release()
            waiter.join(35)
            self.assertEqual(got, [True])
            second.release()

    def test_zkcli_through_a_follower(self):
        """ZooKeeper's Java client (zkCli.sh sends its ConnectRequest and
        setWatches back to back) through a follower."""
        with zk_cluster() as cluster:
            leader = cluster.leader()
            follower = next(m for m in cluster.members if m is not leader)
            poll_until(lambda: answers(follower), timeout=30,
                       message="the follower splices to the leader")
            script = ("create /via-follower hello\nset /via-follower world\n"
                      "get -s /via-follower\nls /\nquit\n")
            proc = subprocess.Popen([ZKCLI, "-server", follower.zk_addr], stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                    start_new_session=True)
            try:
                out, _ = proc.communicate(script, timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                out, _ = proc.communicate()
                self.fail(f"zkCli.sh did not end within 60 s:\n{out}")
            self.assertIn("Created /via-follower", out)
            self.assertIn("world", out.splitlines())
            self.assertIn("dataVersion = 1", out)
            self.assertIn("[via-follower, zookeeper]", out)
            self.assertEqual(leader.request("GET", "/v1/kv//via-follower?raw").body, b"world")

    def test_a_session_survives_the_kill_of_its_server(self):
        with zk_cluster() as cluster:
            leader = cluster.leader()
            followers = [m for m in cluster.members if m is not leader]
            hosts = ",".join(m.zk_addr for m in cluster.members)
            clients = {}
            states = {}
            # One client given every server, one given a follower only
            # (spliced to the leader about to die).
            for name, where in (("any", hosts), ("follower", followers[0].zk_addr)):
                client = KazooClient(hosts=where, timeout=10)
                states[name] = []
                client.add_listener(states[name].append)
                poll_until(lambda c=client: _start(c), timeout=30,
                           message=f"kazoo ({name}) connected")
                self.addCleanup(client.close)
                self.addCleanup(client.stop)
                clients[name] = client
            sessions = {name: client.client_id for name, client in clients.items()}
            clients["any"].ensure_path("/cluster")
            for name, client in clients.items():
                client.create(f"/cluster/{name}", b"x", ephemeral=True)

            leader.kill()
            new_leader = cluster.wait_leader(exclude=leader)
            for name, client in clients.items():
                poll_until(lambda c=client, n=name: c.state == KazooState.CONNECTED
                           and KazooState.SUSPENDED in states[n], timeout=30,
                           message=f"kazoo ({name}) reconnected ({states[name]})")
                self.assertEqual(client.client_id, sessions[name], "the same session")
                self.assertNotIn(KazooState.LOST, states[name])
                data, stat = client.get(f"/cluster/{name}")
                self.assertEqual(stat.ephemeralOwner, sessions[name][0])
            # Served by the new leader: another client sees the same nodes.
            other = started(self, new_leader.zk_addr)
            for name, client in clients.items():
                self.assertIsNotNone(other.exists(f"/cluster/{name}"))
                client.stop()
                poll_until(lambda n=name: other.exists(f"/cluster/{n}") is None, timeout=15,
                           message=f"the ephemeral of {name} gone with its closed session")


def answers(member):
    """Whether a ConnectRequest to `member` is answered (a follower splices
    once it knows the leader's port)."""
    session = zk_wire.Session(member.zk_addr)
    session.close()
    return session.connect_answer is not None


def _start(client):
    """Starts a kazoo client; False (to try again) while the follower knows
    no leader's ZooKeeper address yet and closes the connection."""
    try:
        client.start(timeout=10)
        return True
    except Exception:  # kazoo's timeout
        client.stop()
        return False


if __name__ == "__main__":
    unittest.main()
