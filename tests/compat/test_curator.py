"""Apache Curator's recipes from Debian (libcurator-recipes-java 5.4, on
the ZooKeeper 3.8 Java client, openjdk 17), unmodified, against `tenure
server -zk-addr` (decision 0056, docs/zookeeper-compat.md). Curator is
what most JVM services use to talk to ZooKeeper, and its recipes lean on
more of the protocol than kazoo's: create2 with protected names
(`_c_<uuid>-`) and createContainer for missing parents, getChildren2,
exists and getData watches on the predecessor, checkWatches when a
watcher is dropped, and a getData watch on /zookeeper/config from its
EnsembleTracker.

Each contender is a JVM of its own running java/CuratorRecipes.java
(compiled at setUpClass into a temporary directory): it connects, prints
"ready", and waits for "go" on stdin, so every contender of a test enters
the recipe at once. Checked:
- InterProcessMutex: 4 processes taking the lock 3 times each, mutual
  exclusion checked from the file each holder appends to under the lock.
- LeaderLatch: of 3 processes exactly one leads, the one whose node sorts
  first; killed -9, the next one leads once its session ends at its
  timeout (4 s), and only after the kill; closed (its node deleted), the
  last one leads at once.
- LeaderSelector (autoRequeue off): 3 processes each take leadership once,
  one after the other, as their holds in a shared file show.
- CuratorCache (Curator 5's cache, on a persistent recursive watch set by
  addWatch): the tree's first load, then each create, change and delete
  under it made by kazoo, in order, nothing beside it.
Curator logs what it finds wrong at ERROR (slf4j-simple, WARN and up to
stderr): no contender may log an ERROR. CURATOR_LOG_LEVEL=debug shows
every request and reply of the ZooKeeper client."""

import os
import shutil
import signal
import subprocess
import tempfile
import time
import unittest

from process_lines import ProcessLines
from tenure_testlib import DevServer, free_port, overlaps, poll_until

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.join(HERE, "java", "CuratorRecipes.java")
JAVA_DIR = "/usr/share/java"
# What Curator 5.4 and ZooKeeper's client load (the rest of zookeeper.jar's
# manifest is for the server and its netty transport, not needed by the
# default NIO client socket).
JARS = ["curator-recipes", "curator-framework", "curator-client", "zookeeper",
        "zookeeper-jute", "guava", "slf4j-api", "slf4j-simple"]
# Loaded when there: guava's split-off class, jars zookeeper.jar names.
OPTIONAL_JARS = ["failureaccess", "commons-io", "commons-cli", "jackson-databind",
                 "jackson-core", "jackson-annotations", "metrics-core"]
START_S = 30  # a JVM's start and connection, with others starting beside it
RUN_S = 60  # a contender's whole run


def classpath():
    missing = [name for name in JARS
               if not os.path.exists(os.path.join(JAVA_DIR, name + ".jar"))]
    if missing:
        raise AssertionError(f"missing in {JAVA_DIR}: {missing} (libcurator-recipes-java, "
                             "libzookeeper-java, libslf4j-java, libguava-java)")
    names = JARS + [name for name in OPTIONAL_JARS
                    if os.path.exists(os.path.join(JAVA_DIR, name + ".jar"))]
    return [os.path.join(JAVA_DIR, name + ".jar") for name in names]


def holders(log):
    """The PIDs in the log's start lines, in order."""
    with open(log, encoding="utf-8") as f:
        return [int(line.split()[1]) for line in f if line.startswith("start ")]


class CuratorRecipesTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.classes = tempfile.mkdtemp(prefix="tenure-curator-")
        cls.classpath = classpath()
        built = subprocess.run(["javac", "-d", cls.classes, "-cp", ":".join(cls.classpath),
                                SOURCE], capture_output=True, text=True, timeout=120)
        if built.returncode != 0:
            shutil.rmtree(cls.classes, ignore_errors=True)
            raise AssertionError(f"javac failed: {built.stdout}{built.stderr}")
        cls.zk_addr = f"127.0.0.1:{free_port()}"
        cls.server = DevServer(extra_args=["-zk-addr", cls.zk_addr,
                                           "-zk-session-timeout-min", "2s"]).__enter__()

    @classmethod
    def tearDownClass(cls):
        cls.server.__exit__(None, None, None)
        shutil.rmtree(cls.classes, ignore_errors=True)

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="tenure-curator-")
        self.addCleanup(shutil.rmtree, self.dir, ignore_errors=True)
        self.contenders = []

    def tearDown(self):
        for contender in self.contenders:
            contender.stop()  # kills its own PID if still running
        self.assertTrue(self.server.alive(), self.server.log_tail(60))

    def contender(self, mode, path, ident, *args):
        level = os.environ.get("CURATOR_LOG_LEVEL", "warn")
        contender = ProcessLines(
            ["java", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
             f"-Dorg.slf4j.simpleLogger.defaultLogLevel={level}",
             "-cp", ":".join([self.classes] + self.classpath),
             "CuratorRecipes", mode, self.zk_addr, path, ident, *args])
        self.contenders.append(contender)
        return contender

    def outputs(self):
        return "\n".join(f"--- pid {c.process.pid}:\n" + "\n".join(c.snapshot())
                         for c in self.contenders) + "\n--- server:\n" + \
            self.server.log_tail(100)

    def start_all(self, contenders):
        """Waits until each is connected, then lets them all in."""
        for contender in contenders:
            poll_until(lambda: contender.seen("ready ") or contender.process.poll() is not None,
                       timeout=START_S, message="a contender connected")
            self.assertIsNone(contender.process.poll(), self.outputs())
        for contender in contenders:
            contender.send("go")

    def wait_exit(self, contender, timeout=RUN_S):
        poll_until(lambda: contender.process.poll() is not None, timeout=timeout,
                   message=f"pid {contender.process.pid} exited:\n{self.outputs()}")
        self.assertEqual(contender.process.returncode, 0, self.outputs())

    def assert_no_errors(self):
        errors = [line for c in self.contenders for line in c.snapshot() if " ERROR " in line]
        self.assertEqual(errors, [], self.outputs())

    def test_an_interprocess_mutex_excludes_contenders_in_other_processes(self):
        log = os.path.join(self.dir, "mutex.log")
        contenders = [self.contender("mutex", "/curator/mutex", f"m{i}", log, "3")
                      for i in range(4)]
        self.start_all(contenders)
        for contender in contenders:
            self.wait_exit(contender)
        self.assertIsNone(overlaps(log, 12), self.outputs())
        self.assertEqual(sorted(holders(log)),
                         sorted(c.process.pid for c in contenders for _ in range(3)))
        self.assert_no_errors()

    def leaders(self, contenders):
        """(contender, millis) for each "leader" line printed so far."""
        return [(c, int(line.split()[2])) for c in contenders for line in c.seen("leader ")]

    def test_a_leader_latch_moves_on_when_its_leader_is_killed(self):
        contenders = [self.contender("latch", "/curator/latch", f"l{i}") for i in range(3)]
        self.start_all(contenders)
        for contender in contenders:
            poll_until(lambda: contender.seen("joined "), timeout=START_S,
                       message=f"joined:\n{self.outputs()}")
        # Leadership goes in the order of the nodes' sequence numbers.
        order = sorted(contenders, key=lambda c: c.seen("joined ")[0].split()[2][-10:])
        poll_until(lambda: self.leaders(contenders), timeout=10,
                   message=f"a leader:\n{self.outputs()}")
        self.assertEqual([c for c, _ in self.leaders(contenders)], [order[0]], self.outputs())

        order[0].process.send_signal(signal.SIGKILL)
        order[0].process.wait(timeout=10)
        dead_at = time.time()
        # Its session ends at its timeout (4 s), and its node with it.
        poll_until(lambda: len(self.leaders(order[1:])) > 0, timeout=30,
                   message=f"a second leader:\n{self.outputs()}")
        (second, second_ms), = self.leaders(order[1:])
        self.assertIs(second, order[1], self.outputs())
        self.assertGreaterEqual(second_ms, dead_at * 1000, self.outputs())

        # Closed, the latch deletes its node: the last one leads at once.
        # (Once the delete is applied, that is: possibly before close()
        # returns in the second's process, so the third's "leader" may be
        # stamped before the second's "closed"; not before it began.)
        closing_at = time.time()
        second.process.stdin.close()
        self.wait_exit(second, timeout=15)
        self.assertTrue(second.seen("closed "), self.outputs())
        poll_until(lambda: order[2].seen("leader "), timeout=10,
                   message=f"a third leader:\n{self.outputs()}")
        self.assertEqual(len(self.leaders(order[1:])), 2, self.outputs())
        third_ms = int(order[2].seen("leader ")[0].split()[2])
        self.assertGreaterEqual(third_ms, int(closing_at * 1000), self.outputs())
        order[2].process.stdin.close()
        self.wait_exit(order[2], timeout=15)
        self.assertEqual([c for c in contenders if c.seen("follower ")], [], self.outputs())
        self.assert_no_errors()

    def test_a_leader_selector_gives_leadership_to_each_in_turn(self):
        log = os.path.join(self.dir, "selector.log")
        contenders = [self.contender("selector", "/curator/selector", f"s{i}", log)
                      for i in range(3)]
        self.start_all(contenders)
        for contender in contenders:
            self.wait_exit(contender)
        self.assertIsNone(overlaps(log, 3), self.outputs())
        self.assertEqual(sorted(holders(log)), sorted(c.process.pid for c in contenders))
        for i, contender in enumerate(contenders):
            self.assertEqual([line for line in contender.snapshot()
                              if line.startswith(("leader ", "released "))],
                             [f"leader s{i}", f"released s{i}"], self.outputs())
        self.assert_no_errors()

    def test_a_curator_cache_follows_a_tree_through_a_recursive_watch(self):
        from kazoo.client import KazooClient  # Debian's python3-kazoo
        from tenure_testlib import stop_quietly
        writer = KazooClient(hosts=self.zk_addr, timeout=6)
        writer.start(timeout=15)
        self.addCleanup(stop_quietly, writer)
        writer.create("/curator/cache/pre", b"p", makepath=True)
        requests_before = self.add_watch_requests()
        cache = self.contender("cache", "/curator/cache", "c0")
        self.start_all([cache])
        poll_until(lambda: cache.seen("initialized c0"), timeout=START_S,
                   message=f"the first load:\n{self.outputs()}")
        self.assertGreater(self.add_watch_requests(), requests_before, "Curator sent addWatch")
        self.assertEqual(sorted(cache.seen("event ")),
                         ["event NODE_CREATED /curator/cache ",
                          "event NODE_CREATED /curator/cache/pre p"], self.outputs())
        # One change at a time: the cache reads each node after its event,
        # so changes made together come out merged (as against ZooKeeper).
        steps = [(lambda: writer.create("/curator/cache/a", b"1"),
                  "event NODE_CREATED /curator/cache/a 1"),
                 (lambda: writer.set("/curator/cache/a", b"2"),
                  "event NODE_CHANGED /curator/cache/a 2"),
                 (lambda: writer.create("/curator/cache/a/b", b"3"),
                  "event NODE_CREATED /curator/cache/a/b 3"),
                 (lambda: writer.delete("/curator/cache/a/b"),
                  "event NODE_DELETED /curator/cache/a/b 3"),
                 (lambda: (writer.create("/curator/beside", b"x"),  # not under the path
                           writer.set("/curator/cache", b"root")),
                  "event NODE_CHANGED /curator/cache root")]
        for count, (change, line) in enumerate(steps, start=3):
            change()
            poll_until(lambda: len(cache.seen("event ")) >= count, timeout=15,
                       message=f"{line}:\n{self.outputs()}")
            self.assertEqual(cache.seen("event ")[count - 1:], [line], self.outputs())
        cache.process.stdin.close()
        self.wait_exit(cache, timeout=15)
        self.assert_no_errors()

    def add_watch_requests(self):
        try:
            return self.server.metric('tenure_zk_requests_total{op="addWatch",code="OK"}')
        except AssertionError:
            return 0  # none yet


if __name__ == "__main__":
    unittest.main()
