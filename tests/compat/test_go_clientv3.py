"""Real-client compatibility: Go's clientv3 and concurrency packages (etcd
3.4, Debian's golang-etcd-server-dev), unmodified, built offline in GOPATH
mode into tests/compat/go/etcdclient, against `tenure server -dev
-grpc-addr` (decision 0048).

The seed survey's snippets as it writes them: the lease calls (Grant,
Put with the lease, KeepAlive, Revoke, and a follower's watch seeing the
key's DELETE); an election (NewSession WithTTL, NewElection, Campaign,
Proclaim, Observe, Resign) whose leader is killed with SIGKILL and
replaced once its 2 s session ends; Mutex contenders appending to one file
under the lock, whose fencing tokens (the lock key's create revision) grow
in the order they held it.

etcd's Election and Lock services (v3electionpb, v3lockpb, served by
etcd/election_service.h) through the same gRPC clients: Lock contenders
under one lock, a Campaign with an Observe stream and Resign, and a
Campaign whose lease ends while it waits, which aborts (etcd 3.4's server
would go on waiting).
"""

import os
import shutil
import signal
import subprocess
import tempfile
import unittest

from etcd_testlib import EtcdDevServerCase
from tenure_testlib import poll_until

HERE = os.path.dirname(os.path.abspath(__file__))


def build_client():
    """Builds etcdclient into the build dir (its Go cache there too, so a
    warm run rebuilds nothing) and returns its path."""
    build_dir = os.environ.get("TENURE_BUILD_DIR") or tempfile.mkdtemp(prefix="tenure-go-")
    root = os.path.join(build_dir, "go-etcdclient")
    source = os.path.join(root, "src", "etcdclient")
    shutil.rmtree(source, ignore_errors=True)
    shutil.copytree(os.path.join(HERE, "go", "etcdclient"), source)
    binary = os.path.join(root, "etcdclient")
    env = dict(os.environ, GO111MODULE="off", GOPATH=f"{root}:/usr/share/gocode",
               GOCACHE=os.path.join(root, "cache"), GOFLAGS="", CGO_ENABLED="0")
    done = subprocess.run(["go", "build", "-o", binary, "."], cwd=source, env=env,
                          capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise AssertionError(f"go build of etcdclient failed: {done.stderr}")
    return binary


class GoClientV3Test(EtcdDevServerCase):
    @classmethod
    def setUpClass(cls):
        cls.binary = build_client()
        super().setUpClass()

    def start(self, *args):
        return self.start_lines([self.binary, self.endpoint, *args])

    def run_client(self, *args):
        done = subprocess.run([self.binary, self.endpoint, *args], capture_output=True, text=True,
                              timeout=60)
        self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
        return done.stdout.splitlines()

    def test_the_seeds_lease_calls(self):
        self.assertEqual(self.run_client("lease", "/service/leader"),
                         ["granted 10", "renewed", "deleted /service/leader"])

    def contenders_take_turns(self, command, name):
        """Three contenders running `command` (mutex or svc-lock) three times
        each on lock `name`, appending "start PID TOKEN" and "end PID TOKEN"
        under it: their pairs never interleave and the tokens grow in the
        order they held the lock."""
        with tempfile.TemporaryDirectory() as scratch:
            log = os.path.join(scratch, "held")
            contenders = [subprocess.Popen([self.binary, self.endpoint, command, name, log, "3"],
                                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                           text=True)
                          for _ in range(3)]
            for contender in contenders:
                out, _ = contender.communicate(timeout=60)
                self.assertEqual(contender.returncode, 0, out)
            with open(log, encoding="utf-8") as f:
                lines = [line.split() for line in f.read().splitlines()]
        self.assertEqual(len(lines), 18)
        tokens = []
        for start, end in zip(lines[0::2], lines[1::2]):
            self.assertEqual((start[0], end[0]), ("start", "end"), lines)
            self.assertEqual(start[1:], end[1:], f"two holders at once: {lines}")
            tokens.append(int(start[2]))
        self.assertEqual(tokens, sorted(tokens))
        self.assertEqual(len(set(tokens)), len(tokens), f"a token held twice: {tokens}")

    def test_stm_transfers_from_three_clients_keep_the_sum(self):
        """concurrency.NewSTM at its default isolation reads each key as a
        range inside a txn and takes its snapshot from that range's own
        header (a nil one would crash it); three clients moving 1 from a to
        b ten times each, conflicting and retrying, leave 70 and 30."""
        self.run_client("stm-init", "/go-stm/")
        movers = [subprocess.Popen([self.binary, self.endpoint, "stm", "/go-stm/", "10"],
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
                  for _ in range(3)]
        for mover in movers:
            out, _ = mover.communicate(timeout=60)
            self.assertEqual((mover.returncode, out), (0, "done\n"))
        self.assertEqual(self.run_client("stm-read", "/go-stm/"), ["/go-stm/a 70", "/go-stm/b 30"])

    def test_mutex_contenders_hold_in_turn_with_growing_tokens(self):
        self.contenders_take_turns("mutex", "/go-mutex/")

    def test_election_campaign_observe_resign_and_a_killed_leader(self):
        observer = self.start("observe", "/go-election/")
        first = self.start("campaign", "/go-election/", "node-1", "2")
        poll_until(lambda: first.seen("leader node-1"), timeout=20, message="node-1 leads")
        second = self.start("campaign", "/go-election/", "node-2", "2")
        poll_until(lambda: second.seen("session"), timeout=20, message="node-2's session")
        poll_until(lambda: observer.seen("observed node-1"), timeout=20,
                   message="the observer sees node-1")
        first.send("proclaim")
        poll_until(lambda: observer.seen("observed node-1-again"), timeout=20,
                   message="the observer sees the proclaimed value")
        self.assertEqual(second.seen("leader"), [])

        first.process.send_signal(signal.SIGKILL)
        first.process.wait(timeout=10)
        # node-1's session (2 s) ends on the leader's timer, then node-2 leads.
        poll_until(lambda: second.seen("leader node-2"), timeout=30, message="node-2 leads")
        poll_until(lambda: observer.seen("observed node-2"), timeout=20,
                   message="the observer sees node-2")
        first_rev = int(first.seen("leader node-1")[0].split()[2])
        second_rev = int(second.seen("leader node-2")[0].split()[2])
        self.assertGreater(second_rev, first_rev)
        second.send("resign")
        poll_until(lambda: second.seen("resigned"), timeout=20, message="node-2 resigns")

    def test_the_lock_service_serializes_contenders(self):
        self.contenders_take_turns("svc-lock", "/svc-lock")

    def test_the_election_service_campaign_observe_resign(self):
        observer = self.start("svc-observe", "/svc-election")
        first = self.start("svc-campaign", "/svc-election", "alpha", "keep")
        poll_until(lambda: first.seen("leader alpha"), timeout=20, message="alpha leads")
        second = self.start("svc-campaign", "/svc-election", "beta", "keep")
        poll_until(lambda: second.seen("lease"), timeout=20, message="beta's lease")
        poll_until(lambda: observer.seen("observed alpha"), timeout=20,
                   message="the observer sees alpha")
        self.assertEqual(second.seen("leader"), [])
        first.send("resign")
        poll_until(lambda: first.seen("resigned"), timeout=20, message="alpha resigns")
        poll_until(lambda: second.seen("leader beta"), timeout=20, message="beta leads")
        poll_until(lambda: observer.seen("observed beta"), timeout=20,
                   message="the observer sees beta")

    def test_a_campaign_whose_lease_ends_while_it_waits_aborts(self):
        holder = self.start("svc-campaign", "/svc-dying", "holder", "keep")
        poll_until(lambda: holder.seen("leader holder"), timeout=20, message="holder leads")
        # A 2 s lease nobody renews: it ends while its campaign waits.
        dying = self.start("svc-campaign", "/svc-dying", "dying", "no")
        poll_until(lambda: dying.seen("aborted"), timeout=20, message="the campaign aborts")
        self.assertIn("requested lease not found", dying.seen("aborted")[0])
        self.assertEqual(dying.seen("leader"), [])


if __name__ == "__main__":
    unittest.main()
