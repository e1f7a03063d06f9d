"""kazoo's recipes from Debian (python3-kazoo 2.8), unmodified, against
`tenure server -zk-addr` (decision 0056, docs/zookeeper-compat.md): Lock
with contenders in other processes, mutual exclusion checked by a file
each holder appends to under the lock; ordered succession (waiters get the
lock in the order they queued, each watching only its predecessor);
Election with its leader killed (kill -9: its session ends at its timeout
and the next contender leads); Semaphore's bound; DataWatch and
ChildrenWatch callbacks for writes made by another client; each lock hold
in the election history (docs/history.md), fenced by its node's czxid."""

import os
import signal
import subprocess
import sys
import tempfile
import threading
import unittest

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError, RuntimeInconsistency

from tenure_testlib import DevServer, free_port, overlaps, poll_until

# One contender process: takes the lock (or runs for election) `rounds`
# times, appending "start PID" and "end PID" around each hold.
CONTENDER = r"""
import os, sys, time
from kazoo.client import KazooClient
hosts, kind, path, log, rounds = sys.argv[1:6]
client = KazooClient(hosts=hosts, timeout=4)
client.start(timeout=15)
def hold():
    with open(log, "a") as f:
        f.write(f"start {os.getpid()}\n")
    print("holding", flush=True)
    time.sleep(float(os.environ.get("HOLD_S", "0.05")))
    with open(log, "a") as f:
        f.write(f"end {os.getpid()}\n")
if kind == "lock":
    lock = client.Lock(path, str(os.getpid()))
    for _ in range(int(rounds)):
        with lock:
            hold()
else:
    client.Election(path, str(os.getpid())).run(hold)
print("done", flush=True)
client.stop()
"""


class KazooRecipesTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.zk_addr = f"127.0.0.1:{free_port()}"
        cls.server = DevServer(extra_args=["-zk-addr", cls.zk_addr,
                                           "-zk-session-timeout-min", "2s"]).__enter__()

    @classmethod
    def tearDownClass(cls):
        cls.server.__exit__(None, None, None)

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="tenure-kazoo-")
        self.processes = []

    def tearDown(self):
        for process in self.processes:
            if process.poll() is None:
                process.kill()
            process.wait(timeout=10)
            process.stdout.close()
        self.assertTrue(self.server.alive(), self.server.log_tail(60))

    def client(self):
        client = KazooClient(hosts=self.zk_addr, timeout=4)
        client.start(timeout=15)
        self.addCleanup(client.close)
        self.addCleanup(client.stop)
        return client

    def contender(self, kind, path, log, rounds=1, hold_s=0.05):
        process = subprocess.Popen(
            [sys.executable, "-c", CONTENDER, self.zk_addr, kind, path, log, str(rounds)],
            stdout=subprocess.PIPE, text=True, env=dict(os.environ, HOLD_S=str(hold_s)))
        self.processes.append(process)
        return process

    def test_a_lock_excludes_contenders_in_other_processes(self):
        log = os.path.join(self.dir, "lock.log")
        contenders = [self.contender("lock", "/kazoo/lock", log, rounds=3) for _ in range(4)]
        for process in contenders:
            self.assertEqual(process.wait(timeout=60), 0)
        self.assertIsNone(overlaps(log, 12))
        # The election history (docs/history.md) has each hold: a lock node
        # is a key its ZooKeeper session held, its czxid the fencing token.
        resp = self.server.request("GET", "/v1/tenure/history//kazoo/lock?succession")
        self.assertEqual(resp.status, 200, resp)
        holds = resp.json()
        self.assertEqual(len(holds), 12, holds)
        self.assertEqual({h["SessionName"] for h in holds}, {"zookeeper"})
        self.assertEqual({h["EndCause"] for h in holds}, {"delete"})
        fences = [h["Fence"] for h in holds]
        self.assertEqual(fences, sorted(fences))

    def test_a_fenced_write_as_docs_fencing_md_shows_it(self):
        """docs/fencing.md, "ZooKeeper's recipes": the holder's node's czxid
        is its token, larger for every later holder; a transaction that
        checks the node first is refused with nothing written once the
        holder's node is gone (released, or its session ended)."""
        first = self.client()
        lock = first.Lock("/kazoo/fenced", "first")
        self.assertTrue(lock.acquire(timeout=10))
        node = f"/kazoo/fenced/{lock.node}"
        token = first.exists(node).czxid
        write = first.transaction()
        write.check(node, 0)  # the lock node: made once, never set, version 0
        write.create("/kazoo/guarded-1", str(token).encode())
        self.assertEqual(write.commit(), [True, "/kazoo/guarded-1"])
        # A second holder after the release: a larger token.
        second = self.client()
        later = second.Lock("/kazoo/fenced", "second")
        lock.release()
        self.assertTrue(later.acquire(timeout=10))
        self.assertGreater(second.exists(f"/kazoo/fenced/{later.node}").czxid, token)
        # The first holder's late write: the check fails, nothing is written.
        stale = first.transaction()
        stale.check(node, 0)
        stale.create("/kazoo/guarded-2", b"stale")
        results = stale.commit()
        self.assertIsInstance(results[0], NoNodeError, results)
        self.assertIsInstance(results[1], RuntimeInconsistency, results)
        self.assertIsNone(second.exists("/kazoo/guarded-2"))
        later.release()

    def test_waiters_get_the_lock_in_the_order_they_queued(self):
        holder = self.client()
        lock = holder.Lock("/kazoo/fifo", "holder")
        self.assertTrue(lock.acquire(timeout=10))
        order = []
        threads = []
        for i in range(3):
            waiter = self.client().Lock("/kazoo/fifo", f"w{i}")

            def take(waiter=waiter, i=i):
                with waiter:
                    order.append(i)
            thread = threading.Thread(target=take)
            thread.start()
            threads.append(thread)
            # The next waiter queues only once this one's node is there.
            poll_until(lambda: len(lock.contenders()) == i + 2, timeout=10,
                       message=f"waiter {i} queued")
        lock.release()
        for thread in threads:
            thread.join(timeout=30)
        self.assertEqual(order, [0, 1, 2])

    def test_an_election_moves_on_when_its_leader_is_killed(self):
        log = os.path.join(self.dir, "election.log")
        first = self.contender("election", "/kazoo/election", log, hold_s=600)
        self.assertEqual(first.stdout.readline().strip(), "holding")
        second = self.contender("election", "/kazoo/election", log, hold_s=0.05)
        observer = self.client()
        election = observer.Election("/kazoo/election")
        poll_until(lambda: len(election.contenders()) == 2, timeout=10,
                   message="both contenders in line")
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=10)
        # Its session ends at its timeout (4 s), and its node with it.
        self.assertEqual(second.stdout.readline().strip(), "holding")
        self.assertEqual(second.wait(timeout=30), 0)
        with open(log, encoding="utf-8") as f:
            lines = f.read().split("\n")[:-1]
        self.assertEqual(lines, [f"start {first.pid}", f"start {second.pid}",
                                 f"end {second.pid}"])

    def test_a_semaphore_admits_at_most_its_leases(self):
        clients = [self.client() for _ in range(4)]
        semaphores = [c.Semaphore("/kazoo/sem", f"s{i}", max_leases=2)
                      for i, c in enumerate(clients)]
        self.assertTrue(semaphores[0].acquire(timeout=10))
        self.assertTrue(semaphores[1].acquire(timeout=10))
        self.assertFalse(semaphores[2].acquire(blocking=False))
        self.assertEqual(sorted(semaphores[3].lease_holders()), ["s0", "s1"])
        semaphores[0].release()
        self.assertTrue(semaphores[2].acquire(timeout=10))
        self.assertEqual(sorted(semaphores[3].lease_holders()), ["s1", "s2"])
        semaphores[1].release()
        semaphores[2].release()

    def test_data_and_children_watches_see_another_clients_writes(self):
        watcher = self.client()
        writer = self.client()
        writer.ensure_path("/kazoo/watched")
        data_seen = []
        children_seen = []
        watcher.DataWatch("/kazoo/watched/x",
                          lambda data, stat, event=None: data_seen.append(data))
        watcher.ChildrenWatch("/kazoo/watched", lambda children: children_seen.append(
            sorted(children)))
        poll_until(lambda: data_seen == [None] and children_seen == [[]], timeout=10,
                   message="the first callbacks")
        writer.create("/kazoo/watched/x", b"1")
        poll_until(lambda: data_seen[-1] == b"1" and children_seen[-1] == ["x"], timeout=10,
                   message=f"the create seen: {data_seen} {children_seen}")
        writer.set("/kazoo/watched/x", b"2")
        poll_until(lambda: data_seen[-1] == b"2", timeout=10,
                   message=f"the change seen: {data_seen}")
        writer.delete("/kazoo/watched/x")
        poll_until(lambda: data_seen[-1] is None and children_seen[-1] == [], timeout=10,
                   message=f"the delete seen: {data_seen} {children_seen}")


if __name__ == "__main__":
    unittest.main()
