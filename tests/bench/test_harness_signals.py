"""SIGINT and SIGTERM stop everything the side-by-side harness started.

Starts bench/vs_etcd.py (one long KV put measurement on ZooKeeper, on 3
tenure servers and on 3 etcd members; the election candidates' failover case)
and bench/vs_leader_failover.py (a 3-server tenure and a
3-member etcd cluster) on tiny workloads, waits until the servers and the
load generator are running, records every child process of the harness by
PID and start time, sends the signal to the harness alone, and checks that
the harness exits and every recorded child is gone (or a zombie: dead,
waiting to be reaped by whoever inherited it).

Run by ctest as bench.harness_signals (bench/vs/CMakeLists.txt), with
TENURE_BIN, TENURE_VS_BIN and TENURE_SOURCE_DIR set.
"""

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

SOURCE = os.environ.get("TENURE_SOURCE_DIR",
                        os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
TENURE = os.environ.get("TENURE_BIN", os.path.join(SOURCE, "build/src/tenure"))
DRIVER = os.environ.get("TENURE_VS_BIN", os.path.join(SOURCE, "build/bench/vs/tenure_vs"))
PYTHON = "/usr/bin/python3"
START_DEADLINE = 120.0   # the servers and the load generator must be up within this
EXIT_DEADLINE = 60.0     # the harness must be gone this long after the signal


def stat_of(pid):
    """(parent pid, state, start time in ticks) of pid, or None if it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return int(fields[1]), fields[0], int(fields[19])


def cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def children(parent):
    """{pid: (start ticks, command line)} of parent's live children."""
    out = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        st = stat_of(int(name))
        if st and st[0] == parent and st[1] != "Z":
            out[int(name)] = (st[2], cmdline(int(name)))
    return out


def running(pid, start):
    """True while the process pid started at `start` exists and is not a zombie."""
    st = stat_of(pid)
    return st is not None and st[2] == start and st[1] != "Z"


class HarnessSignals(unittest.TestCase):
    def setUp(self):
        for tool in (TENURE, DRIVER, "/usr/bin/etcd"):
            if not os.access(tool, os.X_OK):
                self.fail(f"not an executable: {tool} (scripts/setup; scripts/build tenure tenure_vs)")
        self.tmp = tempfile.mkdtemp(prefix="harness-signals-")
        self.addCleanup(shutil.rmtree, self.tmp, ignore_errors=True)
        self.seen = {}

    def start(self, argv):
        log = open(os.path.join(self.tmp, "harness.log"), "ab")
        self.addCleanup(log.close)
        env = dict(os.environ, TMPDIR=self.tmp)
        proc = subprocess.Popen([PYTHON] + argv, stdin=subprocess.DEVNULL, stdout=log,
                                stderr=subprocess.STDOUT, cwd=SOURCE, env=env)
        self.addCleanup(self.reap, proc)
        return proc

    def reap(self, proc):
        """Whatever this test started and is still running is ended by PID,
        so a failing check leaves nothing behind."""
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
        for pid, (start, _) in self.seen.items():
            if running(pid, start):
                os.kill(pid, signal.SIGKILL)

    def log_tail(self):
        with open(os.path.join(self.tmp, "harness.log"), "rb") as f:
            return f.read()[-3000:].decode(errors="replace")

    def wait_for_children(self, proc, wanted):
        """Waits until the harness's children include one command line with
        each of `wanted` (substring: count); returns them all."""
        deadline = time.monotonic() + START_DEADLINE
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                self.fail(f"the harness exited ({proc.returncode}) early:\n{self.log_tail()}")
            kids = children(proc.pid)
            self.seen.update(kids)
            if all(sum(word in line for _, line in kids.values()) >= n for word, n in wanted.items()):
                return kids
            time.sleep(0.1)
        self.fail(f"never saw {wanted} among the harness's children "
                  f"({[line[:80] for _, line in children(proc.pid).values()]}):\n{self.log_tail()}")

    def check_signal_stops_all(self, argv, wanted, signum):
        proc = self.start(argv)
        kids = self.wait_for_children(proc, wanted)
        time.sleep(0.3)  # mid-measurement, not at a boundary
        kids.update(children(proc.pid))
        self.seen.update(kids)
        os.kill(proc.pid, signum)
        try:
            proc.wait(timeout=EXIT_DEADLINE)
        except subprocess.TimeoutExpired:
            self.fail(f"the harness still runs {EXIT_DEADLINE:.0f} s after "
                      f"{signal.Signals(signum).name}:\n{self.log_tail()}")
        # The harness waits for what it stops; allow a moment for the kernel.
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and any(running(p, s) for p, (s, _) in kids.items()):
            time.sleep(0.05)
        left = [f"{p}: {line[:120]}" for p, (s, line) in kids.items() if running(p, s)]
        self.assertEqual(left, [], f"still running after {signal.Signals(signum).name} "
                                   f"stopped the harness:\n{self.log_tail()}")
        self.assertGreaterEqual(len(kids), sum(wanted.values()))
        # Each server's data directory is a vs-* directory in TMPDIR.
        self.assertEqual([n for n in os.listdir(self.tmp) if n.startswith("vs-")], [],
                         "data directories left behind")

    def vs_etcd(self, configs):
        return [os.path.join(SOURCE, "bench/vs_etcd.py"), "--tenure", TENURE, "--driver", DRIVER,
                "--runs", "1", "--seconds", "120", "--only", "kv_put_c1", "--configs", configs,
                "--out", os.path.join(self.tmp, "out")]

    def test_sigterm_stops_zookeeper_and_the_load_generator(self):
        if not os.path.exists("/usr/share/java/zookeeper.jar"):
            self.fail("ZooKeeper is not installed (scripts/setup)")
        self.check_signal_stops_all(self.vs_etcd("zk1"), {"QuorumPeerMain": 1, "tenure_vs": 1},
                                    signal.SIGTERM)

    def test_sigint_stops_three_tenure_servers_and_the_load_generator(self):
        self.check_signal_stops_all(self.vs_etcd("tenure3"), {"tenure server": 3, "tenure_vs": 1},
                                    signal.SIGINT)

    def test_sigterm_stops_the_etcd_cluster_and_the_load_generator(self):
        self.check_signal_stops_all(self.vs_etcd("etcd3"), {"/usr/bin/etcd": 3, "tenure_vs": 1},
                                    signal.SIGTERM)

    def test_sigterm_stops_the_election_candidates(self):
        # The candidate failover case: a holder and a waiter, each a tenure_vs
        # in a session of its own, on one tenure server.
        argv = self.vs_etcd("tenure1")
        argv[argv.index("kv_put_c1")] = "failover"
        self.check_signal_stops_all(argv, {"tenure server": 1, "--workload candidate": 2},
                                    signal.SIGTERM)

    def failover(self):
        return [os.path.join(SOURCE, "bench/vs_leader_failover.py"), "--tenure", TENURE,
                "--trials", "50", "--out", os.path.join(self.tmp, "out")]

    def test_sigint_stops_both_failover_clusters(self):
        self.check_signal_stops_all(self.failover(), {"tenure server": 3, "/usr/bin/etcd": 3},
                                    signal.SIGINT)

    def test_sigterm_stops_both_failover_clusters(self):
        self.check_signal_stops_all(self.failover(), {"tenure server": 3, "/usr/bin/etcd": 3},
                                    signal.SIGTERM)


if __name__ == "__main__":
    unittest.main()
